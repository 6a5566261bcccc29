"""rules/ ships inside the wheel and is found from a wheel install and from a source checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

PROBE = (
    "import moe_lint, moe_lint.engine.catalogue as c; "
    # Served from the generated module: no pack is read or compiled in this process.
    "compiled = []; c.load_pack = lambda path, checks: compiled.append(path) or []; "
    # Whether the staleness digest of packs and engine was computed (a checkout only).
    "hashed = []; h = c.shipped_hash; c.shipped_hash = lambda *a: hashed.append(1) or h(*a); "
    "print(moe_lint.__file__); print(c.builtin_rules_dir()); "
    "print(len(c.load_catalogue(plugins=False).rules)); "
    "print(c.shipped_module() is not None and compiled == []); print(bool(hashed))"
)


def _probe(pythonpath: Path, cwd: Path) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return proc.stdout.splitlines()


def test_source_checkout_finds_top_level_rules(tmp_path: Path) -> None:
    module, rules_dir, count, precompiled, hashed = _probe(REPO / "src", tmp_path)
    assert Path(module).is_relative_to(REPO / "src")
    assert Path(rules_dir) == REPO / "rules"
    assert int(count) >= 30
    assert precompiled == "True"
    assert hashed == "True"  # a checkout can be edited: the generated module is checked


@pytest.mark.slow
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
    assert "moe_lint/data/fields.json" in names
    # The build hook compiled the catalogue (once; the checkout's copy is not packed besides).
    assert names.count("moe_lint/engine/_compiled_rules.py") == 1
    generated = zipfile.ZipFile(wheel).read("moe_lint/engine/_compiled_rules.py").decode()
    assert generated == (REPO / "src" / "moe_lint" / "engine" / "_compiled_rules.py").read_text()
    assert "moe_lint/data/bridge_classes.json" in names
    # The CI step scripts: the GitLab template runs them from the installed package.
    assert {"moe_lint/ci/gitlab.sh", "moe_lint/ci/changed-files.sh"} <= set(names)
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
    module, rules_dir, count, precompiled, hashed = _probe(target, tmp_path)
    assert Path(module).is_relative_to(target)
    assert Path(rules_dir) == target / "moe_lint" / "rules"
    assert int(count) >= 30
    assert precompiled == "True"
    assert hashed == "False"  # generated from the very files it ships with: no digest per run
    (entry_points,) = target.glob("moe_lint-*.dist-info/entry_points.txt")
    assert "moe-lint = moe_lint.cli:run" in entry_points.read_text()
    env = {**os.environ, "PYTHONPATH": str(target), "HOME": str(tmp_path / "home")}
    env = {k: v for k, v in env.items() if not k.startswith(("MOE_LINT", "XDG_"))}
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
    assert not (tmp_path / "home").exists()  # a cold run of the installed wheel caches nothing


@pytest.mark.slow
def test_wheel_built_from_a_stale_checkout_ships_fresh_rules(tmp_path: Path) -> None:
    """The build hook regenerates the module from the packs being packed, not the stale copy."""
    import shutil

    tree = tmp_path / "tree"
    for name in ("src", "rules", "tools"):
        shutil.copytree(REPO / name, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "hatch_build.py", "README.md"):
        shutil.copy(REPO / name, tree / name)
    pack = tree / "rules" / "parallel.yaml"
    pack.write_text(pack.read_text().replace("no data-parallel headroom", "NO DP HEADROOM"))
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(wheel_dir), str(tree)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    (wheel,) = wheel_dir.glob("moe_lint-*.whl")
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    *_, precompiled, _ = _probe(target, tmp_path)
    assert precompiled == "True"
    generated = (target / "moe_lint" / "engine" / "_compiled_rules.py").read_text()
    assert "NO DP HEADROOM" in generated and "no data-parallel headroom" not in generated
