"""The long fuzz script (``bench/fuzz.py``) runs, finds nothing on a short run, and reports
what the closing notes quote (cases, cases/s, failures by kind). The long run itself is not a
test: ``python bench/fuzz.py --seconds 600``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO

#: Each test runs bench/fuzz.py over generated cases in its own process: slow.
pytestmark = pytest.mark.slow

FUZZ = [sys.executable, str(REPO / "bench" / "fuzz.py")]
SHORT = ["--cases", "120", "--seed", "3", "--fix-every", "4"]
IMPOSSIBLE = ["--cases", "3", "--case-seconds", "0.000001"]


def _fuzz(tmp_path: Path, *args: str, timeout: int = 300) -> tuple[dict[str, Any], int, str]:
    """Run bench/fuzz.py with ``args`` (failing inputs saved under ``tmp_path``): its JSON
    report, exit code and stderr."""
    proc = subprocess.run(
        [*FUZZ, "--save", str(tmp_path), *args, "--json"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return json.loads(proc.stdout), proc.returncode, proc.stderr


def test_short_fuzz_run_finds_nothing(tmp_path: Path) -> None:
    report, code, err = _fuzz(tmp_path, *SHORT)
    assert report["cases"] == 120 and report["seed_files"] > 100
    assert report["failures"] == 0, report["examples"]
    assert code == 0, err
    assert report["cases_per_second"] > 0 and report["slowest_case_cpu_s"] < 2
    assert not list(tmp_path.iterdir())  # nothing saved: no failing input


def test_fuzz_script_reports_a_failure(tmp_path: Path) -> None:
    """The script's oracle can fail: with a CPU limit no case can meet, every case is 'slow'."""
    report, code, _ = _fuzz(tmp_path, *IMPOSSIBLE, timeout=120)
    assert code == 1 and report["by_kind"] == {"slow": 3}
    assert len(list(tmp_path.glob("case-*.yaml"))) == 3


def test_short_hf_fuzz_run_finds_nothing(tmp_path: Path) -> None:
    """``--hf``: mutated HF config.json files through models, check (--model and beside the
    file), estimate and the planner's model loading, a whole plan on one case in twenty."""
    report, code, err = _fuzz(
        tmp_path, "--hf", "--cases", "60", "--seed", "5", "--plan-every", "20", timeout=600
    )
    assert report["mode"] == "hf" and report["cases"] == 60 and report["seed_files"] >= 20
    assert report["failures"] == 0, report["examples"]
    assert code == 0, err
    assert not list(tmp_path.iterdir())


def test_hf_fuzz_script_reports_a_failure(tmp_path: Path) -> None:
    """The --hf oracle can fail too: no command meets a CPU limit of a microsecond."""
    report, code, _ = _fuzz(tmp_path, "--hf", *IMPOSSIBLE, timeout=120)
    assert code == 1 and report["by_kind"] == {"slow": 3}
    assert len(list(tmp_path.glob("case-*.json"))) == 3


@pytest.mark.parametrize(
    ("target", "cases"),
    [("settings", 60), ("packs", 30), ("scripts", 60), ("model-args", 60), ("plan", 200)],
)
def test_other_targets_find_nothing(tmp_path: Path, target: str, cases: int) -> None:
    """The mutators of what else a pull request controls (issue 22: pyproject settings, rule
    packs, launch scripts, MODEL_ARGS files, plan command lines) run and find nothing on a
    short run of each; the long runs are ``python bench/fuzz.py --target T --cases 8000``."""
    report, code, err = _fuzz(
        tmp_path, "--target", target, "--cases", str(cases), "--seed", "7", "--plan-every", "100"
    )
    assert report["target"] == target and report["cases"] == cases
    assert report["failures"] == 0, report["examples"]
    assert code == 0, err
    if target in ("scripts", "model-args"):
        assert report["seed_files"] > 20
    assert not list(tmp_path.iterdir())
