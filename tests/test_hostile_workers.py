"""Issue 10, workers and memory: MOE_LINT_JOBS / MOE_LINT_FILE_TIMEOUT values that are not a
number give one usage line (exit 2), and the one-process path keeps only what the report needs
(its peak RSS does not grow with every parsed document)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import DUMPS, REPO
from test_hostile import MAX_RSS_MB, MAX_SECONDS, run_cli

EXAMPLE = REPO / "examples" / "dsv3_128k_h100.yaml"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MOE_LINT_JOBS", "0"),
        ("MOE_LINT_JOBS", "-1"),
        ("MOE_LINT_JOBS", "x"),
        ("MOE_LINT_JOBS", "2.5"),
        ("MOE_LINT_JOBS", "9" * 5000),
        ("MOE_LINT_FILE_TIMEOUT", "soon"),
        ("MOE_LINT_FILE_TIMEOUT", "0"),
        ("MOE_LINT_FILE_TIMEOUT", "nan"),
    ],
    ids=lambda v: v[:12],
)
@pytest.mark.parametrize("mode", [[], ["--fix"], ["--diff"]])
def test_bad_worker_settings_are_a_usage_error(
    tmp_path: Path, name: str, value: str, mode: list[str]
) -> None:
    target = tmp_path / "c.yaml"
    shutil.copy(EXAMPLE, target)
    before = target.read_bytes()
    code, _, err, cpu, rss = run_cli([str(target), *mode], tmp_path, {name: value})
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and name in lines[0] and lines[0].startswith("moe-lint: error:"), err
    assert len(lines[0]) < 200
    assert cpu < MAX_SECONDS and rss < MAX_RSS_MB
    assert target.read_bytes() == before


@pytest.mark.slow
def test_jobs_auto_means_every_cpu(tmp_path: Path) -> None:
    target = tmp_path / "c.yaml"
    shutil.copy(EXAMPLE, target)
    auto = run_cli([str(target), "--gpus", "256"], tmp_path, {"MOE_LINT_JOBS": "auto"})
    one = run_cli([str(target), "--gpus", "256"], tmp_path, {"MOE_LINT_JOBS": "1"})
    assert auto[:3] == one[:3] and auto[0] in (0, 1)


@pytest.mark.slow
@pytest.mark.parametrize("mode", [["--format", "json"], ["--diff"]])
def test_serial_path_memory_does_not_grow_per_document(tmp_path: Path, mode: list[str]) -> None:
    """300 full Bridge dumps in one process: each parsed document is ~0.9 MiB, so holding them
    all took ~300 MB (before issue 10: 305 MB for this run); slimmed results take ~70 MB."""
    dumps = sorted(DUMPS.glob("*.yaml"))
    files = []
    for i in range(300):
        target = tmp_path / f"c{i:03d}.yaml"
        shutil.copy(dumps[i % len(dumps)], target)
        files.append(target.name)
    code, out, err, _, rss = run_cli([*files, *mode], tmp_path, {"MOE_LINT_JOBS": "1"})
    assert code in (0, 1, 2), err
    assert "internal error" not in err
    assert out if mode[0] == "--format" else "would be changed" in err
    assert rss < 150, f"peak RSS {rss:.0f} MB"


@pytest.mark.slow
@pytest.mark.parametrize("mode", [[], ["--fix"], ["--diff"]])
def test_per_file_limit_without_workers(tmp_path: Path, mode: list[str]) -> None:
    """In one process (few files, --fix, --diff) MOE_LINT_FILE_TIMEOUT is a timer around each
    file: a file past it is one line naming it, exit 2, and nothing is written for it."""
    path = tmp_path / "cfg.yaml"
    shutil.copy(REPO / "examples" / "dsv3_128k_h100_broken.yaml", path)
    before = path.read_bytes()
    code, out, err, seconds, rss = run_cli(
        [str(path), *mode], tmp_path, env_extra={"MOE_LINT_FILE_TIMEOUT": "0.000001"}
    )
    assert code == 2, (code, out, err)
    assert err.splitlines() == [
        f"{path}: error: linting it took longer than 1e-06 s, the per-file limit "
        "(MOE_LINT_FILE_TIMEOUT); not linted"
    ]
    assert path.read_bytes() == before
    assert seconds < MAX_SECONDS and rss < MAX_RSS_MB


@pytest.mark.slow
def test_per_file_limit_is_generous_by_default(tmp_path: Path) -> None:
    """The default limit (30 s) never cuts a real file: the example is linted and fixed."""
    path = tmp_path / "cfg.yaml"
    shutil.copy(REPO / "examples" / "dsv3_128k_h100_broken.yaml", path)
    code, _, err, seconds, rss = run_cli([str(path), "--fix"], tmp_path)
    assert code in (0, 1) and "per-file limit" not in err, (code, err)
    assert path.read_bytes() != (REPO / "examples" / "dsv3_128k_h100_broken.yaml").read_bytes()
    assert seconds < MAX_SECONDS and rss < MAX_RSS_MB


def test_per_file_limit_covers_the_fix_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fix loop that runs past the limit (here: a patched loop that stalls) leaves the file
    untouched and is that file's one-line error."""
    import time

    from moe_lint.cli import main
    from moe_lint.output import fix

    def stalled(*args: object, **kwargs: object) -> None:
        time.sleep(5)

    path = tmp_path / "cfg.yaml"
    shutil.copy(REPO / "examples" / "dsv3_128k_h100_broken.yaml", path)
    before = path.read_bytes()
    monkeypatch.setenv("MOE_LINT_FILE_TIMEOUT", "1")
    monkeypatch.setattr(fix, "run_fixes", stalled)
    started = time.monotonic()
    assert main([str(path), "--fix"]) == 2
    assert time.monotonic() - started < 4
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"{path}: error: linting it took longer than 1 s, the per-file limit "
        "(MOE_LINT_FILE_TIMEOUT); not linted"
    ]
    assert path.read_bytes() == before
