"""A JSON Schema (draft 2020-12) of Megatron Bridge's config, made from the one field table.

``moe-lint schema`` writes it so that yaml-language-server (VS Code, Neovim, Helix, ...) gives
completion, hover text and type errors for a Bridge YAML file that starts with
``# yaml-language-server: $schema=PATH``. Every section and field comes from
``data/fields.json`` (config/fields.py): its type, framework default, bounds, choices and the
source that defines it. The schema is only as strict as the framework: a value Bridge accepts
never fails it.

- A field moe-lint validates (``types`` in the table) gets exactly those types; any other
  field the JSON type its dumps show, or null (the dumps do not say which fields may be null).
- Every typed field also takes an OmegaConf interpolation (``${model.seq_length}``) and the
  ``_target_`` form Bridge's own dumps write for objects (``{_target_: torch.bfloat16, _call_:
  false}``).
- Unknown keys are allowed: reporting them, with a "did you mean", is moe-lint's SCH001, and a
  schema that rejected them would fail every config of a newer Bridge.
- ``mixed_precision`` is a recipe name or the config's fields (Bridge accepts both).
"""

from __future__ import annotations

from typing import Any

from moe_lint.config import fields

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: The Bridge release the field table was read from (tools/gen_bridge_fields.py).
TABLE_BRIDGE = "0.6.2"
#: An OmegaConf interpolation, which Bridge resolves before it validates the value.
_INTERPOLATION = {"type": "string", "pattern": r"\$\{[^}]*\}"}
#: Bridge's dump form of a value that is an object (a dtype, a function, a class):
#: ``{_target_: torch.float32, _call_: false}``, which it instantiates on load.
_TARGET_FORM = {"type": "object", "required": ["_target_"]}
#: The table's kinds as JSON Schema types (YAML 1.2, as yaml-language-server reads values).
_KINDS: dict[str, dict[str, Any]] = {
    "bool": {"type": "boolean"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "str": {"type": "string"},
    "null": {"type": "null"},
    "dict": {"type": "object"},
    "list": {"type": "array"},
    "list[str]": {"type": "array", "items": {"type": "string"}},
    "list[int]": {"type": "array", "items": {"type": "integer"}},
}


def field_schema(entry: dict[str, Any]) -> dict[str, Any]:
    """One field's schema: its types (or any value), bounds, choices, default, description."""
    kinds = list(entry.get("types") or [])
    if not kinds and entry.get("type") not in (None, "any"):
        kinds = [entry["type"], "null"]  # from the dumps: the type seen, or unset
    out: dict[str, Any] = {}
    if kinds:
        options = [_typed(kind, entry) for kind in kinds if kind in _KINDS]
        if len(options) == len(kinds):  # every kind known: constrain, else leave it open
            out["anyOf"] = [*options, _INTERPOLATION, _TARGET_FORM]
    if "default" in entry and _jsonable(entry["default"]):
        out["default"] = entry["default"]
    out["description"] = _description(entry)
    return out


def _typed(kind: str, entry: dict[str, Any]) -> dict[str, Any]:
    schema = dict(_KINDS[kind])
    if kind in ("int", "float"):
        if entry.get("ge") is not None:
            schema["minimum"] = entry["ge"]
        if entry.get("le") is not None:
            schema["maximum"] = entry["le"]
    if kind == "str" and entry.get("choices"):
        schema["enum"] = list(entry["choices"])
    return schema


def _description(entry: dict[str, Any]) -> str:
    parts = []
    source = entry.get("source")
    if source:
        parts.append(f"Defined by {str(source).split(':', 1)[-1]}.")
    if "default" in entry:
        parts.append(f"Default: {entry['default']!r}.")
    if entry.get("framework_default") is not None:
        parts.append(f"When unset, the framework uses {entry['framework_default']!r}.")
    if entry.get("recipe"):
        parts.append("Recipes and model providers usually set it.")
    if entry.get("choices"):
        parts.append(f"One of: {', '.join(map(str, entry['choices']))}.")
    return " ".join(parts) or "A Megatron Bridge config field."


def _jsonable(value: Any) -> bool:
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list):
        return all(_jsonable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _jsonable(v) for k, v in value.items())
    return False


def _section(name: str, sections: dict[str, Any]) -> dict[str, Any]:
    """A section and the sections nested in it (``dataset.hf_dataset``) as one object."""
    properties: dict[str, Any] = {
        "_target_": {"type": "string", "description": "The class Bridge instantiates."},
    }
    for field_name, entry in sorted(sections.get(name, {}).items()):
        properties[field_name] = field_schema(entry)
    for child in sorted(s for s in sections if s.rsplit(".", 1)[0] == name and s != name):
        properties[child.rsplit(".", 1)[1]] = {
            "anyOf": [_section(child, sections), {"type": "null"}, _INTERPOLATION]
        }
    return {"type": "object", "properties": properties}


def bridge_schema(bridge: str | None = None) -> dict[str, Any]:
    """The schema document. ``bridge``: the release the user targets; the table is of
    ``TABLE_BRIDGE``, which the schema says (fields an older release lacks are moe-lint's
    SCH rules' business, with the version gates)."""
    table = fields.table()
    sections: dict[str, Any] = table["sections"]
    properties: dict[str, Any] = {}
    for name in table["top_level"]:
        if name == "env_vars":
            properties[name] = {
                "type": "object",
                "additionalProperties": {"type": ["string", "number", "boolean"]},
                "description": "Environment variables the launch sets (Bridge's env_vars).",
            }
            continue
        section = _section(name, sections)
        if name == "mixed_precision":
            section = {
                "anyOf": [
                    {"type": "string", "description": "A Bridge mixed-precision recipe name."},
                    section,
                    {"type": "null"},
                ]
            }
        # An optional section (ft, inprocess_restart, peft, ...) is null when unused.
        properties[name] = {"anyOf": [section, {"type": "null"}]}
    note = f"Megatron Bridge {TABLE_BRIDGE} fields"
    if bridge and bridge != TABLE_BRIDGE:
        note += f" (asked for Bridge {bridge}: moe-lint's version gates judge the difference)"
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": "https://github.com/moe-lint/moe-lint/schemas/bridge-config.json",
        "title": "Megatron Bridge ConfigContainer (YAML)",
        "description": f"{note}, generated by `moe-lint schema` from moe-lint's field table.",
        "type": "object",
        "properties": properties,
    }
