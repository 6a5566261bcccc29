"""Python checks for the MoE rule family (MOE codes, rules/moe.yaml).

Group-limited routing and the paged stash report every independent problem in one finding (one
root cause, one finding with every reason in it); the rest are rules whose expressions grew too
long for data, read through :class:`~moe_lint.engine.checks.reads.Reads` so that they keep the
expressions' meaning (an unknown field or fact: no finding).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.config.fields import UNKNOWN
from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks.reads import Reads, written_or_unknown
from moe_lint.engine.checks.reads import violation as _violation
from moe_lint.engine.evaluate import Violation

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context

_value = written_or_unknown


def group_limited_routing(ctx: Context) -> Iterator[Violation]:
    """Group-limited (device-limited) routing that MCore rejects or cannot route (MOE-06)."""
    cfg = ctx.config

    def count(dotted: str) -> Any:
        value = _value(cfg, dotted)
        return value if isinstance(value, int) and not isinstance(value, bool) else UNKNOWN

    group_topk = count("model.moe_router_group_topk")
    if group_topk is UNKNOWN or group_topk <= 0:
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


# --------------------------------------------------------------------------------------------
# Rules converted from long expressions: each reads what its expression read, in the same order
# (an unknown field or fact raises NotDerivable: no finding), and yields the template values.
# The ``r.value(field, default)`` defaults are the expressions' own, kept literally.
# --------------------------------------------------------------------------------------------


def router_topk_exceeds_experts(ctx: Context) -> Iterator[Violation]:
    """MOE002: moe_router_topk > num_moe_experts, and how the router fails on it."""
    r = Reads(ctx)
    experts = r.field("model.num_moe_experts")
    if experts is None:
        return
    topk = r.field("model.moe_router_topk")
    if topk is None or not topk > experts:
        return
    if r.value("model.moe_router_fusion") is True:
        if r.version_below("transformer-engine", "2.17"):
            how = (
                "with moe_router_fusion the fused top-k of Transformer Engine < 2.17 never "
                "checks k: no error, and the routing is undefined"
            )
        else:
            how = (
                "with moe_router_fusion Transformer Engine's fused top-k raises 'topk must be in "
                "[1, num_experts]' at the first forward"
            )
    elif r.stated("model.moe_router_fusion"):
        how = "torch.topk raises 'selected index k out of range' at the first forward"
    else:
        how = (
            "torch.topk raises 'selected index k out of range' at the first forward (if the "
            "recipe turns on moe_router_fusion, the fused top-k raises on Transformer Engine >= "
            "2.17 and never checks k before 2.17: undefined routing)"
        )
    yield Violation("", {"how": how})


def single_grouped_weight_unsupported(ctx: Context) -> Iterator[Violation]:
    """MOE019: moe_single_grouped_weight/bias without what TransformerConfig requires."""
    r = Reads(ctx)
    weight = r.field("model.moe_single_grouped_weight") is True
    bias = r.field("model.moe_single_grouped_bias") is True
    # Every candidate's message is built (the expression built the whole list), so an unknown
    # fp8_recipe leaves the rule out even when the fp8 condition does not hold.
    candidates = [
        (r.value("model.moe_grouped_gemm", True) is False, "moe_grouped_gemm is off"),
        (
            r.version_below("transformer-engine", "2.14"),
            "Transformer Engine is older than 2.14",
        ),
        (
            weight and bool(r.field("model.fp8")) and r.field("model.fp8_recipe") != "mxfp8",
            r.cat("the fp8 recipe is ", r.to_str(r.field("model.fp8_recipe")), ", not mxfp8"),
        ),
        (
            weight
            and bool(r.field("model.fp4"))
            and r.value("model.fp4_recipe", "nvfp4") != "nvfp4",
            "the fp4 recipe is not nvfp4",
        ),
        (
            weight and r.field("model.use_transformer_engine_op_fuser") is False,
            "use_transformer_engine_op_fuser is off",
        ),
        (bias and r.field("model.add_bias_linear") is False, "add_bias_linear is off"),
    ]
    problems = [p for c, p in candidates if c]
    if (weight or bias) and problems:
        yield Violation("", {"listed": r.join(problems, "; ")})


def moe_fusion_needs_newer_te(ctx: Context) -> Iterator[Violation]:
    """MOE020: fused permutation / router kernels on a Transformer Engine that lacks them."""
    r = Reads(ctx)
    permute_old = r.field("model.moe_permute_fusion") is True and r.version_below(
        "transformer-engine", "2.1"
    )
    router_old = r.field("model.moe_router_fusion") is True and r.version_below(
        "transformer-engine", "2.7"
    )
    if not (permute_old or router_old):
        return
    what_fails = (
        ("moe_permute_fusion needs TE >= 2.1" if permute_old else "")
        + ("; " if permute_old and router_old else "")
        + ("moe_router_fusion needs TE >= 2.7" if router_old else "")
    )
    yield Violation("", {"what_fails": what_fails})


def router_padding_for_quantization_invalid(ctx: Context) -> Iterator[Violation]:
    """MOE022: router padding for quantization without FP8/FP4 or with a dispatcher lacking it."""
    r = Reads(ctx)
    padding = (
        r.field("model.moe_router_padding_for_quantization") is True
        or r.field("model.moe_router_padding_for_fp8") is True
    )
    kind = r.value("model.moe_token_dispatcher_type", "alltoall")
    precision_known = (
        r.fact("full_dump")
        or r.explicit("mixed_precision")
        or r.explicit("model.fp8")
        or r.explicit("model.fp4")
    )
    if not (
        padding
        and (
            (precision_known and not r.field("model.fp8") and not r.field("model.fp4"))
            or kind in ("allgather", "alltoall_seq")
        )
    ):
        return
    reason = (
        "neither fp8 nor fp4 is enabled"
        if not r.field("model.fp8") and not r.field("model.fp4")
        else r.cat("the ", kind, " dispatcher does not support it")
    )
    yield Violation("", {"reason": reason})


def dropless_moe_without_imbalance_headroom(ctx: Context) -> Iterator[Violation]:
    """MOE027: dropless MoE at long sequences with nothing bounding a hot EP rank."""
    r = Reads(ctx)
    granularity = r.field("model.recompute_granularity")
    modules = r.value("model.recompute_modules", []) if granularity == "selective" else []
    protected = (
        granularity == "full"
        or "moe" in modules
        or "moe_act" in modules
        or r.value("model.moe_paged_stash")
        or r.value("model.moe_router_force_load_balancing")
    )
    topk = r.field("model.moe_router_topk")
    if not (
        topk is not None
        and r.fact("ep") > 1
        and r.fact("seq") >= 32768
        and r.field("model.moe_expert_capacity_factor") is None
        and r.value("model.moe_expert_rank_capacity_factor", None) is None
        and not protected
    ):
        return
    routed = int(r.fact("tokens_per_tp_cp_rank") * topk) if topk else 0
    yield Violation("", {"routed": routed})


CHECKS: dict[str, PythonCheck] = {
    "group-limited-routing": PythonCheck(group_limited_routing, frozenset({"problems", "count"})),
    "paged-stash-constraints": PythonCheck(
        paged_stash_constraints, frozenset({"problems", "count"})
    ),
    "router-topk-exceeds-experts": PythonCheck(router_topk_exceeds_experts, frozenset({"how"})),
    "single-grouped-weight-unsupported": PythonCheck(
        single_grouped_weight_unsupported, frozenset({"listed"})
    ),
    "moe-fusion-needs-newer-te": PythonCheck(moe_fusion_needs_newer_te, frozenset({"what_fails"})),
    "router-padding-for-quantization-invalid": PythonCheck(
        router_padding_for_quantization_invalid, frozenset({"reason"})
    ),
    "dropless-moe-without-imbalance-headroom": PythonCheck(
        dropless_moe_without_imbalance_headroom,
        frozenset({"routed"}),
        frozenset({"ep", "seq", "tokens_per_tp_cp_rank"}),
    ),
}
