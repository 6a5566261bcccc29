"""Python checks for the suppressions rule family (rules/suppressions.yaml, SUP codes).

They run after suppression (ctx.suppressions is filled in by then) and report suppression
comments that suppressed nothing or name no rule.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from moe_lint.bounds import MAX_SUGGESTIONS
from moe_lint.config.load import format_path
from moe_lint.config.suggest import closest
from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.evaluate import Violation

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context


def unused_suppressions(ctx: Context) -> Iterator[Violation]:
    """Suppression comments (or codes in them) that suppressed nothing."""
    catalogue = ctx.catalogue
    paths = _LinePaths(ctx)
    for sup in ctx.suppressions:
        for code in sup.codes:
            rule = catalogue.by_code.get(code) or catalogue.by_name.get(code)
            if rule is None or rule.code in sup.used:
                continue
            yield Violation(
                path=paths[sup.line],
                params={"code": code, "line": sup.line},
                at=(sup.line, sup.column),
            )


def unknown_suppressions(ctx: Context) -> Iterator[Violation]:
    """Suppression comments naming a code or rule name that does not exist ("did you mean"
    searched for the first ``bounds.MAX_SUGGESTIONS`` of them: each is a difflib pass)."""
    catalogue = ctx.catalogue
    paths = _LinePaths(ctx)
    names: list[str] | None = None
    searches = MAX_SUGGESTIONS
    for sup in ctx.suppressions:
        for code in sup.codes:
            if code in catalogue.by_code or code in catalogue.by_name:
                continue
            guess = None
            if searches > 0:
                searches -= 1
                names = names or sorted(catalogue.by_code) + sorted(catalogue.by_name)
                guess = closest(code, names)
            hint = f"did you mean {guess}?" if guess else "see `moe-lint rules`"
            yield Violation(
                path=paths[sup.line],
                params={"code": code, "line": sup.line, "hint": hint},
                at=(sup.line, sup.column),
            )


class _LinePaths:
    """Line -> the config path of the key on it (findings are located by path, not line):
    the shortest path whose key (or value) starts on the line, ``<comment>`` for none. The
    index is built once, on first use: a search per suppression comment over every span was
    suppressions × keys (9,000 comments over 2,000 keys: 30 s)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.best: dict[int, tuple[str | int, ...]] | None = None

    def __getitem__(self, line: int) -> str:
        if self.best is None:
            self.best = {}
            root = self.ctx.config.root
            for path, span in self.ctx.config.doc.spans.items():
                start = span.key_start or span.value_start
                held = self.best.get(start.line)
                if path[: len(root)] == root and (held is None or len(path) < len(held)):
                    self.best[start.line] = path
        best = self.best.get(line)
        if best is None:
            return "<comment>"
        root = self.ctx.config.root
        return format_path(best[len(root) :]) or "<comment>"


CHECKS: dict[str, PythonCheck] = {
    "unused-suppressions": PythonCheck(unused_suppressions, frozenset({"code", "line"})),
    "unknown-suppressions": PythonCheck(unknown_suppressions, frozenset({"code", "line", "hint"})),
}
