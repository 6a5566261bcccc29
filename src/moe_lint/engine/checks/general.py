"""Python checks that belong to no one family: types, duplicate keys, interpolations and
suppressions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.config.load import format_path
from moe_lint.config.suggest import closest
from moe_lint.engine.catalogue import PythonCheck

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context, Violation


def _violation(path: str, **params: Any) -> Violation:
    from moe_lint.engine.evaluate import Violation

    return Violation(path=path, params=params)


def type_problems(ctx: Context) -> Iterator[Violation]:
    """Values Bridge's dataclasses would reject (wrong type, out of range, bad choice)."""
    for problem in ctx.config.type_problems:
        yield _violation(
            problem.path, key=problem.path, value=problem.value, problem=problem.message
        )


def duplicate_keys(ctx: Context) -> Iterator[Violation]:
    """A key written twice in one mapping: YAML keeps the last, OmegaConf refuses the file."""
    from moe_lint.engine.evaluate import Violation

    root = ctx.config.root
    for path, _span in ctx.config.doc.duplicates:
        logical = path[len(root) :] if path[: len(root)] == root else path
        yield Violation(path=format_path(logical), params={"key": format_path(logical)})


def unresolved_interpolations(ctx: Context) -> Iterator[Violation]:
    """``${TP}``-style placeholders: the value is decided when the template is filled in."""
    for dotted in ctx.config.interpolations:
        yield _violation(dotted, key=dotted, value=ctx.config.get(dotted))


def unused_suppressions(ctx: Context) -> Iterator[Violation]:
    """Suppression comments (or codes in them) that suppressed nothing."""
    from moe_lint.engine.evaluate import Violation

    catalogue = ctx.catalogue
    for sup in ctx.suppressions:
        for code in sup.codes:
            rule = catalogue.by_code.get(code) or catalogue.by_name.get(code)
            if rule is None or rule.code in sup.used:
                continue
            yield Violation(
                path=_line_path(ctx, sup.line),
                params={"code": code, "line": sup.line},
                at=(sup.line, sup.column),
            )


def unknown_suppressions(ctx: Context) -> Iterator[Violation]:
    """Suppression comments naming a code or rule name that does not exist."""
    from moe_lint.engine.evaluate import Violation

    catalogue = ctx.catalogue
    for sup in ctx.suppressions:
        for code in sup.codes:
            if code in catalogue.by_code or code in catalogue.by_name:
                continue
            guess = closest(code, sorted(catalogue.by_code) + sorted(catalogue.by_name))
            hint = f"did you mean {guess}?" if guess else "see `moe-lint rules`"
            yield Violation(
                path=_line_path(ctx, sup.line),
                params={"code": code, "line": sup.line, "hint": hint},
                at=(sup.line, sup.column),
            )


def _line_path(ctx: Context, line: int) -> str:
    """The config path of the key on ``line`` (findings are located by path, not line)."""
    best = None
    root = ctx.config.root
    for path, span in ctx.config.doc.spans.items():
        start = span.key_start or span.value_start
        if (
            start.line == line
            and path[: len(root)] == root
            and (best is None or len(path) < len(best))
        ):
            best = path
    if best is None:
        return "<comment>"
    return format_path(best[len(root) :]) or "<comment>"


#: The core checks; each family module (checks_<family>.py) has its own CHECKS table.
CHECKS: dict[str, PythonCheck] = {
    "unused-suppressions": PythonCheck(unused_suppressions, frozenset({"code", "line"})),
    "unknown-suppressions": PythonCheck(unknown_suppressions, frozenset({"code", "line", "hint"})),
    "type-problems": PythonCheck(type_problems, frozenset({"key", "value", "problem"})),
    "duplicate-keys": PythonCheck(duplicate_keys, frozenset({"key"})),
    "unresolved-interpolations": PythonCheck(
        unresolved_interpolations, frozenset({"key", "value"})
    ),
}
