"""States: weights, gradients, master parameters and optimizer moments per rank, with their shard
groups, and the optimizer-step transients (docs/memory-model.md, *States*)."""

from __future__ import annotations

from collections.abc import Mapping

from moe_lint.analysis.memory.context import (
    _Ctx,
    _dtype_bytes,
    _mixed,
    _mixed_block,
    loads_optimizer_state,
    resume_is_certain,
)
from moe_lint.analysis.memory.placement import _Stage
from moe_lint.analysis.memory.results import GIB, Term
from moe_lint.analysis.params import (
    LayerParams,
    Part,
    expert_params,
    mtp_extra_params,
    mtp_layer_params,
)
from moe_lint.config.versions import Version
from moe_lint.records import record, replace


@record(frozen=True)
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


@record(frozen=True)
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
    #: Bytes per parameter of the dummy optimizer state DistributedOptimizer.load_state_dict
    #: allocates when a run resumes (0: the optimizer makes none).
    load_dummy: float = 0.0


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


def _dtype_name(value: object) -> str:
    """fp32 / bf16 / fp16 / fp8 for a dtype written as torch.bfloat16, bf16, fp16, ..."""
    if isinstance(value, Mapping):  # full dumps write dtypes as {_target_: torch.float32}
        value = value.get("_target_", "")
    key = str(value or "float32").lower().replace("torch.", "").strip()
    return {"float32": "fp32", "float": "fp32", "bfloat16": "bf16", "float16": "fp16",
            "half": "fp16", "uint8": "fp8"}.get(key, key)  # fmt: skip


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
    te_masters = False  # TE FusedAdam holds the master params (not MCore's fp32 shards)
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
        te_masters = plain
        if plain:
            remainders = v.get("optimizer.store_param_remainders", default=True)
            master = 2.0 if (main == 4 and remainders and weight == 2) else float(main)
            step_grad = 0.0  # decoupled_grad: the optimizer reads the grad buffer in place
            path = "TE FusedAdam masters"
        else:
            master, step_grad = 4.0, 4.0
            path = f"MCore fp32 master shards (optimizer fp8_recipe {recipe!r})"
        # FusedAdam.get_unscaled_state copies every 16-bit or FP8 state (moments, and a
        # 16-bit master: main_params_dtype, TE's master_weight_dtype) to fp32 for a whole
        # parameter group at the step, except bf16 ones under fuse_unscale (both moments
        # bf16, TE >= 2.13). On an unstated TE (the newest assumed) the fused case is band only.
        names = [_dtype_name(v.get("optimizer.exp_avg_dtype")),
                 _dtype_name(v.get("optimizer.exp_avg_sq_dtype"))]  # fmt: skip
        fused = names == ["bf16", "bf16"] and ctx.te >= _TE_FUSED_UNSCALE
        master_name = _dtype_name(v.get("optimizer.main_params_dtype"))
        if plain and master_name in ("fp16", "bf16"):
            names.append(master_name)
        certain_bytes = band_bytes = 0.0
        for name in names:
            if name == "fp32":
                continue
            if name != "bf16" or not fused:
                certain_bytes += 4.0
            elif not ctx.te_stated:
                band_bytes += 4.0
        step_group = certain_bytes + (band_bytes if ctx.mode == "upper" else 0.0)
        step_certain = certain_bytes > 0
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
    # DistributedOptimizer.load_state_dict allocates one torch.empty shard per optimizer state
    # key at its dtype (exp_avg, exp_avg_sq), plus master_param when TE holds the masters
    # (use_precision_aware_optimizer_no_fp8_or_ds_fp8: int16 remainders or main_params_dtype),
    # on the GPU, offload or not. Megatron-FSDP and the layer-wise optimizer load otherwise.
    load_dummy = 0.0
    if distributed and not layerwise and not fsdp:
        load_dummy = moments + (master if te_masters else 0.0)
    return _Bytes(
        weight, grad, master, moments, step_grad, step_group, d_dense, d_expert, offload,
        shard_weights=fsdp and strategy == "optim_grads_params",
        shard_grads=fsdp and strategy in ("optim_grads", "optim_grads_params"),
        why=f"{why}; {shard_why}", moments_vocab=moments_vocab, w_dense=w_dense,
        w_expert=w_expert, layerwise=layerwise, step_group_certain=step_certain,
        step_gather=step_gather, load_dummy=load_dummy,
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
    if b.step_group:
        dense, expert = dense_shard(b.d_dense), rp.expert / b.d_expert
        value = max(dense, expert) * b.step_group * (1.0 - b.offload)
        terms.append(Term("optimizer-step fp32 state copies", value / GIB,
                          f"max(dense {dense / 1e9:.3f} B, experts {expert / 1e9:.3f} B) × "
                          f"{b.step_group:g} B: TE FusedAdam.step unscales 16-bit moments and "
                          f"masters to fp32 for a whole parameter group (TE {ctx.te}"
                          + ("" if ctx.te_stated or b.step_group_certain
                             else ", not stated: band only") + ")",
                          "step"))  # fmt: skip
    # Bridge's recipe default loads from its own save directory: the first launch loads
    # nothing and only a restart resumes, so such a load is in the band alone; a load that
    # surely happens (ckpt_step, another directory) is in every estimate.
    certain = ctx.mode == "upper" or resume_is_certain(ctx.v)
    if b.load_dummy and loads_optimizer_state(ctx.v) and certain:
        # The dense and the expert optimizer of the ChainedOptimizer load one after another
        # (optimizer.py::ChainedOptimizer.sharded_state_dict): the larger set of copies counts.
        dense, expert = dense_shard(b.d_dense), rp.expert / b.d_expert
        value = max(dense, expert) * b.load_dummy
        terms.append(Term("checkpoint-load optimizer state copies", value / GIB,
                          f"max(dense {dense / 1e9:.3f} B, experts {expert / 1e9:.3f} B) × "
                          f"{b.load_dummy:g} B: resuming checkpoint.load, "
                          "DistributedOptimizer.load_state_dict allocates dummy state shards and "
                          "TE FusedAdam.load_state_dict new ones while the dummies are still "
                          "referenced (before the first step: no activations)",
                          "load"))  # fmt: skip
    if b.step_gather and ctx.mode != "lower":
        value = rp.dense * b.step_gather
        terms.append(Term("optimizer-step param all-gather", value / GIB,
                          f"{rp.dense / 1e9:.3f} B dense × {b.step_gather:g} B: the layer-wise "
                          "optimizer all-gathers updated bf16 params into receive buffers",
                          "step"))  # fmt: skip
    return terms
