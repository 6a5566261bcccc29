"""Per-GPU peak memory of a Megatron Bridge MoE training run, per pipeline stage.

The model is docs/domain/02 §4 made executable (the full derivation is in docs/memory-model.md).
Each section is a module, so a term is found by its file name:

* ``results``: :class:`Term`, :class:`StageEstimate`, :class:`Estimate`, :class:`Lever`;
* ``context``: reading the config (dotted values, dtypes, the derived sizes and batch shape, the
  mixed-precision fields as Bridge applies them);
* ``placement``: the layers, embedding, head and MTP depths of each pipeline rank;
* ``states`` (§4.1): weights, gradients and Adam states per parameter, with the dense shard
  group DP·CP and the expert shard group EDP for the distributed optimizer, precision-aware
  optimizer dtypes, FP8 parameters, Megatron-FSDP and fractional optimizer CPU offload;
* ``activations`` (§4.4): bytes saved per token per layer for MCore + Transformer Engine with
  flash/fused attention (no s² term), split between sequence-parallel regions (÷TP·CP) and
  tensor-parallel regions (heads/FFN split over TP, tokens over CP); MoE routed tensors scale
  with top-k, ETP and the routing imbalance ρ; selective recompute removes named pieces, full
  recompute keeps chunk inputs; in-flight micro-batches follow the 1F1B / interleaved schedule;
  the head (final norm, logits, the fp32 cross-entropy copy, once more per MTP depth);
* ``buffers``: CUDA-graph static buffers and the fixed costs outside PyTorch's allocator (CUDA
  context, NCCL, DeepEP/HybridEP buffers);
* ``allocator``: what the caching allocator reserves above the allocated peak, fitted per GPU
  and setting from the published reserved/allocated pairs;
* ``estimate``: a stage put together (states + the largest phase: forward/backward, optimizer
  step or checkpoint load) and :func:`estimate`, three ways (lower bound, central, band);
* ``verdict``: the one verdict MEM001/MEM002, ``moe-lint estimate`` and the API share;
* ``levers``: single config changes that lower the peak, each measured by re-running the model.

Every figure is a :class:`Term` carrying its derivation; the :class:`Estimate` lists the
assumptions made where the config was silent. Only the standard library is used.
"""

from __future__ import annotations

from moe_lint.analysis.memory.activations import in_flight, layer_pieces
from moe_lint.analysis.memory.context import INPUTS, mixed_value
from moe_lint.analysis.memory.estimate import estimate, values_from_config
from moe_lint.analysis.memory.levers import levers, with_settings
from moe_lint.analysis.memory.results import (
    BAND,
    GIB,
    Estimate,
    Lever,
    MemoryInputError,
    StageEstimate,
    Term,
)
from moe_lint.config.memory_settings import MemorySettings

__all__ = [
    "BAND", "GIB", "INPUTS", "Estimate", "Lever", "MemoryInputError", "MemorySettings",
    "StageEstimate", "Term", "estimate", "in_flight", "layer_pieces", "levers", "mixed_value",
    "values_from_config", "with_settings",
]  # fmt: skip
