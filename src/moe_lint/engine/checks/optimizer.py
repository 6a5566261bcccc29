"""Python checks for the optimizer rule family (OPT codes, rules/optimizer.yaml).

The optimizer's precision fields come from Bridge's mixed-precision step, so these read them
through :func:`moe_lint.engine.checks.precision.effective`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks.precision import (
    UNKNOWN,
    dtype_name,
    effective,
    precision_view,
    raw_value,
)
from moe_lint.engine.evaluate import Violation

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context


def _violation(path: str, **params: Any) -> Violation:
    return Violation(path=path, params=params)


def optimizer_step_overlap_buffer_reuse(ctx: Context) -> Iterator[Violation]:
    """overlap_param_gather_with_optimizer_step together with the MXFP8 gradient-buffer reuse."""
    cfg = ctx.config
    if cfg.get("optimizer.overlap_param_gather_with_optimizer_step") is not True:
        return
    view = precision_view(cfg)
    reuse = effective(cfg, "optimizer.reuse_grad_buf_for_mxfp8_param_ag", view)
    if reuse is True:
        source = view.source if view.kind in ("recipe", "block") else "optimizer"
        yield _violation("optimizer.overlap_param_gather_with_optimizer_step", source=source)


# --------------------------------------------------------------------------------------------
# Optimizer state dtypes (OptimizerConfig.__post_init__)
# --------------------------------------------------------------------------------------------

_STATE_DTYPES = ("main_grads_dtype", "main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype")


def optimizer_state_dtypes(ctx: Context) -> Iterator[Violation]:
    """Non-fp32 optimizer state dtypes without the precision-aware optimizer."""
    cfg = ctx.config
    aware_known = cfg.form == "full-dump" or cfg.explicit("optimizer.use_precision_aware_optimizer")
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


CHECKS: dict[str, PythonCheck] = {
    "optimizer-state-dtypes": PythonCheck(optimizer_state_dtypes, frozenset({"field", "dtype"})),
    "optimizer-step-overlap-buffer-reuse": PythonCheck(
        optimizer_step_overlap_buffer_reuse, frozenset({"source"})
    ),
}
