"""Python checks for the MoE rule family (MOE codes, rules/moe.yaml).

Group-limited routing and the paged stash report every independent problem in one finding (one
root cause, one finding with every reason in it); the rest are rules whose expressions grew too
long for data, read through :class:`~moe_lint.engine.checks.reads.Reads` so that they keep the
expressions' meaning (an unknown field or fact: no finding).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks.reads import UNKNOWN, written_or_preset
from moe_lint.engine.evaluate import Violation

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context

_UNKNOWN = UNKNOWN
_value = written_or_preset


def _violation(path: str, **params: Any) -> Violation:
    return Violation(path=path, params=params)


def group_limited_routing(ctx: Context) -> Iterator[Violation]:
    """Group-limited (device-limited) routing that MCore rejects or cannot route (MOE-06)."""
    cfg = ctx.config

    def count(dotted: str) -> Any:
        value = _value(cfg, dotted)
        return value if isinstance(value, int) and not isinstance(value, bool) else _UNKNOWN

    group_topk = count("model.moe_router_group_topk")
    if group_topk is _UNKNOWN or group_topk <= 0:
        return
    groups = _value(cfg, "model.moe_router_num_groups")
    experts = count("model.num_moe_experts")
    topk = count("model.moe_router_topk")
    problems: list[str] = []
    if groups in (None, 0):
        problems.append(f"moe_router_group_topk = {group_topk} without moe_router_num_groups")
    elif isinstance(groups, int) and not isinstance(groups, bool) and groups > 0:
        if isinstance(experts, int) and experts % groups:
            problems.append(
                f"num_moe_experts = {experts} is not divisible by moe_router_num_groups = {groups}"
            )
        if group_topk > groups:
            problems.append(
                f"moe_router_group_topk = {group_topk} exceeds moe_router_num_groups = {groups}"
            )
        elif isinstance(experts, int) and experts % groups == 0 and isinstance(topk, int):
            per_group = experts // groups
            if topk // group_topk > per_group:
                problems.append(
                    f"each group is scored by its top {topk} // {group_topk} = "
                    f"{topk // group_topk} experts but holds only {per_group} "
                    "(torch.topk fails at the first forward)"
                )
            elif topk > group_topk * per_group:
                problems.append(
                    f"top-{topk} routing can only reach {group_topk}·{per_group} = "
                    f"{group_topk * per_group} experts in the selected groups (the router "
                    "picks masked experts)"
                )
    if problems:
        yield _violation(
            "model.moe_router_group_topk", problems="; ".join(problems), count=len(problems)
        )


def paged_stash_constraints(ctx: Context) -> Iterator[Violation]:
    """moe_paged_stash without what TransformerConfig requires (MOE-25)."""
    cfg = ctx.config
    if _value(cfg, "model.moe_paged_stash") is not True:
        return
    problems: list[str] = []
    if _value(cfg, "model.cpu_offloading") is True:
        problems.append("cpu_offloading is on")
    if _value(cfg, "model.moe_expert_rank_capacity_factor") is None:
        problems.append("moe_expert_rank_capacity_factor is not set")
    offload = _value(cfg, "model.offload_modules")
    if isinstance(offload, list):
        clash = [m for m in ("expert_fc1", "moe_act", "fused_group_mlp") if m in offload]
        if clash:
            problems.append(f"offload_modules contains {', '.join(clash)}")
    if problems:
        yield _violation("model.moe_paged_stash", problems="; ".join(problems), count=len(problems))


CHECKS: dict[str, PythonCheck] = {
    "group-limited-routing": PythonCheck(group_limited_routing, frozenset({"problems", "count"})),
    "paged-stash-constraints": PythonCheck(
        paged_stash_constraints, frozenset({"problems", "count"})
    ),
}
