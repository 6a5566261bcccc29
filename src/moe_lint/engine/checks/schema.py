"""Python checks for the schema rule family (rules/schema.yaml, SCH codes).

Values Bridge's dataclasses reject, duplicate keys, unresolved interpolations, and the unknown
keys of :mod:`moe_lint.config.known_keys`'s walk (SCH001 certain, SCH005 cannot tell).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from moe_lint.config.known_keys import key_problems
from moe_lint.config.load import format_path
from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks.reads import violation as _violation
from moe_lint.engine.evaluate import Violation

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context


def type_problems(ctx: Context) -> Iterator[Violation]:
    """Values Bridge's dataclasses would reject (wrong type, out of range, bad choice)."""
    for problem in ctx.config.type_problems:
        yield _violation(
            problem.path, key=problem.path, value=problem.value, problem=problem.message
        )


def duplicate_keys(ctx: Context) -> Iterator[Violation]:
    """A key written twice in one mapping: YAML keeps the last, OmegaConf refuses the file."""
    root = ctx.config.root
    for path, _span in ctx.config.doc.duplicates:
        logical = path[len(root) :] if path[: len(root)] == root else path
        yield Violation(path=format_path(logical), params={"key": format_path(logical)})


def unresolved_interpolations(ctx: Context) -> Iterator[Violation]:
    """``${TP}``-style placeholders: the value is decided when the template is filled in."""
    for dotted in ctx.config.interpolations:
        yield _violation(dotted, key=dotted, value=ctx.config.get(dotted))


def unknown_keys(ctx: Context) -> Iterator[Violation]:
    """Keys Bridge does not know: it skips them with only a log line, so typos are silent.
    (Megatron-LM input has no Bridge keys: its tree is built from known flags.)"""
    if ctx.config.form == "megatron-lm":
        return
    for problem in key_problems(ctx):
        if problem.certain:
            yield _violation(problem.path, key=problem.path, hint=problem.text)


def unchecked_keys(ctx: Context) -> Iterator[Violation]:
    """Keys no known class has, where the class or release is outside the catalogue."""
    if ctx.config.form == "megatron-lm":
        return
    for problem in key_problems(ctx):
        if not problem.certain:
            yield _violation(problem.path, key=problem.path, reason=problem.text)


CHECKS: dict[str, PythonCheck] = {
    "type-problems": PythonCheck(type_problems, frozenset({"key", "value", "problem"})),
    "duplicate-keys": PythonCheck(duplicate_keys, frozenset({"key"})),
    "unresolved-interpolations": PythonCheck(
        unresolved_interpolations, frozenset({"key", "value"})
    ),
    "unknown-keys": PythonCheck(unknown_keys, frozenset({"key", "hint"})),
    "unchecked-keys": PythonCheck(unchecked_keys, frozenset({"key", "reason"})),
}
