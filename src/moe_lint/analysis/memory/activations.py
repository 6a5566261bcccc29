"""Activations: bytes saved per token per layer, recompute and offload, in-flight micro-batches,
head, loss and MTP (docs/memory-model.md, *Activations*)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from moe_lint.analysis.memory.context import _Ctx, _mixed
from moe_lint.analysis.memory.placement import _Stage
from moe_lint.analysis.memory.results import GIB, Term

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
    fused = _dsa_fused(ctx)
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


def _layer_sizes(
    ctx: _Ctx, stage: _Stage, rho: float
) -> tuple[list[float], list[float], list[float]]:
    """Per-layer saved bytes after recompute/offload, the full (pre-recompute) sizes, and
    what selective recompute replays in the layer's backward (full − after recompute)."""
    modules: list[str] | None = None
    # A layer's sizes depend only on its (mixer, ffn) kind, whether it is kept in bf16 and
    # the context's mode: computed once per kind for all stages, so a stage costs O(layers)
    # dictionary look-ups. The key is the arch's own (mixer, ffn) tuple for a layer not kept
    # in bf16 (no tuple made per layer), (mixer, ffn, True) for one that is.
    by_kind = ctx.layer_sizes
    kinds = ctx.arch.layers
    bf16 = _bf16_layers(ctx) if _quantized_bytes(ctx) is not None else set()
    picked: list[tuple[float, float, float]] = []
    for i in stage.layers:
        kind: tuple[Any, ...] = kinds[i]
        in_bf16 = i in bf16
        if in_bf16:
            kind = (*kind, True)
        sizes = by_kind.get(kind)
        if sizes is None:
            if modules is None:
                modules = _recompute_modules(ctx)
            mixer, ffn = kinds[i]
            pieces = layer_pieces(ctx, mixer, ffn, rho, in_bf16)
            recomputed = _after_recompute(pieces, modules)
            total = sum(pieces.values())
            sizes = (
                total,
                sum(_after_offload(ctx, recomputed).values()),
                total - sum(recomputed.values()),
            )
            by_kind[kind] = sizes
        picked.append(sizes)
    return [s[1] for s in picked], [s[0] for s in picked], [s[2] for s in picked]


def _activation_terms(ctx: _Ctx, stage: _Stage) -> list[Term]:
    """Layer activations × in-flight micro-batches, head/loss, MTP, backward workspace."""
    rho, rho_why = _rho(ctx) if ctx.arch.is_moe else (1.0, "")
    kept, full, replayed = _layer_sizes(ctx, stage, rho)
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
        if replayed and max(replayed) > 0:
            # A recomputed module (tensor_parallel.checkpoint: MoELayer.forward for "moe",
            # CheckpointWithoutOutput for the others) replays its forward in backward and keeps
            # what it replays until its backward ends (random.py::CheckpointFunction.backward).
            terms.append(Term("recompute working set", max(replayed) / GIB,
                              f"the largest layer's replayed tensors {shown} while its "
                              "backward runs", "activation"))  # fmt: skip
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
    computing = sum(1 for i in stage.layers if ctx.arch.layers[i][0] == "dsa")
    if computing and _dsa_fused(ctx):
        terms.append(_dsa_scratch_term(ctx))
    if computing and _index_share(ctx) and ctx.v.get("model.recompute_granularity") == "full":
        terms.append(_topk_holder_term(ctx, computing))
    outputs = _pipeline_outputs_term(ctx, stage, flight)
    if outputs is not None:
        terms.append(outputs)
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
        terms = [Term(t.name, t.gib * share, f"lower bound: {share:g} × ({t.derivation})",
                      t.kind) for t in terms]  # fmt: skip
    return terms


def _dsa_fused(ctx: _Ctx) -> bool:
    """DSA runs the fused (cuDNN / TileLang) indexer kernels: dsa_kernel_backend set and the
    attention backend not ``unfused``."""
    backend = ctx.v.get("model.attention_backend")
    if isinstance(backend, Mapping):  # full dumps write the AttnBackend enum as a mapping
        backend = backend.get("_name_")
    kernels = str(ctx.v.get("model.dsa_kernel_backend", default="none") or "none")
    return kernels != "none" and backend != "unfused"


def _index_share(ctx: _Ctx) -> bool:
    """IndexShare: skip layers reuse an earlier layer's top-k (dsa_indexer_topk_freq > 1)."""
    return int(ctx.v.get("model.dsa_indexer_topk_freq", default=1) or 1) > 1


#: dsa_cudnn_kernels.py: the indexer scores are computed in query-row chunks of at most 1 GiB
#: (_INDEXER_SCORE_CHUNK_MAX_BYTES, 512-row aligned) and each chunk's top-k runs with a
#: wrapper scratch of 2 int32 per score of at most 2 GiB (_TOPK_WRAPPER_MAX_SCRATCH_BYTES).
_DSA_SCORE_CHUNK = 1 << 30
_DSA_TOPK_SCRATCH = 2 << 30
_DSA_ROW_ALIGN = 512


def _chunk_rows(rows: int, per_row: float, cap: int) -> int:
    """dsa_cudnn_kernels.py::_bytes_to_chunk_rows."""
    chunk = max(1, int(cap // max(1.0, per_row)))
    if chunk >= _DSA_ROW_ALIGN:
        chunk = chunk // _DSA_ROW_ALIGN * _DSA_ROW_ALIGN
    return min(rows, chunk)


def _dsa_scratch_term(ctx: _Ctx) -> Term:
    """The cuDNN indexer's transient scratch while one DSA layer computes its top-k (in the
    forward, and again when a recomputed layer is replayed in backward): an fp32 score chunk
    [b, rows, s_k] and the top-k wrapper's int32 scratch (dsa_cudnn_kernels.py::
    _indexer_topk_from_score_chunks, _indexer_top_k_wrapper_chunked). Both reach their caps
    at long context (s_k = the whole sequence, keys gathered over CP)."""
    b, sq, sk = ctx.mbs, int(ctx.seq / ctx.cp), ctx.seq
    rows = _chunk_rows(sq, b * sk * 4, _DSA_SCORE_CHUNK)
    score = b * rows * sk * 4
    topk_rows = _chunk_rows(b * rows, sk * 4 * 2, _DSA_TOPK_SCRATCH)
    scratch = topk_rows * sk * 4 * 2
    return Term("DSA cuDNN indexer scratch", (score + scratch) / GIB,
                f"fp32 score chunk {b} × {rows:,} rows × s_k {sk:,} × 4 B (≤ 1 GiB) + top-k "
                f"scratch {topk_rows:,} rows × s_k × 8 B (≤ 2 GiB), one layer at a time",
                "activation")  # fmt: skip


def _topk_holder_term(ctx: _Ctx, computing: int) -> Term:
    """IndexShare keeps each computing layer's top-k indices in a holder for the skip layers
    after it (dsa.py::DSAttention._get_index_share_topk_holder, filled in DSAttention.forward).
    Under full recompute nothing else keeps them, so the holder's last forward stays alive:
    int32 indices (+ an int32 length per row) from the fused kernels, int64 from torch.topk."""
    topk = min(ctx.arch.dsa_indexer_topk, ctx.seq)
    per_row = (4 * topk + 4) if _dsa_fused(ctx) else 8 * topk
    value = computing * ctx.tokens * per_row
    return Term("DSA IndexShare top-k holders", value / GIB,
                f"{computing} top-k computing layer(s) on the stage × N {ctx.tokens:,.0f} × "
                f"{per_row:,} B (dsa_indexer_topk_freq "
                f"{ctx.v.get('model.dsa_indexer_topk_freq')})", "activation")  # fmt: skip


def _deallocates_outputs(ctx: _Ctx) -> bool:
    """deallocate_pipeline_outputs as the provider sets it when the file does not: Bridge's
    GPTModelProvider says True (models/gpt_provider.py), but MLAModelProvider(MLATransformerConfig,
    GPTModelProvider) takes MLATransformerConfig's inherited ModelParallelConfig default False
    (dataclass fields follow the first base), as every DeepSeek-V3 recipe dump shows."""
    value = ctx.v.get("model.deallocate_pipeline_outputs")
    if value is not None:
        return bool(value)
    return not ctx.v.flag("model.multi_latent_attention")


def _pipeline_outputs_term(ctx: _Ctx, stage: _Stage, flight: float) -> Term | None:
    """Without deallocate_pipeline_outputs each in-flight micro-batch's stage output (one per
    model chunk) keeps its data until its backward (pipeline_parallel/schedules.py::
    deallocate_output_tensor returns early); the last stage's last chunk outputs the loss."""
    if ctx.pp == 1 or _deallocates_outputs(ctx):
        return None
    chunks = ctx.vpp - (1 if stage.rank == ctx.pp - 1 else 0)
    if chunks <= 0:
        return None
    outputs = flight * chunks
    value = 2 * ctx.arch.hidden_size * ctx.sp_tokens * outputs
    return Term("pipeline outputs kept", value / GIB,
                f"deallocate_pipeline_outputs false: {outputs:g} stage outputs 2h·T kept for "
                "their backward (in flight × model chunks sending to the next stage)",
                "activation")  # fmt: skip


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
