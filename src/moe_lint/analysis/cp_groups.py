"""Head-split (Ulysses, a2a) context-parallel groups: which sizes TE can scatter heads over.

TE's all-to-all CP (``context_parallel.py::AttnFuncWithCPAndQKVOA2A``) gives each rank of the
group heads/group of the heads its TP rank holds, for Q and for K/V, so the group must divide
both. The linter's ATT015 and the planner's transport search read the same arithmetic here.
"""

from __future__ import annotations


def per_tp_rank(heads: int, kv_heads: int, tp: int) -> tuple[int, int]:
    """(attention heads, KV heads) one TP rank holds (KV heads fewer than TP are replicated:
    one per rank)."""
    return (heads // tp if heads >= tp else 1, kv_heads // tp if kv_heads >= tp else 1)


def a2a_group(heads_tp: int, kv_tp: int, cp: int, node: int) -> int:
    """Largest a2a group size that divides CP, heads/TP and KV heads/TP and fits in a node."""
    best = 1
    for size in range(2, min(cp, node) + 1):  # O(node), not O(CP)
        if cp % size == 0 and heads_tp % size == 0 and kv_tp % size == 0:
            best = size
    return best
