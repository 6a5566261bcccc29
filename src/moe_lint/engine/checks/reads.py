"""What a Python check reads, with the same meaning as in a rule expression.

A rule whose expression grew too long for data became a Python check; :class:`Reads` keeps its
truth table by reading the config exactly as the expression did:

* :meth:`Reads.field` is ``model.x`` in an expression: the effective value, or
  :class:`~moe_lint.errors.NotDerivable` when the recipe decides it (or an untyped field holds a
  value of the wrong kind): the rule then does not apply to the file;
* :meth:`Reads.value` is ``value('model.x', otherwise)``: the effective value (``Config.value``:
  written, normalized, else the field table's framework default), ``otherwise`` when that is
  UNKNOWN (a recipe decides) or null; never a default of the check's own;
* :meth:`Reads.fact` is a bare fact name (NotDerivable when it cannot be derived), and
  :meth:`Reads.explicit`, :meth:`Reads.stated`, :meth:`Reads.version_below` are the functions of
  the same name.

A check raising NotDerivable yields no finding, as the expression did. Strings a converted rule
builds from config values go through :meth:`Reads.cat`, :meth:`Reads.to_str` and :meth:`Reads.join`,
the expression language's bounded ``+``, ``str()`` and ``join()``, so a huge value still makes
the file an input error naming the rule (expr.LIMITS) instead of a megabyte message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from moe_lint.config.fields import UNKNOWN
from moe_lint.config.versions import effective_version, stated_below
from moe_lint.engine.evaluate import Violation
from moe_lint.engine.expr import FUNCTIONS, SectionView
from moe_lint.engine.expr import _add as _bounded_add

if TYPE_CHECKING:
    from moe_lint.config.normalize import Config
    from moe_lint.engine.evaluate import Context


class Reads:
    """One file's config and facts, read the way rule expressions read them."""

    __slots__ = ("cfg", "ctx")

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.cfg = ctx.config

    def field(self, dotted: str) -> Any:
        """``section.field`` in an expression: the value, or NotDerivable when unknown."""
        section, attr = dotted.split(".", 1)
        return SectionView(self.cfg, section)._read(attr)

    def value(self, dotted: str, otherwise: Any = None) -> Any:
        """``value(dotted, otherwise)``: :meth:`Config.value_or`."""
        return self.cfg.value_or(dotted, otherwise)

    def explicit(self, dotted: str) -> bool:
        return bool(self.cfg.explicit(dotted))

    def stated(self, dotted: str) -> bool:
        """The file (or a full dump, where every field is written down) states ``dotted``."""
        return self.cfg.stated(dotted)

    def fact(self, name: str) -> Any:
        """A derived fact by name, or NotDerivable."""
        return self.ctx.facts.require(name)

    @staticmethod
    def cat(*parts: Any) -> Any:
        """``a + b + ...`` under the expression language's size limit."""
        out = parts[0]
        for part in parts[1:]:
            out = _bounded_add(out, part)
        return out

    @staticmethod
    def to_str(value: Any) -> str:
        """``str(value)`` as in an expression (large containers charge the budget)."""
        return FUNCTIONS["str"](value)  # type: ignore[no-any-return]

    @staticmethod
    def join(items: Any, sep: str = ", ") -> str:
        """``join(items, sep)`` as in an expression, under the size limit."""
        return FUNCTIONS["join"](items, sep)  # type: ignore[no-any-return]

    def version_below(self, package: str, text: str) -> bool:
        """Is the version in use (stated, else the newest release) older than ``text``?"""
        settings = self.ctx.settings
        return stated_below(settings.versions if settings is not None else None, package, text)


def written_or_unknown(cfg: Config, dotted: str) -> Any:
    """:meth:`Config.value` for checks that must not assume the table's default of an untyped
    field: the normalized value (a typed field's framework default, a preset's value, both
    applied by normalize), else the written one, else :data:`UNKNOWN`."""
    value = cfg.value(dotted)
    if value is UNKNOWN or dotted in cfg.values:
        return value
    return cfg.raw_get(dotted, UNKNOWN)


# The same reads as functions of the context, for checks that read only a few values.


def field(ctx: Context, dotted: str) -> Any:
    """``section.field`` as an expression reads it (NotDerivable when it is not known)."""
    return Reads(ctx).field(dotted)


def value(ctx: Context, dotted: str, otherwise: Any = None) -> Any:
    """``value(dotted, otherwise)``: the effective value, else ``otherwise`` where it is
    UNKNOWN or null (docs/adding-rules.md, "Config fields")."""
    return Reads(ctx).value(dotted, otherwise)


def explicit(ctx: Context, dotted: str) -> bool:
    """``explicit(dotted)``: the file (or an override) writes the field."""
    return Reads(ctx).explicit(dotted)


def known(ctx: Context, dotted: str) -> bool:
    """``known(dotted)``: the field has a value the recipe does not decide."""
    return ctx.config.known(dotted)


def fact(ctx: Context, name: str) -> Any:
    """A derived fact by name, as a bare name in an expression reads it."""
    return Reads(ctx).fact(name)


# Small helpers every family module used to copy.


def violation(path: str, **params: Any) -> Violation:
    """A finding at ``path`` whose message template reads ``params``."""
    return Violation(path=path, params=params)


def derived(ctx: Context, name: str) -> Any:
    """A fact already derived for this file, else None (does not resolve a lazy fact)."""
    found = ctx.facts.values.get(name)
    return None if found is None else found.value


def to_int(value: Any) -> int | None:
    """``value`` as an int (``"8"`` and ``8.0`` too), None for booleans, None and non-numbers."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def int_or_none(value: Any) -> int | None:
    """``value`` when it is an int (not a bool), else None: no conversion."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


#: Flags after which validate_args does not see the command line's values (the arguments come
#: from a checkpoint, or validate_yaml runs instead): checks/mlm.py keeps the same list.
_MLM_REPLACED_BY = ("use_checkpoint_args", "yaml_cfg")


def mlm_args(ctx: Context) -> Any:
    """The arguments Megatron-LM's ``validate_args`` sees for a Megatron-LM command line
    (config/mlm_releases.MlmArgs: the flags over the stated release's argparse defaults), for the
    checks of other families that re-state a Megatron-LM-only assert; None for Bridge input, a
    release older than the flag table, or arguments that come from elsewhere."""
    cfg = ctx.config
    flags = getattr(cfg.doc, "mlm_flags", None) if cfg.form == "megatron-lm" else None
    if not flags:
        return None
    # Lazy: the release table only for the checks of Megatron-LM input.
    from moe_lint.config.mlm_releases import MlmArgs, release_for

    release = release_for(effective_version(cfg.versions, "megatron-core"))
    if release is None:
        return None
    args = MlmArgs(release, flags, incomplete=bool(getattr(cfg.doc, "mlm_notes", None)))
    if any(args[dest] not in (False, None) for dest in _MLM_REPLACED_BY):
        return None
    return args


def mlm_flag_at(args: Any, dest: str) -> tuple[int, int] | None:
    """1-based (line, column) of the ``--flag`` that set ``dest`` (None when it kept its
    default, or its token has no place in the file)."""
    flag = args.flag(dest)
    span = getattr(flag, "span", None)
    start = getattr(span, "key_start", None) if span is not None else None
    return (start.line, start.column) if start is not None else None
