"""The JSON Schema of Bridge's config (output/json_schema.py, issue 27): a valid draft 2020-12
schema from the field table that no config the framework accepts fails, and that still says
what the field table knows (types, bounds, choices, defaults, sources)."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from conftest import REPO
from moe_lint.config import fields
from moe_lint.config.settings import Settings
from moe_lint.engine.catalogue import shipped_catalogue
from moe_lint.linting import lint_path
from moe_lint.output.json_schema import bridge_schema


class _YamlAsEditorsRead(yaml.SafeLoader):
    """YAML as yaml-language-server (YAML 1.2) and Bridge's OmegaConf loader read it: ``1e-4``
    is a float (omegaconf/_utils.py::get_yaml_loader adds this resolver to PyYAML's)."""


_YamlAsEditorsRead.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


@cache
def _validator() -> Any:
    schema = bridge_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _valid_configs() -> list[Path]:
    """Every corpus and example config moe-lint reads without an input error."""
    files = sorted((REPO / "tests" / "data" / "corpus").rglob("*.yaml"))
    files += sorted((REPO / "examples").glob("*.yaml"))
    return files


@pytest.mark.slow
def test_no_config_the_framework_accepts_fails_the_schema() -> None:
    catalogue = shipped_catalogue()
    checked, failed = 0, []
    for path in _valid_configs():
        result = lint_path(str(path), catalogue, Settings(), [], {})
        if result.error is not None or result.notice is not None:
            continue  # not a Bridge config, or one moe-lint itself rejects (exit 2)
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_YamlAsEditorsRead)
        if not isinstance(data, dict):
            continue
        checked += 1
        errors = list(_validator().iter_errors(data))
        if errors:
            failed.append(f"{path.relative_to(REPO)}: {errors[0].message[:120]}")
    assert checked >= 150, checked  # the corpus: 100 full dumps and the override files
    assert failed == []


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("model:\n  tensor_model_parallel_size: eight\n", "tensor_model_parallel_size"),
        ("model:\n  context_parallel_size: 0\n", "context_parallel_size"),
        ("model:\n  moe_token_dispatcher_type: deepep\n", "moe_token_dispatcher_type"),
        ("train:\n  micro_batch_size: 1.5\n", "micro_batch_size"),
    ],
)
def test_a_wrong_type_bound_or_choice_fails_it(text: str, needle: str) -> None:
    data = yaml.load(text, Loader=_YamlAsEditorsRead)
    errors = list(_validator().iter_errors(data))
    assert errors and needle in {str(p[-1]) for p in _paths(errors) if p}


def _paths(errors: list[Any]) -> list[list[Any]]:
    """Every path an error or its sub-errors (of an anyOf) point at."""
    out = []
    for error in errors:
        out.append(list(error.absolute_path))
        out += _paths(list(error.context or []))
    return out


def test_interpolations_and_bridge_target_forms_pass() -> None:
    data = {
        "model": {
            "tensor_model_parallel_size": "${oc.env:TP}",
            "moe_router_dtype": {"_target_": "torch.float32", "_call_": False},
        },
        "mixed_precision": "bf16_mixed",
        "ft": None,
    }
    assert list(_validator().iter_errors(data)) == []


def test_every_field_of_the_table_is_described_with_its_default_and_source() -> None:
    """The schema is the field table, for completion and hover: every field, its default and
    where the framework defines it."""
    schema = bridge_schema()
    table = fields.table()["sections"]
    model = schema["properties"]["model"]["anyOf"][0]["properties"]
    assert set(table["model"]) <= set(model)
    cp = model["context_parallel_size"]
    assert cp["default"] == 1 and "ModelParallelConfig" in cp["description"]
    integer = next(o for o in cp["anyOf"] if o.get("type") == "integer")
    assert integer["minimum"] == 1
    dispatcher = model["moe_token_dispatcher_type"]
    assert (
        next(o for o in dispatcher["anyOf"] if "enum" in o)["enum"]
        == (table["model"]["moe_token_dispatcher_type"]["choices"])
    )
    nested = schema["properties"]["dataset"]["anyOf"][0]["properties"]["hf_dataset"]
    assert nested["anyOf"][0]["type"] == "object"


def test_schema_command_writes_the_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from conftest import run_main

    target = tmp_path / "bridge.schema.json"
    code, out, err = run_main(capsys, "schema", "-o", str(target))
    assert code == 0 and out == "" and err == ""
    assert json.loads(target.read_text(encoding="utf-8")) == bridge_schema()
    code, out, _ = run_main(capsys, "schema", "--bridge", "0.5.0")
    assert code == 0 and "asked for Bridge 0.5.0" in json.loads(out)["description"]
    code, _, err = run_main(capsys, "schema", "-o", str(tmp_path / "missing" / "s.json"))
    assert code == 2 and len(err.strip().splitlines()) == 1
