"""moe-lint's one mixed-precision recipe table (``moe_lint.config.mixed_precision``) is Bridge's:
every ``@register``-ed recipe of Bridge 0.6.2 (``tests/data/bridge-source/mixed_precision.py``,
read with ``ast``) is known, with every field its function sets, and the defaults are
``MixedPrecisionConfig``'s. ``normalize`` and the runtime checks both read this table, so a
recipe name means the same to every rule (they disagreed on the nanov2 recipe)."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from conftest import DATA, run_lint
from moe_lint.config.mixed_precision import MP_DEFAULTS, MP_RECIPES, recipe_values
from moe_lint.engine.catalogue import Catalogue

SOURCE = ast.parse((DATA / "bridge-source" / "mixed_precision.py").read_text(encoding="utf-8"))
_DTYPES = {"bfloat16": "bfloat16", "half": "float16", "float16": "float16", "float32": "float32"}


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        assert node.value.id == "torch", ast.dump(node)
        return _DTYPES[node.attr]
    return ast.literal_eval(node)


def _bridge_recipes() -> dict[str, dict[str, Any]]:
    """Each registered recipe -> every field it sets (following ``cfg = other_recipe()``)."""
    functions = {f.name: f for f in SOURCE.body if isinstance(f, ast.FunctionDef)}

    def fields(name: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for stmt in ast.walk(functions[name]):
            if (
                isinstance(stmt, ast.Call)
                and getattr(stmt.func, "id", "") == "MixedPrecisionConfig"
            ):
                out.update({kw.arg: _literal(kw.value) for kw in stmt.keywords if kw.arg})
        for stmt in functions[name].body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
                base = getattr(stmt.value.func, "id", "")
                if base in functions:
                    out.update(fields(base))
            elif isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Attribute):
                out[stmt.targets[0].attr] = _literal(stmt.value)
        return out

    registered = [
        f.name
        for f in functions.values()
        if any(getattr(d, "id", "") == "register" for d in f.decorator_list)
    ]
    return {name: fields(name) for name in registered}


def _bridge_defaults() -> dict[str, Any]:
    cls = next(
        c for c in SOURCE.body if isinstance(c, ast.ClassDef) and c.name == "MixedPrecisionConfig"
    )
    out = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
            out[stmt.target.id] = _literal(stmt.value)
    return out


BRIDGE = _bridge_recipes()


def test_every_bridge_recipe_is_known() -> None:
    assert len(BRIDGE) >= 15
    assert set(BRIDGE) == set(MP_RECIPES)


@pytest.mark.parametrize("name", sorted(BRIDGE))
def test_recipe_fields_are_bridges(name: str) -> None:
    ours = recipe_values(name)
    assert ours is not None
    for field, value in BRIDGE[name].items():
        assert ours[field] == value, (name, field)


def test_defaults_are_bridges() -> None:
    bridge = _bridge_defaults()
    # fp8_param / fp4_param default to None and follow *_param_gather in __post_init__.
    for field, value in bridge.items():
        if field in ("fp8_param", "fp4_param"):
            continue
        assert MP_DEFAULTS[field] == value, field


@pytest.mark.parametrize(
    ("recipe", "fp8_recipe"),
    [
        ("nanov2_bf16_with_fp8_current_scaling_mixed", "blockwise"),
        ("bf16_with_fp8_current_scaling_mixed", "tensorwise"),
        ("bf16-with-mxfp8-mixed", "mxfp8"),
    ],
)
def test_normalize_reads_the_same_table(catalogue: Catalogue, recipe: str, fp8_recipe: str) -> None:
    result = run_lint(catalogue, f"mixed_precision: {recipe}\nmodel:\n  num_layers: 8\n")
    assert result.error is None
    assert not [f for f in result.findings if f.code == "SCH002"], result.findings
    from moe_lint.config.load import parse_text
    from moe_lint.config.settings import Settings
    from moe_lint.linting import prepare

    cfg, _, _ = prepare(parse_text(f"mixed_precision: {recipe}\n"), Settings(), [], {})
    assert cfg.values["model.fp8_recipe"] == fp8_recipe


def test_a_recipe_bridge_0_6_2_registers_is_not_unknown(catalogue: Catalogue) -> None:
    """``nemotron_3_ultra_bf16_with_nvfp4_mixed`` (new in 0.6.2) was an SCH002 error."""
    result = run_lint(catalogue, "mixed_precision: nemotron_3_ultra_bf16_with_nvfp4_mixed\n")
    assert not [f for f in result.findings if f.code == "SCH002"], result.findings
