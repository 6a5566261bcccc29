"""Python checks for the parallelism rule family (PAR codes, rules/parallel.yaml).

Rules whose expressions grew too long for data, read through
:class:`~moe_lint.engine.checks.reads.Reads` so that they keep the expressions' meaning, and
``sequence_parallel`` at TP = 1, whose fix is an edit of the written key.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.evaluate import Violation
from moe_lint.engine.spans import set_value_edit

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context


def _fact(ctx: Context, name: str) -> Any:
    """A derived fact's value, or None when it could not be computed."""
    fact = ctx.facts.values.get(name)
    return None if fact is None else fact.value


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def sequence_parallel_at_tp1(ctx: Context) -> Iterator[Violation]:
    """sequence_parallel: true at TP = 1 is switched off by Bridge's finalize()."""
    raw = ctx.config.raw.get("model")
    if not isinstance(raw, dict) or raw.get("sequence_parallel") is not True:
        return
    tp = _int(_fact(ctx, "tp"))
    if tp is None or tp > 1:
        return
    cfg = ctx.config
    edit = set_value_edit(cfg.doc, cfg.physical("model.sequence_parallel"), False)
    yield Violation(path="model.sequence_parallel", params={"tp": tp}, edits=[edit] if edit else [])


CHECKS: dict[str, PythonCheck] = {
    "sequence-parallel-at-tp1": PythonCheck(sequence_parallel_at_tp1, frozenset({"tp"})),
}
