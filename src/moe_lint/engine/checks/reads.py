"""The reads of the rule expression language, for Python checks translated from expressions.

A rule whose condition outgrew an expression (issue 11: over ~400 characters, or three or more
chained if/else) becomes a Python check that reads the config exactly as its expression did,
so the rule fires on the same files:

* :func:`field` is ``model.x`` in an expression: the effective value, or NotDerivable when the
  recipe decides the field (or an untyped field holds a value of the wrong kind);
* :func:`value` is ``value('model.x', default)``: the default when the field is unknown or
  unset;
* :func:`explicit` / :func:`known` are the functions of the same name;
* :func:`fact` is a bare fact name (``cp``, ``gbs``): NotDerivable when it cannot be derived.

A NotDerivable a check raises means the rule does not apply to the file
(:func:`moe_lint.engine.evaluate.run_rule`), as it does for an expression.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from moe_lint.engine.expr import SectionView
from moe_lint.errors import NotDerivable

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context


def field(ctx: Context, dotted: str) -> Any:
    """``section.field`` as an expression reads it (NotDerivable when it is not known)."""
    section, attr = dotted.split(".", 1)
    return SectionView(ctx.config, section)._read(attr)


def value(ctx: Context, dotted: str, default: Any = None) -> Any:
    """``value(dotted, default)``: the effective value, else ``default``."""
    cfg = ctx.config
    if dotted in cfg.unknown:
        return default
    result = cfg.get(dotted, default)
    return default if result is None else result


def explicit(ctx: Context, dotted: str) -> bool:
    """``explicit(dotted)``: the file (or an override) writes the field."""
    return bool(ctx.config.explicit(dotted))


def known(ctx: Context, dotted: str) -> bool:
    """``known(dotted)``: the field has a value the recipe does not decide."""
    cfg = ctx.config
    return dotted not in cfg.unknown and cfg.get(dotted) is not None


def fact(ctx: Context, name: str) -> Any:
    """A derived fact by name, as a bare name in an expression reads it."""
    facts = ctx.facts
    facts.resolve(name)
    found = facts.values.get(name)
    if found is None:
        raise NotDerivable(name, facts.missing.get(name, "not available"))
    return found.value
