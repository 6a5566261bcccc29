"""Python checks for the runtime rule family (listed in moe_lint.engine.checks.MODULES).

Most rules are pure data in rules/*.yaml; put a check here only when a condition truly needs
code. Each entry maps a check name (used as `check: <name>`) to a PythonCheck whose params are
the template placeholders its violations provide.

The checks here are run-time failures a config predicts (RT codes): attention kernels that
Transformer Engine cannot pick for the config. The precision checks are in
:mod:`moe_lint.engine.checks.precision`, the optimizer ones in
:mod:`moe_lint.engine.checks.optimizer`, the CUDA-graph ones in
:mod:`moe_lint.engine.checks.cudagraph`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks.reads import Reads
from moe_lint.engine.checks.reads import violation as _violation
from moe_lint.engine.evaluate import Violation

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context, Violation


def _softmax_and_packing(r: Reads) -> tuple[str, bool]:
    """(softmax_type, packed THD batches) as RT002/RT003 read them."""
    st = r.to_str(r.value("model.softmax_type"))
    packed = (
        r.value("dataset.enable_offline_packing", False) is True
        or r.value("dataset.enable_in_batch_packing", False) is True
        or r.value("dataset.packing_buffer_size") is not None
        or r.value("model.sequence_packing_scheduler") is not None
    )
    return st, packed


def cp_attention_without_te_backend(ctx: Context) -> Iterator[Violation]:
    """RT002: attention settings for which Transformer Engine has no backend at all."""
    r = Reads(ctx)
    st, packed = _softmax_and_packing(r)
    dpa = (
        r.explicit("mixed_precision")
        and r.field("model.fp8") is not None
        and (
            r.value("mixed_precision.fp8_dot_product_attention", False) is True
            or (
                r.value("mixed_precision") is None
                and r.value("model.fp8_dot_product_attention", False) is True
            )
        )
    )
    if st != "vanilla" and packed and r.version_below("transformer-engine", "2.12"):
        reason = r.cat(
            "softmax_type ",
            st,
            " has no attention backend for packed (THD) sequences on Transformer Engine < 2.12",
        )
    elif r.fact("cp") > 1 and dpa and r.value("model.multi_latent_attention", False) is True:
        reason = r.cat(
            "FP8 dot-product attention with CP = ",
            r.to_str(r.fact("cp")),
            " on an MLA model (QK and V head dims differ) has no attention backend",
        )
    else:
        return
    yield _violation("", reason=reason)


def sink_softmax_thd_needs_cudnn(ctx: Context) -> Iterator[Violation]:
    """RT003: a non-vanilla softmax on packed sequences needs cuDNN >= 9.18 for FusedAttention."""
    r = Reads(ctx)
    st, packed = _softmax_and_packing(r)
    if not (st != "vanilla" and packed):
        return
    cp_note = (
        r.cat(
            "; with CP = ",
            r.to_str(r.fact("cp")),
            " unfused attention is not available either, so an older cuDNN leaves no backend",
        )
        if r.fact("cp") > 1
        else ""
    )
    yield _violation("", st=st, cp_note=cp_note)


CHECKS: dict[str, PythonCheck] = {
    "cp-attention-without-te-backend": PythonCheck(
        cp_attention_without_te_backend, frozenset({"reason"}), frozenset({"cp"})
    ),
    "sink-softmax-thd-needs-cudnn": PythonCheck(
        sink_softmax_thd_needs_cudnn, frozenset({"st", "cp_note"}), frozenset({"cp"})
    ),
}
