"""The long fuzz script (``bench/fuzz.py``) runs, finds nothing on a short run, and reports
what the closing notes quote (cases, cases/s, failures by kind). The long run itself is not a
test: ``python bench/fuzz.py --seconds 600``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO

FUZZ = [sys.executable, str(REPO / "bench" / "fuzz.py")]
SHORT = ["--cases", "120", "--seed", "3", "--fix-every", "4", "--json"]
IMPOSSIBLE = ["--cases", "3", "--case-seconds", "0.000001", "--json"]


def test_short_fuzz_run_finds_nothing(tmp_path: Path) -> None:
    proc = subprocess.run(
        [*FUZZ, "--save", str(tmp_path), *SHORT],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    report = json.loads(proc.stdout)
    assert report["cases"] == 120 and report["seed_files"] > 100
    assert report["failures"] == 0, report["examples"]
    assert proc.returncode == 0, proc.stderr
    assert report["cases_per_second"] > 0 and report["slowest_case_cpu_s"] < 2
    assert not list(tmp_path.iterdir())  # nothing saved: no failing input


def test_fuzz_script_reports_a_failure(tmp_path: Path) -> None:
    """The script's oracle can fail: with a CPU limit no case can meet, every case is 'slow'."""
    proc = subprocess.run(
        [*FUZZ, "--save", str(tmp_path), *IMPOSSIBLE],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["by_kind"] == {"slow": 3}
    assert len(list(tmp_path.glob("case-*.yaml"))) == 3


def test_short_hf_fuzz_run_finds_nothing(tmp_path: Path) -> None:
    """``--hf``: mutated HF config.json files through models, check (--model and beside the
    file), estimate and the planner's model loading, a whole plan on one case in twenty."""
    proc = subprocess.run(
        [*FUZZ, "--hf", "--save", str(tmp_path), "--cases", "60", "--seed", "5",
         "--plan-every", "20", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )  # fmt: skip
    report = json.loads(proc.stdout)
    assert report["mode"] == "hf" and report["cases"] == 60 and report["seed_files"] == 20
    assert report["failures"] == 0, report["examples"]
    assert proc.returncode == 0, proc.stderr
    assert not list(tmp_path.iterdir())


def test_hf_fuzz_script_reports_a_failure(tmp_path: Path) -> None:
    """The --hf oracle can fail too: no command meets a CPU limit of a microsecond."""
    proc = subprocess.run(
        [*FUZZ, "--hf", "--save", str(tmp_path), *IMPOSSIBLE],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["by_kind"] == {"slow": 3}
    assert len(list(tmp_path.glob("case-*.json"))) == 3


def test_settings_and_pack_fuzzing_finds_nothing(tmp_path: Path) -> None:
    """The pyproject-settings and rule-pack mutators (issue 22) run and find nothing on a short
    run of each; the long run is ``python bench/fuzz.py --target all --cases 8000``."""
    for target, cases in (("settings", 60), ("packs", 30)):
        proc = subprocess.run(
            [*FUZZ, "--save", str(tmp_path), "--target", target, "--cases", str(cases),
             "--seed", "5", "--json"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )  # fmt: skip
        report = json.loads(proc.stdout)
        assert report["target"] == target and report["cases"] == cases
        assert report["failures"] == 0, report["examples"]
        assert proc.returncode == 0, proc.stderr
    assert not list(tmp_path.iterdir())


def test_script_model_args_and_plan_fuzzing_finds_nothing(tmp_path: Path) -> None:
    """The launch-script, MODEL_ARGS and plan-argument mutators (issue 22) run and find nothing
    on a short run of each; the long run is ``python bench/fuzz.py --target scripts --cases
    8000`` (and model-args, plan)."""
    for target, cases in (("scripts", 60), ("model-args", 60), ("plan", 200)):
        proc = subprocess.run(
            [*FUZZ, "--save", str(tmp_path), "--target", target, "--cases", str(cases),
             "--seed", "7", "--plan-every", "100", "--json"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )  # fmt: skip
        report = json.loads(proc.stdout)
        assert report["target"] == target and report["cases"] == cases
        assert report["failures"] == 0, report["examples"]
        assert proc.returncode == 0, proc.stderr
        if target != "plan":
            assert report["seed_files"] > 20
    assert not list(tmp_path.iterdir())
