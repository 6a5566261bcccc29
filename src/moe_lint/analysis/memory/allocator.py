"""Allocator overhead: what PyTorch's caching allocator reserves above the allocated peak.

Fitted per GPU and allocator setting from the published reserved/allocated pairs (Bridge logs
``mem-max-reserved`` next to ``mem-max-allocated``, both bytes / 1e9, training/utils/
train_utils.py::report_memory): the central estimate takes the median ratio, the band the
largest, so the band covers the measured spread; the lower bound takes none (on an OOM the
allocator frees its cache and retries, c10/cuda/CUDACachingAllocator.cpp::malloc).
``tests/test_memory.py`` recomputes :data:`PUBLISHED_PAIRS` from tests/data/memory-points/ and
``docs/memory-validation.md`` shows the fit. A GPU or setting without published pairs takes
the ``fragmentation`` / ``fragmentation_expandable`` settings, and the band the larger of the
setting and the largest fitted overhead.
"""

from __future__ import annotations

import statistics

from moe_lint.analysis.memory.context import _Ctx
from moe_lint.records import record


@record(frozen=True)
class Fit:
    """reserved/allocated of the published runs on one GPU with one allocator setting."""

    gpu: str
    expandable: bool
    #: (point id, max_reserved / max_allocated), from tests/data/memory-points/points.yaml.
    pairs: tuple[tuple[str, float], ...]

    @property
    def central(self) -> float:
        """Median overhead (reserved/allocated − 1)."""
        return statistics.median(r for _, r in self.pairs) - 1.0

    @property
    def high(self) -> float:
        """Largest overhead: the band."""
        return max(r for _, r in self.pairs) - 1.0

    @property
    def low(self) -> float:
        return min(r for _, r in self.pairs) - 1.0


#: Published pairs (max_reserved / max_allocated, rounded to 4 digits) per (GPU, expandable
#: segments). Every one was measured with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
#: (the recipes' COMMON_RECIPE_ENV_VARS); none without it has been published.
PUBLISHED_PAIRS: dict[tuple[str, bool], tuple[tuple[str, float], ...]] = {
    ("h100-sxm-80gb", True): (
        ("nemotron-3.5-lightning.h100x16.bf16.pretrain.rp2-convergence", 1.0780),
        ("nemotron-3.5-lightning.h100x16.bf16.pretrain-perf.moe_act-recompute"
         ".expert_fc1-offload", 1.0454),
        ("nemotron-3.5-lightning.h100x16.bf16.pretrain-perf.moe-layernorm-recompute.HISTORICAL",
         1.0373),
        ("glm-5.2.h100x352.bf16.pretrain-resume", 1.0683),
        ("nemotron-3-super-120b-a12b.h100x64.bf16.pretrain.rp2", 1.2110),
        ("nemotron-3-super-120b-a12b.h100x64.bf16.pretrain-perf", 1.1753),
    ),
    ("gb200-nvl72", True): (
        ("nemotron-3.5-lightning.gb200x8.bf16.pretrain.rp2-convergence", 1.0257),
        ("nemotron-3.5-lightning.gb200x8.bf16.pretrain-fsdp-bf16.rp2-convergence", 1.0340),
        ("nemotron-3.5-lightning.gb200x8.mxfp8.pretrain-fsdp.perf-mock", 1.0255),
        ("nemotron-3.5-lightning.gb200x8.bf16.sft.openmathinstruct2-packed", 1.0241),
        ("nemotron-3.5-lightning.gb200x8.bf16.pretrain-perf", 1.0281),
    ),
}  # fmt: skip

FITS: dict[tuple[str, bool], Fit] = {
    key: Fit(key[0], key[1], pairs) for key, pairs in PUBLISHED_PAIRS.items()
}


def expandable_segments(ctx: _Ctx) -> bool:
    """PYTORCH_CUDA_ALLOC_CONF in env_vars sets expandable_segments:True."""
    conf = str(ctx.v.get("env_vars.PYTORCH_CUDA_ALLOC_CONF", default="")).replace(" ", "")
    return "expandable_segments:true" in conf.lower()


def overhead(ctx: _Ctx) -> tuple[float, str]:
    """Reserved-minus-allocated as a fraction of the allocated peak, and why."""
    if ctx.mode == "lower":
        return 0.0, "lower bound: none (the allocator frees its cache and retries on OOM)"
    s = ctx.settings
    expandable = expandable_segments(ctx)
    setting = "expandable_segments:True" if expandable else "caching allocator"
    fit = FITS.get((ctx.gpu or "", expandable))
    if fit is not None:
        value = fit.high if ctx.mode == "upper" else fit.central
        which = "largest" if ctx.mode == "upper" else "median"
        return value, (
            f"{setting}: {which} of {len(fit.pairs)} published reserved/allocated pairs on "
            f"{fit.gpu} ({1 + fit.low:.3f}-{1 + fit.high:.3f})"
        )
    base = s.fragmentation_expandable if expandable else s.fragmentation
    if ctx.mode != "upper":
        return base, f"{setting}: setting (no published pair on {ctx.gpu or 'this GPU'})"
    fitted = max((f.high for f in FITS.values() if f.expandable == expandable), default=0.0)
    return max(base, fitted), f"{setting}: the largest published overhead on any GPU"
