"""Published memory measurements (tests/data/memory-points/): each reconstructed config lints and
its memory estimate builds, the index and the files agree, and the index's units and statistics
come from a closed vocabulary. Accuracy against the measured values is the memory model's test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import DATA, run_main

POINTS_DIR = DATA / "memory-points"
INDEX = POINTS_DIR / "points.yaml"

UNITS = {"GB", "GiB", "MiB"}
STATS = {
    "max_allocated",
    "max_reserved",
    "device",
    "peak_unnamed",
    "allocated_unnamed",
    "reserved_unnamed",
    "allocated_at_oom",
    "oom_request",
}
SCOPES = {"rank0", "max_over_ranks", "not_stated"}
OUTCOMES = {"ran", "oom"}
RECONSTRUCTION = {"complete", "partial", "insufficient"}


def _index() -> list[dict[str, Any]]:
    points: list[dict[str, Any]] = yaml.safe_load(INDEX.read_text(encoding="utf-8"))["points"]
    return points


POINTS = _index()


def _known_models() -> set[str]:
    from moe_lint.config.settings import model_presets

    return set(model_presets())


def _skip_without_preset(point: dict[str, Any]) -> None:
    if point["model"] not in _known_models():
        pytest.skip(f"architecture preset {point['model']!r} is not in models.yaml yet")


def test_every_point_has_a_file_and_every_file_a_point() -> None:
    files = {p.name for p in POINTS_DIR.glob("*.yaml")} - {INDEX.name}
    listed = [p["file"] for p in POINTS]
    assert len(listed) == len(set(listed)), "duplicate file in the index"
    assert set(listed) == files
    assert all(p["file"] == f"{p['id']}.yaml" for p in POINTS)


def test_index_uses_the_closed_vocabularies() -> None:
    for point in POINTS:
        assert point["outcome"]["kind"] in OUTCOMES, point["id"]
        assert point["reconstruction"] in RECONSTRUCTION, point["id"]
        assert isinstance(point["historical"], bool)
        assert point["sources"], point["id"]
        if point["outcome"]["kind"] == "ran":
            assert point["measurements"], f"{point['id']}: a run without a measurement"
        for m in point["measurements"]:
            assert m["unit"] in UNITS, (point["id"], m)
            assert m["stat"] in STATS, (point["id"], m)
            assert m["scope"] in SCOPES, (point["id"], m)
            assert m["value"] is not None or m.get("range"), (point["id"], m)


@pytest.mark.parametrize("point", POINTS, ids=lambda p: p["id"])
def test_directive_matches_the_index(point: dict[str, Any]) -> None:
    from moe_lint.config.settings import parse_directives

    path = POINTS_DIR / point["file"]
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# moe-lint: "), "the directive must be the first line"
    directive = parse_directives(first, str(path))
    assert directive["gpus"] == str(point["num_gpus"])
    assert directive["gpu"] == point["gpu"]
    assert directive["model"] == point["model"]
    te = point["te_version"]
    assert directive.get("transformer-engine") == (te["value"] if te else None)
    mc = point["megatron_core_version"]
    assert directive.get("megatron-core") == (mc["value"] if mc else None)


@pytest.mark.parametrize("point", POINTS, ids=lambda p: p["id"])
def test_point_lints_without_input_error(
    point: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    _skip_without_preset(point)
    code, _, err = run_main(capsys, str(POINTS_DIR / point["file"]), "--no-cache", "-q")
    assert code != 2, err


@pytest.mark.parametrize("point", POINTS, ids=lambda p: p["id"])
def test_memory_estimate_builds(point: dict[str, Any]) -> None:
    """The estimate runs as lint builds it: directive -> settings -> normalize -> derive."""
    from moe_lint.analysis.memory_facts import run_estimate
    from moe_lint.config.load import load_file
    from moe_lint.config.memory_settings import memory_settings
    from moe_lint.config.settings import GPU_ALIASES, Settings
    from moe_lint.linting import prepare

    _skip_without_preset(point)
    path = POINTS_DIR / point["file"]
    cfg, facts, settings = prepare(load_file(str(path)), Settings(), [], {})
    assert settings.gpu == GPU_ALIASES[point["gpu"]]
    assert facts.values["world"].value == point["num_gpus"]
    est = run_estimate(cfg, facts, memory_settings(settings.memory, str(path))[0])
    assert est.capacity_gib is not None
    assert est.worst.allocated_gib > 0
    assert len(est.stages) == facts.values["pp"].value


def _files() -> list[Path]:
    return sorted(p for p in POINTS_DIR.glob("*.yaml") if p != INDEX)


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.stem)
def test_every_value_cites_its_source(path: Path) -> None:
    """Each config value carries a comment saying where it comes from."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("#") or line.rstrip().endswith(":"):
            continue
        assert "  # " in line, f"{path.name}:{number}: value without a source comment"
