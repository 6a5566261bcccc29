"""Bridge's mixed-precision recipes: one table, read by ``normalize`` (the precision fields a
recipe name sets on the model) and by the runtime checks (every MixedPrecisionConfig field).

Restated from Megatron Bridge 0.6.2 ``megatron/bridge/training/mixed_precision.py``: the
``MixedPrecisionConfig`` field defaults and each ``@register``-ed recipe function, as the
fields it changes from them (``get_mixed_precision_config`` accepts hyphens for underscores).
"""

from __future__ import annotations

from typing import Any

#: MixedPrecisionConfig field defaults.
MP_DEFAULTS: dict[str, Any] = {
    "fp32": False, "fp16": False, "bf16": False, "params_dtype": None, "pipeline_dtype": None,
    "autocast_dtype": None, "autocast_enabled": False, "grad_reduce_in_fp32": True, "fp8": None,
    "fp8_recipe": "tensorwise", "first_last_layers_bf16": False, "fp8_margin": 0,
    "fp8_amax_history_len": 1, "fp8_amax_compute_algo": "most_recent", "fp8_wgrad": True,
    "fp8_dot_product_attention": False, "fp8_multi_head_attention": False, "fp8_param": False,
    "fp8_param_gather": False, "fp4": None, "fp4_recipe": "nvfp4", "fp4_param": False,
    "fp4_param_gather": False, "loss_scale": None, "initial_loss_scale": 4294967296,
    "min_loss_scale": 1.0, "loss_scale_window": 1000, "hysteresis": 2,
    "num_layers_at_start_in_bf16": 0, "num_layers_at_end_in_bf16": 0,
    "reuse_grad_buf_for_mxfp8_param_ag": False,
}  # fmt: skip

_BF16 = {"bf16": True, "params_dtype": "bfloat16", "pipeline_dtype": "bfloat16"}
_FP16 = {
    "fp16": True, "params_dtype": "float16", "pipeline_dtype": "float16",
    "grad_reduce_in_fp32": False,
}  # fmt: skip
_DELAYED = {
    "fp8": "hybrid", "fp8_recipe": "delayed", "fp8_amax_history_len": 1024,
    "fp8_amax_compute_algo": "max", "fp8_param_gather": True,
}  # fmt: skip
_MXFP8 = {
    "fp8": "e4m3", "fp8_recipe": "mxfp8", "fp8_param_gather": True,
    "reuse_grad_buf_for_mxfp8_param_ag": True,
}  # fmt: skip


def _current(layers: int) -> dict[str, Any]:
    return {
        "fp8": "hybrid", "fp8_recipe": "tensorwise", "first_last_layers_bf16": True,
        "num_layers_at_start_in_bf16": layers, "num_layers_at_end_in_bf16": layers,
        "fp8_param_gather": True,
    }  # fmt: skip


_SUBCHANNEL = {"fp8": "hybrid", "fp8_recipe": "blockwise", "fp8_param_gather": False}
_NVFP4 = {"fp4": "e2m1", "fp4_recipe": "nvfp4", "fp8_param_gather": False, "fp4_param_gather": True}

#: Registered recipe names -> the fields they change from the defaults.
MP_RECIPES: dict[str, dict[str, Any]] = {
    "bf16_mixed": _BF16,
    "fp16_mixed": _FP16,
    "bf16_with_fp8_delayed_scaling_mixed": {**_BF16, **_DELAYED},
    "fp16_with_fp8_delayed_scaling_mixed": {**_FP16, **_DELAYED},
    "bf16_with_mxfp8_mixed": {**_BF16, **_MXFP8},
    "fp16_with_mxfp8_mixed": {**_FP16, **_MXFP8},
    "bf16_with_fp8_current_scaling_mixed": {**_BF16, **_current(1)},
    "nemotron_h_bf16_with_fp8_current_scaling_mixed": {**_BF16, **_current(2)},
    # Named "current scaling" but Bridge gives it the blockwise recipe.
    "nanov2_bf16_with_fp8_current_scaling_mixed": {
        **_BF16,
        **_current(2),
        "fp8_recipe": "blockwise",
    },
    "fp16_with_fp8_current_scaling_mixed": {**_FP16, **_current(1)},
    "bf16_with_fp8_subchannel_scaling_mixed": {**_BF16, **_SUBCHANNEL},
    "fp16_with_fp8_subchannel_scaling_mixed": {**_FP16, **_SUBCHANNEL},
    "bf16_with_nvfp4_mixed": {**_BF16, **_NVFP4},
    "nemotron_3_super_bf16_with_nvfp4_mixed": {
        **_BF16,
        **_NVFP4,
        "first_last_layers_bf16": True,
        "num_layers_at_end_in_bf16": 14,
    },
    # Registered in Bridge 0.6.2 (not in 0.6.0); accepted for every version, so an older
    # Bridge's ValueError for it is missed rather than a newer one's recipe called unknown.
    "nemotron_3_ultra_bf16_with_nvfp4_mixed": {
        **_BF16,
        **_NVFP4,
        "first_last_layers_bf16": True,
        "num_layers_at_start_in_bf16": 0,
        "num_layers_at_end_in_bf16": 16,
    },
}

#: The recipe Bridge's _pretrain_common / _sft_common set when a recipe picks none.
DEFAULT_RECIPE = "bf16_mixed"


#: The model fields a mixed-precision recipe overwrites (MixedPrecisionConfig.setup).
PRECISION_FIELDS = ("bf16", "fp16", "fp8", "fp8_recipe", "fp4")


def model_precision(name: str) -> dict[str, Any] | None:
    """``model.<field>`` -> value for the PRECISION_FIELDS a named recipe sets (None: unknown
    name): what ``normalize`` writes over a file's model section for ``mixed_precision: NAME``."""
    values = recipe_values(name)
    return None if values is None else {f"model.{k}": values[k] for k in PRECISION_FIELDS}


def recipe_values(name: str) -> dict[str, Any] | None:
    """Every MixedPrecisionConfig field as a registered recipe leaves it (None: unknown name)."""
    changes = MP_RECIPES.get(name.replace("-", "_"))
    if changes is None:
        return None
    values = {**MP_DEFAULTS, **changes}
    values["fp8_param"] = values["fp8_param_gather"]
    values["fp4_param"] = values["fp4_param_gather"]
    return values
