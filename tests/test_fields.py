"""The field table (config/fields.py, data/fields.json) and the one accessor, Config.value."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml

from conftest import REPO
from moe_lint.analysis.derive import Cluster, derive
from moe_lint.config import fields
from moe_lint.config.fields import UNKNOWN
from moe_lint.config.load import parse_text
from moe_lint.config.normalize import normalize
from moe_lint.engine.catalogue import field_exists
from moe_lint.engine.evaluate import Context, Evaluator
from moe_lint.engine.expr_compiler import compile_expr

#: Rules being rewritten as Python checks (issue 11): their expressions were left as they are,
#: so a second argument that the table's default makes dead may remain there until then.
_BEING_CONVERTED = frozenset(
    [
        "ATT006",
        "ATT019",
        "ATT021",
        "BAT001",
        "BAT006",
        "BAT009",
        "BAT010",
        "BAT011",
        "CP002",
        "CG001",
        "CG007",
        "CG010",
        "CG012",
        "CG013",
        "CG016",
        "DSP008",
        "DSP010",
        "DSP012",
        "DSP013",
        "MISC002",
        "MISC004",
        "MISC006",
        "MOE002",
        "MOE019",
        "MOE020",
        "MOE022",
        "MOE027",
        "OPT002",
        "OPT004",
        "OPT005",
        "OPT006",
        "OVL004",
        "PAR009",
        "PAR012",
        "PP002",
        "PP003",
        "PP004",
        "PP010",
        "PP011",
        "FP001",
        "FP002",
        "FP003",
        "FP004",
        "FP005",
        "FP007",
        "FP008",
        "FP009",
        "FP011",
        "RCP015",
        "RT002",
        "RT003",
    ]
)
_VALUE_CALL = re.compile(r"""value\((['"])([a-z_.]+)\1\s*,\s*([^(),]+?)\)""")
#: The same read in a Python check: ``r.value("f", x)`` or ``reads.value(ctx, "f", x)``.
_CHECK_VALUE_CALL = re.compile(r"""value\(\s*(?:ctx,\s*)?(['"])([\w.]+)\1\s*,\s*([^()]+?)\)""")


def _strings(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for value in node.values() for s in _strings(value)]
    if isinstance(node, list):
        return [s for value in node for s in _strings(value)]
    return []


def _evaluate(text: str, expression: str) -> object:
    cfg = normalize(parse_text(text))
    compiled = compile_expr(expression, "test", frozenset(), field_exists)
    return Evaluator(Context(config=cfg, facts=derive(cfg, Cluster()))).eval(compiled)


def test_unset_field_reads_the_framework_default() -> None:
    cfg = normalize(parse_text("model:\n  tensor_model_parallel_size: 2\n"))
    # megatron/core/model_parallel_config.py::ModelParallelConfig: cpu_offloading = False
    assert cfg.value("model.cpu_offloading") is False
    assert cfg.value("model.softmax_type") == "vanilla"
    assert cfg.value("model.tensor_model_parallel_size") == 2


def test_recipe_field_is_unknown_in_an_override_file_and_known_in_a_dump() -> None:
    override = normalize(parse_text("model:\n  tensor_model_parallel_size: 2\n"))
    assert override.value("model.num_layers") is UNKNOWN
    assert override.value("model.attention_dropout") is UNKNOWN
    written = normalize(parse_text("model:\n  num_layers: 4\n  attention_dropout: 0.0\n"))
    assert written.value("model.num_layers") == 4
    assert written.value("model.attention_dropout") == 0.0


def test_interpolation_is_unknown() -> None:
    cfg = normalize(parse_text("model:\n  cpu_offloading: ${oc.env:OFFLOAD}\n"))
    assert cfg.value("model.cpu_offloading") is UNKNOWN


def test_expression_semantics_of_unknown() -> None:
    text = "model:\n  tensor_model_parallel_size: 2\n"
    # the table's default wins over the rule's second argument
    assert _evaluate(text, "value('model.moe_router_load_balancing_type', 'x')") == "aux_loss"
    # the second argument is the rule's reading of UNKNOWN (a recipe decides num_layers)
    assert _evaluate(text, "value('model.num_layers', -1)") == -1
    assert _evaluate(text, "value('model.num_layers')") is None
    assert _evaluate(text, "known('model.num_layers')") is False
    assert _evaluate(text, "known('model.cpu_offloading')") is True


def test_validated_fields_have_types_and_defaults() -> None:
    for name in fields.validated_sections():
        for key, entry in fields.validated(name).items():
            assert "default" in entry, f"{name}.{key}"
            assert entry["types"], f"{name}.{key}"


def _dead(dotted: str, otherwise: str) -> bool:
    """A second argument is dead when the table gives the field a non-null default and no
    recipe decides it: the read then never is UNKNOWN, and an unset field reads the default."""
    entry = fields.entry(dotted) or {}
    if entry.get("recipe") or entry.get("default") is None:
        return False
    try:
        ast.literal_eval(otherwise)
    except ValueError:
        return False
    return True


def test_rules_state_no_default_the_table_has() -> None:
    """A second argument to value() for a field with a non-null table default is dead."""
    dead = []
    for path in sorted((REPO / "rules").glob("*.yaml")):
        for rule in yaml.safe_load(path.read_text(encoding="utf-8"))["rules"]:
            for match in _VALUE_CALL.finditer(" ".join(_strings(rule))):
                dotted, otherwise = match.group(2), match.group(3)
                if _dead(dotted, otherwise):
                    dead.append(f"{rule['code']}: value({dotted!r}, {otherwise})")
    assert not dead, dead


def test_python_checks_state_no_default_the_table_has() -> None:
    """The same for the Python checks' reads (engine/checks/reads.py has one meaning of
    value() for both): a literal the table already has as the field's default is a second
    copy of the default."""
    dead = []
    checks = REPO / "src" / "moe_lint" / "engine" / "checks"
    for path in sorted(checks.glob("*.py")):
        for match in _CHECK_VALUE_CALL.finditer(path.read_text(encoding="utf-8")):
            dotted, otherwise = match.group(2), match.group(3)
            if _dead(dotted, otherwise):
                dead.append(f"{path.name}: value({dotted!r}, {otherwise})")
    assert not dead, dead


def test_field_table_is_one_file() -> None:
    data = Path(fields.__file__).resolve().parent.parent / "data"
    assert not (data / "schema_fields.json").exists()
    assert not (data / "bridge_fields.json").exists()
