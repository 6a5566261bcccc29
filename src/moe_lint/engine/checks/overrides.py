"""Checks for Hydra command-line overrides (rules/overrides.yaml).

normalize applies the overrides the way Hydra's struct mode and Bridge do
(:func:`~moe_lint.config.overrides.apply_overrides`)
 and records what they would reject or skip; these
checks turn each record into a finding located at its command-line argument.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.config import overrides as ov
from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.evaluate import Violation
from moe_lint.engine.findings import Argument

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context, Violation


def _shown(value: Any) -> str:
    """A value as Hydra's messages print it (``str()``, as OmegaConf nodes do)."""
    return "null" if value is None else str(value)


def _params(problem: ov.OverrideProblem) -> dict[str, Any]:
    o = problem.override
    params: dict[str, Any] = {
        "key": o.key,
        "text": o.text,
        "hint": problem.hint,
        "value": _shown(o.value),
    }
    if problem.kind == ov.APPEND_EXISTING:
        params["holds"] = (
            "a value from the recipe (the field is never null)"
            if problem.origin == "the recipe"
            else f"{_shown(problem.current)} (from {problem.origin})"
        )
        params["plain"] = o.text[1:]
        params["force"] = "+" + o.text
    if problem.kind == ov.UNKNOWN_KEY:
        params["why"] = problem.reason
    if problem.kind == ov.DELETE_MISMATCH:
        params["current"] = _shown(problem.current)
    if problem.kind == ov.KEY_SKIPPED:
        params["skipped"] = problem.current
    return params


def _check(kind: str) -> Callable[[Context], Iterator[Violation]]:
    def check(ctx: Context) -> Iterator[Violation]:
        for problem in ctx.config.override_problems:
            if problem.kind != kind:
                continue
            o = problem.override
            if o.span is not None:  # written in a launch script: the finding points at it
                start = o.span.key_start or o.span.value_start
                yield Violation(path=o.key, params=_params(problem), at=(start.line, start.column))
                continue
            yield Violation(
                path=o.key,
                params=_params(problem),
                argument=Argument(o.argument, o.text),
            )

    check.__name__ = f"override_{kind.replace('-', '_')}"
    check.__doc__ = f"Overrides recorded as {kind!r} by overrides.apply_overrides."
    return check


_BASE = frozenset({"key", "text", "hint", "value"})

CHECKS: dict[str, PythonCheck] = {
    "override-unknown-key": PythonCheck(_check(ov.UNKNOWN_KEY), _BASE | {"why"}),
    "override-append-existing": PythonCheck(
        _check(ov.APPEND_EXISTING), _BASE | {"holds", "plain", "force"}
    ),
    "override-delete-missing": PythonCheck(_check(ov.DELETE_MISSING), _BASE),
    "override-delete-mismatch": PythonCheck(_check(ov.DELETE_MISMATCH), _BASE | {"current"}),
    "override-key-skipped": PythonCheck(_check(ov.KEY_SKIPPED), _BASE | {"skipped"}),
}
