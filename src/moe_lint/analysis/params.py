"""Parameter counts of MoE transformer architectures, per layer and per tensor-parallel shard.

The memory model (``moe_lint.analysis.memory``) needs to know, for every layer, how many
parameters are
split over tensor parallelism, how many are replicated on every TP rank and how many are routed
experts (split over EP·ETP). This module counts them from Megatron / Bridge ``model.*`` fields
with the formulas of ``tests/data/models-check.md`` (GQA/MHA and MLA attention, MLA with the
DSA sparse-attention indexer, Gated DeltaNet and Mamba-2 mixers, dense and gated MLPs, routed,
latent and shared experts, router, norms, embeddings, untied output, MTP). ``moe_layer_freq``
patterns such as ``"([0]*3+[1]*58)"`` are parsed by a small grammar, never by ``eval``: config
files are untrusted text.

Only the standard library is imported so the memory model stays cheap to load.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cached_property
from typing import Any

from moe_lint.config.settings import model_presets
from moe_lint.records import field, record

# --------------------------------------------------------------------------------------------
# Megatron pattern strings ("([0]*3+[1]*58)", "(['sliding','full']*18)") without eval
# --------------------------------------------------------------------------------------------

_MAX_PATTERN = 1_000_000


class PatternError(ValueError):
    """A Megatron list-expression pattern that the small grammar does not accept."""


class _PatternParser:
    """Recursive-descent parser for ``expr := term ('+' term)*; term := atom ('*' INT)?``.

    ``atom`` is a parenthesised expression or a list literal of ints / quoted strings. That is
    the whole language Megatron's docs use for ``moe_layer_freq`` and friends; anything else is
    rejected rather than evaluated.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def parse(self) -> list[int | str]:
        value = self._expr()
        self._skip()
        if self.pos != len(self.text):
            raise PatternError(f"unexpected {self.text[self.pos :]!r} in pattern {self.text!r}")
        return value

    def _skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def _peek(self) -> str:
        self._skip()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def _take(self, char: str) -> None:
        if self._peek() != char:
            raise PatternError(f"expected {char!r} at position {self.pos} in {self.text!r}")
        self.pos += 1

    def _int(self) -> int:
        self._skip()
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos].isdigit():
            self.pos += 1
        if start == self.pos:
            raise PatternError(f"expected a number at position {start} in {self.text!r}")
        return int(self.text[start : self.pos])

    def _expr(self) -> list[int | str]:
        """Concatenation of terms (Python list ``+``)."""
        out = self._term()
        while self._peek() == "+":
            self.pos += 1
            out = out + self._term()
        return out

    def _term(self) -> list[int | str]:
        """An atom repeated ``* N`` times, bounded so a pattern cannot exhaust memory."""
        value = self._atom()
        while self._peek() == "*":
            self.pos += 1
            count = self._int()
            if len(value) * count > _MAX_PATTERN:
                raise PatternError(f"pattern {self.text!r} expands beyond {_MAX_PATTERN} items")
            value = value * count
        return value

    def _atom(self) -> list[int | str]:
        """A parenthesised expression or a list literal."""
        char = self._peek()
        if char == "(":
            self.pos += 1
            value = self._expr()
            self._take(")")
            return value
        if char == "[":
            self.pos += 1
            return self._items()
        raise PatternError(f"expected '(' or '[' at position {self.pos} in {self.text!r}")

    def _items(self) -> list[int | str]:
        items: list[int | str] = []
        while self._peek() != "]":
            items.append(self._value())
            if self._peek() == ",":
                self.pos += 1
            elif self._peek() != "]":
                raise PatternError(f"expected ',' or ']' at position {self.pos} in {self.text!r}")
        self.pos += 1
        return items

    def _value(self) -> int | str:
        """A list item: an integer or a quoted string (layer-type patterns)."""
        char = self._peek()
        if char in "'\"":
            end = self.text.find(char, self.pos + 1)
            if end < 0:
                raise PatternError(f"unterminated string in {self.text!r}")
            value = self.text[self.pos + 1 : end]
            self.pos = end + 1
            return value
        return self._int()


def parse_pattern(text: str) -> list[int | str]:
    """Expand a Megatron pattern string such as ``"([0]*3+[1]*58)"`` into a list."""
    return _PatternParser(text).parse()


def moe_layer_pattern(freq: Any, num_layers: int) -> list[int]:
    """Per-layer MoE flags (1 = MoE) from ``moe_layer_freq`` as Megatron interprets it.

    An int N marks layers ``i % N == 0`` (Megatron's ``TransformerBlock`` convention), a list
    is taken as is, a string is a pattern expression. ``None`` means every layer is MoE.
    """
    if freq is None:
        return [1] * num_layers
    if isinstance(freq, bool):
        raise PatternError(f"moe_layer_freq must be an int, list or pattern, got {freq!r}")
    if isinstance(freq, int):
        if freq < 1:
            raise PatternError(f"moe_layer_freq must be >= 1, got {freq}")
        return [1 if i % freq == 0 else 0 for i in range(num_layers)]
    items: list[Any] = parse_pattern(freq) if isinstance(freq, str) else list(freq)
    flags = [int(x) for x in items]
    if len(flags) != num_layers:
        raise PatternError(f"moe_layer_freq has {len(flags)} entries but num_layers = {num_layers}")
    if any(x not in (0, 1) for x in flags):
        raise PatternError("moe_layer_freq entries must be 0 or 1")
    return flags


# --------------------------------------------------------------------------------------------
# Architecture
# --------------------------------------------------------------------------------------------

#: Hybrid-pattern symbols (Nemotron-H / MambaModel): mixer or MLP kind of each layer.
_HYBRID = {
    "M": ("mamba", "none"), "E": ("none", "moe"), "*": ("gqa", "none"), "-": ("none", "dense"),
}  # fmt: skip


@record(frozen=True)
class Arch:
    """The architecture fields the counters read (Megatron / Bridge names, defaults applied).

    ``layers`` lists ``(mixer, ffn)`` per transformer layer: mixer is ``gqa``, ``mla``, ``dsa``
    (MLA whose core attention is DSA with its own indexer), ``gdn`` (Gated DeltaNet), ``mamba``
    or ``none``; ffn is ``dense``, ``moe`` or ``none``. A DSA layer that reuses an earlier
    layer's top-k indices (``dsa_indexer_topk_freq`` > 1) has no indexer and counts as ``mla``.
    ``assumed`` names the fields that were missing and took a default.
    """

    hidden_size: int
    num_attention_heads: int
    vocab_size: int
    layers: tuple[tuple[str, str], ...]
    num_query_groups: int
    kv_channels: int
    ffn_hidden_size: int
    make_vocab_size_divisible_by: int = 128
    should_pad_vocab: bool = False
    share_embeddings_and_output_weights: bool = False
    gated_linear_unit: bool = True
    add_bias_linear: bool = False
    add_qkv_bias: bool = False
    normalization: str = "RMSNorm"
    qk_layernorm: bool = False
    qk_layernorm_full_width: bool = False
    attention_output_gate: bool = False
    softmax_type: str = "vanilla"
    q_lora_rank: int | None = None
    kv_lora_rank: int = 512
    qk_head_dim: int = 128
    qk_pos_emb_head_dim: int = 64
    v_head_dim: int = 128
    num_moe_experts: int | None = None
    moe_router_topk: int = 2
    moe_ffn_hidden_size: int | None = None
    moe_shared_expert_intermediate_size: int | None = None
    moe_shared_expert_gate: bool = False
    moe_latent_size: int | None = None
    linear_num_key_heads: int = 16
    linear_num_value_heads: int = 32
    linear_key_head_dim: int = 128
    linear_value_head_dim: int = 128
    linear_conv_kernel_dim: int = 4
    mamba_num_heads: int = 64
    mamba_head_dim: int = 64
    mamba_state_dim: int = 128
    mamba_num_groups: int = 8
    mamba_conv_kernel: int = 4
    dsa_indexer_n_heads: int = 64  # DeepSeek-V3.2; GLM-5 has 32
    dsa_indexer_head_dim: int = 128
    dsa_indexer_topk: int = 2048
    mtp_num_layers: int = 0
    mtp_use_repeated_layer: bool = False
    assumed: tuple[str, ...] = field(default=(), compare=False)

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    @cached_property
    def is_moe(self) -> bool:
        """Kept on the instance (the memory model asks it for every stage of every estimate;
        a frozen record's fields, which it reads, never change)."""
        return bool(self.num_moe_experts) and any(ffn == "moe" for _, ffn in self.layers)

    @property
    def mlp_factor(self) -> int:
        """3 weight matrices for gated (SwiGLU/GeGLU) MLPs, 2 for plain ones."""
        return 3 if self.gated_linear_unit else 2

    @property
    def norm_params(self) -> int:
        """Weights of one norm: RMSNorm has a scale, LayerNorm a scale and a bias."""
        return 2 * self.hidden_size if self.normalization == "LayerNorm" else self.hidden_size

    @property
    def expert_ffn(self) -> int:
        return self.moe_ffn_hidden_size or self.ffn_hidden_size

    @property
    def mtp_mixer(self) -> str:
        """MTP depths use the model's full-attention block (DSA, MLA or GQA), never a linear
        mixer; a DSA model's MTP layer has its own indexer (GLM-5 maps its indexer tensors)."""
        mixers = {m for m, _ in self.layers}
        return next((m for m in ("dsa", "mla") if m in mixers), "gqa")

    @property
    def mtp_weight_sets(self) -> int:
        """MTP blocks with their own weights: one when ``mtp_use_repeated_layer`` (Megatron-Core
        builds one layer and applies it at every depth), else one per depth."""
        if self.mtp_use_repeated_layer:
            return min(self.mtp_num_layers, 1)
        return self.mtp_num_layers

    def padded_vocab(self, tp: int = 1) -> int:
        """Embedding rows: Megatron pads to a multiple of divisible_by·TP when padding is on."""
        if not self.should_pad_vocab:
            return self.vocab_size
        step = self.make_vocab_size_divisible_by * tp
        return int(math.ceil(self.vocab_size / step) * step)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Arch:
        """Build from ``model.*`` values (dotted or bare keys), e.g. a preset merged with a file."""
        return _arch_from(_Fields(values))

    @classmethod
    def from_preset(cls, name: str) -> Arch:
        """Build from a models.yaml entry (OLMoE's full-width q/k norms come from its type)."""
        entry = dict(model_presets()[name])
        if entry.get("hf_model_type") == "olmoe":
            entry["qk_layernorm_full_width"] = True
        return cls.from_mapping(entry)


class _Fields:
    """Reads ``model.x`` or ``x`` from a mapping and records which fields were defaulted."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = values
        self.assumed: list[str] = []

    def get(self, name: str, default: Any = None, *, note: bool = False) -> Any:
        for key in (f"model.{name}", name):
            if key in self.values and self.values[key] is not None:
                return self.values[key]
        if note and default is not None:
            self.assumed.append(f"{name} = {default} (default)")
        return default

    def need(self, name: str) -> Any:
        value = self.get(name)
        if value is None:
            raise KeyError(f"model.{name} is needed to count parameters")
        return value


def _arch_from(f: _Fields) -> Arch:
    """Megatron defaults where a field is missing: GQA groups = heads, kv_channels = h/heads."""
    h = int(f.need("hidden_size"))
    heads = int(f.need("num_attention_heads"))
    layers = _layer_kinds(f)
    ffn = f.get("ffn_hidden_size")
    kwargs: dict[str, Any] = {
        "hidden_size": h,
        "num_attention_heads": heads,
        "vocab_size": int(f.need("vocab_size")),
        "layers": tuple(layers),
        "num_query_groups": int(f.get("num_query_groups", heads)),
        "kv_channels": int(f.get("kv_channels", h // heads)),
        "ffn_hidden_size": int(ffn if ffn is not None else 4 * h),
        "gated_linear_unit": bool(f.get("gated_linear_unit", True, note=True)),
        "normalization": str(f.get("normalization", "RMSNorm", note=True)),
        "mtp_num_layers": int(f.get("mtp_num_layers", 0) or 0),
    }
    for name in _OPTIONAL_FIELDS:
        value = f.get(name)
        if value is not None:
            kwargs[name] = value
    kwargs["assumed"] = tuple(f.assumed)
    return Arch(**kwargs)


_OPTIONAL_FIELDS = (
    "make_vocab_size_divisible_by", "should_pad_vocab", "share_embeddings_and_output_weights",
    "add_bias_linear", "add_qkv_bias", "qk_layernorm", "qk_layernorm_full_width",
    "attention_output_gate", "softmax_type", "q_lora_rank", "kv_lora_rank", "qk_head_dim",
    "qk_pos_emb_head_dim", "v_head_dim", "num_moe_experts", "moe_router_topk",
    "moe_ffn_hidden_size", "moe_shared_expert_intermediate_size", "moe_shared_expert_gate",
    "moe_latent_size", "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
    "linear_value_head_dim", "linear_conv_kernel_dim", "mamba_num_heads", "mamba_head_dim",
    "mamba_state_dim", "mamba_num_groups", "mamba_conv_kernel", "dsa_indexer_n_heads",
    "dsa_indexer_head_dim", "dsa_indexer_topk", "mtp_use_repeated_layer",
)  # fmt: skip


def _layer_kinds(f: _Fields) -> list[tuple[str, str]]:
    """``(mixer, ffn)`` per layer from the hybrid pattern or the GPT-style fields."""
    pattern = f.get("hybrid_layer_pattern") or f.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        main = pattern.split("/")[0].replace("|", "")
        bad = sorted(set(main) - set(_HYBRID))
        if bad:
            raise PatternError(f"hybrid_layer_pattern has unknown symbol(s) {''.join(bad)!r}")
        return [_HYBRID[c] for c in main]
    num_layers = int(f.need("num_layers"))
    experts = f.get("num_moe_experts")
    moe = moe_layer_pattern(f.get("moe_layer_freq"), num_layers) if experts else [0] * num_layers
    mixers = _mixers(f, num_layers)
    return [(mixers[i], "moe" if moe[i] else "dense") for i in range(num_layers)]


def _mixers(f: _Fields, num_layers: int) -> list[str]:
    """Attention kind per layer: MLA, GQA, DSA, or Gated DeltaNet for hybrid linear attention."""
    full = "mla" if f.get("multi_latent_attention") else "gqa"
    variant = f.get("experimental_attention_variant")
    if variant == "dsa":
        return _dsa_layers(f, num_layers)
    if variant != "gated_delta_net":
        return [full] * num_layers
    linear = _linear_layers(f, num_layers)
    return ["gdn" if linear[i] else full for i in range(num_layers)]


#: DeepSeek-V3.2 / GLM-5 indexer sizes, assumed when a DSA config leaves them out.
_DSA_DEFAULTS = (("dsa_indexer_n_heads", 64), ("dsa_indexer_head_dim", 128),
                 ("dsa_indexer_topk", 2048))  # fmt: skip


def _dsa_layers(f: _Fields, num_layers: int) -> list[str]:
    """DSA layers that compute top-k (own indexer) vs. those reusing an earlier layer's.

    Megatron-Core's rule (1-based layer numbers): a layer skips top-k when
    ``max(number - max(offset, 1), 0) % freq != 0`` and ``freq > 1``
    (megatron/core/transformer/experimental_attention_variant/dsa.py::is_dsa_skip_topk_layer;
    DSAttention.__init__ builds no indexer for it).
    """
    freq = int(f.get("dsa_indexer_topk_freq", 1) or 1)
    offset = max(int(f.get("dsa_indexer_skip_topk_offset", 0) or 0), 1)
    if freq < 1:
        raise PatternError(f"dsa_indexer_topk_freq must be >= 1, got {freq}")
    for name, default in _DSA_DEFAULTS:
        f.get(name, default, note=True)  # Megatron-Core has no default: record the assumption
    if freq == 1:
        return ["dsa"] * num_layers
    return ["mla" if max(i + 1 - offset, 0) % freq else "dsa" for i in range(num_layers)]


def _linear_layers(f: _Fields, num_layers: int) -> list[bool]:
    """Which layers are linear attention (Qwen3-Next: every 4th layer is full attention)."""
    indices = f.get("full_attention_layer_indices")
    if indices is not None:
        full = {int(i) for i in indices}
        return [i not in full for i in range(num_layers)]
    pattern = f.get("linear_attention_pattern")
    if pattern is None:
        freq = f.get("linear_attention_freq", 4, note=True)
        if isinstance(freq, int):
            return [(i + 1) % freq != 0 for i in range(num_layers)]
        pattern = freq
    items: list[Any] = parse_pattern(pattern) if isinstance(pattern, str) else list(pattern)
    if len(items) != num_layers:
        raise PatternError(f"linear attention pattern has {len(items)} entries, not {num_layers}")
    return [bool(int(x)) for x in items]


# --------------------------------------------------------------------------------------------
# Per-layer counts
# --------------------------------------------------------------------------------------------


@record(frozen=True)
class Part:
    """Parameters of one module: ``sharded`` are split over TP, the rest replicated."""

    total: int = 0
    sharded: int = 0

    @property
    def replicated(self) -> int:
        return self.total - self.sharded

    def __add__(self, other: Part) -> Part:
        return Part(self.total + other.total, self.sharded + other.sharded)


@record(frozen=True)
class LayerParams:
    """One transformer layer: mixer (incl. its pre-norm), MLP side and the routed experts."""

    index: int
    mixer: str
    ffn: str
    attention: Part
    dense_mlp: Part
    moe_other: Part
    routed_experts: int
    active_experts: int

    @property
    def total(self) -> int:
        return (
            self.attention.total + self.dense_mlp.total + self.moe_other.total
            + self.routed_experts
        )  # fmt: skip

    @property
    def dense(self) -> Part:
        """Everything that is not a routed expert (attention, dense MLP, router, shared)."""
        return self.attention + self.dense_mlp + self.moe_other


def gqa_params(a: Arch) -> Part:
    """GQA/MHA attention: Q (×2 with an output gate), K, V, O, biases, q/k norms, sinks, norm."""
    h, n, g, d = a.hidden_size, a.num_attention_heads, a.num_query_groups, a.kv_channels
    qf = 2 if a.attention_output_gate else 1
    sharded = h * n * d * qf + 2 * h * g * d + n * d * h
    replicated = a.norm_params
    if a.add_qkv_bias:
        sharded += n * d + 2 * g * d
    if a.add_bias_linear:
        replicated += h  # row-parallel output bias is kept whole on every TP rank
    if a.qk_layernorm:
        replicated += (n * d + g * d) if a.qk_layernorm_full_width else 2 * d
    if a.softmax_type == "learnable":
        sharded += n  # one learnable sink logit per head, split with the heads
    return Part(sharded + replicated, sharded)


def mla_params(a: Arch) -> Part:
    """MLA: replicated down-projections and latent norms, column-parallel up-projections."""
    h, n = a.hidden_size, a.num_attention_heads
    qk = a.qk_head_dim + a.qk_pos_emb_head_dim
    norms = a.qk_layernorm
    if a.q_lora_rank:
        r = a.q_lora_rank
        replicated = h * r + (r if norms else 0)
        sharded = r * n * qk
    else:
        replicated = 0
        sharded = h * n * qk
    replicated += h * (a.kv_lora_rank + a.qk_pos_emb_head_dim) + (a.kv_lora_rank if norms else 0)
    sharded += a.kv_lora_rank * n * (a.qk_head_dim + a.v_head_dim) + n * a.v_head_dim * h
    replicated += a.norm_params
    return Part(sharded + replicated, sharded)


def dsa_indexer_params(a: Arch) -> int:
    """DSA lightning indexer, duplicated on every TP rank: wq_b (q latent → heads·dim), wk
    (h → dim), k_norm (LayerNorm weight + bias), weights_proj (h → heads).

    megatron/core/transformer/experimental_attention_variant/dsa.py::DSAIndexer.__init__
    (parallel_mode="duplicated"; q input is q_lora_rank, or hidden_size without q LoRA).
    """
    q_in = a.q_lora_rank or a.hidden_size
    n, d = a.dsa_indexer_n_heads, a.dsa_indexer_head_dim
    return q_in * n * d + a.hidden_size * d + 2 * d + a.hidden_size * n


def dsa_params(a: Arch) -> Part:
    """MLA plus its DSA indexer (replicated over TP)."""
    mla = mla_params(a)
    return Part(mla.total + dsa_indexer_params(a), mla.sharded)


def gdn_params(a: Arch) -> Part:
    """Gated DeltaNet (Qwen3-Next linear layers), as models-check.md counts it."""
    h, nv = a.hidden_size, a.linear_num_value_heads
    k = a.linear_num_key_heads * a.linear_key_head_dim
    v = nv * a.linear_value_head_dim
    sharded = h * (2 * k + 2 * v) + h * 2 * nv + (2 * k + v) * a.linear_conv_kernel_dim
    sharded += 2 * nv + v * h
    replicated = a.linear_value_head_dim + a.norm_params
    return Part(sharded + replicated, sharded)


def mamba_params(a: Arch) -> Part:
    """Mamba-2 mixer (Nemotron-H 'M'): in_proj, conv (+bias), dt/A/D, gated norm, out_proj."""
    h, heads = a.hidden_size, a.mamba_num_heads
    d_in = heads * a.mamba_head_dim
    gs = a.mamba_num_groups * a.mamba_state_dim
    conv = d_in + 2 * gs
    sharded = h * (2 * d_in + 2 * gs + heads) + conv * (a.mamba_conv_kernel + 1) + 3 * heads
    sharded += d_in + d_in * h
    return Part(sharded + a.norm_params, sharded)


def dense_mlp_params(a: Arch, width: int | None = None) -> Part:
    """Dense MLP of ``width`` (default ffn_hidden_size) with its pre-MLP norm and biases."""
    h, f = a.hidden_size, width or a.ffn_hidden_size
    sharded = a.mlp_factor * h * f
    replicated = a.norm_params
    if a.add_bias_linear:
        sharded += (a.mlp_factor - 1) * f
        replicated += h
    return Part(sharded + replicated, sharded)


def expert_params(a: Arch) -> int:
    """One routed expert (GPT-OSS style biases when add_bias_linear; latent width if set)."""
    width = a.moe_latent_size or a.hidden_size
    f = a.expert_ffn
    bias = ((a.mlp_factor - 1) * f + width) if a.add_bias_linear else 0
    return a.mlp_factor * width * f + bias


def moe_other_params(a: Arch) -> Part:
    """MoE layer minus routed experts: router (+bias), shared expert (+gate), latent, norm."""
    h, e = a.hidden_size, a.num_moe_experts or 0
    replicated = h * e + (e if a.add_bias_linear else 0) + a.norm_params
    sharded = 0
    if a.moe_shared_expert_intermediate_size:
        sharded += a.mlp_factor * h * a.moe_shared_expert_intermediate_size
        if a.moe_shared_expert_gate:
            replicated += h
    if a.moe_latent_size:
        replicated += 2 * h * a.moe_latent_size
    return Part(sharded + replicated, sharded)


_MIXERS = {"gqa": gqa_params, "mla": mla_params, "dsa": dsa_params, "gdn": gdn_params,
           "mamba": mamba_params}  # fmt: skip


def layer_params(a: Arch, index: int, mixer: str, ffn: str) -> LayerParams:
    """Count one layer of kind ``(mixer, ffn)``."""
    attention = _MIXERS[mixer](a) if mixer != "none" else Part()
    dense = dense_mlp_params(a) if ffn == "dense" else Part()
    other = moe_other_params(a) if ffn == "moe" else Part()
    per_expert = expert_params(a) if ffn == "moe" else 0
    experts = (a.num_moe_experts or 0) * per_expert
    active = min(a.moe_router_topk, a.num_moe_experts or 0) * per_expert
    return LayerParams(index, mixer, ffn, attention, dense, other, experts, active)


def mtp_layer_params(a: Arch) -> LayerParams:
    """The transformer layer inside one MTP depth: full attention + MoE (or dense) MLP."""
    return layer_params(a, -1, a.mtp_mixer, "moe" if a.is_moe else "dense")


def mtp_extra_params(a: Arch) -> Part:
    """Per MTP depth besides its layer: enorm + hnorm, eh_proj (2h→h), final norm."""
    h = a.hidden_size
    return Part(3 * a.norm_params + 2 * h * h, 2 * h * h)


# --------------------------------------------------------------------------------------------
# Whole-model counts
# --------------------------------------------------------------------------------------------


@record(frozen=True)
class ParamCounts:
    """Whole-model parameter counts; see models-check.md for the conventions.

    ``active`` counts the embedding and output layer; the ``active_excl_*`` variants follow
    the publishers that leave them out. MTP depths are only in ``total_with_mtp`` (one block
    of weights for all depths under ``mtp_use_repeated_layer``).
    """

    total: int
    total_with_mtp: int
    active: int
    embedding: int
    output: int
    final_norm: int
    mtp: int
    components: dict[str, int]
    layers: tuple[LayerParams, ...]

    @property
    def non_embedding(self) -> int:
        return self.total - self.embedding - self.output

    @property
    def active_excl_input_embedding(self) -> int:
        return self.active - self.embedding

    @property
    def active_excl_embedding_and_output(self) -> int:
        return self.active - self.embedding - self.output

    @property
    def expert(self) -> int:
        """Routed-expert parameters (sharded over EP·ETP and the expert optimizer group)."""
        return self.components["routed_experts"]

    @property
    def dense(self) -> int:
        """Everything else (sharded over TP and the DP·CP optimizer group)."""
        return self.total - self.expert


def count_params(arch: Arch, tp: int = 1) -> ParamCounts:
    """Count every parameter Megatron instantiates for the text model (vocab padded for ``tp``)."""
    # One count per layer kind (mixer, ffn), copied per index: O(layers) cheap copies.
    by_kind: dict[tuple[str, str], LayerParams] = {}
    built: list[LayerParams] = []
    for i, (m, f) in enumerate(arch.layers):
        template = by_kind.get((m, f))
        if template is None:
            template = by_kind[(m, f)] = layer_params(arch, i, m, f)
        t = template
        built.append(t if t.index == i else LayerParams(
            i, m, f, t.attention, t.dense_mlp, t.moe_other, t.routed_experts, t.active_experts
        ))  # fmt: skip
    layers = tuple(built)
    vocab = arch.padded_vocab(tp)
    embedding = vocab * arch.hidden_size
    output = 0 if arch.share_embeddings_and_output_weights else embedding
    final_norm = arch.norm_params
    components = {
        "attention": sum(lp.attention.total for lp in layers),
        "dense_mlp": sum(lp.dense_mlp.total for lp in layers),
        "routed_experts": sum(lp.routed_experts for lp in layers),
        "moe_other": sum(lp.moe_other.total for lp in layers),
    }
    total = embedding + output + final_norm + sum(components.values())
    inactive = sum(lp.routed_experts - lp.active_experts for lp in layers)
    mtp = arch.mtp_weight_sets * (mtp_layer_params(arch).total + mtp_extra_params(arch).total)
    return ParamCounts(
        total=total,
        total_with_mtp=total + mtp,
        active=total - inactive,
        embedding=embedding,
        output=output,
        final_norm=final_norm,
        mtp=mtp,
        components=components,
        layers=layers,
    )
