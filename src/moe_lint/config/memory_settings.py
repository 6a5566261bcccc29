"""The memory model's knobs (``[tool.moe-lint.memory]``, ``--memory``): parsed and checked once.

Settings are config: pyproject, the command line and the memory model all read the same
parsed :class:`MemorySettings`, and ``config.settings`` validates a pyproject table with the
same function the memory facts use, so a bad value is one usage error wherever it is written.
"""

from __future__ import annotations

import math
from typing import Any

from moe_lint.bounds import bounded_repr
from moe_lint.errors import UsageError
from moe_lint.records import field_types, record


@record(frozen=True)
class MemorySettings:
    """Knobs for what a static model cannot know; defaults and reasons in docs/memory-model.md.

    routing_imbalance: ρ, tokens received by the busiest EP rank over the balanced share. 1.3 is
        docs/domain/02 §6.5's suggestion for trained routers; cold starts are worse. A capacity
        factor caps it (padding to capacity pins it), and EP=1 makes it 1.
    fragmentation: reserved-minus-allocated margin as a fraction of the allocated peak
        without expandable segments (no published pair: not fitted).
    fragmentation_expandable: the same with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,
        for a GPU without published reserved/allocated pairs (H100 and GB200 take the fit of
        analysis/memory/allocator.py).
    cuda_context_gib: CUDA context, kernel images and library handles (outside the allocator).
    nccl_gib: NCCL communicator buffers for the TP/CP/DP/EP/PP groups (outside the allocator).
    deepep_buffer_gib: DeepEP normal-mode NVL/RDMA buffers (flex dispatcher, DeepEP backend).
    cuda_graph_static_copies: copies of each captured module's static inputs and outputs.
    backward_workspace_layers: layers' worth of activations alive as gradients and recomputed
        tensors while one layer runs backward.
    flash_attention: fused/flash attention (no s² score tensors) — TE picks it for bf16.
    headroom_gib: memory to keep free on top of everything (other processes, safety).
    band: the upper band's margin on the allocated peak: the largest under-prediction of the
        central estimate over the published measurements (docs/memory-validation.md).
    lower_activation_fraction: the share of the modelled activations the lower bound keeps
        (no backward workspace either): the activation model over-predicts some published
        runs by a few percent, and a lower bound must stay below every measured peak.
    """

    routing_imbalance: float = 1.3
    fragmentation: float = 0.08
    fragmentation_expandable: float = 0.03
    cuda_context_gib: float = 0.75
    nccl_gib: float = 1.0
    deepep_buffer_gib: float = 1.0
    cuda_graph_static_copies: float = 1.0
    backward_workspace_layers: float = 1.0
    flash_attention: bool = True
    headroom_gib: float = 0.0
    band: float = 0.10
    lower_activation_fraction: float = 0.9


#: Lint-side settings. warn-headroom: warn (MEM002) when the central estimate is within this
#: fraction of usable memory or above it. error-margin: MEM001 fires when the *lower bound*
#: (only certain terms) exceeds usable memory by more than this fraction; the structural
#: errors of a memory model are not a relative margin (docs/domain/06 §6), so it is 0.
DEFAULT_WARN_FRACTION = 0.05
DEFAULT_ERROR_MARGIN = 0.0


def memory_settings(raw: dict[str, Any], where: str) -> tuple[Any, float, float]:
    """Validate ``[tool.moe-lint.memory]`` / ``--memory`` values.

    Returns (MemorySettings, warn fraction, error margin).
    """
    known = field_types(MemorySettings)
    values: dict[str, Any] = {}
    warn, margin = DEFAULT_WARN_FRACTION, DEFAULT_ERROR_MARGIN
    for key, value in raw.items():
        name = key.replace("-", "_")
        if name == "warn_headroom":
            warn = _number(value, key, where)
            continue
        if name == "error_margin":
            margin = _number(value, key, where)
            continue
        if name not in known:
            names = ", ".join(sorted(known))
            raise UsageError(
                f"{where}: unknown memory setting {bounded_repr(key)} (known: warn-headroom, "
                f"error-margin, {names})"
            )
        if name == "flash_attention":
            values[name] = _flag(value, key, where)
        else:
            values[name] = _number(value, key, where)
    return MemorySettings(**values), warn, margin


def _number(value: Any, key: str, where: str) -> float:
    """A finite, non-negative number (NaN compares false with everything, so it would pass
    every check after this one; a boolean is not a number here)."""
    try:
        if isinstance(value, bool):
            raise TypeError
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise UsageError(
            f"{where}: memory setting {bounded_repr(key)} must be a number, got "
            f"{bounded_repr(value)}"
        ) from None
    if not math.isfinite(number):
        raise UsageError(
            f"{where}: memory setting {bounded_repr(key)} must be a finite number, got "
            f"{bounded_repr(value)}"
        )
    if number < 0:
        raise UsageError(f"{where}: memory setting {bounded_repr(key)} must not be negative")
    return number


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _flag(value: Any, key: str, where: str) -> bool:
    """A boolean (``true`` in TOML, ``true``/``false``/``1``/``0`` on the command line)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if isinstance(value, str | int) else None
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise UsageError(
        f"{where}: memory setting {bounded_repr(key)} must be true or false, got "
        f"{bounded_repr(value)}"
    )
