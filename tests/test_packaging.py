"""rules/ ships inside the wheel and is found from a wheel install and from a source checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from conftest import REPO

PROBE = (
    "import moe_lint, moe_lint.catalogue as c; "
    "print(moe_lint.__file__); print(c.builtin_rules_dir()); "
    "print(len(c.load_catalogue(plugins=False).rules))"
)


def _probe(pythonpath: Path, cwd: Path) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return proc.stdout.splitlines()


def test_source_checkout_finds_top_level_rules(tmp_path: Path) -> None:
    module, rules_dir, count = _probe(REPO / "src", tmp_path)
    assert Path(module).is_relative_to(REPO / "src")
    assert Path(rules_dir) == REPO / "rules"
    assert int(count) >= 30


def test_wheel_contains_and_uses_rules(tmp_path: Path) -> None:
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheel_dir),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheel_dir.glob("moe_lint-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    packs = sorted(p.name for p in (REPO / "rules").glob("*.yaml"))
    assert sorted(Path(n).name for n in names if n.startswith("moe_lint/rules/")) == packs
    assert "moe_lint/data/bridge_fields.json" in names
    assert "moe_lint/data/bridge_classes.json" in names
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    module, rules_dir, count = _probe(target, tmp_path)
    assert Path(module).is_relative_to(target)
    assert Path(rules_dir) == target / "moe_lint" / "rules"
    assert int(count) >= 30
    env = {**os.environ, "PYTHONPATH": str(target)}
    example = REPO / "examples" / "dsv3_128k_h100_broken.yaml"
    proc = subprocess.run(
        [sys.executable, "-m", "moe_lint", str(example), "--format", "concise"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1 and "RCP003" in proc.stdout
