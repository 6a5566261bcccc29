"""Python checks for the misc rule family (rules/misc.yaml, MISC codes).

MISC002, MISC004 and MISC006 chained three or more if/else in one expression; each reads the
config through :mod:`moe_lint.engine.checks.reads` exactly as its expression did.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks.reads import explicit, fact, field, value
from moe_lint.engine.evaluate import Violation

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context

#: The offload_modules names Megatron-Core's fine-grained activation offloading knows.
_OFFLOAD_MODULES = (
    "core_attn", "attn_proj", "expert_fc1", "fused_group_mlp", "moe_act", "attn_norm",
    "mlp_norm", "qkv_linear",
)  # fmt: skip


def _offloading_reason(ctx: Context, offl: Any) -> str:
    bad = [m for m in offl if m not in _OFFLOAD_MODULES]
    impl = str(value(ctx, "model.transformer_impl"))
    if impl != "transformer_engine":
        return f"transformer_impl is {impl}; Bridge supports it only with transformer_engine"
    if value(ctx, "model.cpu_offloading") is True:
        return "cpu_offloading is also on"
    if len(offl) == 0:
        return "offload_modules is empty"
    if len(bad) > 0:
        shown = ", ".join(str(m) for m in bad)
        return f"unknown offload_modules {shown} (known: {', '.join(_OFFLOAD_MODULES)})"
    if "attn_proj" in offl and "core_attn" not in offl:
        return "attn_proj is offloaded without core_attn (its input is core_attn output)"
    if "fused_group_mlp" in offl and not value(ctx, "model.use_transformer_engine_op_fuser", False):
        return "fused_group_mlp needs use_transformer_engine_op_fuser"
    if "fused_group_mlp" in offl and ("expert_fc1" in offl or "moe_act" in offl):
        return "fused_group_mlp already offloads the whole expert MLP; drop expert_fc1/moe_act"
    return ""


def fine_grained_offloading_rejected(ctx: Context) -> Iterator[Violation]:
    """MISC002: fine-grained activation offloading settings Bridge / Megatron-Core reject."""
    offl = value(ctx, "model.offload_modules") or []
    reason = _offloading_reason(ctx, offl)
    if value(ctx, "model.fine_grained_activation_offloading") is True and reason != "":
        yield Violation(path="model.offload_modules", params={"reason": reason})


def no_rope_freq_mismatch(ctx: Context) -> Iterator[Violation]:
    """MISC004: no_rope_freq must divide num_layers, or be a list of num_layers entries."""
    nrf = value(ctx, "model.no_rope_freq")
    is_list = str(nrf)[:1] == "["
    if nrf is None:
        return
    layers = field(ctx, "model.num_layers")
    if is_list and len(nrf) != layers:
        reason = f"its length {len(nrf)} differs from num_layers {layers}"
    elif not is_list and layers % int(str(nrf)) != 0:
        reason = f"num_layers {layers} is not divisible by it"
    else:
        return
    yield Violation(path="model.no_rope_freq", params={"nrf": nrf, "reason": reason})


def _packing_reason(ctx: Context) -> str:
    offline = value(ctx, "dataset.enable_offline_packing", False) is True
    inbatch = value(ctx, "dataset.enable_in_batch_packing", False) is True
    specs = value(ctx, "dataset.offline_packing_specs")
    m = value(ctx, "train.micro_batch_size")
    g = value(ctx, "train.global_batch_size")
    size = value(ctx, "dataset.offline_packing_specs.packed_sequence_size")
    kw = value(ctx, "dataset.dataset_kwargs") or {}
    padded = value(ctx, "dataset.pad_to_max_length", False) is True or (
        "pad_to_max_length" in kw and bool(kw["pad_to_max_length"])
    )
    energon = value(ctx, "dataset.packing_buffer_size") is not None
    if offline and inbatch:
        return "enable_offline_packing and enable_in_batch_packing are both true"
    if offline and specs is None:
        return "enable_offline_packing needs offline_packing_specs"
    if specs is not None and not offline:
        return "offline_packing_specs is set but enable_offline_packing is not true"
    if offline and isinstance(size, int) and size <= 0:
        return "offline_packing_specs.packed_sequence_size must be greater than 0"
    if (
        specs is not None
        and value(ctx, "dataset.offline_packing_specs.pad_cu_seqlens") is True
        and not padded
    ):
        return "offline_packing_specs.pad_cu_seqlens needs pad_to_max_length"
    if offline and m is not None and m > 1:
        return (
            f"offline packing needs micro_batch_size 1, got {m}; the equivalent is MBS 1, "
            f"GBS {(g or 0) // m}, packed_sequence_size "
            f"{size * m if isinstance(size, int) else f'{m} x the packed size'}"
        )
    if inbatch and m == 1:
        return "in-batch packing needs micro_batch_size greater than 1"
    if energon and m is not None and m != 1:
        return "Energon packing needs micro_batch_size 1"
    if energon and (
        (
            explicit(ctx, "model.calculate_per_token_loss")
            and not field(ctx, "model.calculate_per_token_loss")
        )
        or (explicit(ctx, "ddp.average_in_collective") and field(ctx, "ddp.average_in_collective"))
    ):
        return (
            "Energon packing needs calculate_per_token_loss true and ddp.average_in_collective "
            "false"
        )
    if energon and (field(ctx, "model.cuda_graph_impl") != "none" or fact(ctx, "pp") > 1):
        return "Energon packing does not support CUDA graphs or pipeline parallelism"
    return ""


def packing_settings_rejected(ctx: Context) -> Iterator[Violation]:
    """MISC006: sequence-packing settings Bridge rejects at startup."""
    reason = _packing_reason(ctx)
    if reason != "":
        yield Violation(path="dataset.enable_offline_packing", params={"reason": reason})


CHECKS: dict[str, PythonCheck] = {
    "fine-grained-offloading-rejected": PythonCheck(
        fine_grained_offloading_rejected, frozenset({"reason"})
    ),
    "no-rope-freq-mismatch": PythonCheck(no_rope_freq_mismatch, frozenset({"nrf", "reason"})),
    "packing-settings-rejected": PythonCheck(
        packing_settings_rejected, frozenset({"reason"}), frozenset({"pp"})
    ),
}
