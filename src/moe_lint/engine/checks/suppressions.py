"""Python checks for the suppressions rule family (rules/suppressions.yaml, SUP codes).

They run after suppression (ctx.suppressions is filled in by then) and report suppression
comments that suppressed nothing or name no rule.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from moe_lint.config.load import format_path
from moe_lint.config.suggest import closest
from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.evaluate import Violation

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context


def unused_suppressions(ctx: Context) -> Iterator[Violation]:
    """Suppression comments (or codes in them) that suppressed nothing."""
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


CHECKS: dict[str, PythonCheck] = {
    "unused-suppressions": PythonCheck(unused_suppressions, frozenset({"code", "line"})),
    "unknown-suppressions": PythonCheck(unknown_suppressions, frozenset({"code", "line", "hint"})),
}
