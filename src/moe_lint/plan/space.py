"""A plan from a config's effective values (to time a given layout, e.g. a published one).

The search (:mod:`.search`) builds plans directly; this module reads the same fields a Bridge
config sets, with Bridge's defaults where it is silent, so a published recipe and a planner
plan go through the one performance model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cache
from typing import Any

from moe_lint.analysis.pp_layout import LayoutError, parse_layout
from moe_lint.plan.perf import Plan


def precision_of(values: Mapping[str, Any]) -> tuple[str, str | None]:
    """The GEMM math (bf16 / fp8 / fp4) and the FP8/FP4 recipe name, as Bridge applies it."""
    # Lazy: the memory model (~40 ms to import) loads only when a plan is estimated.
    from moe_lint.analysis.memory import mixed_value

    if mixed_value(values, "fp4"):
        return "fp4", str(mixed_value(values, "fp4_recipe", "nvfp4"))
    if mixed_value(values, "fp8"):
        return "fp8", str(mixed_value(values, "fp8_recipe", "delayed"))
    return "bf16", None


def recompute_of(values: Mapping[str, Any]) -> tuple[str, ...]:
    """The recompute set: ("full",), the selective labels (Megatron's default [core_attn]) or ()."""
    granularity = values.get("model.recompute_granularity")
    if granularity == "full":
        return ("full",)
    if granularity == "selective":
        modules = values.get("model.recompute_modules")
        return ("core_attn",) if modules is None else tuple(str(m) for m in modules)
    return ("moe",) if values.get("model.moe_layer_recompute") else ()


def dispatcher_of(values: Mapping[str, Any]) -> str:
    kind = str(values.get("model.moe_token_dispatcher_type") or "alltoall")
    if kind == "flex":
        backend = values.get("model.moe_flex_dispatcher_backend")
        if values.get("model.moe_enable_deepep"):
            backend = backend or "deepep"
        return str(backend or "deepep")
    return kind


CP_TRANSPORTS = ("p2p", "a2a", "allgather", "a2a+p2p")


def cp_transport_of(values: Mapping[str, Any], cp: int) -> tuple[str, int]:
    """(cp_comm_type, inner all-to-all size) the config runs CP with at ``cp`` ranks.

    Unset is p2p (TransformerConfig's default). A per-layer list is read when every layer names
    the same transport; a mixed list is timed as its most common one. For a2a+p2p the inner
    size is ``hierarchical_context_parallel_sizes[0]`` (the a2a group, TE's cp_group[0]); at
    another CP the stated inner size is kept where it divides CP (else their gcd), and emit
    writes the matching sizes, so a plan never carries a stale list.
    """
    raw = values.get("model.cp_comm_type")
    if isinstance(raw, list) and raw:
        names = [str(r) for r in raw]
        raw = max(sorted(set(names)), key=names.count)
    kind = str(raw) if raw in CP_TRANSPORTS else "p2p"
    if kind != "a2a+p2p":
        return kind, 1
    sizes = values.get("model.hierarchical_context_parallel_sizes")
    inner = sizes[0] if isinstance(sizes, list) and sizes and isinstance(sizes[0], int) else 1
    inner = math.gcd(max(1, inner), max(1, cp))
    return kind, inner


def routing_of(values: Mapping[str, Any]) -> tuple[str, float, bool]:
    """(routing, capacity factor, padded) of the routed experts: "balanced" under
    moe_router_force_load_balancing (random balanced logits: MCore transformer/moe/router.py::
    TopKRouter.forward), "capacity" with moe_expert_capacity_factor set, else "dropless"."""
    if _flag(values, "model.moe_router_force_load_balancing"):
        return "balanced", 0.0, False
    cf = values.get("model.moe_expert_capacity_factor")
    if isinstance(cf, int | float) and not isinstance(cf, bool) and cf > 0:
        return "capacity", float(cf), _flag(values, "model.moe_pad_expert_input_to_capacity")
    return "dropless", 0.0, False


def _flag(values: Mapping[str, Any], *keys: str) -> bool:
    return any(bool(values.get(k)) and values.get(k) not in ("none", "None") for k in keys)


def layout_of(values: Mapping[str, Any]) -> tuple[tuple[int, ...], ...] | None:
    """Transformer layers per virtual stage of the ``pipeline_model_parallel_layout`` (or None)."""
    text = values.get("model.pipeline_model_parallel_layout")
    return layout_counts(text) if isinstance(text, str) and text.strip() else None


@cache
def layout_counts(text: str | None) -> tuple[tuple[int, ...], ...] | None:
    """Transformer layers per virtual stage of a layout string (None: none, or it does not
    parse)."""
    if text is None:
        return None
    try:
        layout = parse_layout(text)
    except LayoutError:
        return None
    return tuple((stage.count("t"),) for stage in layout.stages)


def plan_from_values(values: Mapping[str, Any], facts: Mapping[str, Any]) -> Plan:
    """The plan a config describes (``facts``: memory_facts.model_inputs of its derived facts)."""
    precision, recipe = precision_of(values)
    # Lazy: the memory model (~40 ms to import) loads only when a plan is estimated.
    from moe_lint.analysis.memory import mixed_value

    offload = 0.0
    if values.get("optimizer.optimizer_cpu_offload"):
        offload = float(values.get("optimizer.optimizer_offload_fraction") or 1.0)
    graphs = values.get("model.cuda_graph_impl")
    param_gather = (
        1.0
        if _flag(values, "mixed_precision.fp8_param_gather", "ddp.fp8_param_gather")
        and precision != "bf16"
        else 2.0
    )
    cp_comm, cp_a2a = cp_transport_of(values, int(facts["cp"]))
    routing, capacity, padded = routing_of(values)
    return Plan(
        tp=int(facts["tp"]),
        pp=int(facts["pp"]),
        cp=int(facts["cp"]),
        ep=int(facts["ep"]),
        etp=int(facts["etp"]),
        vpp=int(facts.get("vpp") or 1),
        world=int(facts["world"]),
        mbs=int(facts["mbs"]),
        gbs=int(facts.get("gbs") or facts["mbs"] * facts["dp"] * facts["microbatches"]),
        seq=int(facts["seq"]),
        precision=precision,
        fp8_recipe=recipe,
        recompute=recompute_of(values),
        offload=offload,
        dispatcher=dispatcher_of(values),
        tp_overlap=_flag(values, "comm_overlap.tp_comm_overlap"),
        ep_overlap=_flag(values, "comm_overlap.overlap_moe_expert_parallel_comm"),
        shared_expert_overlap=_flag(values, "model.moe_shared_expert_overlap"),
        dp_overlap=values.get("ddp.overlap_grad_reduce") is not False,
        cuda_graphs=graphs not in (None, "none", "None", False),
        distributed_optimizer=values.get("ddp.use_distributed_optimizer") is not False,
        grad_fp32=bool(mixed_value(values, "grad_reduce_in_fp32")),
        param_gather_bytes=param_gather,
        layout=layout_of(values),
        cp_comm=cp_comm,
        cp_a2a=cp_a2a,
        routing=routing,
        capacity=capacity,
        padded=padded,
        split=(
            _count(values.get("model.num_layers_in_first_pipeline_stage")),
            _count(values.get("model.num_layers_in_last_pipeline_stage")),
            bool(values.get("model.account_for_embedding_in_pipeline_split")),
            bool(values.get("model.account_for_loss_in_pipeline_split")),
        ),
    )


def _count(value: Any) -> int | None:
    """A layer count field as place() takes it (None: unset or not a count)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
