"""Python checks for the optimizer rule family (OPT codes, rules/optimizer.yaml).

The optimizer's precision fields come from Bridge's mixed-precision step, so these read them
through :func:`moe_lint.engine.checks.precision.effective`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.config.fields import UNKNOWN
from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks.precision import (
    dtype_name,
    effective,
    precision_view,
    raw_value,
)
from moe_lint.engine.checks.reads import Reads, mlm_args, mlm_flag_at
from moe_lint.engine.checks.reads import violation as _violation
from moe_lint.engine.evaluate import Violation

if TYPE_CHECKING:
    from moe_lint.config.normalize import Config
    from moe_lint.engine.evaluate import Context


_STEP_OVERLAP = "overlap_param_gather_with_optimizer_step"


def _comm_overlap_present(cfg: Config) -> bool | None:
    """Whether the run has a CommOverlapConfig: known from a full dump or Megatron-LM input, or
    a ``comm_overlap`` key the file writes; None where an override file leaves it to the recipe
    (NVIDIA's recipes differ: many keep ``comm_overlap=None``, some set one)."""
    if cfg.form == "megatron-lm":
        return False
    block = cfg.raw_get("comm_overlap", UNKNOWN)
    if block is UNKNOWN:
        return False if cfg.form == "full-dump" else None
    return isinstance(block, dict)


def step_overlap(cfg: Config) -> tuple[Any, str]:
    """optimizer.overlap_param_gather_with_optimizer_step when OptimizerConfig.finalize() checks
    it, and where that value comes from (``optimizer`` or ``comm_overlap``); UNKNOWN if a static
    tool cannot tell.

    Bridge's runtime_config_update runs ``CommOverlapConfig.setup`` before
    ``ConfigContainer.validate``; when the DDP config uses the distributed optimizer (its own
    flag, not yet synced with the optimizer's) setup overwrites the optimizer's value with
    ``comm_overlap.overlap_param_gather_with_optimizer_step``, or with False when that is unset
    (megatron/bridge/training/comm_overlap.py::CommOverlapConfig._get_optimizer_overlap_cfgs).
    """
    own = cfg.get(f"optimizer.{_STEP_OVERLAP}")
    present = _comm_overlap_present(cfg)
    ddp = cfg.raw_get("ddp.use_distributed_optimizer", UNKNOWN)
    if present is False or ddp is False:
        return own, "optimizer"
    written = cfg.raw_get(f"comm_overlap.{_STEP_OVERLAP}", None) if present else None
    reset = written is True
    if present and ddp is True:
        return reset, "comm_overlap"
    # The CommOverlapConfig or the DDP flag is left to the recipe: only a value both cases
    # agree on is known.
    return (own, "optimizer") if own == reset else (UNKNOWN, "")


def optimizer_step_overlap_buffer_reuse(ctx: Context) -> Iterator[Violation]:
    """overlap_param_gather_with_optimizer_step together with the MXFP8 gradient-buffer reuse."""
    cfg = ctx.config
    value, origin = step_overlap(cfg)
    if value is not True:
        return
    view = precision_view(cfg)
    reuse = effective(cfg, "optimizer.reuse_grad_buf_for_mxfp8_param_ag", view)
    if reuse is True:
        source = view.source if view.kind in ("recipe", "block") else "optimizer"
        where = (
            "set under comm_overlap, which CommOverlapConfig.setup copies into the optimizer"
            if origin == "comm_overlap"
            else "in the optimizer config"
        )
        yield _violation(f"{origin}.{_STEP_OVERLAP}", source=source, where=where)


# --------------------------------------------------------------------------------------------
# Optimizer state dtypes (OptimizerConfig.__post_init__)
# --------------------------------------------------------------------------------------------

_STATE_DTYPES = ("main_grads_dtype", "main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype")


def optimizer_state_dtypes(ctx: Context) -> Iterator[Violation]:
    """Non-fp32 optimizer state dtypes without the precision-aware optimizer."""
    cfg = ctx.config
    aware_known = cfg.stated("optimizer.use_precision_aware_optimizer")
    if not aware_known or cfg.get("optimizer.use_precision_aware_optimizer"):
        return
    for name in _STATE_DTYPES:
        written = raw_value(cfg, f"optimizer.{name}")
        if written is UNKNOWN or written is None:
            continue
        dtype = dtype_name(written)
        if dtype is None or dtype == "float32":
            continue
        yield _violation(f"optimizer.{name}", field=name, dtype=dtype)


# --------------------------------------------------------------------------------------------
# Rules converted from long expressions: each reads what its expression read, in the same order
# (an unknown field or fact raises NotDerivable: no finding), and yields the template values.
# The ``r.value(field, default)`` defaults are the expressions' own, kept literally.
# --------------------------------------------------------------------------------------------


def _dist_known(r: Reads) -> Any:
    return (
        r.explicit("optimizer.use_distributed_optimizer")
        or r.explicit("ddp.use_distributed_optimizer")
        or r.fact("full_dump")
    )


def _own_distributed_optimizer(r: Reads) -> Any:
    """optimizer.use_distributed_optimizer as OptimizerConfig.finalize() sees it under Bridge:
    the optimizer section's own flag (ConfigContainer.validate copies ddp's flag into it, and
    Megatron-FSDP sets it, only after finalize() has run), UNKNOWN where a recipe decides."""
    cfg = r.ctx.config
    written = cfg.raw_get("optimizer.use_distributed_optimizer", UNKNOWN)
    if written is not UNKNOWN:
        return written
    return cfg.get("optimizer.use_distributed_optimizer") if cfg.form == "full-dump" else UNKNOWN


def precision_aware_optimizer_prerequisites(ctx: Context) -> Iterator[Violation]:
    """OPT002: use_precision_aware_optimizer without adam or the distributed optimizer.

    Megatron-Core's OptimizerConfig.__post_init__ asserts both. Under Bridge it runs as
    OptimizerConfig.finalize() early in ConfigContainer.validate, before Megatron-FSDP's
    settings or the ddp/optimizer sync change anything, so neither exempts a config. Megatron-LM's
    validate_args turns the distributed optimizer on for Megatron-FSDP before the config is built.
    """
    r = Reads(ctx)
    if not r.field("optimizer.use_precision_aware_optimizer"):
        return
    name = r.to_str(r.value("optimizer.optimizer"))
    if name != "adam":
        yield Violation("", {"reason": r.cat("the optimizer is ", name, ", not adam")})
        return
    if ctx.config.form == "megatron-lm":
        fsdp = r.value("dist.use_megatron_fsdp") or r.value("ddp.use_megatron_fsdp")
        if _dist_known(r) and not r.field("optimizer.use_distributed_optimizer") and not fsdp:
            yield Violation("", {"reason": "the distributed optimizer is off"})
        return
    if _own_distributed_optimizer(r) is False:
        yield Violation(
            "",
            {
                "reason": "optimizer.use_distributed_optimizer is false when OptimizerConfig "
                "checks it (Bridge copies ddp's flag, and Megatron-FSDP turns it on, only "
                "afterwards)"
            },
        )


def optimizer_offload_prerequisites(ctx: Context) -> Iterator[Violation]:
    """OPT004: optimizer_cpu_offload without the precision-aware or distributed optimizer."""
    r = Reads(ctx)
    aware_known = r.explicit("optimizer.use_precision_aware_optimizer") or r.fact("full_dump")
    dist_known = _dist_known(r)
    if aware_known and not r.field("optimizer.use_precision_aware_optimizer"):
        reason = (
            "use_precision_aware_optimizer is false (the hybrid CPU/GPU optimizer reuses its code "
            "path, and Megatron-LM refuses offload without it)"
        )
    elif dist_known and not r.field("optimizer.use_distributed_optimizer"):
        reason = (
            "the distributed optimizer is off (Bridge documents optimizer offload for the "
            "distributed optimizer only)"
        )
    else:
        reason = ""
    if r.field("optimizer.optimizer_cpu_offload") and reason != "":
        yield Violation("", {"reason": reason})


def _checkpoint_io(r: Reads) -> tuple[str, bool, bool]:
    """(ckpt_format, saving or loading, Megatron-FSDP on) as OPT005/OPT006 read them."""
    fmt = r.to_str(r.value("checkpoint.ckpt_format"))
    saving = r.value("checkpoint.save") is not None or r.value("checkpoint.load") is not None
    mfsdp = r.value("ddp.use_megatron_fsdp") is True or r.value("dist.use_megatron_fsdp") is True
    return fmt, saving, mfsdp


def checkpoint_format_rejected(ctx: Context) -> Iterator[Violation]:
    """OPT005: a ckpt_format Bridge rejects with async_save, without FSDP or without Gloo."""
    r = Reads(ctx)
    fmt, saving, mfsdp = _checkpoint_io(r)
    if r.value("checkpoint.async_save") is True and fmt not in (
        "torch_dist",
        "fsdp_dtensor",
    ):
        reason = r.cat("async_save needs ckpt_format torch_dist or fsdp_dtensor, not ", fmt)
    elif (
        fmt == "fsdp_dtensor"
        and saving
        and (not mfsdp or r.value("dist.use_torch_fsdp2", False) is True)
    ):
        reason = "ckpt_format fsdp_dtensor works only with Megatron-FSDP"
    elif (
        r.value("dist.use_gloo_process_groups") is False
        and r.field("optimizer.use_distributed_optimizer")
        and fmt not in ("torch_dist", "fsdp_dtensor")
    ):
        reason = r.cat(
            "without Gloo process groups the distributed optimizer needs ckpt_format torch_dist "
            "or fsdp_dtensor, not ",
            fmt,
        )
    else:
        return
    yield Violation("", {"reason": reason})


def megatron_fsdp_settings_rejected(ctx: Context) -> Iterator[Violation]:
    """OPT006: Megatron-FSDP with torch FSDP2, the wrong ckpt_format or manual registration."""
    r = Reads(ctx)
    fmt, saving, mfsdp = _checkpoint_io(r)
    if r.value("dist.use_megatron_fsdp") is True and r.value("dist.use_torch_fsdp2", False) is True:
        reason = "dist.use_megatron_fsdp and dist.use_torch_fsdp2 are both true"
    elif saving and fmt != "fsdp_dtensor":
        reason = r.cat("it needs ckpt_format fsdp_dtensor when saving or loading, not ", fmt)
    elif r.value("ddp.fsdp_manual_registration") is True and not r.value("ddp.nccl_ub"):
        reason = "ddp.fsdp_manual_registration needs ddp.nccl_ub"
    else:
        reason = ""
    if mfsdp and reason != "":
        yield Violation("", {"reason": reason})


def megatron_fsdp_ckpt_format_mlm(ctx: Context) -> Iterator[Violation]:
    """OPT008: ``--use-megatron-fsdp`` on a Megatron-LM command line without
    ``--ckpt-format fsdp_dtensor``: megatron/training/arguments.py::validate_args
    (core_v0.18.0 and newer) asserts it whether or not a checkpoint is saved or loaded."""
    args = mlm_args(ctx)
    if args is None or args["use_megatron_fsdp"] is not True:
        return
    if args.incomplete and not args.has("ckpt_format"):
        return
    fmt = args["ckpt_format"]
    if not isinstance(fmt, str) or fmt == "fsdp_dtensor":
        return
    given = args.has("ckpt_format")
    shown = f"{fmt}" if given else f"{fmt} (the default)"
    yield Violation(
        "checkpoint.ckpt_format" if given else "ddp.use_megatron_fsdp",
        {"format": shown},
        at=mlm_flag_at(args, "ckpt_format" if given else "use_megatron_fsdp"),
    )


CHECKS: dict[str, PythonCheck] = {
    "megatron-fsdp-ckpt-format-mlm": PythonCheck(
        megatron_fsdp_ckpt_format_mlm, frozenset({"format"})
    ),
    "optimizer-state-dtypes": PythonCheck(optimizer_state_dtypes, frozenset({"field", "dtype"})),
    "optimizer-step-overlap-buffer-reuse": PythonCheck(
        optimizer_step_overlap_buffer_reuse, frozenset({"source", "where"})
    ),
    "precision-aware-optimizer-prerequisites": PythonCheck(
        precision_aware_optimizer_prerequisites, frozenset({"reason"}), frozenset({"full_dump"})
    ),
    "optimizer-offload-prerequisites": PythonCheck(
        optimizer_offload_prerequisites, frozenset({"reason"}), frozenset({"full_dump"})
    ),
    "checkpoint-format-rejected": PythonCheck(checkpoint_format_rejected, frozenset({"reason"})),
    "megatron-fsdp-settings-rejected": PythonCheck(
        megatron_fsdp_settings_rejected, frozenset({"reason"})
    ),
}
