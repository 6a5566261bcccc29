"""Levers: config changes that lower the worst stage's peak, each measured by re-running the
model (reusing the terms of the base estimate that a change cannot touch: :func:`levers`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from moe_lint.analysis.memory.activations import _rho
from moe_lint.analysis.memory.context import _context, _Ctx
from moe_lint.analysis.memory.estimate import Reuse
from moe_lint.analysis.memory.results import Estimate, Lever, MemoryInputError
from moe_lint.analysis.params import Arch
from moe_lint.config.memory_settings import MemorySettings
from moe_lint.config.versions import Version
from moe_lint.records import replace

#: The term kinds of estimate.Reuse (in its field order) a change may keep as the base's.
_KINDS = ("state", "activation", "params", "bytes")
#: A change to what only the activations read (the recompute settings, the capacity factor,
#: the micro-batch size and count): the states, parameter counts and bytes per parameter
#: (states.py reads the sizes, precision, optimizer, ddp, peft and checkpoint fields) are
#: the base's.
_KEEPS_STATES = frozenset({"state", "params", "bytes"})
#: A change to the optimizer and ddp fields alone, which activations.py does not read: the
#: activations and the parameter counts are the base's.
_KEEPS_ACTIVATIONS = frozenset({"activation", "params"})
#: A change of the parallel sizes: every term is re-computed.
_KEEPS_NOTHING: frozenset[str] = frozenset()

#: (name, changed values, changed facts, what it requires, the term kinds it keeps).
_Change = tuple[str, dict[str, Any], dict[str, Any], str, frozenset[str]]


def _recompute_changes(values: Mapping[str, Any], arch: Arch) -> list[_Change]:
    """One candidate per selective-recompute module that applies to this architecture."""
    if values.get("model.recompute_granularity") == "full" or values.get("model.cpu_offloading"):
        return []  # Megatron rejects recompute together with layer-level activation offload
    selective = values.get("model.recompute_granularity") == "selective"
    current = list(values.get("model.recompute_modules") or []) if selective else []
    mixers = {m for m, _ in arch.layers}
    ffns = {f for _, f in arch.layers}
    applicable = ["layernorm"]
    if "moe" in ffns:
        applicable += ["moe_act", "moe"]
        if arch.moe_shared_expert_intermediate_size:
            applicable.append("shared_experts")
    if mixers & {"mla", "dsa"}:
        applicable.append("mla_up_proj")
    if "dense" in ffns:
        applicable.append("mlp")
    if "gdn" in mixers:
        applicable.append("gdn_norm_out")
    if values.get("model.overlap_moe_expert_parallel_comm") and "moe" in applicable:
        applicable.remove("moe")  # Megatron rejects whole-moe recompute with EP overlap
    out: list[_Change] = []
    for module in applicable:
        if module in current:
            continue
        new = {"model.recompute_granularity": "selective",
               "model.recompute_modules": [*current, module]}  # fmt: skip
        out.append((f"recompute {module}", new, {},
                    f"recompute_granularity=selective, recompute_modules += [{module}] "
                    "(replays it in backward: slower step)", _KEEPS_STATES))  # fmt: skip
    full = {"model.recompute_granularity": "full", "model.recompute_method": "uniform",
            "model.recompute_num_layers": 1}  # fmt: skip
    out.append(("full recompute", full, {},
                "recompute_granularity=full, method uniform, 1 layer (~+30% step time; "
                "not with scoped CUDA graphs)", _KEEPS_STATES))  # fmt: skip
    return out


def _parallel_changes(ctx: _Ctx) -> list[_Change]:
    """CP ×2 (more GPUs), EP ×2 (same GPUs when the world divides)."""
    out: list[_Change] = []
    world = ctx.world
    if ctx.seq % (4 * ctx.cp) == 0:
        new_world = world * 2
        facts = {"cp": ctx.cp * 2, "world": new_world,
                 "edp": max(1, new_world // (ctx.etp * ctx.ep * ctx.pp))}  # fmt: skip
        out.append(
            (
                "CP ×2",
                {"model.context_parallel_size": ctx.cp * 2},
                facts,
                f"context_parallel_size={ctx.cp * 2}: {new_world} GPUs (+{world}) keep "
                f"DP={ctx.dp}; on {world} GPUs DP halves and micro-batches double",
                _KEEPS_NOTHING,
            )
        )
    experts = ctx.arch.num_moe_experts or 0
    ep2 = ctx.ep * 2
    if experts and experts % ep2 == 0 and world % (ctx.etp * ep2 * ctx.pp) == 0:
        facts = {"ep": ep2, "edp": world // (ctx.etp * ep2 * ctx.pp)}
        out.append(
            (
                "EP ×2",
                {"model.expert_model_parallel_size": ep2},
                facts,
                f"expert_model_parallel_size={ep2} on the same {world} GPUs "
                f"(EDP {ctx.edp} -> {facts['edp']}; all-to-all spans more ranks)",
                _KEEPS_NOTHING,
            )
        )
    return out


def _optimizer_changes(ctx: _Ctx) -> list[_Change]:
    """Optimizer CPU offload fractions, precision-aware moments, distributed optimizer."""
    v = ctx.v
    out: list[_Change] = []
    distributed = v.flag("ddp.use_distributed_optimizer", "optimizer.use_distributed_optimizer")
    if not distributed:
        out.append(("distributed optimizer",
                    {"ddp.use_distributed_optimizer": True,
                     "optimizer.use_distributed_optimizer": True}, {},
                    "ddp/optimizer.use_distributed_optimizer=true",
                    _KEEPS_ACTIVATIONS))  # fmt: skip
    current = float(v.get("optimizer.optimizer_offload_fraction", default=0.0)) if v.flag(
        "optimizer.optimizer_cpu_offload") else 0.0  # fmt: skip
    for fraction in (0.5, 1.0):
        if fraction > current:
            out.append((f"optimizer offload {fraction:g}",
                        {"optimizer.optimizer_cpu_offload": True,
                         "optimizer.optimizer_offload_fraction": fraction,
                         "ddp.use_distributed_optimizer": True,
                         "optimizer.use_distributed_optimizer": True}, {},
                        f"optimizer_cpu_offload=true, optimizer_offload_fraction={fraction:g} "
                        "(Adam moments on the host; CPU Adam slows the step ~2-4×)",
                        _KEEPS_ACTIVATIONS))  # fmt: skip
    if not v.flag("optimizer.use_precision_aware_optimizer") and not v.flag(
            "optimizer.optimizer_cpu_offload"):  # fmt: skip
        out.append(
            (
                "bf16 Adam moments",
                {
                    "optimizer.use_precision_aware_optimizer": True,
                    "optimizer.exp_avg_dtype": "bf16",
                    "optimizer.exp_avg_sq_dtype": "bf16",
                },
                {},
                "use_precision_aware_optimizer=true with bf16 exp_avg/exp_avg_sq",
                _KEEPS_ACTIVATIONS,
            )
        )
    return out


def _batch_changes(ctx: _Ctx) -> list[_Change]:
    """Capacity factor for dropless MoE; smaller micro-batch."""
    out: list[_Change] = []
    rho, _ = _rho(ctx) if ctx.arch.is_moe else (1.0, "")
    if ctx.arch.is_moe and rho > 1.0:
        out.append(
            (
                "capacity factor 1.0",
                {"model.moe_expert_capacity_factor": 1.0},
                {},
                "moe_expert_capacity_factor=1.0 (drops tokens beyond capacity; bounds ρ)",
                _KEEPS_STATES,
            )
        )
    if ctx.mbs > 1:
        mbs = ctx.mbs // 2
        out.append(
            (
                f"micro-batch {mbs}",
                {"train.micro_batch_size": mbs},
                {"mbs": mbs, "microbatches": ctx.microbatches * 2},
                f"train.micro_batch_size={mbs} (twice the micro-batches per step)",
                _KEEPS_STATES,
            )
        )
    return out


def levers(
    values: Mapping[str, Any],
    facts: Mapping[str, Any],
    settings: MemorySettings | None = None,
    capacity_gib: float | None = None,
    versions: Mapping[str, Version] | None = None,
    base: Estimate | None = None,
) -> list[Lever]:
    """Config changes that lower the worst stage's peak, best first (re-runs the model once
    per candidate; ``base``, the estimate already made for these inputs, is not re-run).

    A candidate's estimate takes the terms the change cannot touch from the first estimate
    that computed them for the base values (the base's own when ``base`` is not given, else
    the first candidate that keeps them): the recompute, capacity-factor and micro-batch
    candidates share one set of states, the optimizer candidates one set of activations
    (:class:`~moe_lint.analysis.memory.estimate.Reuse`), and every candidate the base's
    architecture (no candidate changes a field it is read from). Reused terms are the same
    numbers, so each delta is the full re-run's; only the assumptions, which no lever reads,
    may omit a reused computation's notes.
    """
    # Through the package, so that a wrapper installed there (bench/bench.py --memory counts
    # the model's runs per file) sees every trial.
    from moe_lint.analysis import memory

    estimate = memory.estimate
    settings = settings or MemorySettings()
    terms: dict[Any, Any] = {}  # the terms shared between the estimates (Reuse.terms)
    if base is None:
        base = estimate(values, facts, settings, capacity_gib, versions, bounds=False,
                        reuse=_reuse("base", _KEEPS_STATES | _KEEPS_ACTIVATIONS,
                                     terms))  # fmt: skip
    ctx = _context(values, facts, settings, versions)
    changes: list[_Change] = [
        *_recompute_changes(values, ctx.arch),
        *_parallel_changes(ctx),
        *_optimizer_changes(ctx),
        *_batch_changes(ctx),
    ]
    found: list[Lever] = []
    for name, new_values, new_facts, requires, keeps in changes:
        try:
            trial = estimate({**values, **new_values}, {**facts, **new_facts}, settings,
                             capacity_gib, versions, bounds=False, arch=ctx.arch,
                             reuse=_reuse(name, keeps, terms))  # fmt: skip
        except MemoryInputError:
            continue
        delta = trial.worst.total_gib - base.worst.total_gib
        if delta < -0.005:
            found.append(Lever(name, round(delta, 3), requires))
    return sorted(found, key=lambda lever: lever.delta_gib)


def _reuse(name: str, keeps: frozenset[str], terms: dict[Any, Any]) -> Reuse:
    """The term reuse of the candidate ``name``: each kind it keeps named "base" (shared by
    every candidate that keeps it), the others its own."""
    state, activation, params, bytes_ = ("base" if kind in keeps else name for kind in _KINDS)
    return Reuse(state, activation, params, bytes_, terms)


def with_settings(settings: MemorySettings, **changes: Any) -> MemorySettings:
    """A copy of ``settings`` with some knobs changed (keeps call sites short)."""
    return replace(settings, **changes)
