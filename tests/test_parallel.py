"""Many files: the forked workers give exactly the output of one process, in file order."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import CORPUS, REPO


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
            [sys.executable, "-m", "moe_lint", *files, "--format", "json"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )

    one, two = run("1"), run("2")
    assert one.returncode == two.returncode == 2  # the corpus holds files refused as bad input
    assert one.stdout == two.stdout and one.stderr == two.stderr
    assert one.stdout.count('"code"') > 100
