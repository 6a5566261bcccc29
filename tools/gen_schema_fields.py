"""Compile schema.py's pydantic models into src/moe_lint/data/schema_fields.json.

python tools/gen_schema_fields.py          # rewrite the JSON
python tools/gen_schema_fields.py --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import argparse
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

from annotated_types import Ge, Le

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _generated import write_or_check

REPO = Path(__file__).resolve().parent.parent
OUTPUT = REPO / "src" / "moe_lint" / "data" / "schema_fields.json"


def _kinds(annotation: Any) -> tuple[list[str], list[str] | None]:
    """Type names for fastschema, and the choices of a Literal."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        kinds: list[str] = []
        choices: list[str] | None = None
        for arg in typing.get_args(annotation):
            sub, sub_choices = _kinds(arg)
            kinds += sub
            choices = sub_choices or choices
        return kinds, choices
    if origin is typing.Literal:
        return ["str"], [str(v) for v in typing.get_args(annotation)]
    if annotation is type(None):
        return ["null"], None
    if origin is list:
        (item,) = typing.get_args(annotation) or (Any,)
        name = {str: "list[str]", int: "list[int]"}.get(item, "list")
        return [name], None
    if origin is dict:
        return ["dict"], None
    simple = {bool: "bool", int: "int", float: "float", str: "str"}
    if annotation in simple:
        return [simple[annotation]], None
    return ["any"], None


def build() -> dict[str, Any]:
    from moe_lint.config.schema import SECTIONS, is_recipe_field

    sections: dict[str, Any] = {}
    for name, model in SECTIONS.items():
        fields: dict[str, Any] = {}
        for field_name, info in model.model_fields.items():
            kinds, choices = _kinds(info.annotation)
            entry: dict[str, Any] = {"types": kinds, "default": info.default}
            if is_recipe_field(name, field_name):
                entry["recipe"] = True
            if choices:
                entry["choices"] = choices
            for meta in info.metadata:
                if isinstance(meta, Ge):
                    entry["ge"] = meta.ge
                if isinstance(meta, Le):
                    entry["le"] = meta.le
            fields[field_name] = entry
        sections[name] = fields
    return {
        "generated_by": "tools/gen_schema_fields.py from src/moe_lint/config/schema.py",
        "sections": sections,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    ns = parser.parse_args(argv)
    text = json.dumps(build(), indent=1, sort_keys=True) + "\n"
    return write_or_check(OUTPUT, text, check=ns.check, command="python tools/gen_schema_fields.py")


if __name__ == "__main__":
    sys.exit(main())
