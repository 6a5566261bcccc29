"""The planner's step-time model: analytical, per pipeline rank, every constant in planner.yaml.

A step of one rank is ``(M + (PP-1)/VPP)`` micro-batch slots of its slowest pipeline stage
(1F1B, interleaved when VPP > 1: the bubble is ``(PP-1)/(VPP·M)`` of the step), plus what the
data-parallel gradient and parameter collectives leave exposed and the optimizer step. A
micro-batch slot of a stage is, per layer on it: GEMM time (FLOPs over the precision's peak
times an efficiency that falls for small GEMMs), flash-attention time (BF16), memory-bound
elementwise work (HBM bandwidth), host overhead, recompute, and the exposed part of the TP/SP,
CP and EP communication. docs/planner.md gives every formula; ``tools/planner_report.py
--calibrate`` fits the ``calibrated`` constants against the published throughput rows.

Model FLOPs (``flops_per_token``) follow Megatron Bridge's
``training/utils/flop_utils.py::num_floating_point_operations`` (3 × forward: attention
projections and core attention with causal halving, dense and routed/shared experts, MTP,
logits), which is what the published "Model TFLOP/s/GPU" column reports; recompute adds time,
not model FLOPs.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from moe_lint.analysis.params import Arch, LayerParams, count_params
from moe_lint.analysis.placement import place


@cache
def constants() -> dict[str, Any]:
    """data/planner.yaml, read once."""
    # Lazy: loaded only on the path that needs it (the planner itself is imported lazily).
    from importlib import resources

    # Lazy: loaded only on the path that needs it (the planner itself is imported lazily).
    import yaml

    text = resources.files("moe_lint.data").joinpath("planner.yaml").read_text("utf-8")
    return dict(yaml.safe_load(text))


@dataclass(frozen=True)
class Hardware:
    """What the model reads of one GPU type (gpus.yaml + planner.yaml)."""

    key: str
    peak_tflops: Mapping[str, float]  # bf16 / fp8 / fp4 dense peaks
    hbm_tb_s: float
    nvlink_gb_s: float  # per GPU, one direction
    domain: int  # GPUs per NVLink domain
    scale_out_gb_s: float
    host_link_gb_s: float

    @classmethod
    def from_spec(cls, key: str, spec: Mapping[str, Any]) -> Hardware:
        c = constants()
        peaks = {k: float(v) for k, v in spec["peak_dense_tflops"].items() if v}
        return cls(
            key=key,
            peak_tflops=peaks,
            hbm_tb_s=float(spec["memory"]["bandwidth_tb_s"]),
            nvlink_gb_s=float(spec["nvlink"]["per_gpu_unidirectional_gb_s"]),
            domain=int(spec["nvlink"]["domain_size"]),
            scale_out_gb_s=float(c["scale_out_gb_s"][key]),
            host_link_gb_s=float(c["host_link_gb_s"][key]),
        )


@dataclass(frozen=True)
class Plan:
    """One layout and its knobs: what the model times and what ``emit`` writes."""

    tp: int
    pp: int
    cp: int
    ep: int
    etp: int
    vpp: int
    world: int
    mbs: int
    gbs: int
    seq: int
    precision: str = "bf16"  # bf16 | fp8 | fp4 (the GEMM math)
    fp8_recipe: str | None = None
    recompute: tuple[str, ...] = ()  # selective labels; ("full",) for full recompute
    offload: float = 0.0  # optimizer_offload_fraction
    dispatcher: str = "alltoall"  # alltoall | deepep | hybridep | allgather
    tp_overlap: bool = False
    ep_overlap: bool = False
    shared_expert_overlap: bool = False
    dp_overlap: bool = True
    cuda_graphs: bool = False
    distributed_optimizer: bool = True
    grad_fp32: bool = False
    param_gather_bytes: float = 2.0
    layout: tuple[tuple[int, ...], ...] | None = None  # layers per virtual stage, if uneven
    #: cp_comm_type: p2p | a2a | allgather | a2a+p2p (each priced as TE sends it)
    cp_comm: str = "p2p"
    #: a2a+p2p: the inner (all-to-all) size, hierarchical_context_parallel_sizes[0]
    cp_a2a: int = 1
    #: routing of the routed experts: "balanced" (moe_router_force_load_balancing), "dropless"
    #: (no capacity), or "capacity" (moe_expert_capacity_factor = ``capacity``)
    routing: str = "balanced"
    capacity: float = 0.0
    #: padded to the capacity (moe_pad_expert_input_to_capacity): every rank receives it
    padded: bool = False
    #: the config's other split fields, as analysis/placement.py::place reads them:
    #: (num_layers_in_first_pipeline_stage, ..._last_..., account_for_embedding_in_pipeline_split,
    #: account_for_loss_in_pipeline_split); the search's plans write a layout instead
    split: tuple[int | None, int | None, bool, bool] = (None, None, False, False)

    @property
    def hierarchical_sizes(self) -> list[int] | None:
        """``hierarchical_context_parallel_sizes`` of an a2a+p2p plan (the a2a group, then the
        ring), what --emit writes and the reports show; None for any other transport."""
        if self.cp_comm != "a2a+p2p" or self.cp <= 1:
            return None
        return [self.cp_a2a, self.cp // self.cp_a2a]

    @property
    def dp(self) -> int:
        return self.world // (self.tp * self.pp * self.cp)

    @property
    def edp(self) -> int:
        return self.world // (self.etp * self.ep * self.pp)

    @property
    def microbatches(self) -> int:
        return max(1, self.gbs // (self.mbs * self.dp))

    def key(self) -> tuple[int, ...]:
        """The layout identity (what the validation compares with a published row)."""
        return (self.tp, self.pp, self.cp, self.ep, self.etp, self.vpp, self.mbs)


@dataclass
class Breakdown:
    """Seconds per optimizer step, by cause (each term's sum over the step)."""

    compute: float = 0.0  # GEMM + attention + elementwise + host overhead
    recompute: float = 0.0
    tp: float = 0.0
    cp: float = 0.0
    ep: float = 0.0
    pp_p2p: float = 0.0
    bubble: float = 0.0
    dp: float = 0.0
    optimizer: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def step(self) -> float:
        return (
            self.compute
            + self.recompute
            + self.tp
            + self.cp
            + self.ep
            + self.pp_p2p
            + self.bubble
            + self.dp
            + self.optimizer
        )

    def as_dict(self) -> dict[str, float]:
        names = ("compute", "recompute", "tp", "cp", "ep", "pp_p2p", "bubble", "dp", "optimizer")
        return {n: getattr(self, n) for n in names}


@dataclass(frozen=True)
class Prediction:
    step_s: float
    tokens_per_s_per_gpu: float
    model_tflops_per_gpu: float
    breakdown: Breakdown


# ----------------------------------------------------------------------------- model FLOPs


@dataclass(frozen=True)
class LayerCost:
    """Forward FLOPs per token of one layer, split by where they run."""

    attn_proj: float  # attention / mixer projections (GEMMs)
    attn_core: float  # QK^T and AV (flash attention), per token at full sequence
    dense_mlp: float
    experts: float  # routed experts actually computed (top-k)
    shared: float  # shared experts + router
    moe: bool
    has_attention: bool
    kv_elems: float  # K and V elements per token the CP ring exchanges (all heads)
    qo_elems: float = 0.0  # Q and output elements per token (all heads): the a2a transport's rest


def _attention_core(
    arch: Arch, mixer: str, seq: int, window: int | None
) -> tuple[float, float, float]:
    """Forward core-attention FLOPs per token (causal: half the keys), K+V and Q+O elements."""
    if mixer in ("gdn", "mamba", "none"):
        return 0.0, 0.0, 0.0
    heads = arch.num_attention_heads
    context = (
        seq / 2 if window is None or window >= seq else window - window * (window - 1) / (2 * seq)
    )
    if mixer in ("mla", "dsa"):
        qk = heads * (arch.qk_head_dim + arch.qk_pos_emb_head_dim)
        v = heads * arch.v_head_dim
        if mixer == "dsa":
            context = min(context, float(arch.dsa_indexer_topk))
        # MLA's core attention sees full per-head K (qk) and V, and Q of K's width
        return 2 * context * (qk + v), float(qk + v), float(qk + v)
    q = heads * arch.kv_channels
    kv = 2 * arch.num_query_groups * arch.kv_channels
    return 2 * context * 2 * q, float(kv), float(2 * q)


def layer_costs(arch: Arch, seq: int, windows: Mapping[int, int] | None = None) -> list[LayerCost]:
    """One :class:`LayerCost` per transformer layer (MTP depths appended at the end)."""
    params = count_params(arch, 1).layers
    out: list[LayerCost] = []
    mtp = [_mtp_params(arch)] * arch.mtp_num_layers
    for lp in (*params, *mtp):
        window = (windows or {}).get(lp.index)
        core, kv, qo = _attention_core(arch, lp.mixer, seq, window)
        out.append(
            LayerCost(
                attn_proj=2.0 * lp.attention.total,
                attn_core=core,
                dense_mlp=2.0 * lp.dense_mlp.total,
                experts=2.0 * lp.active_experts,
                shared=2.0 * lp.moe_other.total,
                moe=lp.ffn == "moe",
                has_attention=core > 0,
                kv_elems=kv,
                qo_elems=qo,
            )
        )
    return out


def _mtp_params(arch: Arch) -> LayerParams:
    # Lazy: loaded only on the path that needs it (the planner itself is imported lazily).
    from moe_lint.analysis.params import mtp_layer_params

    return mtp_layer_params(arch)


def windows_of(values: Mapping[str, Any], num_layers: int) -> dict[int, int]:
    """Sliding-window layers: {layer index: window} (``window_size`` with ``window_attn_skip_freq``
    as flop_utils reads them: every ``freq``-th layer is full attention)."""
    size = values.get("model.window_size")
    if size in (None, "null") or not isinstance(size, list | tuple | int):
        return {}
    window = int(size[0]) + int(size[1]) + 1 if isinstance(size, list | tuple) else int(size)
    freq = values.get("model.window_attn_skip_freq")
    out: dict[int, int] = {}
    for i in range(num_layers):
        if isinstance(freq, int) and freq > 0:
            full = (i + 1) % freq == 0
        elif isinstance(freq, list):
            full = i >= len(freq) or not bool(freq[i])
        else:
            full = False
        if not full:
            out[i] = window
    return out


def flops_per_token(costs: list[LayerCost], arch: Arch) -> float:
    """Model FLOPs per token of training (3 × forward), as Bridge's flop_utils counts them."""
    fwd = sum(c.attn_proj + c.attn_core + c.dense_mlp + c.experts + c.shared for c in costs)
    fwd += 2.0 * arch.hidden_size * arch.padded_vocab(1) * (1 + arch.mtp_num_layers)
    fwd += 2.0 * arch.mtp_num_layers * 2 * arch.hidden_size * arch.hidden_size
    return 3.0 * fwd


# ----------------------------------------------------------------------------- the model


def _interp(x: float, xs: list[float], ys: list[float]) -> float:
    """Piecewise-linear in log2(x) through (xs, ys), clamped at both ends."""
    if x <= xs[0]:
        return float(ys[0])
    if x >= xs[-1]:
        return float(ys[-1])
    i = bisect.bisect_left(xs, x)  # xs[i - 1] < x <= xs[i]
    f = math.log2(x / xs[i - 1]) / math.log2(xs[i] / xs[i - 1])
    return float(ys[i - 1] + f * (ys[i] - ys[i - 1]))


def attention_efficiency(chunk: float) -> tuple[float, float]:
    """(forward, backward) fraction of the BF16 peak that core attention reaches on a kernel of
    ``chunk`` query tokens (planner.yaml ``attention``: the FlashAttention-3 paper's cuDNN
    figures, H100, head dim 128)."""
    a = constants()["attention"]
    seqs = [float(v) for v in a["seq"]]
    peak = float(a["peak_tflops"])
    fwd = _interp(chunk, seqs, [float(v) for v in a["forward_causal_tflops"]]) / peak
    bwd = _interp(chunk, seqs, [float(v) for v in a["backward_tflops"]]) / peak
    return fwd, bwd


def expert_load(p: Plan) -> float:
    """The busiest EP rank's routed work relative to balanced routing: 1 when forced balanced,
    the capacity factor when padded to it (every rank receives that much), at most the capacity
    factor when tokens beyond it are dropped, and ``dropless_expert_imbalance`` (calibrated)
    when dropless."""
    if p.routing == "balanced" or p.ep * p.etp <= 1:
        return 1.0
    dropless = float(constants()["calibrated"]["dropless_expert_imbalance"])
    if p.routing == "capacity" and p.capacity > 0:
        return p.capacity if p.padded else min(dropless, p.capacity)
    return dropless


def _gemm_eff(rows: float) -> float:
    m0 = float(constants()["calibrated"]["gemm_half_rows"])
    return rows / (rows + m0) if rows > 0 else 0.0


def _bw(hw: Hardware, inside: float, kind: str) -> float:
    """Effective bytes/s of a collective with ``inside`` of its traffic on NVLink."""
    eff = constants()["link_efficiency"]
    nvl = hw.nvlink_gb_s * 1e9 * float(eff[f"{kind}_nvlink"])
    out = hw.scale_out_gb_s * 1e9 * float(eff[f"{kind}_scale_out"])
    if inside >= 1.0:
        return nvl
    # time-weighted: the slower share dominates
    return 1.0 / (inside / nvl + (1.0 - inside) / out)


def _inside(group: int, stride: int, domain: int) -> float:
    """Share of a group's peers inside one NVLink domain (ranks ``stride`` apart)."""
    if group <= 1:
        return 1.0
    span = group * stride
    if span <= domain:
        return 1.0
    local = max(1, domain // stride)
    return (local - 1) / (group - 1)


@dataclass
class Model:
    """The model for one architecture on one GPU type (per-layer costs computed once)."""

    arch: Arch
    hw: Hardware
    seq: int
    costs: list[LayerCost]
    flops_token: float
    _layers: dict[tuple[Any, ...], dict[int, tuple[float, ...]]] = field(default_factory=dict)
    _stages: dict[tuple[Any, ...], list[tuple[bool, list[tuple[LayerCost, int]]]]] = field(
        default_factory=dict
    )
    _counts: dict[int, Any] = field(default_factory=dict)
    _dp: dict[tuple[Any, ...], tuple[float, float]] = field(default_factory=dict)
    kinds: list[LayerCost] = field(default_factory=list)

    def __post_init__(self) -> None:
        # one object per distinct layer (memo keys use its id, so equal layers must share it)
        unique: dict[LayerCost, LayerCost] = {}
        self.costs = [unique.setdefault(c, c) for c in self.costs]
        self.kinds = list(unique)

    @classmethod
    def build(cls, arch: Arch, hw: Hardware, seq: int, values: Mapping[str, Any]) -> Model:
        costs = layer_costs(arch, seq, windows_of(values, arch.num_layers))
        return cls(arch, hw, seq, costs, flops_per_token(costs, arch))

    # ---- per layer, per micro-batch, per rank
    def _layer_time(self, c: LayerCost, p: Plan, b: Breakdown, weight: float) -> None:
        """Add one layer's micro-batch time on one rank to ``b`` (``weight`` = slots)."""
        k = constants()["calibrated"]
        x = constants()["exposed"]
        hw = self.hw
        tokens = p.mbs * self.seq / p.cp  # tokens of this CP shard
        rank_tokens = tokens / p.tp  # per TP rank (SP shards them)
        peak = hw.peak_tflops.get(p.precision, hw.peak_tflops["bf16"]) * 1e12
        # FP8/FP4 GEMMs reach a fraction of the BF16 GEMM's share of peak (never more: the
        # same kernels, more bound by memory and scaling), and each quantized GEMM input
        # costs extra elementwise passes (amax, cast, scales)
        eff = float(k["gemm_efficiency"]) * (
            1.0 if p.precision == "bf16" else float(k[f"{p.precision}_relative_efficiency"])
        )
        bf16 = hw.peak_tflops["bf16"] * 1e12
        # GEMMs: per-rank FLOPs = per-token FLOPs × tokens / TP (weights split over TP)
        dense_rows = min(tokens, self.arch.hidden_size / p.tp)
        dense = (c.attn_proj + c.dense_mlp + c.shared) * tokens / p.tp
        t_dense = dense / (peak * eff * _gemm_eff(dense_rows)) if dense else 0.0
        # experts: balanced routing gives every rank its own tokens' share of the work; the
        # grouped GEMM of one local expert sees the EP group's tokens × top-k / experts rows
        experts = self.arch.num_moe_experts or 1
        expert_rows = rank_tokens * p.etp * p.ep * self.arch.moe_router_topk / experts
        load = expert_load(p) if c.moe else 1.0
        t_exp = 0.0
        if c.experts:
            t_exp = load * c.experts * rank_tokens / (peak * eff * _gemm_eff(expert_rows))
        attn = c.attn_core * tokens / p.tp
        t_attn = t_attn_bwd = 0.0
        if attn:
            fwd_eff, bwd_eff = attention_efficiency(self._attention_chunk(p))
            t_attn = attn / (bf16 * fwd_eff)
            t_attn_bwd = 2 * attn / (bf16 * bwd_eff)
        # memory-bound work: passes × hidden × 2 B per token on this rank
        h = self.arch.hidden_size
        passes = float(k["elementwise_passes"]) * rank_tokens
        if p.precision != "bf16":
            passes += float(k["quantize_passes"]) * rank_tokens
        routed = 0.0
        if c.moe:
            width = (self.arch.moe_latent_size or h) / h
            routed = float(k["routed_copy_passes"]) * rank_tokens * self.arch.moe_router_topk
            passes += routed * width
        t_elem = passes * h * 2 / (hw.hbm_tb_s * 1e12)
        launch = float(k["launch_us_per_layer"]) * 1e-6
        if p.cuda_graphs:
            launch *= float(k["cuda_graph_factor"])
        fwd = t_dense + t_exp + t_attn + t_elem
        b.compute += weight * (
            3 * (t_dense + t_exp) + t_attn + t_attn_bwd + 2 * t_elem + 3 * launch
        )
        b.recompute += weight * self._recompute(c, p, t_dense, t_exp, t_attn, t_elem, fwd)
        # TP/SP: AG + RS of the activations per block, ×3 for forward + backward
        if p.tp > 1:
            blocks = 1 + (1 if (c.dense_mlp or (c.moe and p.etp > 1)) else 0)
            size = tokens * h * 2  # bytes of the gathered activations
            vol = 3 * blocks * 2 * size * (p.tp - 1) / p.tp
            t = vol / _bw(hw, _inside(p.tp, 1, hw.domain), "ring")
            b.tp += weight * t * (x["tp_with_overlap"] if p.tp_overlap else x["tp_without_overlap"])
        if p.cp > 1 and c.has_attention:
            b.cp += weight * self._cp(c, p, tokens, t_attn + t_attn_bwd)
        if c.moe and p.ep * p.etp > 1:
            b.ep += weight * self._ep(p, load, rank_tokens)

    def _ep(self, p: Plan, load: float, rank_tokens: float) -> float:
        """Exposed seconds of one MoE layer's EP dispatch and combine, forward and backward
        (4 all-to-alls), on ``rank_tokens`` tokens of this rank at ``load`` (expert_load)."""
        x = constants()["exposed"]
        disp_bytes = 2.0
        if p.precision != "bf16" and p.dispatcher in ("deepep", "hybridep"):
            disp_bytes = 1.0  # quantized dispatch (combine stays bf16)
        # LatentMoE dispatches and combines in the latent width (MCore moe_layer.py::
        # MoELayer.dispatch_preprocess applies fc1_latent_proj before the dispatcher)
        width = self.arch.moe_latent_size or self.arch.hidden_size
        size = load * rank_tokens * p.etp * self.arch.moe_router_topk * width
        group = p.ep
        vol = 2 * size * (disp_bytes + 2.0) * (group - 1) / group
        kind = {"deepep": "a2a_deepep", "hybridep": "a2a_hybridep"}.get(p.dispatcher, "a2a_nccl")
        t = vol / _bw(self.hw, _inside(group, p.etp, self.hw.domain), kind)
        if p.ep_overlap:
            t *= x["ep_with_overlap"]
        elif p.shared_expert_overlap:
            t *= x["ep_shared_expert_overlap"]
        return t

    def _attention_chunk(self, p: Plan) -> float:
        """Query tokens of one core-attention kernel call on this rank: the CP shard for the p2p
        ring and all-gather (each step is its own call), the full sequence for a2a (which
        splits heads, not tokens), the ring's shard for a2a+p2p."""
        if p.cp_comm == "a2a":
            return float(self.seq)
        if p.cp_comm == "a2a+p2p":
            return self.seq / max(1, p.cp // max(1, p.cp_a2a))
        return self.seq / p.cp

    def _cp(self, c: LayerCost, p: Plan, tokens: float, t_attn: float) -> float:
        """Seconds of one layer's context-parallel traffic, forward and backward, as TE
        (2.17, attention/dot_product_attention/context_parallel.py) moves it; ``tokens`` is
        this rank's sequence shard, each element 2 B; ``t_attn`` its core attention's forward
        plus backward seconds (what the p2p ring hides behind).

        - p2p (AttnFuncWithCPAndKVP2P): a ring of CP steps, K/V to the next rank each step
          (CP − 1 sends forward, K/V and dK/dV backward: 3 (CP − 1) shards), hidden behind
          attention; each step is its own kernel and send/recv pair (``cp_step_us``).
        - a2a (AttnFuncWithCPAndQKVOA2A): all-to-alls of Q, K, V before attention and of the
          output after, and of dO, dQ, dK, dV in backward, each (CP − 1)/CP of the rank's
          tensor; nothing hides them.
        - a2a+p2p (the P2P class with hierarchical groups): those all-to-alls inside the inner
          group of ``cp_a2a`` ranks, then the ring over the CP / cp_a2a outer groups, on
          1/cp_a2a of the heads of cp_a2a times the sequence (the same K/V bytes per step).
        - allgather (AttnFuncWithCPAndKVAllGather): K and V all-gathered before attention,
          gathered again in backward, dK and dV reduce-scattered: 3 (CP − 1) shards of K/V,
          before the attention they feed, so exposed.
        """
        hw, k, x = self.hw, constants()["calibrated"], constants()["exposed"]
        kv = tokens * (c.kv_elems / p.tp) * 2
        if p.cp_comm == "allgather":
            return 3 * (p.cp - 1) * kv / _bw(hw, _inside(p.cp, p.tp, hw.domain), "ring")
        inner = p.cp if p.cp_comm == "a2a" else p.cp_a2a if p.cp_comm == "a2a+p2p" else 1
        ring = p.cp // max(1, inner)
        t = 0.0
        if inner > 1:
            qkvo = tokens * ((c.kv_elems + c.qo_elems) / p.tp) * 2
            vol = 2 * qkvo * (inner - 1) / inner
            t += vol / _bw(hw, _inside(inner, p.tp, hw.domain), "a2a_nccl")
        if ring > 1:
            vol = 3 * (ring - 1) * kv
            ring_t = vol / _bw(hw, _inside(ring, p.tp * inner, hw.domain), "p2p")
            hide = t_attn * float(x["cp_p2p_hidden_by_attention"])
            steps = 3 * 2 * (ring - 1) * float(k["cp_step_us"]) * 1e-6
            t += max(0.0, ring_t - hide) + steps
        return t

    def _recompute(
        self,
        c: LayerCost,
        p: Plan,
        t_dense: float,
        t_exp: float,
        t_attn: float,
        t_elem: float,
        fwd: float,
    ) -> float:
        """Forward time re-run in backward by the recompute set."""
        mods = set(p.recompute)
        if "full" in mods:
            return fwd
        t = 0.0
        total_dense = c.attn_proj + c.dense_mlp + c.shared
        if "core_attn" in mods:
            t += t_attn
        if "mla_up_proj" in mods and total_dense:
            t += t_dense * 0.15 * c.attn_proj / total_dense
        if "layernorm" in mods:
            t += t_elem * 0.15
        if ("moe_act" in mods and c.moe) or ("mlp" in mods and c.dense_mlp):
            t += t_elem * 0.1
        if "mlp" in mods and c.dense_mlp and total_dense:
            t += t_dense * c.dense_mlp / total_dense
        if "moe" in mods and c.moe:
            t += t_exp + t_elem * 0.5
            if total_dense:
                t += t_dense * c.shared / total_dense
        if "shared_experts" in mods and c.moe and total_dense:
            t += t_dense * c.shared / total_dense
        return t

    def _layer_memo(self, p: Plan) -> dict[int, tuple[float, ...]]:
        """The memoized layer terms of plans with ``p``'s knobs (every field a layer's
        micro-batch time reads: the sizes but PP, the transport, the micro-batch size, the
        precision, the dispatcher, recompute, overlaps and routing), by id of the layer cost.
        The search times thousands of layouts that share them; a plan's key is built once for
        all its layers."""
        knobs = (p.tp, p.cp, p.cp_comm, p.cp_a2a, p.ep, p.etp, p.mbs, p.precision, p.dispatcher,
                 p.recompute, p.tp_overlap, p.ep_overlap, p.shared_expert_overlap, p.cuda_graphs,
                 p.routing, p.capacity, p.padded)  # fmt: skip
        found = self._layers.get(knobs)
        if found is None:
            found = self._layers[knobs] = {}
        return found

    def _layer(
        self, c: LayerCost, p: Plan, memo: dict[int, tuple[float, ...]] | None = None
    ) -> tuple[float, ...]:
        """One layer's micro-batch terms (compute, recompute, tp, cp, ep), memoized in ``memo``
        (:meth:`_layer_memo` of ``p``, looked up here when not given)."""
        if memo is None:
            memo = self._layer_memo(p)
        found = memo.get(id(c))
        if found is None:
            b = Breakdown()
            self._layer_time(c, p, b, 1.0)
            found = memo[id(c)] = (b.compute, b.recompute, b.tp, b.cp, b.ep)
        return found

    def _stage_kinds(self, p: Plan) -> list[tuple[bool, list[tuple[LayerCost, int]]]]:
        """Per distinct pipeline rank: is it the last, and each distinct layer cost with how many
        layers of it the rank has."""
        key = (p.pp, p.vpp, p.layout, p.split)
        found = self._stages.get(key)
        if found is None:
            found = []
            ranks = stage_layers(len(self.costs), self.arch.mtp_num_layers, p)
            seen: set[tuple[Any, ...]] = set()
            for rank, rank_layers in enumerate(ranks):
                kinds: dict[LayerCost, int] = {}
                for i in rank_layers:
                    kinds[self.costs[i]] = kinds.get(self.costs[i], 0) + 1
                last = rank == len(ranks) - 1
                shape = (last, *sorted(kinds.items(), key=lambda kv: id(kv[0])))
                if shape not in seen:  # ranks with the same layers take the same time
                    seen.add(shape)
                    found.append((last, list(kinds.items())))
            self._stages[key] = found
        return found

    def _rank_terms(
        self, kinds: list[tuple[LayerCost, int]], p: Plan, memo: dict[int, tuple[float, ...]]
    ) -> list[float]:
        """One pipeline rank's micro-batch terms (compute, recompute, tp, cp, ep): each
        distinct layer's terms times its count, summed in layer-kind order."""
        compute = recompute = tp = cp = ep = 0.0
        for cost, count in kinds:
            c0, c1, c2, c3, c4 = self._layer(cost, p, memo)
            compute += c0 * count
            recompute += c1 * count
            tp += c2 * count
            cp += c3 * count
            ep += c4 * count
        return [compute, recompute, tp, cp, ep]

    def predict(self, p: Plan) -> Prediction:
        """Step time and throughput of plan ``p`` (the slowest pipeline stage sets the pace)."""
        compute, recompute, tp, cp, ep, pp_p2p, bubble, dp, optimizer = self._step_terms(p)
        b = Breakdown(compute=compute, recompute=recompute, tp=tp, cp=cp, ep=ep, pp_p2p=pp_p2p,
                      bubble=bubble, dp=dp, optimizer=optimizer)  # fmt: skip
        step = b.step
        tps = p.gbs * self.seq / step / p.world
        return Prediction(step, tps, tps * self.flops_token / 1e12, b)

    def tokens_per_s_per_gpu(self, p: Plan) -> float:
        """``predict(p).tokens_per_s_per_gpu`` without building the breakdown and the
        prediction (the search's bound asks it of every layout)."""
        compute, recompute, tp, cp, ep, pp_p2p, bubble, dp, optimizer = self._step_terms(p)
        step = compute + recompute + tp + cp + ep + pp_p2p + bubble + dp + optimizer  # .step
        return p.gbs * self.seq / step / p.world

    def _step_terms(self, p: Plan) -> tuple[float, ...]:
        """The step's seconds by cause, in :class:`Breakdown`'s field order (compute,
        recompute, tp, cp, ep, pp_p2p, bubble, dp, optimizer)."""
        x = constants()["exposed"]
        tokens = p.mbs * self.seq / p.cp
        # logits on the last rank, in BF16 (TE keeps the output layer out of FP8)
        bf16 = (
            self.hw.peak_tflops["bf16"] * 1e12 * float(constants()["calibrated"]["gemm_efficiency"])
        )
        logits = 3 * 2.0 * self.arch.hidden_size * self.arch.padded_vocab(1) * tokens / p.tp
        logits *= (1 + self.arch.mtp_num_layers) / bf16
        stages = self._stage_kinds(p)
        memo = self._layer_memo(p)
        slowest: tuple[float, ...] = ()
        slowest_total = -1.0
        for last, kinds in stages:
            terms = self._rank_terms(kinds, p, memo)
            if last:
                terms[0] += logits
            total = sum(terms)
            if total > slowest_total:
                slowest, slowest_total = tuple(terms), total
        m = p.microbatches
        compute, recompute, tp, cp, ep = (value * m for value in slowest)
        per_mb = slowest_total
        bubble = per_mb * (p.pp - 1) / p.vpp if p.pp > 1 else 0.0
        pp_p2p = 0.0
        if p.pp > 1:
            size = tokens / p.tp * self.arch.hidden_size * 2
            vol = 2 * 2 * p.vpp * size  # send + recv, forward + backward, per chunk
            stride = p.world // p.pp
            t = vol / _bw(self.hw, 1.0 if stride * 2 <= self.hw.domain else 0.0, "p2p")
            pp_p2p = m * t * x["pp_p2p"]
        dp, optimizer = self._dp_and_optimizer(p, per_mb)
        return compute, recompute, tp, cp, ep, pp_p2p, bubble, dp, optimizer

    def cp_cost(self, p: Plan) -> float:
        """Compute plus CP seconds of one micro-batch over every layer (what the CP transport
        changes: its exchange, and the length of the attention kernels)."""
        total = 0.0
        memo = self._layer_memo(p)
        for c in self.costs:
            terms = self._layer(c, p, memo)
            total += terms[0] + terms[3]
        return total

    def forget(self) -> None:
        """Drop the memoized layer times (after a constant changed: the calibration)."""
        self._layers.clear()
        self._dp.clear()

    def ep_time(self, p: Plan) -> float:
        """EP all-to-all seconds per micro-batch of one layer of each distinct kind (enough to
        choose the dispatcher: every kind's time scales alike with it): the layers' EP terms
        alone, without the rest of their time (the search asks for every allowed dispatcher
        and keeps one)."""
        if p.ep * p.etp <= 1:
            return 0.0
        rank_tokens = p.mbs * self.seq / p.cp / p.tp
        load = expert_load(p)
        return sum(self._ep(p, load, rank_tokens) if c.moe else 0.0 for c in self.kinds)

    def counts(self, tp: int) -> Any:
        if tp not in self._counts:
            self._counts[tp] = count_params(self.arch, tp)
        return self._counts[tp]

    def _dp_and_optimizer(self, p: Plan, per_mb: float) -> tuple[float, float]:
        """Exposed DP/EDP grad reduce-scatter + param all-gather, and the optimizer step."""
        # the world with the sizes fixes DP and EDP
        key = (p.tp, p.pp, p.cp, p.ep, p.etp, p.world, p.grad_fp32, p.param_gather_bytes,
               p.distributed_optimizer, p.offload)  # fmt: skip
        found = self._dp.get(key)
        if found is None:
            found = self._dp[key] = self._dp_terms(p)
        comm, step = found
        hidden = per_mb if p.dp_overlap else 0.0  # behind the last micro-batch's backward
        return max(0.0, comm - hidden), step

    def _dp_terms(self, p: Plan) -> tuple[float, float]:
        """DP/EDP collective seconds per step (before overlap) and the optimizer step."""
        counts = self.counts(p.tp)
        dense = (counts.dense - counts.embedding - counts.output) / (p.tp * p.pp)
        dense += (counts.embedding + counts.output) / p.tp / max(1, min(p.pp, 2))
        expert = counts.expert / (p.ep * p.etp * p.pp)
        grad_b = 4.0 if p.grad_fp32 else 2.0
        dpcp = p.dp * p.cp
        t = 0.0
        for params, group, stride in ((dense, dpcp, p.tp), (expert, p.edp, p.ep * p.etp)):
            if group <= 1 or params <= 0:
                continue
            frac = (group - 1) / group
            bw = _bw(self.hw, _inside(group, stride, self.hw.domain), "ring")
            rs = params * grad_b * frac / bw * (1 if p.distributed_optimizer else 2)
            ag = params * p.param_gather_bytes * frac / bw if p.distributed_optimizer else 0.0
            t += rs + ag
        c = constants()["optimizer"]
        shard = dense / (dpcp if p.distributed_optimizer else 1) + expert / (
            p.edp if p.distributed_optimizer else 1
        )
        gpu = (1 - p.offload) * shard * float(c["gpu_bytes_per_param"]) / (self.hw.hbm_tb_s * 1e12)
        cpu = 0.0
        if p.offload:
            moved = p.offload * shard
            cpu = moved / float(c["cpu_adam_params_per_s"]) + moved * 2 * 4 / (
                self.hw.host_link_gb_s * 1e9
            )
        return t, gpu + cpu


def stage_layers(n: int, mtp: int, p: Plan) -> list[list[int]]:
    """Layer indices per pipeline rank (all its virtual chunks); MTP depths on the last rank.
    The split is Megatron-Core's as analysis/placement.py::place computes it for the memory
    model: a layout's stages, the first/last stage counts, or the even split with
    account_for_embedding / account_for_loss."""
    main = n - mtp
    if p.pp == 1:
        return [list(range(n))]
    ranks: list[list[int]] = [[] for _ in range(p.pp)]
    if p.layout is not None:
        index = 0
        for chunk, count in enumerate(sum(c) for c in p.layout):
            ranks[chunk % p.pp].extend(range(index, min(main, index + count)))
            index += count
    else:
        first, last, emb, loss = p.split
        placement = place(num_layers=main, mtp=mtp, pp=p.pp, vpp=p.vpp if p.vpp > 1 else None,
                          first=first, last=last, emb=emb, loss=loss)  # fmt: skip
        if placement.stages:
            for stage in placement.stages:
                ranks[stage.rank].extend(i for i in stage.layers if i < main)
        else:  # a split Megatron-Core rejects: the even spread (the linter reports the split)
            chunks = p.pp * p.vpp
            base, extra = divmod(main, chunks)
            index = 0
            for chunk in range(chunks):
                count = base + (1 if chunk < extra else 0)
                ranks[chunk % p.pp].extend(range(index, index + count))
                index += count
    ranks[-1].extend(range(main, n))
    return ranks


__all__ = ["Breakdown", "Hardware", "Model", "Plan", "Prediction"]
