"""Python checks for the context-parallel rule family (rules/context-parallel.yaml, CP codes).

CP002's condition outgrew an expression; it reads the config through
:mod:`moe_lint.engine.checks.reads` exactly as its expression did.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks.reads import fact, value
from moe_lint.engine.evaluate import Violation

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context


def cp_far_from_seq_target(ctx: Context) -> Iterator[Violation]:
    """CP002: CP far from seq/4096 rounded to a power of two (about 4K tokens per shard)."""
    tp = fact(ctx, "tp")
    seq_par = value(ctx, "model.sequence_parallel", tp > 1)
    shards = tp * fact(ctx, "cp") if seq_par else fact(ctx, "cp")
    cp_target = fact(ctx, "cp_target")
    too_few = shards * 4 <= cp_target
    suggest = (max(1, cp_target // tp) if seq_par else cp_target) if too_few else cp_target
    cp = fact(ctx, "cp")
    if not ((too_few or cp >= 4 * cp_target) and suggest != cp):
        return
    per_shard = int(fact(ctx, "seq") / shards)
    yield Violation(
        path="model.context_parallel_size", params={"per_shard": per_shard, "suggest": suggest}
    )


CHECKS: dict[str, PythonCheck] = {
    "cp-far-from-seq-target": PythonCheck(
        cp_far_from_seq_target,
        frozenset({"per_shard", "suggest"}),
        frozenset({"tp", "cp", "cp_target", "seq"}),
    ),
}
