"""Pydantic models of the validated fields, built from the field table (config/fields.py).

The slow path of validation: normalize imports this module only for a section whose values
fast_validate cannot accept as written, so that pydantic coerces them (``"8"`` -> 8) or
explains precisely why Bridge would reject them. The models hold no facts of their own: each
field's types, default, bounds and choices come from ``data/fields.json`` (``tools/fields.yaml``),
the same entries fast_validate checks, so the two paths cannot disagree.

Recipe-provided fields (``recipe: true`` in the table) are validated like any other; normalize
then treats an unset one as UNKNOWN, never as its default.
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from moe_lint.config import fields

_SIMPLE: dict[str, Any] = {
    "null": type(None), "bool": bool, "int": int, "float": float, "str": str,
    "list[str]": list[str], "list[int]": list[int], "list": list[Any],
    "dict": dict[str, Any], "any": Any,
}  # fmt: skip


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow", validate_default=False, frozen=False)


def _annotation(entry: fields.Entry) -> Any:
    kinds: list[Any] = []
    for kind in entry["types"]:
        if kind == "str" and entry.get("choices"):
            kinds.append(Literal[tuple(entry["choices"])])
        else:
            kinds.append(_SIMPLE[kind])
    return kinds[0] if len(kinds) == 1 else Union[tuple(kinds)]  # noqa: UP007


def _model(name: str) -> type[_Section]:
    spec: dict[str, Any] = {}
    for key, entry in fields.validated(name).items():
        bounds = {b: entry[b] for b in ("ge", "le") if b in entry}
        info: Any = Field(default=entry.get("default"), **bounds)
        if entry.get("recipe"):
            info = Field(default=entry.get("default"), json_schema_extra={"recipe": True}, **bounds)
        spec[key] = (_annotation(entry), info)
    model: type[_Section] = create_model(
        f"{name.title().replace('_', '')}Section", __base__=_Section, **spec
    )
    return model


#: Section name -> typed model. Sections not listed are only checked for unknown keys.
SECTIONS: dict[str, type[_Section]] = {name: _model(name) for name in fields.validated_sections()}
