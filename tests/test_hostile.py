"""Hostile and broken input: exit code 2, one line naming the file and the problem, in bounded
time (< 2 s) and memory (< 300 MB RSS), no traceback, and no file changed (even with --fix).

Each case runs the real CLI in a subprocess so time and peak RSS are measured per process
(`os.wait4` rusage), not guessed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO

#: Each case runs the CLI in a process of its own to bound its CPU time and memory: slow.
pytestmark = pytest.mark.slow

MAX_SECONDS = 2.0
MAX_RSS_MB = 300

GOOD = (REPO / "examples" / "dsv3_128k_h100.yaml").read_text()


def _billion_laughs() -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    lines.append("model: {context_parallel_size: *a9}")
    return "\n".join(lines) + "\n"


def _syntax_errors() -> list[tuple[str, str]]:
    """Break the good example at many positions with an unterminated flow sequence."""
    lines = GOOD.splitlines()
    cases = []
    for i in range(6, len(lines), 3):
        broken = list(lines)
        broken.insert(i, "  broken: [1, 2")
        cases.append((f"syntax-line-{i + 1}", "\n".join(broken) + "\n"))
    cases.append(
        ("syntax-tab-indent", GOOD.replace("  seq_length: 131072", "\tseq_length: 131072"))
    )
    cases.append(("syntax-bad-mapping", GOOD.replace("train:", "train: x: y:")))
    return cases


# "nesting": moe-lint's own limit says "nesting deeper than 64 levels"; newer PyYAML wheels
# (6.0.4) bundle a libyaml that stops first with "exceeded maximum nesting depth".
TEXT_CASES: list[tuple[str, str | bytes, str]] = [
    *[(name, text, "syntax error") for name, text in _syntax_errors()],
    (
        "duplicate-key",
        "model:\n  context_parallel_size: 8\n  context_parallel_size: 16\n",
        "more than once",
    ),
    ("billion-laughs", _billion_laughs(), "alias expansion"),
    ("deep-nesting", "model: " + "[" * 10_000 + "]" * 10_000 + "\n", "nesting"),
    ("deep-block-nesting", "".join("  " * i + "k:\n" for i in range(2_000)), "nesting"),
    ("invalid-utf8", b"model:\n  context_parallel_size: \xff\xfe\n", "invalid UTF-8"),
    ("binary", bytes(range(256)) * 64, "binary data"),
    (
        "python-object-apply",
        "model: !!python/object/apply:os.system ['touch /tmp/pwned']\n",
        "unsupported YAML tag",
    ),
    ("python-name", "model: !!python/name:os.system\n", "unsupported YAML tag"),
    ("unknown-tag", "model: !secret {a: 1}\n", "unsupported YAML tag"),
    ("two-documents", "model: {}\n---\ntrain: {}\n", "more than one YAML document"),
    ("undefined-alias", "model: *nothing\n", "undefined alias"),
]

# A value of the wrong type (or out of range) in every field the rules read.
TYPED_FIELDS = {
    "model.tensor_model_parallel_size": ["eight", -2, 0, 2.5, 10**30, None, "[1]"],
    "model.pipeline_model_parallel_size": ["x", -1, 0, 1.5, 2**40, None],
    "model.context_parallel_size": ["eight", -8, 0, 3.3, 10**12, None],
    "model.expert_model_parallel_size": ["32x", -32, 0, 0.5, 10**9, None],
    "model.expert_tensor_parallel_size": ["one", -1, 0, 1.25, 10**9],
    "model.virtual_pipeline_model_parallel_size": ["four", -4, 0, 2.2],
    "model.seq_length": ["128k", -1, 0, 4096.5, 10**20, None],
    "model.num_moe_experts": ["many", -1, 0, 2.5, 10**19],
    "model.moe_router_topk": ["k", -1, 0, 1.5],
    "model.sequence_parallel": ["maybe", 2, [True]],
    "model.recompute_granularity": ["partial", 1],
    "model.recompute_modules": ["moe_act", 3],
    "model.cuda_graph_impl": ["always", True],
    "model.moe_token_dispatcher_type": ["deepep", 1],
    "train.global_batch_size": ["big", -64, 0, 64.5, 10**15, None],
    "train.micro_batch_size": ["one", -1, 0, 0.5, None],
    "dataset.seq_length": ["long", -1, 0, 1e9 + 0.5],
    "optimizer.optimizer_offload_fraction": ["half", -0.5, 1.5],
    "optimizer.optimizer_cpu_offload": ["yes please", 3],
}


def _typed_cases() -> list[tuple[str, str, str]]:
    out = []
    for dotted, values in TYPED_FIELDS.items():
        section, key = dotted.split(".")
        for value in values:
            text = f"{section}:\n  {key}: {'null' if value is None else value!r}\n"
            out.append((f"{dotted}={value!r}"[:60], text, dotted))
    return out


def run_cli(
    args: list[str], cwd: Path, env_extra: dict[str, str] | None = None, stdin: Any = None
) -> tuple[int, str, str, float, float]:
    """Run moe-lint; return (exit code, stdout, stderr, CPU seconds, peak RSS in MB).

    A small wrapper process starts moe-lint and reads its CPU time (user + system) and peak RSS
    from RUSAGE_CHILDREN: forking moe-lint straight from pytest would count pytest's own pages,
    resident until exec. CPU time, not wall time, is the bound: a loaded CI machine stretches
    the wall clock, never the work done.
    """
    env = {k: v for k, v in os.environ.items() if k != "MOE_LINT_STRICT"}
    env.update(env_extra or {})
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        proc = subprocess.run(
            [sys.executable, "-c", _WRAPPER, rss.name, sys.executable, "-m", "moe_lint", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=60,
            check=False,
            stdin=subprocess.DEVNULL if stdin is None else stdin,
        )
        peak_kb, cpu = Path(rss.name).read_text().split() or ("0", "0")
    return proc.returncode, proc.stdout, proc.stderr, float(cpu), int(peak_kb) / 1024


_WRAPPER = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[2:]).returncode\n"
    "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "open(sys.argv[1], 'w').write(f'{use.ru_maxrss} {use.ru_utime + use.ru_stime}')\n"
    "sys.exit(code)\n"
)


def check_refused(
    tmp_path: Path,
    name: str,
    payload: str | bytes,
    needle: str,
    extra: list[str] | None = None,
    setup: Callable[[Path], Path] | None = None,
    named: Path | None = None,
) -> None:
    """Lint (with --fix) the file ``setup`` makes, or ``payload`` written to a file: exit 2, one
    stderr line naming ``named`` (default: the linted file) and holding ``needle``, within the
    time and memory bounds, no file changed or left behind."""
    path = tmp_path / f"{name.replace('/', '_')}.yaml"
    if setup is not None:
        path = setup(tmp_path)
    elif isinstance(payload, bytes):
        path.write_bytes(payload)
    else:
        path.write_text(payload, encoding="utf-8")
    before = path.read_bytes() if path.is_file() else None
    code, out, err, seconds, rss = run_cli([str(path), "--fix", *(extra or [])], tmp_path)
    assert code == 2, (name, code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, (name, err)
    assert str(named or path) in lines[0] and needle in lines[0], (name, lines[0])
    assert "Traceback" not in err + out
    assert seconds < MAX_SECONDS, (name, seconds)
    assert rss < MAX_RSS_MB, (name, rss)
    if before is not None:
        assert path.read_bytes() == before, name
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".moe-lint-")) == []


@pytest.mark.parametrize(("name", "payload", "needle"), TEXT_CASES, ids=[c[0] for c in TEXT_CASES])
def test_hostile_text(tmp_path: Path, name: str, payload: str | bytes, needle: str) -> None:
    check_refused(tmp_path, name, payload, needle)


TYPED = _typed_cases()


@pytest.mark.parametrize(("name", "text", "dotted"), TYPED, ids=[c[0] for c in TYPED])
def test_wrong_types(tmp_path: Path, name: str, text: str, dotted: str) -> None:
    check_refused(tmp_path, "typed", text, dotted)


def test_huge_file(tmp_path: Path) -> None:
    big = "model:\n" + "".join(f"  k{i}: {'x' * 80}\n" for i in range(600_000))  # ~50 MB
    check_refused(tmp_path, "huge", big, "too large")


def test_directory(tmp_path: Path) -> None:
    """A folder is walked (issue 13), so a hostile file in it gets its own one line."""

    def make(d: Path) -> Path:
        (d / "configs.yaml").mkdir()
        (d / "configs.yaml" / "bad.yaml").write_text("model: !!python/name:os.system\n")
        return d / "configs.yaml"

    check_refused(tmp_path, "dir", "", "bad.yaml: error: line 1", setup=make)


def test_missing_file(tmp_path: Path) -> None:
    check_refused(tmp_path, "missing", "", "no such file", setup=lambda d: d / "nope.yaml")


def test_symlink_loop(tmp_path: Path) -> None:
    def make(d: Path) -> Path:
        (d / "a.yaml").symlink_to(d / "b.yaml")
        (d / "b.yaml").symlink_to(d / "a.yaml")
        return d / "a.yaml"

    check_refused(tmp_path, "loop", "", "cannot read", setup=make)


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read a file without read permission")
def test_unreadable_file(tmp_path: Path) -> None:
    def make(d: Path) -> Path:
        path = d / "secret.yaml"
        path.write_text(GOOD)
        path.chmod(0)
        return path

    check_refused(tmp_path, "unreadable", "", "permission denied", setup=make)


@pytest.mark.parametrize(
    "override", ["model.=3", "model..cp=1", "model.cp", "=1", "+", "model.x=[1,"]
)
def test_bad_overrides(tmp_path: Path, override: str) -> None:
    path = tmp_path / "good.yaml"
    path.write_text(GOOD)
    code, out, err, seconds, rss = run_cli([str(path), override], tmp_path)
    assert code == 2, (override, out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert override.split("=")[0] in err or "override" in err
    assert seconds < MAX_SECONDS and rss < MAX_RSS_MB
