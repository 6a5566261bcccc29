"""Per-GPU peak memory of a Megatron Bridge MoE training run, per pipeline stage.

The model is docs/domain/02 §4 made executable (the full derivation is in docs/memory-model.md):

* **states** (§4.1): weights, gradients and Adam states per parameter, with the dense shard group
  DP·CP and the expert shard group EDP for the distributed optimizer, precision-aware optimizer
  dtypes, FP8 parameters, Megatron-FSDP and fractional optimizer CPU offload;
* **activations** (§4.4): bytes saved per token per layer for MCore + Transformer Engine with
  flash/fused attention (no s² term), split between sequence-parallel regions (÷TP·CP) and
  tensor-parallel regions (heads/FFN split over TP, tokens over CP); MoE routed tensors scale with
  top-k, ETP and the routing imbalance ρ; selective recompute removes named pieces, full
  recompute keeps chunk inputs; in-flight micro-batches follow the 1F1B / interleaved schedule;
* **head**: final norm, logits and the fp32 cross-entropy copy, once more per MTP depth;
* **fixed costs** outside PyTorch's allocator (CUDA context, NCCL, DeepEP/HybridEP buffers) and
  a fragmentation margin on top of the allocated peak.

Every figure is a :class:`Term` carrying its derivation; the :class:`Estimate` lists the
assumptions made where the config was silent. Only the standard library is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal, cast

from moe_lint.analysis.params import (
    Arch,
    LayerParams,
    Part,
    count_params,
    expert_params,
    mtp_extra_params,
    mtp_layer_params,
)
from moe_lint.analysis.placement import Placement, place
from moe_lint.config.memory_settings import MemorySettings
from moe_lint.config.mixed_precision import MP_DEFAULTS, recipe_values
from moe_lint.config.versions import Version, effective_version

GIB = float(2**30)
#: The upper band's term on top of the allocated peak (an allocated-memory model error).
BAND = "model band"


class MemoryInputError(ValueError):
    """The config lacks a value the estimate cannot do without (the message names it)."""


# --------------------------------------------------------------------------------------------
# Settings and results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """One named contribution to a stage's memory.

    kind: ``state`` (weights/grads/optimizer, alive all step), ``activation`` (forward/backward
    phase), ``step`` (optimizer-step transient, not concurrent with activations), ``fixed``
    (device memory outside PyTorch's allocator) or ``margin`` (fragmentation).
    """

    name: str
    gib: float
    derivation: str
    kind: str = "state"


@dataclass(frozen=True)
class StageEstimate:
    """Peak of one pipeline rank: allocated tensors and the device total incl. fixed costs.

    ``forward_backward_gib`` and ``step_gib`` are the allocated totals of the two phases
    (states plus activations, states plus optimizer-step transients); the peak is the larger.
    """

    stage: int
    terms: tuple[Term, ...]
    total_gib: float
    allocated_gib: float
    peak_phase: str
    forward_backward_gib: float = 0.0
    step_gib: float = 0.0
    #: What PyTorch's caching allocator reserves: allocated plus the fragmentation margin.
    reserved_gib: float = 0.0

    def term(self, name: str) -> Term | None:
        """The term called ``name``, if the stage has one."""
        return next((t for t in self.terms if t.name == name), None)


@dataclass(frozen=True)
class Estimate:
    """All stages, the worst one, the capacity it is judged against and the assumptions.

    ``stages`` / ``worst`` are the central estimate. ``lower`` holds the same stages with only
    what is certain (correct sharding, balanced routing, no fragmentation, no optional
    buffers, only certain transients): MEM001 fires only when its worst stage exceeds usable
    memory. ``upper`` is the band: pessimistic readings of the uncertain terms plus the
    validation set's largest under-prediction.
    """

    stages: tuple[StageEstimate, ...]
    worst: StageEstimate
    capacity_gib: float | None
    usable_gib: float | None
    assumptions: tuple[str, ...]
    lower: tuple[StageEstimate, ...] = ()
    upper: tuple[StageEstimate, ...] = ()

    @property
    def lower_worst(self) -> StageEstimate:
        """The lower bound's worst stage (the central worst when no bound was computed)."""
        return max(self.lower, key=lambda s: s.total_gib) if self.lower else self.worst

    @property
    def upper_worst(self) -> StageEstimate:
        """The band's worst stage (the central worst when no band was computed)."""
        return max(self.upper, key=lambda s: s.total_gib) if self.upper else self.worst

    @property
    def fits(self) -> bool | None:
        """True/False: the central estimate against the usable capacity (None without a GPU)."""
        return None if self.usable_gib is None else self.worst.total_gib <= self.usable_gib

    def verdict(self, warn_fraction: float, error_margin: float) -> str | None:
        """The one verdict ``check`` (MEM001 / MEM002) and ``estimate`` share: "does NOT fit"
        when the lower bound exceeds usable·(1 + error_margin), "may not fit" when the central
        estimate exceeds usable·(1 − warn_fraction), else "fits"; None without a GPU."""
        if self.usable_gib is None:
            return None
        if self.lower_worst.total_gib > self.usable_gib * (1 + error_margin):
            return "does NOT fit"
        if self.worst.total_gib > self.usable_gib * (1 - warn_fraction):
            return "may not fit"
        return "fits"


@dataclass(frozen=True)
class Lever:
    """A config change and what it does to the worst stage's peak (negative = saves)."""

    name: str
    delta_gib: float
    requires: str


# --------------------------------------------------------------------------------------------
# Reading the config
# --------------------------------------------------------------------------------------------

_DTYPE_BYTES = {
    "float32": 4, "fp32": 4, "float": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2,
    "half": 2, "uint8": 1, "fp8": 1, "float8": 1, "float8_e4m3fn": 1, "int16": 2,
}  # fmt: skip


def _dtype_bytes(value: Any, default: int) -> int:
    """Bytes per element of a dtype written as ``torch.bfloat16``, ``bf16``, ``fp32``..."""
    if value is None:
        return default
    if isinstance(value, Mapping):  # full dumps write dtypes as {_target_: torch.float32}
        value = value.get("_target_", "")
    key = str(value).lower().replace("torch.", "").strip()
    return _DTYPE_BYTES.get(key, default)


class _Values:
    """Dotted-key access that tolerates the same field living in several sections."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = values
        self._sections: dict[str, bool] = {}

    def has_section(self, name: str) -> bool:
        """Any ``name.*`` key is set (asked once per stage; answered once per estimate)."""
        if name not in self._sections:
            prefix = name + "."
            self._sections[name] = any(k.startswith(prefix) for k in self.values)
        return self._sections[name]

    def get(self, *keys: str, default: Any = None) -> Any:
        for key in keys:
            value = self.values.get(key)
            if value is not None:
                return value
        return default

    def flag(self, *keys: str, default: bool = False) -> bool:
        return bool(self.get(*keys, default=default))


@dataclass
class _Ctx:
    """Everything the terms need, resolved once (sizes, dtypes, recompute, schedule)."""

    arch: Arch
    v: _Values
    settings: MemorySettings
    tp: int
    pp: int
    cp: int
    ep: int
    etp: int
    dp: int
    edp: int
    vpp: int
    sp: bool
    seq: int
    mbs: int
    microbatches: int
    world: int
    #: Transformer Engine / Megatron-Core versions (stated, else the newest release) and
    #: whether the user stated TE (terms that depend on an unstated version widen the band).
    te: Version = field(default_factory=lambda: effective_version({}, "transformer-engine"))
    te_stated: bool = False
    #: "central" (the estimate), "lower" (only what is certain: MEM001) or "upper" (the band).
    mode: str = "central"
    assumptions: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if text not in self.assumptions:
            self.assumptions.append(text)

    @property
    def tokens(self) -> float:
        """N: tokens of one micro-batch on one CP rank (TP regions hold all of them)."""
        return self.seq * self.mbs / self.cp

    @property
    def sp_tokens(self) -> float:
        """Tokens per rank in sequence-parallel regions (norms, residual, router)."""
        return self.tokens / self.tp if self.sp else self.tokens


#: The sizes and batch shape the model reads from the derived facts
#: (analysis/memory_facts.py:model_inputs fills the ones derive could not compute).
INPUTS = ("tp", "pp", "cp", "ep", "etp", "world", "dp", "edp", "sp", "vpp", "seq", "mbs",
          "microbatches")  # fmt: skip


def _context(
    values: Mapping[str, Any],
    facts: Mapping[str, Any],
    s: MemorySettings,
    versions: Mapping[str, Version] | None = None,
    mode: str = "central",
    arch: Arch | None = None,
) -> _Ctx:
    """Parallel sizes and batch shape from the facts (the model derives none of them)."""
    v = _Values(values)
    try:
        arch = arch or Arch.from_mapping(values)
    except (KeyError, ValueError) as exc:
        raise MemoryInputError(str(exc).strip("'\"")) from None
    if facts.get("seq") is None:
        raise MemoryInputError("the sequence length (model.seq_length) is needed")
    missing = [name for name in INPUTS if name not in facts or (
        facts[name] is None and name != "vpp")]  # fmt: skip
    if missing:
        raise MemoryInputError(f"the derived sizes are missing: {', '.join(missing)}")
    tp, pp, cp, ep, etp, world, dp, edp = (int(facts[n]) for n in (
        "tp", "pp", "cp", "ep", "etp", "world", "dp", "edp"))  # fmt: skip
    vpp = int(facts["vpp"] or 1)
    ctx = _Ctx(arch, v, s, tp, pp, cp, ep, etp, dp, edp, vpp, bool(facts["sp"] and tp > 1),
               int(facts["seq"]), int(facts["mbs"]), int(facts["microbatches"]),
               world)  # fmt: skip
    stated = dict(versions or {})
    ctx.te = effective_version(stated, "transformer-engine")
    ctx.te_stated = "transformer-engine" in stated
    ctx.mode = mode
    for text in (*facts.get("assumed", ()), *arch.assumed):
        ctx.note(text)
    return ctx


# --------------------------------------------------------------------------------------------
# Pipeline placement
# --------------------------------------------------------------------------------------------


@dataclass
class _Stage:
    """What one PP rank holds: layer indices per virtual chunk, embedding, head, MTP depths."""

    rank: int
    chunks: list[list[int]] = field(default_factory=list)
    embedding: bool = False
    head: bool = False
    mtp: int = 0

    @property
    def layers(self) -> list[int]:
        return [i for chunk in self.chunks for i in chunk]


def _split(ctx: _Ctx, facts: Mapping[str, Any]) -> Placement:
    """The ``placement`` fact derive computed (analysis/placement.py); a caller that passes
    plain sizes (tests, tools/memory_report.py) gets the same placement from the values."""
    placed = facts.get("placement")
    if isinstance(placed, Placement):
        return placed
    v = ctx.v
    first = v.get("model.num_layers_in_first_pipeline_stage")
    last = v.get("model.num_layers_in_last_pipeline_stage")
    layout = v.get("model.pipeline_model_parallel_layout") or None
    placer = _place_cached if layout is None or isinstance(layout, str) else place
    return placer(
        num_layers=ctx.arch.num_layers,
        mtp=ctx.arch.mtp_num_layers,
        pp=ctx.pp,
        vpp=ctx.vpp,
        first=None if first is None else int(first),
        last=None if last is None else int(last),
        emb=v.flag("model.account_for_embedding_in_pipeline_split"),
        loss=v.flag("model.account_for_loss_in_pipeline_split"),
        layout=layout,
    )


#: ``place`` of a split written as scalars (a string layout or none), memoized: the planner
#: estimates many candidates that share their pipeline split.
_place_cached = lru_cache(maxsize=256)(place)


def _placement(ctx: _Ctx, facts: Mapping[str, Any] | None = None) -> list[_Stage]:
    """Layer indices per rank and virtual chunk; embedding, head and MTP, from the placement."""
    placed = _split(ctx, facts or {})
    if not placed.stages:
        if placed.method == "uneven":
            first = ctx.v.get("model.num_layers_in_first_pipeline_stage")
            last = ctx.v.get("model.num_layers_in_last_pipeline_stage")
            rest = ctx.arch.num_layers - int(first or 0) - int(last or 0)
            middle = ctx.pp - (first is not None) - (last is not None)
            raise MemoryInputError(f"first/last stage layers leave {rest} for {middle} ranks")
        reason = placed.error.problem if placed.error else "the split places no stage"
        raise MemoryInputError(f"pipeline_model_parallel_layout: {reason}")
    if placed.method == "layout" and placed.vpp != ctx.vpp:
        ctx.vpp = placed.vpp
        ctx.note(
            f"VPP taken from the layout: {len(placed.stages)} stages / PP {ctx.pp} = {ctx.vpp}"
        )
    for text in placed.notes:
        ctx.note(text)
    placed_layers = sum(len(s.layers) for s in placed.stages)
    if placed_layers != ctx.arch.num_layers:
        raise MemoryInputError(
            f"the pipeline split places {placed_layers} layers but the model has "
            f"{ctx.arch.num_layers}"
        )
    stages = [_Stage(r, [[] for _ in range(placed.vpp)]) for r in range(ctx.pp)]
    for vs in placed.stages:
        stage = stages[vs.rank]
        stage.chunks[vs.chunk] = list(vs.layers)
        stage.embedding |= vs.embedding
        stage.head |= vs.head
        if vs.mtp:
            stage.mtp = vs.mtp
    return stages


# --------------------------------------------------------------------------------------------
# States: weights, gradients, optimizer
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _RankParams:
    """Parameters held by one rank: dense (after TP) and routed experts (after EP·ETP).

    ``vocab`` is the part of ``dense`` in embedding and output-layer tables (a scalar-optimizer
    group under Muon, and the largest single parameter a layer-wise optimizer must place whole).
    """

    dense: float
    expert: float
    detail: str
    vocab: float = 0.0
    largest: float = 0.0


def _rank_params(ctx: _Ctx, stage: _Stage, params: tuple[LayerParams, ...]) -> _RankParams:
    """Sum the rank's layers, embedding, output and MTP; experts are E/EP per rank, ÷ETP."""
    a, tp = ctx.arch, ctx.tp
    # The sum of params[i].dense over the layers, without a Part object per layer.
    layers_total = layers_sharded = 0
    for i in stage.layers:
        lp = params[i]
        layers_total += lp.attention.total + lp.dense_mlp.total + lp.moe_other.total
        layers_sharded += lp.attention.sharded + lp.dense_mlp.sharded + lp.moe_other.sharded
    dense = Part(layers_total, layers_sharded)
    expert_layers = sum(1 for i in stage.layers if params[i].ffn == "moe")
    per_expert = expert_params(a) if a.num_moe_experts else 0
    experts_per_rank = (a.num_moe_experts or 0) / ctx.ep
    vocab = a.padded_vocab(tp)
    emb = vocab * a.hidden_size
    parts = [f"{len(stage.layers)} layers"]
    extra_sharded = 0.0
    extra_replicated = 0.0
    tables = 0.0
    if stage.embedding:
        extra_sharded += emb
        tables += emb
        parts.append("embedding")
    if stage.head:
        tied_single = a.share_embeddings_and_output_weights and stage.embedding
        extra_sharded += 0 if tied_single else emb
        tables += 0 if tied_single else emb
        extra_replicated += a.norm_params
        parts.append("output layer")
    if stage.mtp:
        mtp = mtp_layer_params(a)
        extra = mtp_extra_params(a)
        dense_mtp = mtp.dense + extra
        # mtp_use_repeated_layer: one block of weights serves every depth.
        sets = min(stage.mtp, a.mtp_weight_sets)
        extra_sharded += sets * dense_mtp.sharded
        extra_replicated += sets * dense_mtp.replicated
        expert_layers += sets if mtp.ffn == "moe" else 0
        tied_copy = a.share_embeddings_and_output_weights and stage.head
        if not stage.embedding and not tied_copy:
            extra_sharded += emb  # MTP re-embeds tokens: the last stage keeps its own copy
            tables += emb
        parts.append(f"{stage.mtp} MTP depth(s)")
    dense_total = (dense.sharded + extra_sharded) / tp + dense.replicated + extra_replicated
    expert_total = expert_layers * experts_per_rank * per_expert / ctx.etp
    detail = (
        f"{', '.join(parts)}: dense {dense_total / 1e9:.3f} B (TP-split ÷{tp}), "
        f"experts {expert_layers} layers × {experts_per_rank:g} experts × {per_expert:,} / "
        f"ETP {ctx.etp} = {expert_total / 1e9:.3f} B"
    )
    return _RankParams(dense_total, expert_total, detail, tables / tp, emb / tp if tables else 0.0)


@dataclass(frozen=True)
class _Bytes:
    """Bytes per parameter for each state, the step transients and the shard groups.

    ``d_dense`` / ``d_expert`` shard the optimizer states (master, moments, the step's fp32
    grad copy); ``w_dense`` / ``w_expert`` shard Megatron-FSDP weights and grads (the inner
    group under HSDP). ``moments_vocab`` replaces ``moments`` for embedding/output tables (the
    scalar Adam of Muon). ``step_grad`` is an fp32 copy of every gradient shard made for the
    step; ``step_group`` TE FusedAdam's fp32 copy of low-precision states for one parameter
    group at a time (only the largest group, dense or expert, counts), certain only when
    ``step_group_certain``; ``step_gather`` the layer-wise optimizer's bf16 all-gather
    receive buffers per (unsharded) dense parameter.
    """

    weight: float
    grad: float
    master: float
    moments: float
    step_grad: float
    step_group: float
    d_dense: float
    d_expert: float
    offload: float
    shard_weights: bool
    shard_grads: bool
    why: str
    moments_vocab: float | None = None
    w_dense: float = 1.0
    w_expert: float = 1.0
    layerwise: bool = False
    step_group_certain: bool = False
    step_gather: float = 0.0


def _precision(ctx: _Ctx) -> tuple[str, float]:
    """Parameter dtype and bytes; FP8 params keep a 1-byte copy plus a 1-byte transpose cache."""
    v = ctx.v
    recipe = str(v.get("mixed_precision", default="")).lower()
    fp8 = v.get("model.fp8", "mixed_precision.fp8") or "fp8" in recipe
    fp8_params = v.flag("mixed_precision.fp8_param_gather", "mixed_precision.fp8_param",
                        "model.fp8_param", "ddp.fp8_param_gather")  # fmt: skip
    if fp8 and fp8_params:
        return "fp8", 2.0
    if v.flag("model.fp16", "mixed_precision.fp16") or recipe.startswith("fp16"):
        return "fp16", 2.0
    if not (v.flag("model.bf16", "mixed_precision.bf16") or recipe.startswith("bf16")):
        ctx.note("no bf16/fp16 flag -> bf16 weights assumed (every Bridge MoE recipe)")
    return "bf16", 2.0


def _grad_bytes(ctx: _Ctx) -> float:
    """Gradient buffer dtype: fp32 with grad_reduce_in_fp32 (Bridge bf16_mixed default)."""
    value = ctx.v.get("ddp.grad_reduce_in_fp32", "mixed_precision.grad_reduce_in_fp32")
    if value is None:
        recipe = str(ctx.v.get("mixed_precision", default="bf16_mixed")).lower()
        value = not recipe.startswith("fp16")
        ctx.note(f"grad_reduce_in_fp32 unset -> {value} (Bridge {recipe or 'bf16_mixed'})")
    return 4.0 if value else 2.0


#: Megatron-Core emerging optimizers with one momentum buffer per Muon-managed parameter
#: (optimizer/emerging_optimizers.py); any other layer-wise optimizer is charged Adam's two.
_ONE_MOMENT = ("muon", "adaptive_muon")

#: TE FusedAdam fuses (un)scaling of bf16 moments into its kernel from TE 2.13 on (PR #2632,
#: pytorch/optimizers/fused_adam.py::FusedAdam, fuse_unscale); earlier it made fp32 copies.
_TE_FUSED_UNSCALE = Version("2.13")


def _optimizer_fp8_recipe(ctx: _Ctx) -> tuple[str | None, bool]:
    """The ``fp8_recipe`` Megatron-Core's OptimizerConfig sees, and whether the file says so.

    Bridge's MixedPrecisionConfig.setup copies its ``fp8_recipe`` (default "tensorwise", also
    in bf16_mixed) onto the optimizer config before OptimizerConfig.finalize runs __post_init__
    (megatron/bridge/training/config.py::runtime_config_update; mixed_precision.py::
    update_config_with_precision_overrides); normalize puts that value at model.fp8_recipe.
    """
    v = ctx.v
    value = v.get("optimizer.fp8_recipe")
    if value is None:
        value = _mixed(ctx, "fp8_recipe")
    known = (v.get("mixed_precision") is not None or v.get("optimizer.fp8_recipe") is not None
             or _mixed_block(ctx))  # fmt: skip
    return (None if value is None else str(value)), known


def _state_bytes(ctx: _Ctx) -> _Bytes:
    """Bytes per parameter of weights, grads, master params and optimizer moments, with shards.

    Optimizer type (docs/domain/06 §2.1): ``dist_<name>`` or use_layer_wise_distributed_optimizer
    is MCore's LayerWiseDistributedOptimizer (optimizer/layer_wise_optimizer.py), which shards
    whole parameters over DP·CP (dense) and EDP (experts) whatever use_distributed_optimizer
    says; Muon keeps one fp32 momentum, its scalar Adam (embedding, output, norms) two.
    Shard groups (§2.2): Megatron-FSDP weights/grads shard over the inner group DP·CP/instances;
    the optimizer states over the full DP·CP and EDP when outer_dp_sharding_strategy is "optim".
    Precision-aware Adam (§2.3): OptimizerConfig.__post_init__ sets
    use_precision_aware_optimizer_no_fp8_or_ds_fp8 only with non-fp32 main params, an FP8
    recipe of None/"delayed" or optimizer CPU offload; otherwise DistributedOptimizer keeps its
    own fp32 master shards (4 B) and casts each grad shard to fp32 for the step.
    """
    v = ctx.v
    _, weight = _precision(ctx)
    grad = _grad_bytes(ctx)
    name = str(v.get("optimizer.optimizer", default="adam")).lower()
    layerwise = name.startswith("dist_") or v.flag("optimizer.use_layer_wise_distributed_optimizer")
    base = name.removeprefix("dist_")
    fsdp = v.flag("ddp.use_megatron_fsdp", "dist.use_megatron_fsdp")
    strategy = str(v.get("ddp.data_parallel_sharding_strategy", default="no_shard"))
    distributed = v.flag("ddp.use_distributed_optimizer", "optimizer.use_distributed_optimizer")
    instances = max(1, int(v.get("ddp.num_distributed_optimizer_instances", default=1) or 1))
    full_dense, full_expert = float(ctx.dp * ctx.cp), float(ctx.edp)
    inner_dense, inner_expert = full_dense / instances, full_expert / instances
    w_dense, w_expert = (inner_dense, inner_expert) if fsdp else (1.0, 1.0)
    outer_optim = (
        fsdp
        and instances > 1
        and str(v.get("ddp.outer_dp_sharding_strategy", default="no_shard")) == "optim"
    )
    if layerwise:
        d_dense, d_expert = full_dense, full_expert
        shard_why = "layer-wise distributed optimizer: whole params over DP·CP / EDP"
    elif outer_optim:
        d_dense, d_expert = full_dense, full_expert
        shard_why = f"HSDP outer 'optim': states over the full DP·CP / EDP ({instances} outer)"
    elif distributed or (fsdp and strategy != "no_shard"):
        d_dense, d_expert = inner_dense, inner_expert
        shard_why = "distributed optimizer" + (f" ({instances} instances)" if instances > 1 else "")
    else:
        d_dense, d_expert = 1.0, 1.0
        shard_why = "no distributed optimizer: states unsharded"
    aware = v.flag("optimizer.use_precision_aware_optimizer")
    offload_on = v.flag("optimizer.optimizer_cpu_offload")
    step_group, step_certain, step_gather = 0.0, False, 0.0
    moments_vocab: float | None = None
    if layerwise:
        master = 4.0
        one = base in _ONE_MOMENT
        moments = 4.0 if one else 8.0
        moments_vocab = 8.0  # muon_scalar_optimizer (default adam) for embedding/output/norms
        step_grad = 4.0  # Float16OptimizerWithFloat16Params: fp32 copy of each local grad
        step_gather = 2.0  # all-gather of the updated bf16 params (receive buffers)
        why = f"layer-wise {base}: fp32 master 4 B + " + (
            "momentum 4 B (Adam 8 B for embedding/output)" if one else "m + v 8 B"
        )
    elif aware:
        main = _dtype_bytes(v.get("optimizer.main_params_dtype"), 4)
        recipe, recipe_known = _optimizer_fp8_recipe(ctx)
        plain = main != 4 or recipe in (None, "delayed") or offload_on
        if not recipe_known and ctx.mode == "lower":
            plain = True  # the smaller reading when the recipe is not in the file
        m_bytes = _dtype_bytes(v.get("optimizer.exp_avg_dtype"), 4)
        v_bytes = _dtype_bytes(v.get("optimizer.exp_avg_sq_dtype"), 4)
        moments = float(m_bytes + v_bytes)
        if plain:
            remainders = v.get("optimizer.store_param_remainders", default=True)
            master = 2.0 if (main == 4 and remainders and weight == 2) else float(main)
            step_grad = 0.0  # decoupled_grad: the optimizer reads the grad buffer in place
            path = "TE FusedAdam masters"
        else:
            master, step_grad = 4.0, 4.0
            path = f"MCore fp32 master shards (optimizer fp8_recipe {recipe!r})"
        low = (m_bytes != 4) + (v_bytes != 4)
        old_te = ctx.te < _TE_FUSED_UNSCALE
        fused = m_bytes == 2 and v_bytes == 2 and not old_te  # bf16 moments, TE >= 2.13
        if low and not fused:
            step_group = 4.0 * low
            step_certain = ctx.te_stated or m_bytes != 2 or v_bytes != 2
        elif low and not ctx.te_stated:
            step_group = 4.0 * low  # only in the band: TE < 2.13 would make these copies
        why = f"precision-aware Adam ({path}): master {master:g} B, moments {moments:g} B"
    else:
        master, moments = 4.0, 8.0
        step_grad = 4.0 if grad < 4 else 0.0
        why = "Adam: fp32 master 4 B + m 4 B + v 4 B"
    offload = 0.0
    if offload_on:
        offload = float(v.get("optimizer.optimizer_offload_fraction", default=0.0))
        if not distributed:
            ctx.note("optimizer_cpu_offload requires the distributed optimizer")
    return _Bytes(
        weight, grad, master, moments, step_grad, step_group, d_dense, d_expert, offload,
        shard_weights=fsdp and strategy == "optim_grads_params",
        shard_grads=fsdp and strategy in ("optim_grads", "optim_grads_params"),
        why=f"{why}; {shard_why}", moments_vocab=moments_vocab, w_dense=w_dense,
        w_expert=w_expert, layerwise=layerwise, step_group_certain=step_certain,
        step_gather=step_gather,
    )  # fmt: skip


#: Bridge LoRA defaults (megatron/bridge/peft/lora.py::LoRA): all linear layers, rank 32.
_LORA_TARGETS = ("linear_qkv", "linear_proj", "linear_fc1", "linear_fc2")


def _peft_adapters(ctx: _Ctx, stage: _Stage) -> float | None:
    """Trainable adapter parameters of a rank under PEFT (None without a ``peft`` section).

    PEFT.freeze_model sets requires_grad False on every base parameter (peft/base.py), so
    Megatron's DDP builds grad buffers and the optimizer holds states for the adapters only;
    LoRA adds A (in × r) and B (r × out) to each targeted linear layer (experts included).
    """
    v = ctx.v
    if not v.has_section("peft") and not v.get("peft"):
        return None
    a = ctx.arch
    r = int(v.get("peft.dim", default=32) or 32)
    targets = v.get("peft.target_modules") or _LORA_TARGETS
    h, d = a.hidden_size, a.kv_channels
    q, kv = a.num_attention_heads * d, a.num_query_groups * d
    total = 0.0
    for i in stage.layers:
        mixer, ffn = a.layers[i]
        experts = (a.num_moe_experts or 0) / ctx.ep if ffn == "moe" else 1
        width = a.expert_ffn if ffn == "moe" else a.ffn_hidden_size
        io = {
            "linear_qkv": (h + q + 2 * kv) if mixer != "none" else 0,
            "linear_proj": (q + h) if mixer != "none" else 0,
            "linear_fc1": (h + a.mlp_factor * width) * experts if ffn != "none" else 0,
            "linear_fc2": (width + h) * experts if ffn != "none" else 0,
        }
        total += sum(r * io.get(str(t).rsplit(".", 1)[-1], 0) for t in targets)
    return total / ctx.tp


def _state_terms(
    ctx: _Ctx, rp: _RankParams, b: _Bytes, adapters: float | None = None
) -> list[Term]:
    """Weights, gradients, master params and moments; offload moves moments to the host.
    Under PEFT only the ``adapters`` have gradients and optimizer states."""
    if adapters is not None:
        frozen = Term("weights", (rp.dense + rp.expert + adapters) * b.weight / GIB,
                      f"frozen base {(rp.dense + rp.expert) / 1e9:.3f} B + adapters "
                      f"{adapters / 1e6:.1f} M params × {b.weight:g} B; {rp.detail}")  # fmt: skip
        trainable = _RankParams(adapters, 0.0, "PEFT adapters")
        rest = [t for t in _state_terms(ctx, trainable, b) if t.name != "weights"]
        return [frozen, *[replace(t, derivation=f"PEFT adapters only: {t.derivation}")
                          for t in rest]]  # fmt: skip

    def dense_shard(d: float) -> float:
        """Dense params of the worst rank's shard: a layer-wise optimizer places whole
        parameters, so one rank holds at least the largest (an embedding table)."""
        share = rp.dense / d
        return max(share, min(rp.largest, rp.dense)) if b.layerwise and d > 1 else share

    def sharded(bytes_per: float, shard: bool, weights: bool = False) -> tuple[float, str]:
        if weights:
            dd, de = (b.w_dense, b.w_expert) if shard else (1.0, 1.0)
            dense = rp.dense / dd
        else:
            dd, de = (b.d_dense, b.d_expert) if shard else (1.0, 1.0)
            dense = dense_shard(dd) if shard else rp.dense
        value = dense * bytes_per + rp.expert * bytes_per / de
        return value, f"({rp.dense / 1e9:.3f} B / {dd:g} + {rp.expert / 1e9:.3f} B / {de:g})"

    w, w_how = sharded(b.weight, b.shard_weights, weights=True)
    g, g_how = sharded(b.grad, b.shard_grads, weights=True)
    m, m_how = sharded(b.master, True)
    mo, mo_how = sharded(b.moments, True)
    if b.moments_vocab is not None and rp.vocab:
        # The embedding/output tables are the scalar optimizer's (Adam: m + v).
        vocab_share = min(rp.vocab, dense_shard(b.d_dense))
        mo += vocab_share * (b.moments_vocab - b.moments)
        mo_how += f" + {vocab_share / 1e9:.3f} B tables × {b.moments_vocab - b.moments:g} B"
    kept = 1.0 - b.offload
    terms = [
        Term("weights", w / GIB, f"{w_how} × {b.weight:g} B; {rp.detail}"),
        Term("gradients", g / GIB, f"{g_how} × {b.grad:g} B (grad buffer)"),
        Term("optimizer master params", m / GIB,
             f"{m_how} × {b.master:g} B; dense shard {b.d_dense:g}, expert shard "
             f"{b.d_expert:g}"),
        Term("optimizer moments", mo * kept / GIB,
             f"{mo_how} × {b.moments:g} B × (1 − offload {b.offload:g}); {b.why}"),
    ]  # fmt: skip
    if b.step_grad:
        sg, sg_how = sharded(b.step_grad, True)
        terms.append(Term("optimizer-step fp32 grad copy", sg / GIB,
                          f"{sg_how} × {b.step_grad:g} B: the optimizer casts each "
                          "gradient shard to fp32 for the step", "step"))  # fmt: skip
    if b.step_group and (b.step_group_certain or ctx.mode == "upper"):
        dense, expert = dense_shard(b.d_dense), rp.expert / b.d_expert
        value = max(dense, expert) * b.step_group * (1.0 - b.offload)
        terms.append(Term("optimizer-step fp32 state copies", value / GIB,
                          f"max(dense {dense / 1e9:.3f} B, experts {expert / 1e9:.3f} B) × "
                          f"{b.step_group:g} B: TE FusedAdam.step unscales bf16/fp16 states to "
                          f"fp32 for a whole parameter group (TE {ctx.te}"
                          + ("" if ctx.te_stated else ", not stated: band only") + ")",
                          "step"))  # fmt: skip
    if b.step_gather and ctx.mode != "lower":
        value = rp.dense * b.step_gather
        terms.append(Term("optimizer-step param all-gather", value / GIB,
                          f"{rp.dense / 1e9:.3f} B dense × {b.step_gather:g} B: the layer-wise "
                          "optimizer all-gathers updated bf16 params into receive buffers",
                          "step"))  # fmt: skip
    return terms


# --------------------------------------------------------------------------------------------
# Activations
# --------------------------------------------------------------------------------------------

Pieces = dict[str, float]

#: Selective-recompute modules -> the saved pieces they drop (docs/domain/02 §4.4).
RECOMPUTE_DROPS: dict[str, tuple[str, ...]] = {
    "core_attn": ("attn_scores", "dsa_topk", "dsa_index_qw", "dsa_index_k", "dsa_index_in"),
    "layernorm": ("norm_out", "mlp_norm_out"),
    "mla_up_proj": ("mla_up",),
    "moe_act": ("routed_act",),
    "shared_experts": ("shared_fc1", "shared_act"),
    "mlp": ("mlp_fc1", "mlp_act"),
    "moe": ("router", "routed_in", "routed_fc1", "routed_act", "routed_probs", "shared_fc1",
            "shared_act"),
    "gdn_norm_out": ("gdn_norm_out",),
}  # fmt: skip

#: Fine-grained activation offload module names -> the pieces they move to the host.
OFFLOAD_PIECES: dict[str, tuple[str, ...]] = {
    "expert_fc1": ("routed_in",),
    "moe_act": ("routed_act",),
    "attn_proj": ("attn_out",),
    "core_attn": ("qkv", "mla_up"),
    "attn_norm": ("norm_out",),
    "mlp_norm": ("mlp_norm_out",),
}


def _rho(ctx: _Ctx) -> tuple[float, str]:
    """Routing imbalance ρ on stored routed tensors (docs/domain/06 §2.4, §2.5).

    moe_router_force_load_balancing replaces the gate logits by random ones
    (transformer/moe/router.py::TopKRouter.forward, moe_utils.py::apply_random_logits): ρ = 1.
    Otherwise the setting (1.3), capped by capacity factors and EP; the lower bound takes 1
    unless padding fixes the size. Paged stash (transformer/moe/paged_stash.py::
    PagedStashBuffer) preallocates the stored routed tensors at
    moe_paged_stash_buffer_size_factor_cuda × the balanced count.
    """
    a, s, v = ctx.arch, ctx.settings, ctx.v
    k, e = a.moe_router_topk, a.num_moe_experts or 1
    if v.flag("model.moe_paged_stash"):
        factor = abs(float(v.get("model.moe_paged_stash_buffer_size_factor_cuda", default=1.1)))
        return factor, f"ρ = paged-stash buffer factor {factor:g} (preallocated)"
    if v.flag("model.moe_router_force_load_balancing"):
        rho, why = 1.0, "ρ = 1 (moe_router_force_load_balancing: random balanced routing)"
    elif ctx.mode == "lower":
        rho, why = 1.0, "ρ = 1 (lower bound: balanced routing)"
    else:
        rho, why = s.routing_imbalance, f"ρ = {s.routing_imbalance:g} (setting)"
    bound = ctx.ep * min(k, e / ctx.ep) / k
    if rho > bound:
        rho, why = bound, f"ρ = {bound:g}: EP {ctx.ep} ranks can receive at most this share"
    cf = v.get("model.moe_expert_capacity_factor")
    if cf is not None and float(cf) > 0:
        if v.flag("model.moe_pad_expert_input_to_capacity"):
            rho, why = float(cf), f"ρ = capacity factor {cf} (padded to capacity)"
        elif float(cf) < rho:
            rho, why = float(cf), f"ρ = capacity factor {cf} (tokens beyond capacity dropped)"
    rank_cf = v.get("model.moe_expert_rank_capacity_factor")
    if rank_cf is not None and float(rank_cf) > 0:
        rho, why = float(rank_cf), f"ρ = rank capacity factor {rank_cf} (fixed receive buffer)"
    return rho, why


def _mixer_pieces(ctx: _Ctx, mixer: str) -> Pieces:
    """Saved bytes of one layer's token mixer for one micro-batch, with its pre-norm."""
    h, ns = ctx.arch.hidden_size, ctx.sp_tokens
    out: Pieces = {"norm_in": 2 * h * ns, "norm_out": 2 * h * ns}
    out.update(_MIXER_PIECES[mixer](ctx))
    return out


def _scores(ctx: _Ctx) -> Pieces:
    """Unfused attention keeps softmax output and scores (s² per head); flash keeps none."""
    if ctx.settings.flash_attention:
        return {}
    heads = ctx.arch.num_attention_heads
    return {"attn_scores": 4 * heads * ctx.tokens * ctx.seq * ctx.mbs / ctx.tp}


def _gqa_pieces(ctx: _Ctx) -> Pieces:
    """GQA/MHA with flash attention: Q, K, V (KV heads replicated when TP > groups), output,
    fp32 softmax statistics, and the output gate when attention_output_gate is on."""
    a, t, n = ctx.arch, ctx.tp, ctx.tokens
    d, heads = a.kv_channels, a.num_attention_heads
    kv_heads = max(a.num_query_groups / t, 1.0)
    out = {
        "qkv": 2 * d * heads * n / t + 2 * 2 * d * kv_heads * n,
        "attn_out": 2 * heads * d * n / t,
        "lse": 4 * heads * n / t,
    }
    if a.attention_output_gate:
        out["attn_gate"] = 2 * 2 * heads * d * n / t
    if a.qk_layernorm:
        # q/k norms save their inputs, views that keep the fused QKV output alive (§2.11).
        out["qk_norm_in"] = 2 * d * (heads / t + kv_heads) * n
    return {**out, **_scores(ctx)}


def _mla_pieces(ctx: _Ctx) -> Pieces:
    """MLA: q latent (SP-local), kv latent gathered over TP before its norm, up-projected
    Q/K/V (what mla_up_proj recompute drops), output and softmax statistics."""
    a, t, n, ns = ctx.arch, ctx.tp, ctx.tokens, ctx.sp_tokens
    heads = a.num_attention_heads
    qk = a.qk_head_dim + a.qk_pos_emb_head_dim
    out: Pieces = {}
    if a.q_lora_rank:
        out["mla_latent_q"] = 2 * 2 * a.q_lora_rank * ns
    latent = a.kv_lora_rank + a.qk_pos_emb_head_dim
    out["mla_latent_kv"] = 2 * latent * n + 2 * a.kv_lora_rank * n
    out["mla_up"] = 2 * heads * (2 * qk + a.v_head_dim) * n / t
    out["attn_out"] = 2 * heads * a.v_head_dim * n / t
    out["lse"] = 4 * heads * n / t
    return {**out, **_scores(ctx)}


def _gdn_pieces(ctx: _Ctx) -> Pieces:
    """Gated DeltaNet: conv input/output, z and gates, core output, gated-norm output.

    The chunked delta-rule kernel saves its inputs and recomputes the per-chunk states in
    backward, so no state tensors are kept.
    """
    a, t, n = ctx.arch, ctx.tp, ctx.tokens
    k = a.linear_num_key_heads * a.linear_key_head_dim
    v = a.linear_num_value_heads * a.linear_value_head_dim
    return {
        "gdn_conv": 2 * 2 * (2 * k + v) * n / t,
        "gdn_gates": (2 * v + 12 * a.linear_num_value_heads) * n / t,
        "gdn_core_out": 2 * v * n / t,
        "gdn_norm_out": 2 * v * n / t,
    }


def _mamba_pieces(ctx: _Ctx) -> Pieces:
    """Mamba-2: conv input/output, z and dt, scan output y, gated-norm output (scan states are
    recomputed in backward)."""
    a, t, n = ctx.arch, ctx.tp, ctx.tokens
    d_in = a.mamba_num_heads * a.mamba_head_dim
    gs = a.mamba_num_groups * a.mamba_state_dim
    return {
        "mamba_conv": 2 * 2 * (d_in + 2 * gs) * n / t,
        "mamba_gates": (2 * d_in + 4 * a.mamba_num_heads) * n / t,
        "mamba_y": 2 * d_in * n / t,
        "mamba_norm_out": 2 * d_in * n / t,
    }


def _dsa_pieces(ctx: _Ctx) -> Pieces:
    """MLA with DSA: the MLA pieces plus what the indexer keeps for its KL loss and top-k.

    Sources (megatron/core/transformer/experimental_attention_variant/):
    dsa.py::DSAttention.forward runs dsa.py::DSAIndexer.forward_before_topk under grad when
    the indexer loss is on (training, dsa_indexer_loss_coeff > 0): its duplicated linears see
    the SP-gathered ``x``/``qr`` (kept only when they are new tensors, i.e. SP with TP > 1),
    k_norm (LayerNorm) keeps its input and fp32 mean/rstd, and k is gathered over CP.
    dsa.py::FusedDSAIndexerLoss.forward saves q [s,b,heads,dim], weights [s,b,heads], k and the
    top-k indices (torch.topk, int64); the fused cuDNN/TileLang kernels
    (dsa_cudnn_kernels.py::FusedIndexerSparseAttnFunc.forward) save same-sized indexer grads
    and int32 indices plus an int32 length per row. Without the loss only the indices stay
    (the sparse attention keeps them). Every TP rank computes all indexer heads for all of
    its CP rank's tokens. The s×s index scores of the reference path are transient.
    """
    a, n, v = ctx.arch, ctx.tokens, ctx.v
    out = _mla_pieces(ctx)
    backend = v.get("model.attention_backend")
    if isinstance(backend, Mapping):  # full dumps write the AttnBackend enum as a mapping
        backend = backend.get("_name_")
    fused = v.get("model.dsa_kernel_backend", default="none") != "none" and backend != "unfused"
    topk = min(a.dsa_indexer_topk, ctx.seq)
    out["dsa_topk"] = (4 * topk + 4 if fused else 8 * topk) * n
    coeff = float(v.get("model.dsa_indexer_loss_coeff", default=0.0) or 0.0)
    if coeff <= 0:
        return out
    heads, dim = a.dsa_indexer_n_heads, a.dsa_indexer_head_dim
    out["dsa_index_qw"] = 2 * heads * (dim + 1) * n
    out["dsa_index_k"] = 2 * dim * n * ctx.cp + (2 * dim + 8) * n
    if ctx.sp:
        out["dsa_index_in"] = 2 * (a.q_lora_rank or a.hidden_size) * n + 2 * a.hidden_size * n
    return out


_MIXER_PIECES = {"gqa": _gqa_pieces, "mla": _mla_pieces, "dsa": _dsa_pieces,
                 "gdn": _gdn_pieces, "mamba": _mamba_pieces}  # fmt: skip


def _unfused_glu(ctx: _Ctx) -> bool:
    """Dense/shared SwiGLU without bias_activation_fusion also saves the silu output."""
    return ctx.arch.gated_linear_unit and not ctx.v.flag("model.bias_activation_fusion")


def _dense_pieces(ctx: _Ctx) -> Pieces:
    """Dense MLP: pre-MLP norm input/output, fc1 output, activation output."""
    a, t, n, ns = ctx.arch, ctx.tp, ctx.tokens, ctx.sp_tokens
    f, h = a.ffn_hidden_size, a.hidden_size
    out = {"mlp_norm_in": 2 * h * ns, "mlp_norm_out": 2 * h * ns}
    out["mlp_fc1"] = 2 * (2 if a.gated_linear_unit else 1) * f * n / t
    out["mlp_act"] = 2 * f * n / t * (2 if _unfused_glu(ctx) else 1)
    return out


def _moe_pieces(ctx: _Ctx, rho: float) -> Pieces:
    """MoE: norm, fp32 router tensors, routed copies (k·ETP·ρ per token), shared expert."""
    a, t, n, ns = ctx.arch, ctx.tp, ctx.tokens, ctx.sp_tokens
    h, k, e = a.hidden_size, a.moe_router_topk, a.num_moe_experts or 0
    f = a.expert_ffn
    copies = rho * min(k, e) * ctx.etp * ns
    width = a.moe_latent_size or h
    out = {"mlp_norm_in": 2 * h * ns, "mlp_norm_out": 2 * h * ns, "router": 9 * e * ns}
    out["routed_in"] = 2 * width * copies
    if ctx.v.flag("model.moe_apply_probs_on_input"):
        out["routed_in"] += 2 * width * copies
    out["routed_fc1"] = 2 * (2 if a.gated_linear_unit else 1) * f / ctx.etp * copies
    out["routed_act"] = 2 * f / ctx.etp * copies
    out["routed_probs"] = 4 * copies
    fs = a.moe_shared_expert_intermediate_size
    if fs:
        out["shared_fc1"] = 2 * (2 if a.gated_linear_unit else 1) * fs * n / t
        out["shared_act"] = 2 * fs * n / t * (2 if _unfused_glu(ctx) else 1)
    return out


def _dropout_pieces(ctx: _Ctx, sites: int) -> Pieces:
    """1-byte dropout masks after attention and MLP when hidden_dropout > 0."""
    p = float(ctx.v.get("model.hidden_dropout", default=0.0) or 0.0)
    return {"dropout": sites * ctx.arch.hidden_size * ctx.sp_tokens} if p > 0 else {}


def layer_pieces(ctx: _Ctx, mixer: str, ffn: str, rho: float, bf16_layer: bool = False) -> Pieces:
    """All saved tensors of one layer for one micro-batch, before recompute."""
    out: Pieces = {}
    if mixer != "none":
        out.update(_mixer_pieces(ctx, mixer))
    if ffn == "dense":
        out.update(_dense_pieces(ctx))
    elif ffn == "moe":
        out.update(_moe_pieces(ctx, rho))
    out.update(_dropout_pieces(ctx, (mixer != "none") + (ffn != "none")))
    return out if bf16_layer else _fp8_storage(ctx, out)


def _recompute_modules(ctx: _Ctx) -> list[str]:
    """Selective modules in effect (Megatron defaults None to [core_attn])."""
    v = ctx.v
    modules = v.get("model.recompute_modules")
    if v.get("model.recompute_granularity") != "selective":
        return ["moe"] if v.flag("model.moe_layer_recompute") else []
    return ["core_attn"] if modules is None else [str(m) for m in modules]


#: GEMM inputs Transformer Engine keeps as quantized copies (instead of bf16) under FP8/FP4.
FP8_SAVED = ("norm_out", "mlp_norm_out", "routed_in", "routed_act", "mlp_act", "shared_act",
             "gdn_norm_out", "mamba_norm_out")  # fmt: skip


def _mixed_block(ctx: _Ctx) -> bool:
    """The file writes a mixed_precision block (its unset fields take the class defaults)."""
    return ctx.v.has_section("mixed_precision")


def _mixed(ctx: _Ctx, name: str, default: Any = None) -> Any:
    """A mixed-precision field as Bridge applies it (MixedPrecisionConfig.setup overwrites the
    model's and the optimizer's): the file's mixed_precision block, else the
    MixedPrecisionConfig default when the file writes a block, else its named recipe
    (config/mixed_precision.py), else the model field."""
    v = ctx.v
    block = v.get(f"mixed_precision.{name}")
    if block is not None:
        return block
    recipe = v.get("mixed_precision")
    if isinstance(recipe, str):
        values = recipe_values(recipe)
        if values is not None and values.get(name) is not None:
            return values[name]
    elif _mixed_block(ctx) and name in MP_DEFAULTS:
        return MP_DEFAULTS[name] if MP_DEFAULTS[name] is not None else default
    return v.get(f"model.{name}", default=default)


def mixed_value(values: Mapping[str, Any], name: str, default: Any = None) -> Any:
    """A mixed-precision field of effective ``values`` as Bridge applies it (see :func:`_mixed`),
    for readers outside the memory model (the planner)."""
    return _mixed(cast(_Ctx, _ValuesOnly(_Values(values))), name, default)


@dataclass
class _ValuesOnly:
    """What :func:`_mixed` reads of a context: the values."""

    v: _Values


def _quantized_bytes(ctx: _Ctx) -> float | None:
    """Bytes per saved GEMM-input element under FP8/FP4 training, None for bf16 (§2.9).

    NVFP4 (TE common/recipe/__init__.py::NVFP4BlockScaling, wgrad in NVFP4): 4 bits plus one
    E4M3 scale per 16 elements = 0.5625 B; MXFP8: 1 B plus one E8M0 scale per 32; other FP8
    recipes 1 B (per-tensor or per-128-block scales).
    """
    if ctx.v.get("model.fp4", "mixed_precision.fp4"):
        return 0.5625
    if ctx.v.get("model.fp8", "mixed_precision.fp8"):
        recipe = str(_mixed(ctx, "fp8_recipe", "delayed"))
        return 1.0 + 1.0 / 32 if recipe == "mxfp8" else 1.0
    return None


def _bf16_layers(ctx: _Ctx) -> set[int]:
    """Layers kept in bf16 under FP8/FP4 (first_last_layers_bf16 with
    num_layers_at_start_in_bf16 / num_layers_at_end_in_bf16)."""
    if not _mixed(ctx, "first_last_layers_bf16", False):
        return set()
    start = int(_mixed(ctx, "num_layers_at_start_in_bf16", 1) or 0)
    end = int(_mixed(ctx, "num_layers_at_end_in_bf16", 1) or 0)
    n = ctx.arch.num_layers
    return set(range(min(start, n))) | set(range(max(n - end, 0), n))


def _fp8_storage(ctx: _Ctx, pieces: Pieces) -> Pieces:
    """FP8/FP4 training saves GEMM inputs quantized; the attention output is kept in bf16 by
    flash attention and once more quantized by the output projection."""
    q = _quantized_bytes(ctx)
    if q is None:
        return pieces
    ratio = q / 2
    out = {k: (v * ratio if k in FP8_SAVED else v) for k, v in pieces.items()}
    if "attn_out" in out:
        out["attn_out"] *= 1 + ratio
    if ctx.v.flag("model.activation_func_fp8_input_store"):
        for key in ("routed_fc1", "mlp_fc1", "shared_fc1"):
            if key in out:
                out[key] /= 2
    return out


def _after_recompute(pieces: Pieces, modules: list[str]) -> Pieces:
    """Drop what the selective-recompute modules discard (nested modules simply overlap)."""
    dropped = {name for m in modules for name in RECOMPUTE_DROPS.get(m, ())}
    return {k: v for k, v in pieces.items() if k not in dropped}


def _after_offload(ctx: _Ctx, pieces: Pieces) -> Pieces:
    """Fine-grained activation offload moves a fraction of the named modules' tensors."""
    if not ctx.v.flag("model.fine_grained_activation_offloading"):
        return pieces
    fraction = float(ctx.v.get("model.activation_offload_fraction", default=1.0))
    names = {p for m in ctx.v.get("model.offload_modules", default=[]) or []
             for p in OFFLOAD_PIECES.get(str(m), ())}  # fmt: skip
    return {k: (v * (1 - fraction) if k in names else v) for k, v in pieces.items()}


def in_flight(ctx: _Ctx, rank: int) -> tuple[float, str]:
    """Micro-batches whose activations a rank holds at its peak (1F1B / interleaved)."""
    p, v, m = ctx.pp, ctx.vpp, ctx.microbatches
    if p == 1:
        value, why = 1.0, "PP = 1: one micro-batch"
    elif v == 1:
        value = float(min(p - rank, m))
        why = f"1F1B: min(PP − rank, M) = min({p} − {rank}, {m})"
    else:
        value = min((p * (v - 1) + 2 * (p - rank) - 1) / v, float(m))
        why = f"interleaved: (PP·(v−1) + 2(PP − rank) − 1)/v, v = {v}"
    if ctx.v.flag("model.overlap_moe_expert_parallel_comm") and ctx.arch.is_moe and p > 1:
        # The A2A-overlap schedule runs one chunk's forward next to another's backward. With
        # PP = 1 they interleave layer by layer (one extra layer: the backward workspace).
        value += 1.0 / v
        why += " + 1/v (EP-overlap keeps one extra chunk)"
    return value, why


def _full_recompute(ctx: _Ctx, stage: _Stage, full: list[float]) -> tuple[float, float, str]:
    """Stored bytes per micro-batch and the one-time recompute working set (full granularity)."""
    h, ns = ctx.arch.hidden_size, ctx.sp_tokens
    ckpt = 2 * h * ns / (ctx.tp if ctx.v.flag("model.distribute_saved_activations") else 1)
    method = ctx.v.get("model.recompute_method", default="uniform")
    n = int(ctx.v.get("model.recompute_num_layers", default=1) or 1)
    index = {layer: j for j, layer in enumerate(stage.layers)}
    stored, work = 0.0, 0.0
    for chunk in stage.chunks:
        sizes = [full[index[i]] for i in chunk]
        if method == "block":
            stored += ckpt * min(n, len(sizes)) + sum(sizes[n:])
            work = max([work, *sizes[:n]])
        else:
            groups = [sizes[j : j + n] for j in range(0, len(sizes), n)]
            stored += ckpt * len(groups)
            work = max([work, *(sum(g) for g in groups)])
    why = f"full recompute ({method}, {n} layer(s)): chunk inputs 2h·T kept, one chunk replayed"
    return stored, work, why


def _layer_sizes(ctx: _Ctx, stage: _Stage, rho: float) -> tuple[list[float], list[float]]:
    """Per-layer saved bytes after recompute/offload, and the full (pre-recompute) sizes."""
    modules = _recompute_modules(ctx)
    kept: list[float] = []
    full: list[float] = []
    # A layer's sizes depend only on its (mixer, ffn) kind: computed once per kind, so a
    # stage costs O(layers) dictionary look-ups, not O(layers) pieces models.
    by_kind: dict[tuple[str, str, bool], tuple[float, float]] = {}
    bf16 = _bf16_layers(ctx) if _quantized_bytes(ctx) is not None else set()
    for i in stage.layers:
        mixer, ffn = ctx.arch.layers[i]
        kind = (mixer, ffn, i in bf16)
        sizes = by_kind.get(kind)
        if sizes is None:
            pieces = layer_pieces(ctx, mixer, ffn, rho, i in bf16)
            sizes = (
                sum(pieces.values()),
                sum(_after_offload(ctx, _after_recompute(pieces, modules)).values()),
            )
            by_kind[kind] = sizes
        full.append(sizes[0])
        kept.append(sizes[1])
    return kept, full


def _activation_terms(ctx: _Ctx, stage: _Stage) -> list[Term]:
    """Layer activations × in-flight micro-batches, head/loss, MTP, backward workspace."""
    rho, rho_why = _rho(ctx) if ctx.arch.is_moe else (1.0, "")
    kept, full = _layer_sizes(ctx, stage, rho)
    flight, flight_why = in_flight(ctx, stage.rank)
    terms: list[Term] = []
    if ctx.v.get("model.recompute_granularity") == "full":
        stored, work, how = _full_recompute(ctx, stage, full)
        terms.append(
            Term(
                "activations (checkpoints)",
                stored * flight / GIB,
                f"{how}; × {flight:g} in flight ({flight_why})",
                "activation",
            )
        )
        terms.append(
            Term(
                "recompute working set",
                work / GIB,
                "one recompute chunk's full activations during backward",
                "activation",
            )
        )
    else:
        stored = _cpu_offload(ctx, kept)
        modules = _recompute_modules(ctx)
        shown = f"selective recompute {modules}" if modules else "no recompute"
        terms.append(Term("activations", stored * flight / GIB,
                          f"{len(kept)} layers, {_per_token(ctx, stored, len(kept))}, {shown}; "
                          f"× {flight:g} micro-batches in flight ({flight_why})"
                          + (f"; routed tensors × {rho_why}" if rho_why else ""),
                          "activation"))  # fmt: skip
    overlap = ctx.v.flag("model.overlap_moe_expert_parallel_comm") and ctx.arch.is_moe
    if full and overlap and ctx.pp == 1 and ctx.mode != "lower":
        # combined_1f1b pairs layer j's forward of micro-batch i with layer L−1−j's backward of
        # i−1 (pipeline_parallel/combined_1f1b.py); ScheduleNode keeps each node's outputs
        # until its backward (pipeline_parallel/utils.py): one more layer alive (§2.10).
        terms.append(Term("EP-overlap extra layer", max(full) / GIB,
                          "overlap_moe_expert_parallel_comm at PP = 1: one more full layer of "
                          "the paired micro-batch alive", "activation"))  # fmt: skip
    if full and ctx.mode != "lower":
        work = ctx.settings.backward_workspace_layers * max(full)
        terms.append(Term("backward workspace", work / GIB,
                          f"{ctx.settings.backward_workspace_layers:g} × the largest layer "
                          "(gradients and replayed tensors of the layer in backward)",
                          "activation"))  # fmt: skip
    if stage.embedding:
        terms.append(_data_term(ctx, flight))
    if stage.head:
        terms.append(_head_term(ctx, "output layer and loss", 1))
    if stage.mtp:
        terms.append(_mtp_term(ctx, stage.mtp, rho))
    if ctx.mode == "lower":
        # The saved-tensor model is itself an estimate: the lower bound keeps the fraction of
        # it no published measurement has come in below (docs/memory-validation.md).
        share = ctx.settings.lower_activation_fraction
        terms = [replace(t, gib=t.gib * share,
                         derivation=f"lower bound: {share:g} × ({t.derivation})")
                 for t in terms]  # fmt: skip
    return terms


def _per_token(ctx: _Ctx, stored: float, layers: int) -> str:
    """Bytes per local token per layer, the unit domain/02 §4.4 states its formulas in."""
    if not layers:
        return "no layers"
    per = stored / layers / ctx.sp_tokens
    return f"{per / 1024:.1f} KiB per local token per layer (T = {ctx.sp_tokens:,.0f})"


def _cpu_offload(ctx: _Ctx, kept: list[float]) -> float:
    """Layer-level activation CPU offload (PP = 1) moves that many layers to the host."""
    total = sum(kept)
    if not (ctx.v.flag("model.cpu_offloading") and
            ctx.v.get("model.cpu_offloading_activations", default=True)):  # fmt: skip
        return total
    n = int(ctx.v.get("model.cpu_offloading_num_layers", default=0) or 0)
    if n <= 0 or not kept:
        return total
    moved = sum(kept[:n]) - max(kept[:n])  # one offloaded layer stays resident (double buffer)
    ctx.note(f"cpu_offloading: activations of {n} layers on the host, one kept for reload")
    return total - max(moved, 0.0)


def _data_term(ctx: _Ctx, flight: float) -> Term:
    """Token ids, labels, loss mask and position ids of the in-flight micro-batches."""
    value = 28 * ctx.seq * ctx.mbs / ctx.cp * flight
    return Term(
        "input ids / labels",
        value / GIB,
        "(8 + 8 + 8 + 4) B per token per micro-batch",
        "activation",
    )


def _ce_fp32(ctx: _Ctx) -> tuple[bool, str]:
    """Whether the loss keeps an fp32 copy of the logits (everything but TE's fused CE)."""
    fused = ctx.v.get("model.cross_entropy_loss_fusion", default=True)
    impl = str(ctx.v.get("model.cross_entropy_fusion_impl", default="native"))
    if fused and impl == "te":
        return False, "TE fused cross entropy writes gradients into the bf16 logits"
    return True, f"cross entropy ({'fused ' + impl if fused else 'unfused'}) keeps fp32 softmax"


def _head_term(ctx: _Ctx, name: str, depths: int) -> Term:
    """Final norm, bf16 logits and the fp32 cross-entropy copy for ``depths`` heads."""
    a = ctx.arch
    vocab = a.padded_vocab(ctx.tp)
    fp32, why = _ce_fp32(ctx)
    per_token = 2 * vocab / ctx.tp * ctx.tokens + (4 * vocab / ctx.tp * ctx.tokens if fp32 else 0)
    norm = 4 * a.hidden_size * ctx.sp_tokens
    value = depths * (per_token + norm)
    return Term(name, value / GIB,
                f"{depths} × (logits 2·V/TP·N{' + fp32 4·V/TP·N' if fp32 else ''} + final norm "
                f"4h·T), V = {vocab:,}, N = {ctx.tokens:,.0f}; {why}", "activation")  # fmt: skip


def _mtp_term(ctx: _Ctx, depths: int, rho: float) -> Term:
    """Each MTP depth: one more transformer layer, its projections and its own logits."""
    a = ctx.arch
    layer = sum(layer_pieces(ctx, a.mtp_mixer, "moe" if a.is_moe else "dense", rho).values())
    extra = 8 * a.hidden_size * ctx.sp_tokens
    head = _head_term(ctx, "mtp", depths).gib * GIB
    value = depths * (layer + extra) + head
    return Term(f"MTP ({depths} depth(s))", value / GIB,
                "per depth: one layer + enorm/hnorm/concat 8h·T + its own logits and loss",
                "activation")  # fmt: skip


# --------------------------------------------------------------------------------------------
# CUDA graphs, dispatcher buffers and other fixed costs
# --------------------------------------------------------------------------------------------

#: Captured module -> (input + output) bytes per local token per layer, as multiples of h.
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


# --------------------------------------------------------------------------------------------
# Putting a stage together
# --------------------------------------------------------------------------------------------


def _fragmentation(ctx: _Ctx) -> tuple[float, str]:
    """Reserved-minus-allocated as a fraction of the allocated peak (docs/domain/06 §2.8):
    none in the lower bound (on OOM PyTorch frees its cache and retries); with
    PYTORCH_CUDA_ALLOC_CONF expandable_segments:True the smaller setting."""
    s = ctx.settings
    if ctx.mode == "lower":
        return 0.0, "lower bound: none (the allocator frees its cache and retries on OOM)"
    conf = str(ctx.v.get("env_vars.PYTORCH_CUDA_ALLOC_CONF", default="")).replace(" ", "")
    if "expandable_segments:true" in conf.lower() and ctx.mode != "upper":
        return s.fragmentation_expandable, "expandable_segments:True"
    return s.fragmentation, "caching allocator"


def _stage_estimate(ctx: _Ctx, stage: _Stage, params: tuple[LayerParams, ...],
                    b: _Bytes) -> StageEstimate:  # fmt: skip
    """Terms of one rank; the allocated peak is max(forward/backward, optimizer step), or
    their sum under full-iteration CUDA graphs (the graph's private pool is not released to
    the eager optimizer step; not in the lower bound)."""
    rp = _rank_params(ctx, stage, params)
    terms = _state_terms(ctx, rp, b, _peft_adapters(ctx, stage)) + _activation_terms(ctx, stage)
    graph = _graph_term(ctx, stage)
    if graph is not None:
        terms.append(graph)
    state = sum(t.gib for t in terms if t.kind == "state")
    act = sum(t.gib for t in terms if t.kind == "activation")
    step = sum(t.gib for t in terms if t.kind == "step")
    pooled = (str(ctx.v.get("model.cuda_graph_impl", default="none")) == "full_iteration"
              and ctx.mode != "lower")  # fmt: skip
    if pooled:
        phase, allocated = (
            "forward/backward + optimizer step (full-iteration graph pool)",
            (state + act + step),
        )
    else:
        phase = "forward/backward" if act >= step else "optimizer step"
        allocated = state + max(act, step)
    fraction, why = _fragmentation(ctx)
    margin = Term(
        "fragmentation margin",
        allocated * fraction,
        f"{fraction:g} × allocated peak {allocated:.2f} GiB ({why})",
        "margin",
    )
    terms += [*_fixed_terms(ctx), margin]
    if ctx.mode == "upper":
        band = ctx.settings.band
        terms.append(
            Term(
                BAND,
                allocated * band,
                f"{band:g} × allocated peak {allocated:.2f} GiB (at least the largest "
                "under-prediction of the published measurements)",
                "margin",
            )
        )
    fixed = sum(t.gib for t in terms if t.kind in ("fixed", "margin"))
    return StageEstimate(
        stage.rank,
        tuple(terms),
        allocated + fixed,
        allocated,
        phase,
        state + act,
        state + step,
        allocated + margin.gib,
    )


_SECTIONS = ("model", "train", "optimizer", "ddp", "mixed_precision", "dist", "dataset",
             "env_vars", "peft")  # fmt: skip


def values_from_config(cfg: Any) -> dict[str, Any]:
    """Dotted values for :func:`estimate` from a normalized ``moe_lint.config.normalize.Config``.

    The file's raw sections, under the normalized values (which hold the model preset
    ``normalize`` applied, typed fields and untyped architecture fields such as
    ``q_lora_rank`` alike). Duck-typed to keep this module free of pydantic.
    """
    out: dict[str, Any] = {}
    # A value normalize refused (wrong type, past a bound of bounds.py) is not read raw either.
    refused = {p.path for p in getattr(cfg, "type_problems", ())}
    for section in _SECTIONS:
        raw = cfg.raw.get(section)
        if isinstance(raw, Mapping):
            out.update({f"{section}.{k}": v for k, v in raw.items()
                        if (not isinstance(v, Mapping) or "_target_" in v)
                        and f"{section}.{k}" not in refused})  # fmt: skip
        elif raw is not None:
            out[section] = raw
    out.update({k: v for k, v in cfg.values.items() if k not in cfg.unknown and v is not None})
    return out


def estimate(
    values: Mapping[str, Any],
    facts: Mapping[str, Any],
    settings: MemorySettings | None = None,
    capacity_gib: float | None = None,
    versions: Mapping[str, Version] | None = None,
    *,
    bounds: bool | Literal["lower", "lower-only"] = True,
    ranks: frozenset[int] | None = None,
    arch: Arch | None = None,
) -> Estimate:
    """Peak memory per pipeline rank of the config in ``values`` under the derived ``facts``.

    ``values`` are effective dotted config values (``model.*``, ``train.*``, ``optimizer.*``,
    ``ddp.*``, ``mixed_precision``, ``env_vars.*``); ``facts`` the derived sizes
    (:data:`INPUTS`, as memory_facts.model_inputs gives them) and optionally derive's
    ``placement``; ``versions`` the framework versions the user stated (package key ->
    Version; the newest release otherwise). ``bounds`` adds the lower bound and the band
    (levers compare central estimates only); ``"lower"`` adds the lower bound alone;
    ``"lower-only"`` computes only the lower bound (``stages`` then hold it too). ``ranks``
    limits the estimate to those pipeline ranks (the planner's search screens ranks 0, 1 and
    the last; a plan it shows gets every rank); ``arch`` is the architecture already read
    from ``values`` (the planner reads it once for thousands of estimates). Raises
    :class:`MemoryInputError` when a size, the model dimensions or the sequence length are
    missing.
    """
    settings = settings or MemorySettings()
    ctx = _context(values, facts, settings, versions, arch=arch,
                   mode="lower" if bounds == "lower-only" else "central")  # fmt: skip
    params = _layer_params(ctx.arch, ctx.tp)
    placement = _placement(ctx, facts)
    if ranks is not None:
        placement = [s for s in placement if s.rank in ranks] or placement
    stages = _stages(ctx, placement, params)
    worst = max(stages, key=lambda s: s.total_gib)
    lower: tuple[StageEstimate, ...] = ()
    upper: tuple[StageEstimate, ...] = ()
    if bounds == "lower-only":  # the bound alone (the planner's MEM001 screen)
        lower = stages
    elif bounds:
        for mode in ("lower",) if bounds == "lower" else ("lower", "upper"):
            other = replace(ctx, mode=mode, assumptions=[])
            result = _stages(other, placement, params)
            if mode == "lower":
                lower = result
            else:
                upper = result
    usable = None if capacity_gib is None else capacity_gib - ctx.settings.headroom_gib
    _standard_assumptions(ctx)
    return Estimate(stages, worst, capacity_gib, usable, tuple(ctx.assumptions), lower, upper)


@lru_cache(maxsize=64)
def _layer_params(arch: Arch, tp: int) -> tuple[LayerParams, ...]:
    return count_params(arch, tp).layers


def _stages(
    ctx: _Ctx, placement: list[_Stage], params: tuple[LayerParams, ...]
) -> tuple[StageEstimate, ...]:
    """Every pipeline rank's estimate in the context's mode."""
    b = _state_bytes(ctx)
    return tuple(_stage_estimate(ctx, stage, params, b) for stage in placement)


def _standard_assumptions(ctx: _Ctx) -> None:
    """Always-true caveats of the model, listed with every estimate."""
    if ctx.settings.flash_attention:
        ctx.note("flash/fused attention: no s² score tensors")
    if ctx.arch.is_moe:
        ctx.note(f"routed activations use {_rho(ctx)[1]}")
    if ctx.v.get("model.hidden_dropout") is None:
        ctx.note("hidden_dropout unset -> 0 (Bridge HF-imported MoE models train without it)")
    ctx.note("sequence_parallel " + ("on: norms/residual ÷TP" if ctx.sp else "off"))


# --------------------------------------------------------------------------------------------
# Levers
# --------------------------------------------------------------------------------------------

_Change = tuple[str, dict[str, Any], dict[str, Any], str]


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
                    "(replays it in backward: slower step)"))  # fmt: skip
    full = {"model.recompute_granularity": "full", "model.recompute_method": "uniform",
            "model.recompute_num_layers": 1}  # fmt: skip
    out.append(("full recompute", full, {},
                "recompute_granularity=full, method uniform, 1 layer (~+30% step time; "
                "not with scoped CUDA graphs)"))  # fmt: skip
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
                    "ddp/optimizer.use_distributed_optimizer=true"))  # fmt: skip
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
                        "(Adam moments on the host; CPU Adam slows the step ~2-4×)"))  # fmt: skip
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
    per candidate; ``base``, the estimate already made for these inputs, is not re-run)."""
    settings = settings or MemorySettings()
    if base is None:
        base = estimate(values, facts, settings, capacity_gib, versions, bounds=False)
    ctx = _context(values, facts, settings, versions)
    changes: list[_Change] = [
        *_recompute_changes(values, ctx.arch),
        *_parallel_changes(ctx),
        *_optimizer_changes(ctx),
        *_batch_changes(ctx),
    ]
    found: list[Lever] = []
    for name, new_values, new_facts, requires in changes:
        try:
            trial = estimate({**values, **new_values}, {**facts, **new_facts}, settings,
                             capacity_gib, versions, bounds=False)  # fmt: skip
        except MemoryInputError:
            continue
        delta = trial.worst.total_gib - base.worst.total_gib
        if delta < -0.005:
            found.append(Lever(name, round(delta, 3), requires))
    return sorted(found, key=lambda lever: lever.delta_gib)


def with_settings(settings: MemorySettings, **changes: Any) -> MemorySettings:
    """A copy of ``settings`` with some knobs changed (keeps call sites short)."""
    return replace(settings, **changes)


__all__ = [
    "GIB", "Estimate", "Lever", "MemoryInputError", "MemorySettings", "StageEstimate", "Term",
    "estimate", "in_flight", "layer_pieces", "levers", "values_from_config", "with_settings",
]  # fmt: skip
