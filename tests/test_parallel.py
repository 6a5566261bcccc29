"""Many files: the forked workers give exactly the output of one process, in file order."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import CORPUS, REPO

#: Each test forks worker processes (and waits out their time limits): slow.
pytestmark = pytest.mark.slow


def test_parallel_equals_sequential(tmp_path: Path) -> None:
    sources = sorted((CORPUS / "megatron-bridge").rglob("*.yaml"))
    sources += sorted((REPO / "examples").glob("*.yaml"))
    for i in range(120):
        shutil.copy(sources[i % len(sources)], tmp_path / f"c{i:03d}.yaml")
    files = sorted(str(p) for p in tmp_path.glob("*.yaml"))

    def run(jobs: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "MOE_LINT_JOBS": jobs}
        env.pop("MOE_LINT_STRICT", None)
        return subprocess.run(
            [sys.executable, "-m", "moe_lint", *files, "--format", "json", "--show-infos"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )

    one, two = run("1"), run("2")
    assert one.returncode == two.returncode == 2  # the corpus holds files refused as bad input
    assert one.stdout == two.stdout and one.stderr == two.stderr
    assert one.stdout.count('"code"') > 100


# Fault injection: lint_many's ``convert`` runs inside the worker after the file is linted, so a
# convert that SIGKILLs its own process is a real worker death (what the OOM killer does), and
# one that sleeps is a real stuck worker.


def _many(tmp_path: Path, count: int = 60) -> list[str]:
    example = (REPO / "examples" / "dsv3_128k_h100.yaml").read_text()
    paths = []
    for i in range(count):
        path = tmp_path / f"f{i:03d}.yaml"
        path.write_text(example.replace("global_batch_size:", f"# file {i}\n  global_batch_size:"))
        paths.append(str(path))
    return paths


def _lint_many(paths: list[str], convert: Any) -> list[Any]:
    from moe_lint.config.settings import Settings
    from moe_lint.engine.catalogue import load_catalogue
    from moe_lint.workers import lint_many

    return lint_many(paths, load_catalogue(), Settings(), [], {"gpus": "256"}, convert)


def _summary(results: list[Any]) -> list[tuple[str, str | None, list[str]]]:
    return [(r.path, r.error, [f.code for f in r.findings]) for r in results]


@pytest.fixture
def two_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOE_LINT_JOBS", "2")


def test_dead_worker_is_replaced_and_its_file_retried(
    tmp_path: Path, two_jobs: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _many(tmp_path)
    victim, marker = paths[17], tmp_path / "killed-once"
    parent = os.getpid()

    def die_once(result: Any) -> Any:
        if result.path == victim and not marker.exists():
            assert os.getpid() != parent  # a worker, never the test process
            marker.write_text("x")
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    got = _lint_many(paths, die_once)
    assert marker.exists()  # the worker really died
    monkeypatch.setenv("MOE_LINT_JOBS", "1")
    assert _summary(got) == _summary(_lint_many(paths, lambda r: r))
    assert [r.path for r in got] == paths
    assert all(r.error is None and r.findings for r in got)


def test_file_that_kills_two_workers_gets_one_error(tmp_path: Path, two_jobs: None) -> None:
    paths = _many(tmp_path)
    victims = {paths[0], paths[41]}
    parent = os.getpid()

    def always_die(result: Any) -> Any:
        if result.path in victims and os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    got = _lint_many(paths, always_die)
    assert [r.path for r in got] == paths
    errors = {r.path: r.error for r in got if r.error is not None}
    assert set(errors) == victims
    for error in errors.values():
        assert "died 2 times" in error and "SIGKILL" in error and "\n" not in error
    assert all(r.findings for r in got if r.path not in victims)


def test_stuck_worker_hits_the_file_time_limit(
    tmp_path: Path, two_jobs: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOE_LINT_FILE_TIMEOUT", "1.5")
    paths = _many(tmp_path)
    stuck = paths[30]

    def hang(result: Any) -> Any:
        if result.path == stuck:
            time.sleep(3600)
        return result

    start = time.monotonic()
    got = _lint_many(paths, hang)
    assert time.monotonic() - start < 30
    assert [r.path for r in got] == paths
    bad = [r for r in got if r.error is not None]
    assert [r.path for r in bad] == [stuck]
    assert "longer than 1.5 s" in (bad[0].error or "")
    assert "MOE_LINT_FILE_TIMEOUT" in (bad[0].error or "")


def test_stuck_worker_through_the_cli(tmp_path: Path) -> None:
    """End to end: one line naming the file, exit 2, the other files still reported."""
    paths = _many(tmp_path, 50)
    env = {**os.environ, "MOE_LINT_JOBS": "2", "MOE_LINT_FILE_TIMEOUT": "0.001"}
    env.pop("MOE_LINT_STRICT", None)
    proc = subprocess.run(
        [sys.executable, "-m", "moe_lint", *paths, "--gpus", "256", "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert lines and all("per-file limit (MOE_LINT_FILE_TIMEOUT)" in line for line in lines)
    assert all(line.split(": error: ")[0] in paths for line in lines)
