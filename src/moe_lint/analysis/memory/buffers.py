"""Buffers: CUDA-graph static buffers, DeepEP / HybridEP dispatcher buffers and the other fixed
costs outside PyTorch's allocator (docs/memory-model.md, *Fixed costs and margin*)."""

from __future__ import annotations

from moe_lint.analysis.memory.activations import in_flight
from moe_lint.analysis.memory.context import _Ctx
from moe_lint.analysis.memory.placement import _Stage
from moe_lint.analysis.memory.results import GIB, Term
from moe_lint.config.versions import Version

_GRAPH_IO = {"attn": 4.0, "mlp": 4.0, "moe": 4.0, "mamba": 4.0, "moe_router": 2.0,
             "moe_preprocess": 0.0}  # fmt: skip


def _graph_modules(ctx: _Ctx) -> list[str]:
    """Captured modules: cuda_graph_modules, else the deprecated cuda_graph_scope, else a layer."""
    for key in ("model.cuda_graph_modules", "model.cuda_graph_scope"):
        value = ctx.v.get(key)
        if isinstance(value, str):
            value = [m.strip() for m in value.split(",") if m.strip() and m.strip() != "full"]
        if value:
            return [str(m) for m in value]
    return ["attn", "mlp"]


#: TE make_graphed_callables recycles static inputs/outputs between graphs from 2.7 on
#: (MCore transformer/cuda_graphs.py passes _reuse_graph_input_output_buffers=True).
_TE_GRAPH_REUSE = Version("2.7")


def _graph_term(ctx: _Ctx, stage: _Stage) -> Term | None:
    """Static input/output buffers of captured CUDA graphs (docs/domain/06 §2.7).

    Without buffer reuse (TE < 2.7, and the band): module inputs/outputs per layer, one set per
    in-flight micro-batch when PP > 1. With reuse a module's static output is the next one's
    saved input, which the activations already count: at most one input copy 2h·T per
    captured module kind per set. Full-iteration graphs have no module buffers (their pool
    is the sum of phases in _stage_estimate). The lower bound counts none.
    """
    impl = str(ctx.v.get("model.cuda_graph_impl", default="none"))
    if impl in ("none", "full_iteration") or ctx.mode == "lower":
        return None
    a, ns = ctx.arch, ctx.sp_tokens
    modules = _graph_modules(ctx)
    copies = 1.0 if ctx.pp == 1 else in_flight(ctx, stage.rank)[0]
    copies *= ctx.settings.cuda_graph_static_copies
    if ctx.te >= _TE_GRAPH_REUSE and ctx.mode != "upper":
        value = 2 * a.hidden_size * ns * len(modules) * copies
        return Term(
            "CUDA-graph static buffers",
            value / GIB,
            f"{impl} graphs of {list(modules)} (TE {ctx.te} reuses static buffers): "
            f"one input copy 2h·T per module × {copies:g} set(s)",
            "activation",
        )
    per_layer = 0.0
    for m in modules:
        per_layer += _GRAPH_IO.get(str(m), 4.0) * a.hidden_size * ns
        if m == "moe_router":
            per_layer += 9 * (a.num_moe_experts or 0) * ns
        if m == "moe_preprocess":
            per_layer += (a.num_moe_experts or 0) * ns
    value = per_layer * len(stage.layers) * copies
    return Term("CUDA-graph static buffers", value / GIB,
                f"{impl} graphs of {list(modules)}: module inputs/outputs per layer × "
                f"{len(stage.layers)} layers × {copies:g} graph set(s) (no buffer reuse)",
                "activation")  # fmt: skip


def _nvl_ranks(ctx: _Ctx, group: int) -> int:
    """Ranks per NVLink domain HybridEP uses: NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN, else
    the group up to one 8-GPU node."""
    env = ctx.v.get("env_vars.NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN")
    try:
        return max(1, min(group, int(env))) if env is not None else min(group, 8)
    except (TypeError, ValueError):
        return min(group, 8)


def _dispatcher_term(ctx: _Ctx) -> Term | None:
    """DeepEP / HybridEP communication buffers (allocated outside PyTorch's allocator).

    HybridEP (DeepEP hybrid-ep deep_ep/hybrid_ep_buffer.py::HybridEPBuffer, use_shared_buffer
    on by default, so combine aliases dispatch; csrc/hybrid_ep/buffer/intranode.cu adds fp32
    probabilities and scales): T·G·(2h + 4·E_local·R_nvl + 4h/128) bytes, plus an RDMA token
    buffer when the group spans NVLink domains (central estimate only).
    """
    if not ctx.arch.is_moe or ctx.ep * ctx.etp == 1:
        return None
    kind = str(ctx.v.get("model.moe_token_dispatcher_type", default="alltoall"))
    backend = str(ctx.v.get("model.moe_flex_dispatcher_backend", default="deepep"))
    deepep = (kind == "flex" and backend == "deepep") or ctx.v.flag("model.moe_enable_deepep")
    if kind == "flex" and backend == "hybridep":
        group = ctx.ep * ctx.etp
        h, t = ctx.arch.hidden_size, ctx.sp_tokens
        local = (ctx.arch.num_moe_experts or 0) / ctx.ep
        nvl = _nvl_ranks(ctx, group)
        value = t * group * (2 * h + 4 * local * nvl + 4 * h / 128)
        how = (
            f"local tokens {t:,.0f} × group {group} × (2h + 4·E_local {local:g}·R_nvl {nvl} "
            "+ 4h/128) B (shared dispatch/combine buffer, fp32 probs, scales)"
        )
        if group > nvl and ctx.mode != "lower":
            value += t * group * 2 * h
            how += " + RDMA token buffer 2h·T·G (group spans NVLink domains)"
        return Term("HybridEP buffers", value / GIB, how, "fixed")
    if deepep:
        return Term(
            "DeepEP buffers",
            ctx.settings.deepep_buffer_gib,
            "setting deepep_buffer_gib (NVL + RDMA buffer size hints)",
            "fixed",
        )
    if kind == "allgather":
        ctx.note("allgather dispatcher: every rank materialises the TP×EP group's tokens")
    return None


def _fixed_terms(ctx: _Ctx) -> list[Term]:
    """Device memory the allocator never sees: context, NCCL, dispatcher buffers."""
    s = ctx.settings
    terms = [
        Term("CUDA context", s.cuda_context_gib, "setting cuda_context_gib", "fixed"),
        Term("NCCL buffers", s.nccl_gib, "setting nccl_gib", "fixed"),
    ]
    dispatcher = _dispatcher_term(ctx)
    if dispatcher is not None:
        terms.append(dispatcher)
    return terms
