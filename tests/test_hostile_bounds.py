"""Bounds on input (issue 10): small files that used to hang, eat gigabytes or crash.

Each case runs the real CLI (test_hostile.run_cli / check_refused): a refused file exits 2 with
one stderr line naming the file and the bound, in < 2 s CPU and < 300 MB RSS, unchanged even
with --fix; a file that is merely large in one dimension lints normally within the same budget.
The bounds themselves are one table in src/moe_lint/bounds.py. The unit tests at the end pin
the linear-time rewrites to the quadratic originals they replace, on inputs small enough for
the originals.
"""

from __future__ import annotations

import os
import random
import re
import time
from pathlib import Path

import pytest

from moe_lint import bounds
from moe_lint.bounds import bounded_repr, bounded_str
from test_hostile import GOOD, MAX_RSS_MB, MAX_SECONDS, check_refused, run_cli


def _with_model(lines: str) -> str:
    """The good example with extra lines at the top of its model section."""
    return GOOD.replace("model:\n", "model:\n" + lines, 1)


def _without_layout(text: str) -> str:
    return "\n".join(
        line for line in text.splitlines() if "pipeline_model_parallel_layout" not in line
    )


# --------------------------------------------------------------------------- refused inputs

MB_STRING = "x" * 1_000_000

REFUSED: list[tuple[str, str | bytes, str]] = [
    # The SCH002 message repr'd the value: 2,000 aliases of a 1 MB string, > 4 GB.
    (
        "alias-repr",
        f"anchors:\n  s: &s {MB_STRING}\nmodel:\n  tensor_model_parallel_size: ["
        + ", ".join(["*s"] * 2000)
        + "]\n",
        "model.tensor_model_parallel_size",
    ),
    # YAML 1.1 integers are converted with int(): quadratic in base 60, refused past 4,300
    # decimal digits (that error used to drop the finding: exit 0, no findings).
    ("sexagesimal-2mb", "model:\n  tensor_model_parallel_size: 1" + ":0" * 1_000_000 + "\n",
     "bounds.MAX_NUMBER_CHARS"),
    ("decimal-5000", "model:\n  tensor_model_parallel_size: " + "9" * 5000 + "\n",
     "bounds.MAX_NUMBER_CHARS"),
    ("hex-5000", "model:\n  tensor_model_parallel_size: 0x" + "f" * 5000 + "\n",
     "bounds.MAX_NUMBER_CHARS"),
    ("octal-5000", "model:\n  tensor_model_parallel_size: 0" + "7" * 5000 + "\n",
     "bounds.MAX_NUMBER_CHARS"),
    ("binary-20000", "model:\n  tensor_model_parallel_size: 0b" + "1" * 20000 + "\n",
     "bounds.MAX_NUMBER_CHARS"),
    ("underscores-5000", "model:\n  tensor_model_parallel_size: 1_" + "0" * 5000 + "\n",
     "bounds.MAX_NUMBER_CHARS"),
    ("float-2mb", "model:\n  tensor_model_parallel_size: 1." + "1" * 2_000_000 + "\n",
     "bounds.MAX_NUMBER_CHARS"),
    ("key-decimal-5000", "model:\n  ? " + "9" * 5000 + "\n  : 1\n", "bounds.MAX_NUMBER_CHARS"),
    # Sizes that loops ran over (the memory model walked 131,072 stages).
    (
        "pp-131072",
        _without_layout(GOOD.replace("pipeline_model_parallel_size: 8",
                                     "pipeline_model_parallel_size: 131072")),
        "bounds.MAX_PIPELINE_STAGES",
    ),
    (
        "pp-times-vpp",
        _without_layout(GOOD.replace("pipeline_model_parallel_size: 8",
                                     "pipeline_model_parallel_size: 128")
                        .replace("virtual_pipeline_model_parallel_size: 4",
                                 "virtual_pipeline_model_parallel_size: 1024")),
        "bounds.MAX_PIPELINE_STAGES",
    ),
    ("num-layers", _with_model("  num_layers: 2000000000\n"), "bounds.MAX_LAYERS"),
    # Tagged mapping keys went through the constructor unguarded: a traceback (exit 3).
    ("key-bad-timestamp", "model:\n  !!timestamp 2001-13-45: 1\n", "cannot read scalar"),
    ("key-bad-int", "model:\n  !!int x: 1\n", "cannot read scalar"),
    ("key-bad-float", "model:\n  !!float x: 1\n", "cannot read scalar"),
    ("key-bad-bool", "model:\n  !!bool x: 1\n", "cannot read scalar"),
    ("key-binary", "model:\n  !!binary aGVsbG8=: 1\n", "unsupported mapping key"),
    ("key-timestamp", "model:\n  !!timestamp 2001-01-01: 1\n", "unsupported mapping key"),
    ("long-tag", "model: !" + "a" * 1_000_000 + " {a: 1}\n", "unsupported YAML tag"),
    # Composed in full before any node was counted (issue 22): 700,000 entries of one flow
    # mapping took 570 MB and 6 s; 99,000 unknown keys (under the old 200,000-node bound)
    # took 8.5 s and 611 MB in the rules and the report.
    ("flow-map-700k", "model: {" + ", ".join(f"k{i}: 1" for i in range(700_000)) + "}\n",
     "bounds.MAX_NODES"),
    ("unknown-keys-99k", "model:\n" + "".join(f"  k{i}: 1\n" for i in range(99_000)),
     "bounds.MAX_NODES"),
    ("flat-list-4m", "model:\n  x: [" + ",".join(["1"] * 4_000_000) + "]\n", "bounds.MAX_NODES"),
    ("suppressions-7k", "model:\n" + "  # moe-lint: disable=SCH001\n" * 7_000 + "  zz: 1\n",
     "bounds.MAX_SUPPRESSIONS"),
    # Each comment scan (directives, suppressions, the nesting estimate) looped over every
    # line: a million comment lines took 2.5 s more than the config.
    ("lines-1m", GOOD + "# hello\n" * 1_000_000, "bounds.MAX_LINES"),
    ("lines-cr", GOOD + "#\r" * 200_000, "bounds.MAX_LINES"),
    ("findings-7k", "model:\n" + "  # moe-lint: disable=PAR001\n" * 5_000
     + "".join(f"  zz_{i}: 1\n" for i in range(2_000)), "bounds.MAX_FINDINGS"),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(("name", "payload", "needle"), REFUSED, ids=[c[0] for c in REFUSED])
def test_refused(tmp_path: Path, name: str, payload: str | bytes, needle: str) -> None:
    check_refused(tmp_path, name, payload, needle)


@pytest.mark.slow
def test_message_is_bounded(tmp_path: Path) -> None:
    """The alias case's one line stays short: the repr is cut, never expanded."""
    path = tmp_path / "alias.yaml"
    path.write_text(REFUSED[0][1])
    code, _, err, seconds, rss = run_cli([str(path)], tmp_path)
    assert code == 2 and len(err) < 600, err[:1000]
    assert "..." in err and seconds < MAX_SECONDS and rss < MAX_RSS_MB


# --------------------------------------------------------------------------- not regular files


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo(tmp_path: Path) -> None:
    """open() on a FIFO with no writer blocked forever."""

    def make(d: Path) -> Path:
        os.mkfifo(d / "pipe.yaml")
        return d / "pipe.yaml"

    check_refused(tmp_path, "fifo", "", "not a regular file (a FIFO)", setup=make)


@pytest.mark.slow
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/stdin", "/dev/null"])
def test_devices(tmp_path: Path, device: str) -> None:
    if not Path(device).exists():
        pytest.skip(f"no {device}")
    check_refused(tmp_path, "device", "", "not a regular file", setup=lambda _: Path(device))


# --------------------------------------------------------------------------- estimate


@pytest.mark.slow
@pytest.mark.parametrize(
    "override",
    [
        "model.tensor_model_parallel_size=0",
        "model.tensor_model_parallel_size=-1",
        "model.pipeline_model_parallel_size=0",
        "model.context_parallel_size=0",
        "model.expert_model_parallel_size=0",
        "model.expert_tensor_parallel_size=0",
        "train.micro_batch_size=0",
    ],
)
def test_estimate_zero_sizes(tmp_path: Path, override: str) -> None:
    """`moe-lint estimate` divided by zero (exit 3); now the check's SCH002 line, exit 2."""
    path = tmp_path / "cfg.yaml"
    path.write_text(GOOD)
    code, out, err, seconds, rss = run_cli(["estimate", str(path), override], tmp_path)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, (code, err)
    assert str(path) in lines[0] and override.split("=")[0] in lines[0] and "SCH002" in lines[0]
    assert "Traceback" not in err + out and seconds < MAX_SECONDS and rss < MAX_RSS_MB


@pytest.mark.slow
def test_estimate_zero_in_file(tmp_path: Path) -> None:
    path = tmp_path / "tp0.yaml"
    path.write_text("model:\n  tensor_model_parallel_size: 0\n")
    code, _, err, _, _ = run_cli(
        ["estimate", str(path), "--model", "deepseek-v3", "--gpu", "h100", "--gpus", "256"],
        tmp_path,
    )
    assert code == 2 and err.count("\n") == 1, err
    assert "line 2, column 3: model.tensor_model_parallel_size = 0" in err


# --------------------------------------------------------------------------- command line


@pytest.mark.slow
def test_override_number_bounded(tmp_path: Path) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text(GOOD)
    code, out, err, seconds, rss = run_cli(
        [str(path), "model.tensor_model_parallel_size=" + "9" * 5000], tmp_path
    )
    assert code == 2 and len(err.strip().splitlines()) == 1, (code, err[:300])
    assert "bounds.MAX_NUMBER_CHARS" in err and len(err) < 600
    assert "Traceback" not in err + out and seconds < MAX_SECONDS and rss < MAX_RSS_MB


@pytest.mark.slow
@pytest.mark.parametrize("gpus", ["99999999999", "9" * 5000])
def test_gpus_bounded(tmp_path: Path, gpus: str) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text(GOOD)
    code, _, err, seconds, _ = run_cli([str(path), "--gpus", gpus], tmp_path)
    assert code == 2 and len(err.strip().splitlines()) == 1, err[:300]
    assert "bounds.MAX_GPUS" in err or "bounds.MAX_NUMBER_CHARS" in err
    assert seconds < MAX_SECONDS


# --------------------------------------------------------------------------- linted in bounds


def _lint(tmp_path: Path, text: str, *args: str) -> tuple[int, str, str]:
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    code, out, err, seconds, rss = run_cli([str(path), *args], tmp_path)
    assert "Traceback" not in err + out, err
    assert seconds < MAX_SECONDS, seconds
    assert rss < MAX_RSS_MB, rss
    return code, out, err


@pytest.mark.slow
@pytest.mark.parametrize(
    "comment",
    [
        "# moe-lint: disable=A" + " " * 30_000 + "!",  # the pattern backtracked: 15 s
        "# moe-lint: disable=" + "A " * 15_000 + "!",
        "# moe-lint: disable=A" * 1_500 + "!",
        "# moe-lint:" + " " * 30_000 + "!",
        "#" * 30_000,
    ],
    ids=["spaces", "codes", "repeated", "directive-spaces", "hashes"],
)
def test_long_comment(tmp_path: Path, comment: str) -> None:
    good_code, _good_out, _ = _lint(tmp_path, GOOD)
    code, _out, err = _lint(tmp_path, GOOD + comment + "\n")
    assert code == good_code and err == "", err[:300]


@pytest.mark.slow
def test_thousands_of_suppressions(tmp_path: Path) -> None:
    """findings × suppressions and suppressions × spans were quadratic."""
    text = "model:\n" + "".join(
        f"  zz_unknown_{i}: 1  # moe-lint: disable=SCH001 -- testing\n" for i in range(5_000)
    )
    _code, out, _err = _lint(tmp_path, text, "--format", "concise")
    assert "SCH001" not in out and "SUP" not in out, out[:500]


@pytest.mark.slow
def test_stacked_own_line_suppressions(tmp_path: Path) -> None:
    """5,000 comment lines in a row each scanned all the comments below it for its target."""
    text = "model:\n" + "  # moe-lint: disable=SCH001\n" * 5_000 + "  zz_unknown: 1\n"
    _code, out, _err = _lint(tmp_path, text, "--format", "concise")
    # The first comment covers the key; the 4,999 below it suppress nothing (SUP001).
    assert ": SCH001 " not in out and out.count(": SUP001 ") == 4_999, out[-300:]


@pytest.mark.slow
def test_thousands_of_unknown_keys(tmp_path: Path) -> None:
    """Each unknown key ran difflib over ~600 field names and rebuilt the release tables."""
    count = 5_000  # within bounds.MAX_FINDINGS (and MAX_NODES)
    text = "model:\n  tensor_model_paralel_size: 1\n"  # a typo: still gets its suggestion
    text += "".join(f"  zz_unknown_{i}: 1\n" for i in range(count))
    _, out, _ = _lint(tmp_path, text, "--format", "concise")
    assert out.count(": SCH001 ") == count + 1, out[-500:]
    assert "did you mean 'model.tensor_model_parallel_size'" in out
    # Past bounds.MAX_SUGGESTIONS searches the keys are reported without one.
    assert out.count("did you mean") <= bounds.MAX_SUGGESTIONS


@pytest.mark.slow
@pytest.mark.parametrize(
    "extra",
    [
        "# moe-lint: gpus=8\n" * 99_000,
        "# hello\n" * 99_000,
        "# moe-lint: disable=SCH001\n" * 5_000 + "#\n" * 94_000,
        ("#" + "x" * 100_000 + "\n") * 80,
    ],
    ids=["directives", "comments", "suppressions", "long-lines"],
)
def test_comments_up_to_the_line_bound(tmp_path: Path, extra: str) -> None:
    """Just under bounds.MAX_LINES (or bounds.MAX_BYTES in few lines) of comments: linted."""
    code, _out, err = _lint(tmp_path, GOOD + extra)
    assert code in (0, 1) and "error:" not in err, err[:300]


@pytest.mark.slow
def test_huge_microbatch_group(tmp_path: Path) -> None:
    """The advice searched every microbatch count up to 4·group: 1e12 never ended."""
    _code, out, _ = _lint(
        tmp_path, _with_model("  microbatch_group_size_per_vp_stage: 1000000000000\n")
    )
    assert "microbatch_group_size_per_vp_stage = 1000000000000" in out, out[-800:]


@pytest.mark.slow
def test_many_layers_in_bounds(tmp_path: Path) -> None:
    """num_layers at the bound: per-layer tables and the split search stay linear."""
    extra = f"model:\n  num_layers: {bounds.MAX_LAYERS - 1}\n  moe_layer_freq: 1\n"
    text = _without_layout(GOOD).replace("model:\n", extra, 1)
    _lint(tmp_path, text)


@pytest.mark.slow
def test_pipeline_stages_in_bounds(tmp_path: Path) -> None:
    """PP·VPP at the bound: the memory model walks every stage in each of its estimates."""
    stages = bounds.MAX_PIPELINE_STAGES
    text = (
        _without_layout(GOOD)
        .replace("pipeline_model_parallel_size: 8", f"pipeline_model_parallel_size: {stages}")
        .replace(
            "virtual_pipeline_model_parallel_size: 4", "virtual_pipeline_model_parallel_size: 1"
        )
        .replace("model:\n", f"model:\n  num_layers: {stages * 2}\n  moe_layer_freq: 1\n", 1)
    )
    _lint(tmp_path, text, "--gpus", str(stages * 32))


# --------------------------------------------------------------------------- units


def test_bounded_repr_does_not_expand_shared_values() -> None:
    big = "x" * 1_000_000
    value = {"a": [big] * 100_000, "b": [[big] * 1000] * 1000}
    start = time.process_time()
    text = bounded_repr(value)
    assert time.process_time() - start < 0.1
    assert len(text) <= bounds.MAX_REPR_CHARS and text.startswith("{'a': ['xxx")
    assert text.endswith("...")


def test_bounded_repr_is_repr_when_short() -> None:
    rng = random.Random(7)

    def value(depth: int) -> object:
        kind = rng.randrange(7 if depth < 3 else 4)
        if kind == 0:
            return rng.randrange(-(10**6), 10**6)
        if kind == 1:
            return rng.choice(["", "a", "it's", 'q"', "\n", "é"])
        if kind == 2:
            return rng.choice([None, True, False, 1.5, float("inf")])
        if kind == 3:
            return rng.random()
        if kind == 4:
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        if kind == 5:
            return tuple(value(depth + 1) for _ in range(rng.randrange(3)))
        return {str(value(depth + 1)): value(depth + 1) for _ in range(rng.randrange(3))}

    for _ in range(3000):
        v = value(0)
        if len(repr(v)) <= bounds.MAX_REPR_CHARS:
            assert bounded_repr(v) == repr(v), v
        else:
            assert len(bounded_repr(v)) <= bounds.MAX_REPR_CHARS
            assert repr(v).startswith(bounded_repr(v)[:-3]), v


def test_bounded_huge_int() -> None:
    huge = 1 << 100_000  # str() of this is past Python's 4,300-digit limit
    assert "digits" in bounded_repr(huge) and "digits" in bounded_str(huge)
    assert bounded_str(12345) == "12345"


_OLD_SUPPRESS = re.compile(
    r"#\s*moe-lint:\s*(?P<kind>disable-file|disable)\s*=\s*"
    r"(?P<codes>[A-Za-z0-9_\-, ]+?)\s*(?:--\s*(?P<reason>.*))?$"
)


def test_suppression_match_is_the_old_pattern() -> None:
    """suppress._match gives exactly what the backtracking pattern gave (on short lines)."""
    from moe_lint.engine.suppress import _match

    pieces = ["#", " ", "\t", "moe-lint:", "disable", "disable-file", "=", "-", "--", "A", ",",
              "x!", " -- ", "CP001", "\u00a0", "  "]  # fmt: skip
    rng = random.Random(3)
    for _ in range(30_000):
        line = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 12)))
        if rng.random() < 0.5:
            line = "# moe-lint: disable" + rng.choice(["=", "-file=", " = ", "= \t "]) + line
        m = _OLD_SUPPRESS.search(line)
        old = (
            None if m is None else (m.start(), m.group("kind"), m.group("codes"), m.group("reason"))
        )
        assert _match(line) == old, line


def test_nearest_microbatches_is_the_old_search() -> None:
    from moe_lint.engine.checks.pipeline import _nearest_valid_microbatches, _valid_microbatches

    for pp in range(2, 7):
        for n in range(pp, 20):
            group = None if n == pp else n
            for m in range(1, 60):
                below = next((k for k in range(m - 1, 0, -1) if _valid_microbatches(k, pp, group)),
                             None)  # fmt: skip
                above = next(
                    (k for k in range(m + 1, m + 4 * n + 2) if _valid_microbatches(k, pp, group)),
                    None,
                )
                assert _nearest_valid_microbatches(m, pp, n) == (below, above), (pp, n, m)


def _uneven_by_every_pair(
    num_layers: int, pp: int, vpp: int | None, mtp: int
) -> tuple[int, int] | None:
    """The original O(num_layers²) search of checks_pipeline.suggest_uneven."""
    step = vpp or 1
    middle = pp - 2
    best: tuple[tuple[int, int], int, int] | None = None
    for first in range(step, num_layers + 1, step):
        for last in range(step, num_layers - first + 1, step):
            rest = num_layers - first - last
            if middle == 0:
                if rest:
                    continue
                per = 0
            else:
                if rest <= 0 or rest % middle or (rest // middle) % step:
                    continue
                per = rest // middle
            loads = [first + 1, last + 1 + mtp] + ([per] if middle else [])
            score = (max(loads) - min(loads), max(loads))
            if best is None or score < best[0]:
                best = (score, first, last)
    return None if best is None else (best[1], best[2])


def test_suggest_uneven_is_the_old_search() -> None:
    from moe_lint.engine.checks.pipeline import suggest_uneven

    for num_layers in range(1, 48):
        for pp in range(2, 6):
            for vpp in (None, 2, 3):
                for mtp in (0, 1):
                    assert suggest_uneven(num_layers, pp, vpp, mtp) == _uneven_by_every_pair(
                        num_layers, pp, vpp, mtp
                    ), (num_layers, pp, vpp, mtp)
    start = time.process_time()
    suggest_uneven(bounds.MAX_LAYERS, 3, None, 1)
    assert time.process_time() - start < 0.5


def test_divisors_is_the_old_loop() -> None:
    from moe_lint.engine.expr import _divisors

    for n in [*range(-2, 2000), 720_720, 999_983, 1_000_000, 1_000_001]:
        old = [d for d in range(1, n + 1) if n % d == 0] if 0 < n <= 1_000_000 else []
        assert _divisors(n) == old, n


def test_every_bound_is_in_the_table() -> None:
    """bounds.py's docstring is the bounds' documentation: each MAX_* constant has a row
    there (with its value), and each row names a constant."""
    rows = {line.split()[0] for line in (bounds.__doc__ or "").splitlines()
            if line.startswith("MAX_")}  # fmt: skip
    constants = {name for name in vars(bounds) if name.startswith("MAX_")}
    assert rows == constants, rows ^ constants
