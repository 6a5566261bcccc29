"""The reads of the rule expression language, for Python checks translated from expressions.

A rule whose condition outgrew an expression (issue 11: over ~400 characters, or three or more
chained if/else) becomes a Python check that reads the config exactly as its expression did,
so the rule fires on the same files:

* :func:`field` is ``model.x`` in an expression: the effective value, or NotDerivable when the
  recipe decides the field (or an untyped field holds a value of the wrong kind);
* :func:`value` is ``value('model.x', otherwise)``: the effective value (``Config.value``:
  written, normalized, else the field table's framework default), ``otherwise`` when that is
  UNKNOWN (a recipe decides) or null; never a default of the check's own;
* :func:`explicit` / :func:`known` are the functions of the same name;
* :func:`fact` is a bare fact name (``cp``, ``gbs``): NotDerivable when it cannot be derived.

A NotDerivable a check raises means the rule does not apply to the file
(:func:`moe_lint.engine.evaluate.run_rule`), as it does for an expression.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from moe_lint.config.fields import UNKNOWN
from moe_lint.engine.expr import SectionView
from moe_lint.errors import NotDerivable

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context


def field(ctx: Context, dotted: str) -> Any:
    """``section.field`` as an expression reads it (NotDerivable when it is not known)."""
    section, attr = dotted.split(".", 1)
    return SectionView(ctx.config, section)._read(attr)


def value(ctx: Context, dotted: str, otherwise: Any = None) -> Any:
    """``value(dotted, otherwise)``: the effective value, else ``otherwise`` where it is
    UNKNOWN or null (docs/adding-rules.md, "Config fields")."""
    result = ctx.config.value(dotted)
    return otherwise if result is UNKNOWN or result is None else result


def explicit(ctx: Context, dotted: str) -> bool:
    """``explicit(dotted)``: the file (or an override) writes the field."""
    return bool(ctx.config.explicit(dotted))


def known(ctx: Context, dotted: str) -> bool:
    """``known(dotted)``: the field has a value the recipe does not decide."""
    return ctx.config.value(dotted) not in (UNKNOWN, None)


def fact(ctx: Context, name: str) -> Any:
    """A derived fact by name, as a bare name in an expression reads it."""
    facts = ctx.facts
    facts.resolve(name)
    found = facts.values.get(name)
    if found is None:
        raise NotDerivable(name, facts.missing.get(name, "not available"))
    return found.value
