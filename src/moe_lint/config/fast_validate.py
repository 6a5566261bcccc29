"""The validated fields of the field table, checked without pydantic: the clean path.

Both this module and the pydantic models of schema.py read the same entries of the field table
(config/fields.py, ``data/fields.json``). Most configs write every value with the right YAML
type; for those, checking exact types and bounds here gives the same result as pydantic at a
fraction of the start-up cost (importing pydantic and building the models costs more than a
whole lint). The first value that is not exactly right sends its section through pydantic,
which coerces or reports it precisely.
"""

from __future__ import annotations

from typing import Any

from moe_lint.config import fields


def _fits(value: Any, kind: str, field: dict[str, Any]) -> bool:
    if kind == "null":
        return value is None
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool) and _bounded(value, field)
    if kind == "float":
        return (isinstance(value, int | float) and not isinstance(value, bool)
                and _bounded(value, field))  # fmt: skip
    if kind == "str":
        return isinstance(value, str) and ("choices" not in field or value in field["choices"])
    if kind == "list[str]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "list[int]":
        return isinstance(value, list) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        )
    if kind == "list":
        return isinstance(value, list)
    if kind == "dict":
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)
    return kind == "any"


def _bounded(value: int | float, field: dict[str, Any]) -> bool:
    ge, le = field.get("ge"), field.get("le")
    return (ge is None or value >= ge) and (le is None or value <= le)


def fast_validate(section: str, data: dict[str, Any]) -> dict[str, Any] | None:
    """Typed values (defaults filled) when every written value is exactly right, else None."""
    out: dict[str, Any] = {}
    for name, field in fields.validated(section).items():
        if name not in data:
            out[name] = field.get("default")
            continue
        value = data[name]
        kinds = field["types"]
        if not any(_fits(value, kind, field) for kind in kinds):
            return None
        if "float" in kinds and "int" not in kinds and isinstance(value, int) and value is not None:
            value = float(value)  # pydantic's float field gives a float
        out[name] = value
    return out
