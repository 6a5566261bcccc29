"""The checks a config section's values get (the field table's types, ranges and choices, then
bounds.py's field bounds), apart from the rest of normalization so that model fields read from
elsewhere (an HF config.json, config/hf_config.py) get exactly the checks a YAML ``model:``
section gets.
"""

from __future__ import annotations

from typing import Any

from moe_lint.bounds import field_problems
from moe_lint.config import fields
from moe_lint.config.fast_validate import fast_validate
from moe_lint.errors import InputError
from moe_lint.records import NamedTuple


class TypeProblem(NamedTuple):
    """A value Bridge could not accept (wrong type, out of range, bad choice)."""

    path: str
    message: str
    value: Any


def validate_section(
    name: str, section: dict[str, Any], problems: list[TypeProblem], unknown: set[str]
) -> dict[str, Any]:
    """Type one section; drop values Bridge would reject, appending each to ``problems`` and
    its dotted path to ``unknown``.

    Exactly-typed sections take the pydantic-free fast path (fastschema); anything else goes
    through the pydantic models of schema.py, which coerce or explain it.
    """
    fast = fast_validate(name, section)
    if fast is not None:
        return fast
    # Lazy: pydantic (~185 ms with the models) only on the slow validation path.
    from pydantic import ValidationError

    # Lazy: the pydantic models (~185 ms) only on the slow validation path.
    from moe_lint.config.schema import SECTIONS

    model = SECTIONS[name]
    data = {k: v for k, v in section.items() if k in model.model_fields}
    for _ in range(len(data) + 1):
        try:
            validated = model.model_validate(data)
        except ValidationError as exc:
            bad: set[str] = set()
            for err in exc.errors():
                loc = err.get("loc") or ()
                key = str(loc[0]) if loc else ""
                if key in bad or key not in data:
                    continue
                bad.add(key)
                problems.append(TypeProblem(f"{name}.{key}", _pydantic_message(err), data[key]))
            for key in bad:
                data.pop(key, None)
                unknown.add(f"{name}.{key}")
            if not bad:
                raise InputError(f"cannot validate section {name!r}") from None
            continue
        return {k: getattr(validated, k) for k in model.model_fields}
    raise InputError(f"cannot validate section {name!r}")


def model_field_problems(values: dict[str, Any]) -> tuple[dict[str, Any], list[TypeProblem]]:
    """The checks a YAML ``model:`` section gets (types, ranges and choices of the field table,
    then bounds.py's field bounds), for model fields from elsewhere (an HF config.json's
    mapping, config/hf_config.py): the typed values of the validated fields among ``values``
    (coerced as pydantic coerces YAML's, ``4096.0`` -> 4096) and a problem for each value a
    YAML file would get SCH002 for. Fields the table does not validate are left out of both."""
    validated = fields.validated("model")
    section = {k: v for k, v in values.items() if k in validated}
    problems: list[TypeProblem] = []
    unknown: set[str] = set()
    typed = validate_section("model", section, problems, unknown)
    out = {k: typed[k] for k in section if f"model.{k}" not in unknown}
    for dotted, problem in field_problems({f"model.{k}": v for k, v in out.items()}):
        problems.append(TypeProblem(dotted, problem, out.pop(dotted.split(".", 1)[1])))
    return out, problems


def _pydantic_message(err: Any) -> str:
    msg = str(err.get("msg", "invalid value"))
    return msg[0].lower() + msg[1:] if msg else "invalid value"
