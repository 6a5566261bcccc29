"""Model fields from a Hugging Face ``config.json``, the way Megatron Bridge's model bridges
import them (``AutoBridge.from_hf_pretrained(...).to_megatron_provider()``).

The result uses the field names of the bundled presets (``data/models.yaml``, what
``settings.preset_fields`` returns), so an HF config can stand wherever ``--model NAME`` does.
Each architecture follows its bridge (Megatron Bridge 0.6.2 wheel, the same code at the mirror's
``main``), cited below as ``path::function``; paths are under ``megatron/bridge/models/``:

- the common part is
  ``conversion/model_bridge.py::MegatronModelBridge.hf_config_to_provider_kwargs``
  (``CONFIG_MAPPING``: HF name -> Megatron name, first match wins; rope_theta; yarn
  rope_scaling; ``make_vocab_size_divisible_by``, the largest power of two <= 128 dividing the
  vocab) and ``conversion/model_bridge.py::MegatronModelBridge.provider_bridge``
  (``position_embedding_type`` "yarn" for a yarn GPT model, else "rope");
- each family's ``provider_bridge`` then overrides fields (cited at each ``_map_*`` function).

Where moe-lint's presets record the released checkpoint rather than the bridge's import-time
training choice, the checkpoint wins and the function says so (GLM-5's MTP layer, which
GLM5Bridge disables on import; the Nemotron-3 presets' MTP depth, a recipe value).

Nothing here imports transformers or Bridge: the file is read as JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from moe_lint.bounds import (
    MAX_COUNT,
    MAX_DEPTH,
    MAX_JSON_BYTES,
    MAX_LAYERS,
    MAX_NODES,
    bounded_repr,
    number_too_long,
)
from moe_lint.errors import UsageError

#: Megatron Bridge ``MegatronModelBridge.CONFIG_MAPPING`` (conversion/model_bridge.py), the
#: rows that name model architecture fields (dropout, init and loss coefficients left out).
CONFIG_MAPPING: tuple[tuple[str, str], ...] = (
    ("num_hidden_layers", "num_layers"),
    ("hidden_size", "hidden_size"),
    ("intermediate_size", "ffn_hidden_size"),
    ("num_attention_heads", "num_attention_heads"),
    ("num_key_value_heads", "num_query_groups"),
    ("head_dim", "kv_channels"),
    ("vocab_size", "vocab_size"),
    ("rms_norm_eps", "layernorm_epsilon"),
    ("tie_word_embeddings", "share_embeddings_and_output_weights"),
    ("attention_bias", "add_qkv_bias"),
    ("mlp_bias", "add_bias_linear"),
    ("use_qk_norm", "qk_layernorm"),
    ("rope_theta", "rotary_base"),
    ("partial_rotary_factor", "rotary_percent"),
    ("num_experts", "num_moe_experts"),
    ("num_local_experts", "num_moe_experts"),
    ("num_experts_per_tok", "moe_router_topk"),
    ("moe_intermediate_size", "moe_ffn_hidden_size"),
    ("scoring_func", "moe_router_score_function"),
    ("n_routed_experts", "num_moe_experts"),
    ("n_group", "moe_router_num_groups"),
    ("topk_group", "moe_router_group_topk"),
    ("routed_scaling_factor", "moe_router_topk_scaling_factor"),
    ("q_lora_rank", "q_lora_rank"),
    ("kv_lora_rank", "kv_lora_rank"),
    ("qk_nope_head_dim", "qk_head_dim"),
    ("qk_rope_head_dim", "qk_pos_emb_head_dim"),
    ("v_head_dim", "v_head_dim"),
    ("num_nextn_predict_layers", "mtp_num_layers"),
    ("mtp_num_hidden_layers", "mtp_num_layers"),
)

#: nemotronh/nemotron_h_bridge.py::NemotronHBridge.CONFIG_MAPPING adds these rows.
NEMOTRON_H_MAPPING: tuple[tuple[str, str], ...] = (
    ("mamba_head_dim", "mamba_head_dim"),
    ("mamba_num_heads", "mamba_num_heads"),
    ("chunk_size", "mamba_chunk_size"),
    ("n_groups", "mamba_num_groups"),
    ("ssm_state_size", "mamba_state_dim"),
    ("hybrid_override_pattern", "hybrid_layer_pattern"),
    ("use_bias", "add_bias_linear"),
    ("layer_norm_epsilon", "layernorm_epsilon"),
    ("moe_shared_expert_intermediate_size", "moe_shared_expert_intermediate_size"),
)

#: Megatron-Core TransformerConfig / GPTModelProvider defaults the presets spell out.
_MODEL_DEFAULTS: dict[str, Any] = {
    "normalization": "LayerNorm",
    "gated_linear_unit": False,
    "add_bias_linear": True,
    "add_qkv_bias": False,
    "position_embedding_type": "rope",
    "rotary_percent": 1.0,
    "share_embeddings_and_output_weights": True,
    "qk_layernorm": False,
    "moe_router_score_function": "softmax",
    "moe_router_enable_expert_bias": False,
    "moe_router_pre_softmax": False,
    "multi_latent_attention": False,
    "mtp_num_layers": 0,
}
#: Defaults for a model with experts (Megatron-Core TransformerConfig.moe_layer_freq).
_MOE_DEFAULTS: dict[str, Any] = {"moe_layer_freq": 1}

#: HF name -> the model field it becomes (each HF name has one row in the two tables).
_MODEL_NAME: dict[str, str] = dict(CONFIG_MAPPING + NEMOTRON_H_MAPPING)

#: Model field -> the HF names a family's mapping reads it from besides the tables' rows (named
#: in a refusal, so the message points at the line of the config.json to fix).
_MORE_SOURCES: dict[str, tuple[str, ...]] = {
    "num_layers": ("hybrid_override_pattern", "layers_block_type"),
    "ffn_hidden_size": ("intermediate_size_mlp",),
    "moe_ffn_hidden_size": ("intermediate_size",),
    "kv_channels": ("attention_head_dim",),
    "moe_shared_expert_intermediate_size": (
        "shared_expert_intermediate_size", "moe_intermediate_size", "n_shared_experts",
        "intermediate_size",
    ),
    "qk_pos_emb_head_dim": ("qk_head_dim", "qk_nope_head_dim"),
    "rotary_base": ("rope_parameters",),
    "mamba_conv_kernel": ("conv_kernel",),
    "dsa_indexer_head_dim": ("index_head_dim",),
    "dsa_indexer_n_heads": ("index_n_heads",),
    "dsa_indexer_topk": ("index_topk",),
    "dsa_indexer_topk_freq": ("index_topk_freq",),
    "dsa_indexer_skip_topk_offset": ("index_skip_topk_offset",),
}  # fmt: skip

#: Mapped model fields the field table does not type (a YAML file seldom writes them: they come
#: with the model) that the parameter count, the memory model and the planner compute with.
#: An HF config's value for one must be an integer from the lower bound given here to
#: bounds.MAX_COUNT, a finite number, or text; unset (null) is left to the framework default.
#: A value of another kind would reach that arithmetic as a crash, not as a finding.
_ARCH_INTS: dict[str, int] = {
    **dict.fromkeys((
        "kv_lora_rank", "q_lora_rank", "qk_head_dim", "v_head_dim", "moe_latent_size",
        "moe_router_num_groups", "moe_router_group_topk", "make_vocab_size_divisible_by",
        "linear_conv_kernel_dim", "linear_key_head_dim", "linear_value_head_dim",
        "linear_num_key_heads", "linear_num_value_heads", "linear_attention_freq",
        "mamba_head_dim", "mamba_num_heads", "mamba_num_groups", "mamba_state_dim",
        "mamba_chunk_size", "mamba_conv_kernel", "dsa_indexer_head_dim", "dsa_indexer_n_heads",
        "dsa_indexer_topk", "dsa_indexer_topk_freq", "sliding_window", "attention_chunk_size",
    ), 1),
    # 0 is meaningful: no rotary part, no shared expert (n_shared_experts 0), no offset
    **dict.fromkeys(
        ("qk_pos_emb_head_dim", "moe_shared_expert_intermediate_size",
         "dsa_indexer_skip_topk_offset"), 0),
}  # fmt: skip
_ARCH_NUMBERS = (
    "layernorm_epsilon", "rotary_base", "rotary_percent", "moe_router_topk_scaling_factor",
)  # fmt: skip
_ARCH_TEXTS = ("moe_router_score_function", "hybrid_layer_pattern", "mtp_hybrid_override_pattern")
#: Mapped on/off fields: Megatron-Core tests them for truth
#: (``if config.add_qkv_bias:``), so the HF value is read the same way (``attention_bias: 1``
#: is a bias, as it is when Bridge passes it on) and no list or object reaches the models.
_ARCH_FLAGS = (
    "add_bias_linear", "add_qkv_bias", "qk_layernorm", "share_embeddings_and_output_weights",
    "gated_linear_unit", "moe_router_pre_softmax", "moe_router_enable_expert_bias",
    "moe_shared_expert_gate", "layernorm_zero_centered_gamma", "attention_output_gate",
    "moe_apply_probs_on_input", "rotary_interleaved", "qk_l2_norm", "mtp_use_repeated_layer",
)  # fmt: skip


@cache
def _validated() -> frozenset[str]:
    """The model fields a YAML ``model:`` section validates (the field table's typed ones)."""
    # Lazy: the field table is read on first use, as normalize reads it.
    from moe_lint.config import fields

    return frozenset(fields.validated("model"))


def _source_note(field: str, value: Any, sources: Mapping[str, Any]) -> str:
    """`` (HF head_dim)``: the config.json name holding the refused value, where it differs
    from the model field's; for a value the mapping computed, the names it was computed from
    (`` (from HF moe_intermediate_size, n_shared_experts)``)."""
    names = [h for h, f in _MODEL_NAME.items() if f == field] + list(_MORE_SOURCES.get(field, ()))
    present = [n for n in dict.fromkeys(names) if n in sources]
    held = [n for n in present if sources[n] is value or _same(sources[n], value)]
    if held:
        shown = [n for n in held if n != field]
        return f" (HF {', '.join(shown)})" if shown else ""
    return f" (from HF {', '.join(present)})" if present else ""


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and not isinstance(a, list | dict) and a == b


def _checked(values: dict[str, Any], where: str, sources: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` (mapped model fields) with the validated ones typed as a YAML model section
    types them; the first value a YAML file would get SCH002 for is refused with that
    finding's text, naming this file, the field and the HF names it came from."""
    # Lazy: the section checks read the field table (and pydantic, for a bad value) on use.
    from moe_lint.config.validate import model_field_problems

    typed, problems = model_field_problems(values)
    if problems:
        first = problems[0]
        field = first.path.split(".", 1)[1]
        more = len(problems) - 1
        note = _source_note(field, first.value, sources)
        raise UsageError(
            f"{where}: {first.path} = {bounded_repr(first.value)}{note}: {first.message} [SCH002]"
            + (f" (and {more} more)" if more else "")
        )
    return {**values, **typed}


def _check_arch(values: Mapping[str, Any], where: str, sources: Mapping[str, Any]) -> None:
    """The kinds of the mapped fields the field table does not type (_ARCH_INTS, ...)."""
    for name, value in values.items():
        if value is None:
            continue
        if name in _ARCH_INTS:
            low = _ARCH_INTS[name]
            ok = not isinstance(value, bool) and isinstance(value, int)
            ok = ok and low <= value <= MAX_COUNT
            expected = f"an integer from {low} to {MAX_COUNT:,} (bounds.MAX_COUNT)"
        elif name in _ARCH_NUMBERS:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            ok = ok and math.isfinite(value)
            expected = "a finite number"
        elif name in _ARCH_TEXTS:
            ok, expected = isinstance(value, str), "text"
        else:
            continue
        if not ok:
            note = _source_note(name, value, sources)
            raise UsageError(
                f"{where}: model.{name} = {bounded_repr(value)}{note}: expected {expected}"
            )


class _Hf:
    """An HF config (or its ``text_config``) with the lookups a bridge makes."""

    def __init__(self, data: Mapping[str, Any], where: str) -> None:
        self.data = data
        self.where = where

    def has(self, name: str) -> bool:
        return name in self.data

    def get(self, name: str, default: Any = None) -> Any:
        value = self.data.get(name)
        return default if value is None else value

    def need(self, name: str) -> Any:
        value = self.data.get(name)
        if value is None:
            raise UsageError(f"{self.where}: {self.arch} config.json has no {name}")
        return value

    def need_int(self, name: str, low: int = 1) -> int:
        """The integer ``name`` (required), checked before the mapping computes with it."""
        return self._int(name, self.need(name), low)

    def get_int(self, name: str, default: int, low: int = 0) -> int:
        """The integer ``name``, ``default`` when the config leaves it out (or null)."""
        return self._int(name, self.get(name, default), low)

    def _int(self, name: str, value: Any, low: int) -> int:
        """A value that becomes a model field is checked as that field is in a YAML file
        (num_hidden_layers as model.num_layers, with bounds.MAX_LAYERS), so the mapping never
        loops over an unchecked count; any other is an integer from ``low`` to MAX_COUNT."""
        field = _MODEL_NAME.get(name)
        if field is not None and field in _validated():
            typed = _checked({field: value}, self.where, {name: value})
            return int(typed[field])
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_COUNT:
            raise UsageError(
                f"{self.where}: {name} = {bounded_repr(value)}: expected an integer from {low} "
                f"to {MAX_COUNT:,} (bounds.MAX_COUNT)"
            )
        return value

    def mapping(self, name: str) -> Mapping[str, Any]:
        """A nested object such as ``rope_scaling`` ({} when absent or null)."""
        value = self.get(name, {})
        if not isinstance(value, Mapping):
            raise UsageError(
                f"{self.where}: {name} = {bounded_repr(value)}: expected a JSON object or null"
            )
        return value

    def layer_list(self, name: str) -> list[Any] | None:
        """A per-layer list (``layer_types``, ``layers_block_type``), at most MAX_LAYERS long."""
        value = self.get(name)
        if not isinstance(value, list) or not value:
            return None
        if len(value) > MAX_LAYERS:
            raise UsageError(
                f"{self.where}: {name} lists {len(value):,} layers, more than moe-lint's bound "
                f"of {MAX_LAYERS:,} (bounds.MAX_LAYERS)"
            )
        return value

    @property
    def arch(self) -> str:
        archs = self.data.get("architectures") or []
        return str(archs[0]) if archs else str(self.data.get("model_type", "HF"))


def _divisible_by(vocab: int) -> int:
    """conversion/model_bridge.py::MegatronModelBridge.make_vocab_size_divisible_by."""
    base = 128
    while vocab % base != 0:
        base //= 2
    return base


def _dense_then_moe(hf: _Hf, layers: int) -> int | str:
    """Bridge's ``[0] * first_k_dense_replace + [1] * (layers - k)`` in the presets' pattern
    syntax (``1`` when every layer is MoE). More dense layers than layers makes that list too
    long, which Megatron-Core asserts against when it builds the layers
    (models/gpt/gpt_layer_specs.py::get_gpt_decoder_layer_specs, "Invalid length of
    moe_layer_pattern")."""
    first_dense = hf.get_int("first_k_dense_replace", 0)
    if first_dense > layers:
        raise UsageError(
            f"{hf.where}: first_k_dense_replace = {first_dense} is more than num_hidden_layers "
            f"= {layers}: Bridge's moe_layer_freq would list {first_dense} layers (Megatron-Core "
            "gpt_layer_specs.py::get_gpt_decoder_layer_specs: Invalid length of moe_layer_pattern)"
        )
    if first_dense == 0:
        return 1
    return f"([0]*{first_dense}+[1]*{layers - first_dense})"


def _common(hf: _Hf, mapping: tuple[tuple[str, str], ...] = CONFIG_MAPPING) -> dict[str, Any]:
    """conversion/model_bridge.py::MegatronModelBridge.hf_config_to_provider_kwargs and
    ::MegatronModelBridge.provider_bridge (position_embedding_type)."""
    out: dict[str, Any] = {}
    for hf_name, name in mapping:
        if hf.has(hf_name) and name not in out:
            out[name] = hf.data[hf_name]
    if "rotary_base" not in out or out["rotary_base"] is None:
        theta = hf.mapping("rope_parameters").get("rope_theta")
        if theta is not None:
            out["rotary_base"] = theta
    rope = hf.mapping("rope_scaling")
    rope_type = rope.get("type") or rope.get("rope_type")
    out["position_embedding_type"] = "yarn" if rope_type == "yarn" else "rope"
    vocab = out.get("vocab_size")
    if isinstance(vocab, int) and vocab > 0:
        out["make_vocab_size_divisible_by"] = _divisible_by(vocab)
    return out


def _whole(value: Any) -> Any:
    """``1000000.0`` -> ``1000000`` (the presets write rotary bases as integers)."""
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1:
        return int(value)
    return value


def _map_deepseek(hf: _Hf, v3: bool) -> dict[str, Any]:
    """deepseek/deepseek_v3_bridge.py::DeepSeekV3Bridge.provider_bridge,
    deepseek/deepseek_v2_bridge.py::DeepSeekV2Bridge.provider_bridge and
    kimi/kimi_bridge.py::KimiK2Bridge.provider_bridge (Kimi-K2 ships a DeepseekV3 config):
    MLA, RMSNorm, SwiGLU, no bias, untied, q/kv latent norms, pre-softmax router; V3 sets the
    sigmoid score function with expert bias, V2 keeps the mapped scoring_func (softmax)."""
    out = _common(hf)
    layers = hf.need_int("num_hidden_layers")
    out.update(
        normalization="RMSNorm", gated_linear_unit=True, add_bias_linear=False,
        share_embeddings_and_output_weights=False, qk_layernorm=True,
        multi_latent_attention=True, moe_router_pre_softmax=True,
        position_embedding_type="rope",  # MLA providers: always rope (yarn goes to mscale/factor)
        make_vocab_size_divisible_by=1280 if v3 else 3200,
        moe_layer_freq=_dense_then_moe(hf, layers),
        moe_shared_expert_intermediate_size=hf.need_int("moe_intermediate_size")
        * hf.get_int("n_shared_experts", 0),
    )  # fmt: skip
    if v3:
        out.update(moe_router_score_function="sigmoid", moe_router_enable_expert_bias=True)
    out.pop("kv_channels", None)  # not used by MLA (the presets leave it unset)
    return out


def _map_deepseek_v3(hf: _Hf) -> dict[str, Any]:
    return _map_deepseek(hf, v3=True)


def _map_deepseek_v2(hf: _Hf) -> dict[str, Any]:
    out = _map_deepseek(hf, v3=False)
    if out.get("mtp_num_layers") is None:
        out["mtp_num_layers"] = 0
    return out


def _map_glm47_flash(hf: _Hf) -> dict[str, Any]:
    """glm/glm47_flash_bridge.py::GLM47FlashBridge.provider_bridge: DeepSeek-V3's MLA layer
    with GLM routing (sigmoid, pre-softmax, expert bias), the same fields DeepSeekV3Bridge sets,
    but ``first_k_dense_replace`` and ``n_shared_experts`` default to 1 when the config omits
    them, the vocabulary is padded by the generic rule (no 1280), and MTP is the stated
    ``num_nextn_predict_layers`` (none when unstated)."""
    data = dict(hf.data)
    data.setdefault("first_k_dense_replace", 1)
    data.setdefault("n_shared_experts", 1)
    out = _map_deepseek(_Hf(data, hf.where), v3=True)
    vocab = out.get("vocab_size")
    if isinstance(vocab, int) and vocab > 0:
        out["make_vocab_size_divisible_by"] = _divisible_by(vocab)
    return out


def _map_qwen3_moe(hf: _Hf) -> dict[str, Any]:
    """qwen/qwen3_moe_bridge.py::Qwen3MoEBridge.provider_bridge: RMSNorm, SwiGLU, no biases,
    q/k layernorm, ``moe_router_pre_softmax = not norm_topk_prob``."""
    out = _common(hf)
    out.update(
        normalization="RMSNorm", gated_linear_unit=True, add_bias_linear=False,
        add_qkv_bias=False, qk_layernorm=True,
        moe_router_pre_softmax=not bool(hf.get("norm_topk_prob", False)),
    )  # fmt: skip
    return out


def _map_qwen3_next(hf: _Hf) -> dict[str, Any]:
    """qwen/qwen3_next_bridge.py::Qwen3NextBridge.provider_bridge: Qwen3-MoE settings plus a
    gated shared expert, zero-centred RMSNorm, gated attention and Gated DeltaNet layers with
    ``linear_attention_freq = full_attention_interval`` (conversion/transformers_compat.py::
    full_attention_interval_from_hf: the interval, or the per-layer ``layer_types``)."""
    out = _common(hf)
    layers = hf.need_int("num_hidden_layers")
    types = hf.layer_list("layer_types")
    if hf.get("full_attention_interval") is None and types:
        pattern = [0 if t == "full_attention" else 1 for t in types]
    else:
        step = hf.get_int("full_attention_interval", 4, low=1)
        pattern = [0 if (i + 1) % step == 0 else 1 for i in range(layers)]
        out["linear_attention_freq"] = step
    out.update(
        normalization="RMSNorm", gated_linear_unit=True, position_embedding_type="rope",
        add_bias_linear=False, add_qkv_bias=False, qk_layernorm=True,
        share_embeddings_and_output_weights=bool(hf.get("tie_word_embeddings", False)),
        moe_router_pre_softmax=False, moe_shared_expert_gate=True,
        moe_shared_expert_intermediate_size=hf.need_int("shared_expert_intermediate_size"),
        layernorm_zero_centered_gamma=True, attention_output_gate=True,
        experimental_attention_variant="gated_delta_net",
        linear_attention_pattern=_repeat_pattern(pattern),
        full_attention_layer_indices=[i for i, p in enumerate(pattern) if p == 0],
        linear_conv_kernel_dim=hf.need_int("linear_conv_kernel_dim"),
        linear_key_head_dim=hf.need_int("linear_key_head_dim"),
        linear_value_head_dim=hf.need_int("linear_value_head_dim"),
        linear_num_key_heads=hf.need_int("linear_num_key_heads"),
        linear_num_value_heads=hf.need_int("linear_num_value_heads"),
        moe_layer_freq=1,
    )  # fmt: skip
    return out


def _repeat_pattern(pattern: list[int]) -> str:
    """``[1,1,1,0]*12`` for a repeating per-layer list (the presets' pattern syntax)."""
    for size in range(1, len(pattern) + 1):
        if len(pattern) % size == 0 and pattern[:size] * (len(pattern) // size) == pattern:
            unit = ",".join(str(p) for p in pattern[:size])
            return f"([{unit}]*{len(pattern) // size})"
    return str(pattern)  # pragma: no cover - size == len(pattern) always matches


def _map_gpt_oss(hf: _Hf) -> dict[str, Any]:
    """gpt_oss/gpt_oss_bridge.py::GPTOSSBridge.provider_bridge: RMSNorm, gated (clamped
    quick-GELU) experts with biases, yarn RoPE, learnable softmax, sliding window
    ``(sliding_window - 1, 0)`` on every other layer, ``moe_ffn_hidden_size =
    intermediate_size``."""
    out = _common(hf)
    window = hf.need_int("sliding_window")
    types = hf.layer_list("layer_types")
    if types and len(types) % 2 == 0:
        unit = ["sliding" if "sliding" in str(t) else "full" for t in types[:2]]
        out["layer_attention_types"] = f"(['{unit[0]}','{unit[1]}']*{len(types) // 2})"
    out.update(
        normalization="RMSNorm", gated_linear_unit=True, add_bias_linear=True,
        share_embeddings_and_output_weights=False, position_embedding_type="yarn",
        moe_router_pre_softmax=False, moe_router_load_balancing_type="none",
        softmax_type="learnable", sliding_window=window, window_size=[window - 1, 0],
        window_attn_skip_freq=2, moe_ffn_hidden_size=hf.need_int("intermediate_size"),
        moe_layer_freq=1,
    )  # fmt: skip
    return out


def _map_glm45(hf: _Hf) -> dict[str, Any]:
    """glm/glm45_bridge.py::GLM45Bridge.provider_bridge: RMSNorm, SwiGLU, no linear bias (qkv
    bias from attention_bias), untied, sigmoid router with expert bias, one shared expert of
    ``moe_intermediate_size``, dense-then-MoE layer pattern, MTP from num_nextn_predict_layers."""
    out = _common(hf)
    layers = hf.need_int("num_hidden_layers")
    out.update(
        normalization="RMSNorm", gated_linear_unit=True, add_bias_linear=False,
        share_embeddings_and_output_weights=False, moe_router_pre_softmax=False,
        moe_router_score_function="sigmoid", moe_router_enable_expert_bias=True,
        moe_shared_expert_intermediate_size=hf.need_int("moe_intermediate_size"),
        moe_layer_freq=_dense_then_moe(hf, layers),
        mtp_num_layers=hf.get("num_nextn_predict_layers", 0),
    )  # fmt: skip
    return out


def _map_glm5(hf: _Hf) -> dict[str, Any]:
    """glm_moe_dsa/glm5_bridge.py::GLM5Bridge.provider_bridge: MLA + DSA indexer, RMSNorm,
    sigmoid pre-softmax router with expert bias, ``qk_pos_emb_head_dim = qk_head_dim -
    qk_nope_head_dim``, rope_theta from rope_parameters, no YaRN scaling (MLA rope_type stays
    Megatron's "yarn" with factor 1.0), and GLM5Bridge._should_map_hf_config_field (an injected
    ``num_experts`` never shadows n_routed_experts). MTP: the checkpoint's
    num_nextn_predict_layers (GLM5Bridge sets None on import; the Bridge recipes set 1)."""
    data = dict(hf.data)
    if "num_experts" in data and "n_routed_experts" in data:
        data.pop("num_experts")
    out = _common(_Hf(data, hf.where))
    layers = hf.need_int("num_hidden_layers")
    out.update(
        normalization="RMSNorm", gated_linear_unit=True, add_bias_linear=False,
        share_embeddings_and_output_weights=False, qk_layernorm=True,
        multi_latent_attention=True, position_embedding_type="rope", rope_type="yarn",
        moe_router_pre_softmax=True, moe_router_score_function="sigmoid",
        moe_router_enable_expert_bias=True, make_vocab_size_divisible_by=1280,
        moe_layer_freq=_dense_then_moe(hf, layers),
        moe_shared_expert_intermediate_size=hf.need_int("moe_intermediate_size")
        * hf.get_int("n_shared_experts", 0),
        qk_pos_emb_head_dim=hf.need_int("qk_head_dim") - hf.need_int("qk_nope_head_dim"),
        rotary_base=hf.mapping("rope_parameters").get("rope_theta", out.get("rotary_base")),
        experimental_attention_variant="dsa",
        dsa_indexer_head_dim=hf.need_int("index_head_dim"),
        dsa_indexer_n_heads=hf.need_int("index_n_heads"),
        dsa_indexer_topk=hf.need_int("index_topk"),
        dsa_indexer_topk_freq=hf.get("index_topk_freq", 1),
        dsa_indexer_skip_topk_offset=hf.get("index_skip_topk_offset", 0),
        dsa_indexer_loss_coeff=0.001,
        mtp_num_layers=hf.get("num_nextn_predict_layers", 0),
    )  # fmt: skip
    return out


def _map_olmoe(hf: _Hf) -> dict[str, Any]:
    """olmoe/olmoe_bridge.py::OlMoEBridge.provider_bridge: kv_channels = head_dim or
    hidden/heads, RMSNorm, SwiGLU, no bias, untied, q/k layernorm, experts of
    intermediate_size, softmax pre-softmax router (any other scoring_func is refused)."""
    out = _common(hf)
    scoring = hf.get("scoring_func", "softmax")
    if scoring != "softmax":
        raise UsageError(
            f"{hf.where}: OlMoE only supports scoring_func='softmax', got {bounded_repr(scoring)}"
        )
    out.update(
        kv_channels=hf.get("head_dim")
        or hf.need_int("hidden_size") // hf.need_int("num_attention_heads"),
        normalization="RMSNorm", gated_linear_unit=True, add_bias_linear=False,
        share_embeddings_and_output_weights=False, qk_layernorm=True,
        moe_ffn_hidden_size=hf.need_int("intermediate_size"),
        moe_router_pre_softmax=True, moe_router_score_function="softmax", moe_layer_freq=1,
    )  # fmt: skip
    return out


def _map_mixtral(hf: _Hf) -> dict[str, Any]:
    """No Mixtral bridge is registered in Megatron Bridge 0.6.2 (nor at the mirror's main):
    the common CONFIG_MAPPING (conversion/model_bridge.py::MegatronModelBridge.
    hf_config_to_provider_kwargs) with Mixtral's fixed architecture (RMSNorm, SwiGLU experts of
    intermediate_size, no bias, untied, softmax top-k router, every layer MoE), the values
    moe-lint's Mixtral presets carry from Megatron-LM's Mixtral configs; kv_channels
    hidden/heads, make_vocab_size_divisible_by the GPTModelProvider default 128."""
    out = _common(hf)
    out.update(
        kv_channels=hf.get("head_dim")
        or hf.need_int("hidden_size") // hf.need_int("num_attention_heads"),
        normalization="RMSNorm", gated_linear_unit=True, add_bias_linear=False,
        share_embeddings_and_output_weights=bool(hf.get("tie_word_embeddings", False)),
        moe_ffn_hidden_size=hf.need_int("intermediate_size"), moe_layer_freq=1,
        make_vocab_size_divisible_by=128,
    )  # fmt: skip
    return out


def _map_llama4(hf: _Hf) -> dict[str, Any]:
    """Llama-4 (the ``text_config`` of Llama4ForConditionalGeneration): no Llama-4 bridge is
    registered in Megatron Bridge 0.6.2; the fields follow the last Bridge provider,
    llama/llama_provider.py::Llama4ModelProvider at dc805f5cf9e0 (RMSNorm, SwiGLU, no bias,
    interleaved RoPE, NoPE every 4th layer, chunked attention, sigmoid top-1 router applied to
    the input, one shared expert of intermediate_size), with the dims of the HF text config:
    ``intermediate_size_mlp`` is the dense MLP, MoE on every ``interleave_moe_layer_step``-th
    layer, ``use_qk_norm`` is a weightless L2 norm (qk_l2_norm), not a q/k layernorm."""
    out = _common(hf)
    step = hf.get_int("interleave_moe_layer_step", 1, low=1)
    layers = hf.need_int("num_hidden_layers")
    freq: int | str = 1
    if step > 1:  # transformers' Llama4TextConfig: layer i is MoE when (i + 1) % step == 0
        freq = _repeat_pattern([1 if (i + 1) % step == 0 else 0 for i in range(layers)])
    out.update(
        ffn_hidden_size=hf.get("intermediate_size_mlp", out.get("ffn_hidden_size")),
        normalization="RMSNorm", gated_linear_unit=True, add_bias_linear=False,
        share_embeddings_and_output_weights=bool(hf.get("tie_word_embeddings", False)),
        qk_layernorm=False, qk_l2_norm=bool(hf.get("use_qk_norm", False)),
        rotary_interleaved=True, nope_layer_interval=4,
        attention_chunk_size=hf.get("attention_chunk_size", 8192),
        moe_ffn_hidden_size=hf.need_int("intermediate_size"),
        moe_shared_expert_intermediate_size=hf.need_int("intermediate_size"),
        moe_layer_freq=freq, moe_router_score_function="sigmoid",
        moe_router_pre_softmax=False, moe_apply_probs_on_input=True,
        moe_router_topk_scaling_factor=1.0, make_vocab_size_divisible_by=128,
    )  # fmt: skip
    return out


def _map_llama(hf: _Hf) -> dict[str, Any]:
    """llama/llama_bridge.py::LlamaBridge.provider_bridge: the common mapping (attention_bias,
    mlp_bias, tie_word_embeddings, head_dim when given) with RMSNorm, SwiGLU and
    ``rotary_percent = 1.0``. Its ``llama3`` / ``linear`` rope_scaling (rope_scaling_factor,
    seq_len_interpolation_factor) is not carried: moe-lint's model fields hold no RoPE scaling
    (as for yarn's parameters), and it changes no size."""
    out = _common(hf)
    out.update(normalization="RMSNorm", gated_linear_unit=True, rotary_percent=1.0)
    return out


def _map_mistral(hf: _Hf) -> dict[str, Any]:
    """mistral/mistral_bridge.py::MistralBridge.provider_bridge on
    mistral/mistral_provider.py::MistralModelProvider's defaults: the bridge passes its fields
    itself (no CONFIG_MAPPING): layers, widths, heads, query groups, rms_norm_eps, rope_theta
    (rope_theta_from_hf: the top-level name or rope_parameters), kv_channels = head_dim (unset
    when absent), tie_word_embeddings (False when absent), the generic vocabulary padding and
    ``window_size = (sliding_window - 1, 0)`` with ``cp_comm_type = "a2a"`` when
    sliding_window is set (the bridge pairs them: p2p CP cannot run a window); the provider's
    RMSNorm, SwiGLU, rope and no linear bias. No QKV bias is read (attention_bias is not
    passed), and a yarn rope_scaling's factor changes no size (not carried)."""
    out: dict[str, Any] = {
        "num_layers": hf.need_int("num_hidden_layers"),
        "hidden_size": hf.data.get("hidden_size"),
        "ffn_hidden_size": hf.data.get("intermediate_size"),
        "num_attention_heads": hf.data.get("num_attention_heads"),
        "num_query_groups": hf.data.get("num_key_value_heads"),
        "layernorm_epsilon": hf.data.get("rms_norm_eps"),
        "vocab_size": hf.data.get("vocab_size"),
        "kv_channels": hf.data.get("head_dim"),
        "rotary_base": hf.get("rope_theta", hf.mapping("rope_parameters").get("rope_theta")),
        "share_embeddings_and_output_weights": bool(hf.get("tie_word_embeddings", False)),
        "normalization": "RMSNorm", "gated_linear_unit": True, "add_bias_linear": False,
        "add_qkv_bias": False, "position_embedding_type": "rope", "qk_layernorm": False,
    }  # fmt: skip
    vocab = out["vocab_size"]
    if isinstance(vocab, int) and not isinstance(vocab, bool) and vocab > 0:
        out["make_vocab_size_divisible_by"] = _divisible_by(vocab)
    if hf.get("sliding_window") is not None:
        window = hf.need_int("sliding_window")
        out.update(sliding_window=window, window_size=[window - 1, 0], cp_comm_type="a2a")
    return out


def _map_gemma(hf: _Hf) -> dict[str, Any]:
    """gemma/gemma_bridge.py::GemmaBridge.provider_bridge on
    gemma/gemma_provider.py::GemmaModelProvider's defaults: the common mapping (head_dim as
    kv_channels, rope_theta or rope_parameters, attention_bias), then RMSNorm with
    zero-centred gamma, gated tanh-GELU (fast_gelu) MLP without linear bias and tied embeddings
    whatever the config says (the bridge sets share_embeddings_and_output_weights = True)."""
    out = _common(hf)
    out.update(
        normalization="RMSNorm", layernorm_zero_centered_gamma=True, gated_linear_unit=True,
        add_bias_linear=False, share_embeddings_and_output_weights=True,
        position_embedding_type="rope",
    )  # fmt: skip
    return out


def _map_qwen3(hf: _Hf) -> dict[str, Any]:
    """qwen/qwen3_bridge.py::Qwen3Bridge.provider_bridge: RMSNorm, SwiGLU, no linear or QKV
    bias, q/k layernorm."""
    out = _common(hf)
    out.update(
        normalization="RMSNorm", gated_linear_unit=True, add_bias_linear=False,
        add_qkv_bias=False, qk_layernorm=True,
    )  # fmt: skip
    return out


def _map_qwen2(hf: _Hf) -> dict[str, Any]:
    """qwen/qwen2_bridge.py::Qwen2Bridge.provider_bridge: RMSNorm, SwiGLU, no linear bias, QKV
    bias always on (whatever attention_bias says); kv_channels from head_dim when given, else
    Megatron-Core's hidden/heads."""
    out = _common(hf)
    out.update(
        normalization="RMSNorm", gated_linear_unit=True, add_bias_linear=False, add_qkv_bias=True,
    )  # fmt: skip
    return out


def _map_mimo(hf: _Hf) -> dict[str, Any]:
    """mimo/mimo_bridge.py::MimoBridge.provider_bridge (a Qwen2Bridge): Qwen2's fields, no q/k
    layernorm, QKV bias, and ``mtp_num_layers`` from num_nextn_predict_layers (CONFIG_MAPPING;
    the bridge sets it again when > 0)."""
    out = _map_qwen2(hf)
    out.update(qk_layernorm=False, mtp_num_layers=hf.get_int("num_nextn_predict_layers", 0))
    return out


def _map_qwen3_vl(hf: _Hf, moe: bool) -> dict[str, Any]:
    """qwen_vl/qwen3_vl_bridge.py::Qwen3VLBridge.provider_bridge and ::Qwen3VLMoEBridge.
    provider_bridge (the ``text_config`` of the VL release; the vision tower is not modelled):
    hf_config_to_provider_kwargs of text_config, RMSNorm, SwiGLU, QKV bias from
    attention_bias, no linear bias, q/k layernorm, rotary_base from rope_theta /
    rope_parameters (transformers_compat.py::rope_theta_from_hf), "mrope", and
    tie_word_embeddings from the top-level config (default False). MoE: experts num_experts x
    moe_intermediate_size with num_experts_per_tok, no pre-softmax, every layer MoE (the
    bridge stores decoder_sparse_step / mlp_only_layers on the provider, but the GPT layer
    specs build from moe_layer_freq, the provider default 1). Dense: CONFIG_MAPPING's rows
    only (the dense text config names no experts)."""
    out = _common(hf)
    out.update(
        normalization="RMSNorm", gated_linear_unit=True,
        add_qkv_bias=bool(hf.get("attention_bias", False)), add_bias_linear=False,
        qk_layernorm=True, position_embedding_type="mrope",
        share_embeddings_and_output_weights=bool(hf.get("tie_word_embeddings", False)),
    )  # fmt: skip
    if moe:
        out.update(
            moe_ffn_hidden_size=hf.need_int("moe_intermediate_size"),
            num_moe_experts=hf.need_int("num_experts"),
            moe_router_topk=hf.need_int("num_experts_per_tok"),
            moe_router_pre_softmax=False, moe_layer_freq=1,
        )  # fmt: skip
    return out


def _map_qwen3_vl_moe(hf: _Hf) -> dict[str, Any]:
    return _map_qwen3_vl(hf, moe=True)


def _map_qwen3_vl_dense(hf: _Hf) -> dict[str, Any]:
    return _map_qwen3_vl(hf, moe=False)


def _full_attention_layout(hf: _Hf) -> list[int] | int:
    """conversion/transformers_compat.py::full_attention_interval_from_hf: the per-layer
    ``layer_types`` (1 linear, 0 full attention) when listed, else ``full_attention_interval``
    (default 4); an unknown layer type fails there ("Unsupported attention layer type")."""
    types = hf.layer_list("layer_types")
    if types:
        kinds = {"linear_attention": 1, "full_attention": 0}
        unknowns = [t for t in types if not isinstance(t, str) or t not in kinds]
        if unknowns:
            unknown = unknowns[0]  # a null (or a list) is as unknown as a misspelt type
            raise UsageError(
                f"{hf.where}: layer_types: Unsupported attention layer type: "
                f"{bounded_repr(unknown)} (Bridge transformers_compat.py::"
                "full_attention_interval_from_hf)"
            )
        return [kinds[t] for t in types]
    return hf.get_int("full_attention_interval", 4, low=1)


def _map_qwen35(hf: _Hf, moe: bool, vl: bool) -> dict[str, Any]:
    """qwen/qwen35_bridge.py::_apply_qwen35_common_config (+ ::_apply_qwen35_moe_config for
    MoE), as Qwen35MoEBridge / Qwen35Bridge.provider_bridge (text) and
    qwen_vl/qwen35_vl_bridge.py::Qwen35VLMoEBridge / Qwen35VLBridge.provider_bridge (the
    ``text_config`` of the VL release) call them: Qwen3-Next's hybrid (Gated DeltaNet with
    zero-centred RMSNorm, gated attention, q/k layernorm), ``linear_attention_freq`` from
    full_attention_interval_from_hf, ``rotary_percent`` from rope_parameters'
    partial_rotary_factor (0.25), the bridge's getattr defaults for the GDN dims and experts,
    a gated shared expert; position_embedding_type "rope" (text) or "mrope" (VL), and the VL
    bridges read tie_word_embeddings from the top-level config (default False)."""
    out = _common(hf)
    layers = hf.need_int("num_hidden_layers")
    layout = _full_attention_layout(hf)
    if isinstance(layout, list):
        pattern = layout
        if len(pattern) != layers:
            raise UsageError(
                f"{hf.where}: layer_types lists {len(pattern)} layers, num_hidden_layers is "
                f"{layers}"
            )
    else:
        pattern = [0 if (i + 1) % layout == 0 else 1 for i in range(layers)]
        out["linear_attention_freq"] = layout
    rope = hf.mapping("rope_parameters")
    out.update(
        normalization="RMSNorm", gated_linear_unit=True,
        add_qkv_bias=bool(hf.get("attention_bias", False)), add_bias_linear=False,
        qk_layernorm=True, layernorm_zero_centered_gamma=True, attention_output_gate=True,
        experimental_attention_variant="gated_delta_net",
        linear_attention_pattern=_repeat_pattern(pattern),
        full_attention_layer_indices=[i for i, p in enumerate(pattern) if p == 0],
        linear_num_value_heads=hf.get_int("linear_num_value_heads", 32, low=1),
        rotary_percent=rope.get("partial_rotary_factor", 0.25),
        linear_conv_kernel_dim=hf.get_int("linear_conv_kernel_dim", 4, low=1),
        linear_key_head_dim=hf.get_int("linear_key_head_dim", 128, low=1),
        linear_value_head_dim=hf.get_int("linear_value_head_dim", 128, low=1),
        linear_num_key_heads=hf.get_int("linear_num_key_heads", 16, low=1),
        position_embedding_type="mrope" if vl else "rope",
        share_embeddings_and_output_weights=bool(hf.get("tie_word_embeddings", False)),
    )  # fmt: skip
    if moe:
        out.update(
            moe_ffn_hidden_size=hf.get_int("moe_intermediate_size", 1024, low=1),
            num_moe_experts=hf.get_int("num_experts", 512, low=1),
            moe_router_topk=hf.get_int("num_experts_per_tok", 10, low=1),
            moe_shared_expert_intermediate_size=hf.get("shared_expert_intermediate_size"),
            moe_shared_expert_gate=True, moe_router_pre_softmax=False,
        )  # fmt: skip
    else:  # the dense bridges map no experts (CONFIG_MAPPING rows a dense config lacks)
        for name in ("num_moe_experts", "moe_router_topk", "moe_ffn_hidden_size"):
            out.pop(name, None)
    return out


def _map_qwen35_moe(hf: _Hf) -> dict[str, Any]:
    return _map_qwen35(hf, moe=True, vl=False)


def _map_qwen35_dense(hf: _Hf) -> dict[str, Any]:
    return _map_qwen35(hf, moe=False, vl=False)


def _map_qwen35_vl_moe(hf: _Hf) -> dict[str, Any]:
    return _map_qwen35(hf, moe=True, vl=True)


def _map_qwen35_vl_dense(hf: _Hf) -> dict[str, Any]:
    return _map_qwen35(hf, moe=False, vl=True)


def _map_minimax_m2(hf: _Hf) -> dict[str, Any]:
    """minimax_m2/minimax_m2_bridge.py::MiniMaxM2Bridge.provider_bridge: RMSNorm, SwiGLU, rope,
    no linear or QKV bias, q/k layernorm (full-width: its layer spec normalizes all heads
    together), ``rotary_percent = rotary_dim / head_dim``, sigmoid router with expert bias,
    no pre-softmax. The config names no moe_intermediate_size: the experts take
    intermediate_size (CONFIG_MAPPING's ffn_hidden_size, Megatron-Core's default for
    moe_ffn_hidden_size); its MTP modules (num_mtp_modules) are not mapped by the bridge."""
    out = _common(hf)
    rotary_dim, head_dim = hf.get("rotary_dim"), hf.get("head_dim")
    if rotary_dim is not None and head_dim is not None:
        out["rotary_percent"] = hf.need_int("rotary_dim") / hf.need_int("head_dim")
    out.update(
        normalization="RMSNorm", gated_linear_unit=True, position_embedding_type="rope",
        add_bias_linear=False, add_qkv_bias=False, qk_layernorm=True,
        qk_layernorm_full_width=True, moe_router_pre_softmax=False,
        moe_router_score_function="sigmoid", moe_router_enable_expert_bias=True,
    )  # fmt: skip
    return out


def _map_gemma4(hf: _Hf) -> dict[str, Any]:
    """gemma/gemma4_bridge.py::Gemma4Bridge._build_moe_provider (text form) and
    gemma_vl/gemma4_vl_bridge.py::Gemma4VLBridge.provider_bridge (the ``text_config`` of the
    released Gemma4ForConditionalGeneration), the MoE path (``enable_moe_block``): the common
    mapping (num_experts etc. only with enable_moe_block, Gemma4Bridge.
    _should_map_hf_config_field), q/k layernorm, kv_channels = head_dim (256), full-attention
    layers with global_head_dim / num_global_key_value_heads / attention_k_eq_v, sliding
    ``window_size`` from sliding_window (1024) with ``interleaved_attn_pattern`` from
    layer_types (gemma4_bridge.py::_infer_attn_pattern), top_k_experts routed experts of
    moe_intermediate_size beside a dense MLP of intermediate_size (the provider's ungated
    shared expert), every layer MoE, vocab divisor 128. Bridge's rotary_base is a
    (sliding, full) pair that moe-lint's one-number field cannot hold: left unset (no size
    depends on it). Per-layer sliding/full also as
    ``window_attn_skip_freq`` (the list Gemma4Bridge._build_dense_provider builds from the
    same layer_types), which the planner's attention cost reads. Parameter counts treat the
    full-attention layers as sliding ones (global_head_dim is not counted)."""
    if not hf.get("enable_moe_block", False):
        raise UsageError(
            f"{hf.where}: {hf.arch} with enable_moe_block false is dense Gemma-4 "
            "(Gemma4Bridge._build_dense_provider -> Gemma4DenseProvider): its per-layer "
            "embeddings, KV sharing and double-wide MLP are not in moe-lint's parameter count; "
            "not supported"
        )
    out = _common(hf)
    types = hf.layer_list("layer_types")
    full = hf.mapping("rope_parameters").get("full_attention") or {}
    if not isinstance(full, Mapping):
        full = {}
    out.pop("rotary_base", None)  # Bridge's (sliding, full) pair: see above
    out.update(
        window_size=hf.get_int("sliding_window", 1024, low=1),
        kv_channels=hf.get_int("head_dim", 256, low=1), qk_layernorm=True,
        global_head_dim=hf.get_int("global_head_dim", 512, low=1),
        num_global_key_value_heads=hf.get_int("num_global_key_value_heads", 2, low=1),
        attention_k_eq_v=bool(hf.get("attention_k_eq_v", False)),
        global_rotary_percent=full.get("partial_rotary_factor", 0.25),
        num_moe_experts=hf.get_int("num_experts", 128, low=1),
        moe_router_topk=hf.get_int("top_k_experts", 8, low=1),
        moe_ffn_hidden_size=hf.get_int("moe_intermediate_size", 704, low=1),
        moe_shared_expert_intermediate_size=hf.get_int("intermediate_size", 2112, low=1),
        moe_shared_expert_gate=False, moe_layer_freq=1,
        final_logit_softcapping=hf.get("final_logit_softcapping", 30.0),
        make_vocab_size_divisible_by=128,
        # gemma/gemma4_provider.py::Gemma4ModelProvider defaults the bridge leaves as they are
        normalization="RMSNorm", gated_linear_unit=True, add_bias_linear=False,
        moe_router_pre_softmax=True,
    )  # fmt: skip
    if types:
        out["interleaved_attn_pattern"] = list(_infer_attn_pattern([str(t) for t in types]))
        out["window_attn_skip_freq"] = [t == "sliding_attention" for t in types]
    return out


def _map_gemma3(hf: _Hf) -> dict[str, Any]:
    """gemma/gemma3_bridge.py::Gemma3ModelBridge.provider_bridge on
    gemma/gemma3_provider.py::Gemma3ModelProvider's defaults: the common mapping (head_dim,
    attention_bias, tie_word_embeddings, whose absence is the provider's and transformers'
    True), ``window_size = sliding_window``; the provider's zero-centred RMSNorm, q/k
    layernorm, GeGLU (fast_gelu, gated) without bias and ``interleaved_attn_pattern`` (5, 1):
    five sliding layers, then one full (also as ``window_attn_skip_freq`` 6, every 6th layer
    full, which the planner's attention cost reads). Bridge's rotary_base is a (local, global)
    pair (rope_local_base_freq, rope_theta) that moe-lint's one-number field cannot hold: left
    unset, as for Gemma-4 (no size depends on it). Its ``linear`` rope_scaling factor and
    softmax_scale (query_pre_attn_scalar) change no size and are not carried. Parameter counts
    leave out the post-attention and post-MLP RMSNorms of gemma3_layer_spec (2 x hidden per
    layer: under 0.01 % of any release)."""
    out = _common(hf)
    out.pop("rotary_base", None)  # Bridge's (local, global) pair: see above
    out.update(
        normalization="RMSNorm", layernorm_zero_centered_gamma=True, qk_layernorm=True,
        gated_linear_unit=True, add_bias_linear=False,
        share_embeddings_and_output_weights=bool(hf.get("tie_word_embeddings", True)),
        window_size=hf.need_int("sliding_window"), interleaved_attn_pattern=[5, 1],
        window_attn_skip_freq=6,
    )  # fmt: skip
    return out


def _infer_attn_pattern(layer_types: list[str]) -> tuple[int, int]:
    """gemma/gemma4_bridge.py::_infer_attn_pattern: (sliding, full) layers of the first run."""
    for i, kind in enumerate(layer_types):
        if kind == "full_attention":
            run = 0
            for later in layer_types[i:]:
                if later != "full_attention":
                    break
                run += 1
            return (i, run)
    return (len(layer_types), 0)


def _map_nemotron_h(hf: _Hf) -> dict[str, Any]:
    """nemotronh/nemotron_h_bridge.py::NemotronHBridge.provider_bridge with its
    CONFIG_MAPPING rows: hybrid_override_pattern is the layer pattern (M Mamba-2, E MoE,
    * attention, - dense MLP), no positional encoding, squared-ReLU (not gated) MLPs, sigmoid
    router with expert bias, kv_channels from head_dim, moe_latent_size when given, MTP depth
    and block pattern from num_nextn_predict_layers / mtp_hybrid_override_pattern
    (NemotronHBridge._hf_mtp_config), repeated MTP layer by default."""
    out = _common(hf, CONFIG_MAPPING + NEMOTRON_H_MAPPING)
    # Bridge's mapping is first-wins: use_bias / layer_norm_epsilon are added after mlp_bias /
    # rms_norm_eps, so they fill in only when the earlier names are absent (as here).
    pattern = _block_pattern(hf, "hybrid_override_pattern", "layers_block_type")
    # The decoder's layers, as Megatron-Core counts them: the part before an MTP "/", without
    # the "|" between pipeline stages (hybrid_layer_allocation.py::get_hybrid_total_layer_count)
    layers = pattern.split("/")[0].replace("|", "")
    counts = {
        "mamba": layers.count("M"),
        "moe": layers.count("E"),
        "attention": layers.count("*"),
        "mlp": layers.count("-"),
    }
    out.update(
        hybrid_layer_pattern=pattern, layer_counts=counts, num_layers=len(layers),
        normalization="RMSNorm", gated_linear_unit=False, position_embedding_type="none",
        share_embeddings_and_output_weights=bool(hf.get("tie_word_embeddings", False)),
        qk_layernorm=False, moe_router_score_function="sigmoid",
        moe_router_enable_expert_bias=True, moe_router_pre_softmax=False,
        mamba_conv_kernel=hf.get("conv_kernel", 4),
    )  # fmt: skip
    for name in ("rotary_base", "rotary_percent"):
        out.pop(name, None)  # no RoPE in a Mamba hybrid
    kv = hf.get("head_dim") or hf.get("attention_head_dim")
    if kv is not None:
        out["kv_channels"] = kv
    if hf.has("moe_latent_size") and hf.get("moe_latent_size") is not None:
        out["moe_latent_size"] = hf.data["moe_latent_size"]
    mtp = hf.get_int("num_nextn_predict_layers", 0)
    out["mtp_num_layers"] = mtp
    if mtp:
        mtp_pattern = _block_pattern(
            hf, "mtp_hybrid_override_pattern", "mtp_layers_block_type", required=False
        )
        if not mtp_pattern:
            raise UsageError(
                f"{hf.where}: num_nextn_predict_layers > 0 needs mtp_hybrid_override_pattern"
            )
        out["mtp_hybrid_override_pattern"] = mtp_pattern
        out["mtp_use_repeated_layer"] = bool(hf.get("mtp_use_repeated_layer", True))
    if layers:
        out["attention_layer_indices"] = [i for i, c in enumerate(layers) if c == "*"]
        out["mamba_layer_indices"] = [i for i, c in enumerate(layers) if c == "M"]
        out["moe_layer_indices"] = [i for i, c in enumerate(layers) if c == "E"]
    return out


#: transformers' NemotronHConfig._list_to_pattern: ``layers_block_type`` entries -> pattern chars.
_BLOCK_CHARS = {"mamba": "M", "moe": "E", "attention": "*", "mlp": "-"}
#: Megatron-Core's hybrid pattern symbols, every release (0.14 ``ssm/mamba_hybrid_layer_
#: allocation.py``: M * -; 0.16 adds E; 0.18 ``models/hybrid/hybrid_layer_allocation.py``: G, D,
#: ``|`` between pipeline stages, ``/`` before the MTP part; 0.19 adds MLA ``+``). A symbol
#: outside all of them fails ``hybrid_layer_allocation.py::_validate_pattern`` ("'X' is not a
#: valid layer symbol") whatever the version; the MTP pattern takes no separators.
_LAYER_SYMBOLS = frozenset("MG*D+-E")
_PATTERN_SYMBOLS = {
    "hybrid_override_pattern": _LAYER_SYMBOLS | {"|", "/"},
    "mtp_hybrid_override_pattern": _LAYER_SYMBOLS,
}


def _block_pattern(hf: _Hf, name: str, list_name: str, required: bool = True) -> str:
    """``hybrid_override_pattern``, or transformers' NemotronHConfig property of that name for
    newer configs that store ``layers_block_type`` (a list of mamba/moe/attention/mlp)."""
    text = hf.get(name)
    if isinstance(text, str) and text:
        if len(text) > MAX_LAYERS:
            raise UsageError(
                f"{hf.where}: {name} has {len(text):,} layers, more than moe-lint's bound of "
                f"{MAX_LAYERS:,} (bounds.MAX_LAYERS)"
            )
        bad = sorted(set(text) - _PATTERN_SYMBOLS[name])
        if bad:
            raise UsageError(
                f"{hf.where}: {name}: {bounded_repr(bad[0])} is not a valid layer symbol "
                f"(Megatron-Core hybrid_layer_allocation.py::_validate_pattern; valid: "
                f"{' '.join(sorted(_PATTERN_SYMBOLS[name]))})"
            )
        return text
    blocks = hf.layer_list(list_name)
    if blocks:
        try:
            return "".join(_BLOCK_CHARS[str(b)] for b in blocks)
        except KeyError as exc:
            raise UsageError(
                f"{hf.where}: {list_name} has an unknown block type {bounded_repr(exc.args[0])}"
            ) from None
    if not required:
        return ""
    raise UsageError(f"{hf.where}: {hf.arch} config.json has neither {name} nor {list_name}")


#: HF ``architectures[0]`` -> (mapping function, the bridge moe-lint follows, provider).
ARCHITECTURES: dict[str, tuple[Callable[[_Hf], dict[str, Any]], str]] = {
    "DeepseekV3ForCausalLM": (_map_deepseek_v3, "DeepSeekV3Bridge -> MLAModelProvider"),
    "KimiK2ForCausalLM": (_map_deepseek_v3, "KimiK2Bridge -> MLAModelProvider"),
    "DeepseekV2ForCausalLM": (_map_deepseek_v2, "DeepSeekV2Bridge -> MLAModelProvider"),
    "Qwen3MoeForCausalLM": (_map_qwen3_moe, "Qwen3MoEBridge -> GPTModelProvider"),
    "Qwen3NextForCausalLM": (_map_qwen3_next, "Qwen3NextBridge -> GPTModelProvider"),
    "GptOssForCausalLM": (_map_gpt_oss, "GPTOSSBridge -> GPTModelProvider"),
    "Glm4MoeForCausalLM": (_map_glm45, "GLM45Bridge -> GPTModelProvider"),
    "GlmMoeDsaForCausalLM": (_map_glm5, "GLM5Bridge -> MLAModelProvider"),
    "Glm4MoeLiteForCausalLM": (_map_glm47_flash, "GLM47FlashBridge -> MLAModelProvider"),
    "MixtralForCausalLM": (_map_mixtral, ""),
    "Llama4ForConditionalGeneration": (_map_llama4, ""),
    "Llama4ForCausalLM": (_map_llama4, ""),
    "NemotronHForCausalLM": (_map_nemotron_h, "NemotronHBridge -> HybridModelProvider"),
    "OlmoeForCausalLM": (_map_olmoe, "OlMoEBridge -> GPTModelProvider"),
    "LlamaForCausalLM": (_map_llama, "LlamaBridge -> GPTModelProvider"),
    "Qwen3ForCausalLM": (_map_qwen3, "Qwen3Bridge -> GPTModelProvider"),
    "Qwen3_5MoeForCausalLM": (_map_qwen35_moe, "Qwen35MoEBridge -> GPTModelProvider"),
    "Qwen3_5ForCausalLM": (_map_qwen35_dense, "Qwen35Bridge -> GPTModelProvider"),
    "Qwen3_5MoeForConditionalGeneration": (
        _map_qwen35_vl_moe, "Qwen35VLMoEBridge -> Qwen35VLMoEModelProvider (language model)"
    ),
    "Qwen3_5ForConditionalGeneration": (
        _map_qwen35_vl_dense, "Qwen35VLBridge -> Qwen35VLModelProvider (language model)"
    ),
    "KimiK25ForConditionalGeneration": (
        _map_deepseek_v3, "KimiK25VLBridge -> KimiK25VLModelProvider (language model)"
    ),
    "MiniMaxM2ForCausalLM": (_map_minimax_m2, "MiniMaxM2Bridge -> GPTModelProvider"),
    "Qwen2ForCausalLM": (_map_qwen2, "Qwen2Bridge -> GPTModelProvider"),
    "MiMoForCausalLM": (_map_mimo, "MimoBridge -> GPTModelProvider"),
    "Qwen3VLMoeForConditionalGeneration": (
        _map_qwen3_vl_moe, "Qwen3VLMoEBridge -> Qwen3VLMoEModelProvider (language model)"
    ),
    "Qwen3VLForConditionalGeneration": (
        _map_qwen3_vl_dense, "Qwen3VLBridge -> Qwen3VLModelProvider (language model)"
    ),
    "Gemma3ForCausalLM": (_map_gemma3, "Gemma3ModelBridge -> Gemma3ModelProvider"),
    "GemmaForCausalLM": (_map_gemma, "GemmaBridge -> GemmaModelProvider"),
    "MistralForCausalLM": (_map_mistral, "MistralBridge -> MistralModelProvider"),
    "Gemma4ForCausalLM": (_map_gemma4, "Gemma4Bridge -> Gemma4ModelProvider"),
    "Gemma4ForConditionalGeneration": (
        _map_gemma4, "Gemma4VLBridge -> Gemma4VLModelProvider (language model)"
    ),
}  # fmt: skip

#: Architectures whose model is the config's ``text_config`` (a vision-language release; the
#: bridge reads the language model from it), with the top-level names the bridge reads
#: instead, and their defaults: qwen_vl/qwen35_vl_bridge.py::Qwen35VLMoEBridge.provider_bridge
#: "For VLMs, tie_word_embeddings lives on the top-level config, not text_config."
_TEXT_CONFIG: dict[str, dict[str, Any]] = {
    "Llama4ForConditionalGeneration": {},
    "Llama4ForCausalLM": {},
    "Qwen3_5MoeForConditionalGeneration": {"tie_word_embeddings": False},
    "Qwen3_5ForConditionalGeneration": {"tie_word_embeddings": False},
    "Qwen3VLMoeForConditionalGeneration": {"tie_word_embeddings": False},
    "Qwen3VLForConditionalGeneration": {"tie_word_embeddings": False},
    "KimiK25ForConditionalGeneration": {},
    "Gemma4ForConditionalGeneration": {},
}

#: Architectures moe-lint does not map, each with the reason (named in the refusal). Paths are
#: under Megatron Bridge's ``megatron/bridge/models/`` (0.6.2 wheel). "Untestable here": the
#: bridge's fields fit moe-lint's model, but no released config.json with a citable source could
#: be read offline (Hugging Face is not reachable) and Bridge's own unit tests hold no release
#: config for it, so the mapping would go unchecked; it is left for when one is added.
_UNTESTABLE = (
    "its fields would fit, but moe-lint bundles no released config.json of it to check the "
    "mapping and parameter count against, so it is not mapped unchecked"
)
_PARTIAL = "Bridge's unit tests feed it partial dicts of the fields it reads, not a release config"
_NO_TEXT_BRIDGE = "its language model's own bridge is not mapped either"
_REASONS: dict[str, tuple[str, str]] = {
    "DeepseekV4ForCausalLM": (
        "deepseek/deepseek_v4_bridge.py::DeepSeekV4Bridge.provider_bridge",
        "its experimental_attention_variant 'dsv4_hybrid' (compressed sparse attention per "
        "layer, csa_compress_ratios), grouped low-rank output projection (o_groups, "
        "o_lora_rank), hyper-connections (enable_hyper_connections, num_residual_streams) and "
        "hash-routed MoE layers (moe_n_hash_layers) are not in moe-lint's model fields or "
        "parameter count",
    ),
    "MiMoV2FlashForCausalLM": (
        "mimo_v2_flash/mimo_v2_flash_bridge.py::MiMoV2FlashBridge.provider_bridge",
        "its hybrid attention has per-layer query groups (full_attn_num_query_groups vs "
        "swa_num_query_groups), a V head dim unlike the Q/K one in GQA (v_head_dim) and a "
        "(sliding, full) rotary_base pair; moe-lint's GQA count has one num_query_groups and "
        "V width = kv_channels",
    ),
    "DeciLMForCausalLM": (
        "llama_nemotron/llama_nemotron_bridge.py::LlamaNemotronBridge.provider_bridge",
        "heterogeneous NAS blocks (block_configs: a different attention / FFN spec per layer) "
        "that one set of model fields cannot describe",
    ),
    "FalconH1ForCausalLM": (
        "falcon_h1/falconh1_bridge.py::FalconH1Bridge",
        "its layers run parallel Mamba-2 and attention branches off one input norm (with "
        "embedding / attention_in / key multipliers); moe-lint's hybrid pattern has one mixer "
        "per layer",
    ),
    "MiniMaxM3SparseForConditionalGeneration": (
        "minimax_m3/minimax_m3_bridge.py::MiniMaxM3Bridge.provider_bridge",
        "a VL release whose text model uses a lightning-indexer block-sparse attention branch "
        "(sparse_attention_config, lightning_indexer_layers) and SwiGLU-OAI experts with a +1 "
        "offset (glu_linear_offset), which moe-lint's mixers do not count",
    ),
    "Step3p5ForCausalLM": (
        "stepfun/step35_bridge.py::Step35Bridge.provider_bridge",
        "per-layer layer_types with per-layer rotary_percents and rotary_base_per_layer, a "
        "sliding_attention_setting with its own heads / query groups / kv_channels and a "
        "head-wise attention gate; "
        "moe-lint's fields hold one rotary setting and one attention shape",
    ),
    "Step3p7ForConditionalGeneration": (
        "stepfun/step37_bridge.py::Step37Bridge",
        f"a VL release of the Step3.5 text model (see Step3p5ForCausalLM); {_NO_TEXT_BRIDGE}",
    ),
    "BailingMoeV2ForCausalLM": ("bailing/bailing_moe2_bridge.py::BailingMoeV2Bridge", _UNTESTABLE),
    "Ernie4_5_MoeForCausalLM": (
        "ernie/ernie_45_bridge.py::Ernie45Bridge",
        f"{_UNTESTABLE} (Bridge's own decoder spec, _ernie45_decoder_block_spec, would also "
        "need checking against the release)",
    ),
    "ExaoneMoEForCausalLM": (
        "exaone/exaone_moe/exaone_moe_bridge.py::ExaoneMoeBridge",
        f"{_UNTESTABLE} (Bridge's unit test uses a 4-layer, 8-expert toy config)",
    ),
    "ExaoneMoeForCausalLM": (
        "exaone/exaone_moe/exaone_moe_bridge.py::ExaoneMoeBridge",
        f"{_UNTESTABLE} (Bridge's unit test uses a 4-layer, 8-expert toy config)",
    ),
    "HYV3ForCausalLM": ("hy_v3/hy_v3_bridge.py::HYV3Bridge", _UNTESTABLE),
    "SarvamMoEForCausalLM": (
        "sarvam/sarvam_moe_bridge.py::SarvamMoEBridge",
        f"{_UNTESTABLE} ({_PARTIAL})",
    ),
    "SarvamMLAForCausalLM": (
        "sarvam/sarvam_mla_bridge.py::SarvamMLABridge",
        f"{_UNTESTABLE} ({_PARTIAL})",
    ),
    "Gemma2ForCausalLM": (
        "gemma/gemma2_bridge.py::Gemma2Bridge",
        f"{_UNTESTABLE}; its attention / final logit soft-capping and query_pre_attn_scalar "
        "are not model fields moe-lint has",
    ),
    "Exaone4ForCausalLM": (
        "exaone/exaone4/exaone4_bridge.py::Exaone4Bridge.provider_bridge",
        "not mapped in this pass: its provider_bridge reads no sliding_window / layer_types "
        "(the bridge notes the 1.2B model is full attention only), so the 32B release's 3:1 "
        "sliding/global layers would import as all full attention; only Bridge's 1.2B-shaped "
        "test config (test_exaone4_bridge.py::make_exaone4_config) could test it here",
    ),
    "NemotronForCausalLM": (
        "nemotron/nemotron_bridge.py::NemotronBridge",
        f"{_UNTESTABLE} (squared-ReLU MLP, zero-centred LayerNorm would map)",
    ),
    **{
        arch: (where, f"a vision-language release; {_NO_TEXT_BRIDGE} (see {text})")
        for arch, (where, text) in {
            "Mistral3ForConditionalGeneration": (
                "ministral3/ministral3_bridge.py::Ministral3Bridge", "MistralForCausalLM: mapped, "
                "but this VL bridge's text fields were not read against it"
            ),
            "Gemma3ForConditionalGeneration": (
                "gemma_vl/gemma3_vl_bridge.py::Gemma3VLBridge", "Gemma3ForCausalLM: mapped, but "
                "this VL bridge's text fields were not read against it"
            ),
            "Qwen2_5_VLForConditionalGeneration": (
                "qwen_vl/qwen25_vl_bridge.py::Qwen25VLBridge", "Qwen2ForCausalLM: mapped, but "
                "this VL bridge's text fields were not read against it"
            ),
            "Ernie4_5_VLMoeForConditionalGeneration": (
                "ernie_vl/ernie45_vl_bridge.py::Ernie45VLBridge", "Ernie4_5_MoeForCausalLM"
            ),
            "Exaone4_5_ForConditionalGeneration": (
                "exaone/exaone45/exaone45_bridge.py::Exaone45Bridge", "Exaone4ForCausalLM"
            ),
            "Glm4vMoeForConditionalGeneration": (
                "glm_vl/glm_45v_bridge.py::GLM45VBridge", "Glm4MoeForCausalLM: mapped, but "
                "this VL bridge's text fields were not read against it"
            ),
            "NemotronH_Nano_VL_V2": (
                "nemotron_vl/nemotron_vl_bridge.py::NemotronVLBridge", "NemotronHForCausalLM: "
                "mapped, but this VL bridge's text fields were not read against it"
            ),
        }.items()
    },
    **{
        arch: (where, "an audio / omni release: moe-lint models no audio encoder or talker, "
               "and this bridge's text (thinker) fields were not read against one it maps")
        for arch, where in {
            "Qwen3OmniMoeForConditionalGeneration": (
                "qwen_omni/qwen3_omni_bridge.py::Qwen3OmniBridge"
            ),
            "Qwen2_5OmniForConditionalGeneration": (
                "qwen_omni/qwen25_omni_bridge.py::Qwen25OmniBridge"
            ),
            "Qwen2AudioForConditionalGeneration": (
                "qwen_audio/qwen2_audio_bridge.py::Qwen2AudioBridge"
            ),
            "Qwen3ASRForConditionalGeneration": "qwen3_asr/qwen3_asr_bridge.py::Qwen3ASRBridge",
            "NemotronH_Nano_Omni_Reasoning_V3": (
                "nemotron_omni/nemotron_omni_bridge.py::NemotronOmniBridge"
            ),
        }.items()
    },
}  # fmt: skip
UNMAPPED: dict[str, str] = {
    "DeepseekV32ForCausalLM": (
        "no Megatron Bridge bridge imports DeepSeek-V3.2 (0.6.2, nor main at 067f987df03b); "
        "its DSA bridges are GLM5Bridge (GlmMoeDsaForCausalLM) and DeepSeekV4Bridge"
    ),
    **{
        arch: f"Megatron Bridge imports it ({where}) but moe-lint does not map it: {why}"
        for arch, (where, why) in _REASONS.items()
    },
}


def supported() -> str:
    return ", ".join(sorted(ARCHITECTURES))


def model_entry(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A models.yaml-style entry (model fields + hf_architecture, hf_model_type, bridge) for an
    HF config dict; raises UsageError (one line) for a config moe-lint cannot map."""
    if not isinstance(data, Mapping):
        raise UsageError(f"{where}: not an HF config.json (expected a JSON object)")
    archs = data.get("architectures")
    if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
        raise UsageError(
            f'{where}: not an HF model config.json (no "architectures" list); '
            f"supported architectures: {supported()}"
        )
    arch = archs[0]
    if arch not in ARCHITECTURES:
        why = f": {UNMAPPED[arch]}" if arch in UNMAPPED else ""
        raise UsageError(
            f"{where}: HF architecture {bounded_repr(arch)} is not supported{why} "
            f"(supported: {supported()}); pass --model NAME for a preset"
        )
    body: Mapping[str, Any] = data
    if arch in _TEXT_CONFIG and isinstance(data.get("text_config"), Mapping):
        top = {k: data.get(k, d) for k, d in _TEXT_CONFIG[arch].items()}
        body = {**data["text_config"], **top, "architectures": archs}
    mapper, bridge = ARCHITECTURES[arch]
    try:
        fields = mapper(_Hf(body, where))
    except (TypeError, ValueError, AttributeError, ZeroDivisionError) as exc:
        raise UsageError(f"{where}: cannot read {arch} config.json: {exc}") from None
    # On/off fields are read for truth first, as Megatron-Core tests them; then the rest is
    # checked as a YAML model section is (and the untyped dims the models compute with), so
    # no bad value reaches a parameter count, an estimate or a plan.
    for name in _ARCH_FLAGS:
        if fields.get(name) is not None:
            fields[name] = bool(fields[name])
    fields = _checked(fields, where, body)
    _check_arch(fields, where, body)
    fields = {k: _whole(v) if k == "rotary_base" else v for k, v in fields.items()}
    for key, value in _MODEL_DEFAULTS.items():
        fields.setdefault(key, value)
    if fields.get("num_moe_experts") and not fields.get("hybrid_layer_pattern"):
        for key, value in _MOE_DEFAULTS.items():
            fields.setdefault(key, value)
    if fields.get("position_embedding_type") == "none":
        fields.pop("rotary_percent", None)
    _check_dims(fields, where, arch)
    entry: dict[str, Any] = {
        "display_name": f"{arch} from {where}",
        "hf_architecture": arch,
        "hf_model_type": data.get("model_type"),
        "bridge": bridge or None,
    }
    entry.update({k: v for k, v in fields.items() if v is not None})
    return entry


def _check_dims(fields: Mapping[str, Any], where: str, arch: str) -> None:
    for name in ("num_layers", "hidden_size", "num_attention_heads", "vocab_size"):
        value = fields.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UsageError(
                f"{where}: {arch} config.json gives no positive integer for model.{name} "
                f"(got {bounded_repr(value)})"
            )
    experts = fields.get("num_moe_experts")
    if experts is not None and (not isinstance(experts, int) or isinstance(experts, bool)):
        raise UsageError(f"{where}: expert count must be an integer, got {bounded_repr(experts)}")


def find_config(path: Path) -> Path | None:
    """``path`` itself when it is a file, ``path/config.json`` for a model directory."""
    if path.is_file():
        return path
    if path.is_dir() and (path / "config.json").is_file():
        return path / "config.json"
    return None


def _stamp(path: str) -> tuple[int, int]:
    """(mtime_ns, size): the caches below re-read a config.json that changed on disk (a
    long-lived process linting again after an edit)."""
    try:
        info = Path(path).stat()
    except OSError:
        return (0, -1)
    return (info.st_mtime_ns, info.st_size)


def load(path: str) -> dict[str, Any]:
    """The models.yaml-style entry for the HF config.json at ``path`` (absolute), cached."""
    return dict(_load(path, _stamp(path)))


@cache
def _load(path: str, stamp: tuple[int, int]) -> dict[str, Any]:
    return model_entry(read_json(path), path)


class OverBound(UsageError):
    """A config.json past one of bounds.py's bounds: refused wherever it is found (beside the
    linted file too, where a file that is merely not an HF config is left alone)."""


class _NumberTooLong(Exception):
    pass


def _int_literal(text: str) -> int:
    problem = number_too_long(text)
    if problem is not None:
        raise _NumberTooLong(problem)
    return int(text)


def _float_literal(text: str) -> float:
    problem = number_too_long(text)
    if problem is not None:
        raise _NumberTooLong(problem)
    return float(text)


def read_json(path: str) -> Any:
    """The JSON value in the file at ``path``, read within bounds.py's bounds for JSON: at
    most MAX_JSON_BYTES, number literals of at most MAX_NUMBER_CHARS (checked before they are
    converted), MAX_DEPTH levels of nesting and MAX_NODES values. ``Infinity`` and ``NaN``
    read as Python's json (and transformers) read them; the model checks refuse them where a
    number is needed. Raises UsageError (OverBound past a bound), one line."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_JSON_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read HF config.json: {exc}") from None
    if len(raw) > MAX_JSON_BYTES:
        raise OverBound(
            f"{path}: HF config.json is too large (more than {MAX_JSON_BYTES:,} bytes; "
            "bounds.MAX_JSON_BYTES)"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: cannot read HF config.json: {exc}") from None
    try:
        data = json.loads(text, parse_int=_int_literal, parse_float=_float_literal)
    except _NumberTooLong as exc:
        raise OverBound(f"{path}: {exc}") from None
    except RecursionError:
        raise OverBound(_too_deep(path)) from None
    except ValueError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc})") from None
    _check_shape(data, path)
    return data


def _too_deep(path: str, key: str | None = None) -> str:
    at = f" (under {bounded_repr(key)})" if key is not None else ""
    return f"{path}: nesting deeper than {MAX_DEPTH} levels{at} (bounds.MAX_DEPTH)"


def _check_shape(data: Any, path: str) -> None:
    """MAX_DEPTH and MAX_NODES over the parsed value, without recursion."""
    stack: list[tuple[Any, int, Any]] = [(data, 1, None)]
    nodes = 0
    while stack:
        value, depth, top = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise OverBound(f"{path}: more than {MAX_NODES:,} JSON values (bounds.MAX_NODES)")
        if isinstance(value, dict):
            items: Any = value.items()
        elif isinstance(value, list):
            items = enumerate(value)
        else:
            continue
        if depth > MAX_DEPTH:
            raise OverBound(_too_deep(path, top))
        for key, child in items:
            stack.append((child, depth + 1, key if top is None else top))


def looks_like_hf(path: str) -> bool:
    """True for a JSON object naming ``architectures`` or ``model_type`` (an HF model config);
    a beside-the-file config.json that is not one is left alone."""
    return _looks_like_hf(path, _stamp(path))


@cache
def _looks_like_hf(path: str, stamp: tuple[int, int]) -> bool:
    try:
        data = read_json(path)
    except OverBound:
        raise  # not readable within moe-lint's bounds: refused, not taken for another tool's
    except UsageError:
        return False
    return isinstance(data, dict) and ("architectures" in data or "model_type" in data)


def is_hf_key(name: str | None) -> bool:
    """Settings.model values naming an HF config are absolute paths to a JSON file."""
    return bool(name) and Path(str(name)).is_absolute()
