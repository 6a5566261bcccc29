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


def test_jobs_auto_means_every_cpu(tmp_path: Path) -> None:
    target = tmp_path / "c.yaml"
    shutil.copy(EXAMPLE, target)
    auto = run_cli([str(target), "--gpus", "256"], tmp_path, {"MOE_LINT_JOBS": "auto"})
    one = run_cli([str(target), "--gpus", "256"], tmp_path, {"MOE_LINT_JOBS": "1"})
    assert auto[:3] == one[:3] and auto[0] in (0, 1)


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
