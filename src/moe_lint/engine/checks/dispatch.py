"""Python checks for the dispatch rule family (DSP codes, rules/dispatch.yaml).

The flex dispatcher's backends (DeepEP, HybridEP) and the GPUs and fabrics they run on: the
conditions chain several framework checks, so they are code, not expressions.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks import reads
from moe_lint.engine.checks.reads import violation as _violation
from moe_lint.engine.evaluate import Violation

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context


def _flex_backend(ctx: Context) -> tuple[Any, Any]:
    """(backend, whether the file decides it), as DSP008/DSP010's ``let`` values were."""
    deepep = reads.field(ctx, "model.moe_enable_deepep")
    backend = "deepep" if deepep else reads.field(ctx, "model.moe_flex_dispatcher_backend")
    known = reads.field(ctx, "model.moe_enable_deepep") or reads.explicit(
        ctx, "model.moe_flex_dispatcher_backend"
    )
    return backend, known


def rank_capacity_backend(ctx: Context) -> Iterator[Violation]:
    """DSP008: moe_expert_rank_capacity_factor needs hybridep (with the TE op fuser) or ncclep."""
    backend, backend_known = _flex_backend(ctx)
    if not (
        reads.field(ctx, "model.moe_expert_rank_capacity_factor") is not None
        and backend_known
        and (
            backend not in ("hybridep", "ncclep")
            or (
                backend == "hybridep"
                and reads.field(ctx, "model.use_transformer_engine_op_fuser") is False
            )
        )
    ):
        return
    reason = (
        f"the backend is {backend} (needs hybridep or ncclep)"
        if backend not in ("hybridep", "ncclep")
        else "hybridep needs use_transformer_engine_op_fuser"
    )
    yield _violation("model.moe_expert_rank_capacity_factor", reason=reason)


def flex_backend_gpu(ctx: Context) -> Iterator[Violation]:
    """DSP010: a flex backend Bridge's validate_flex_dispatcher_backend rejects on this GPU."""
    backend, backend_known = _flex_backend(ctx)
    nvl72 = reads.fact(ctx, "gpu_name") in ("gb200-nvl72", "gb300-nvl72")
    if not (
        reads.field(ctx, "model.moe_token_dispatcher_type") == "flex"
        and backend_known
        and (
            (backend == "deepep" and nvl72)
            or (backend == "ncclep" and reads.fact(ctx, "gpu_cc") < 9)
        )
    ):
        return
    supported = (
        "Ampere, Hopper, B200 and B300 (use hybridep on NVL72)"
        if backend == "deepep"
        else "Hopper and Blackwell"
    )
    yield _violation("model.moe_flex_dispatcher_backend", backend=backend, supported=supported)


def _hybridep_over_ib(ctx: Context) -> tuple[int, int] | None:
    """(ranks per NVLink domain, tokens per rank) when HybridEP crosses InfiniBand with a
    queue depth over the limit (DSP012/DSP013), else None."""
    domain_fact = reads.fact(ctx, "nvlink_domain")
    written = str(
        reads.value(ctx, "env_vars.NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN", domain_fact)
    )
    domain = (
        int(written)
        if len(written) > 0 and all(ch in "0123456789" for ch in written)
        else domain_fact
    )
    tokens = int(reads.fact(ctx, "tokens_per_rank"))
    if (
        reads.field(ctx, "model.moe_token_dispatcher_type") == "flex"
        and reads.explicit(ctx, "model.moe_flex_dispatcher_backend")
        and reads.field(ctx, "model.moe_flex_dispatcher_backend") == "hybridep"
        and reads.fact(ctx, "dispatch_group") > domain
        and tokens >= 21845
    ):
        return domain, tokens
    return None


def hybridep_ib_token_overflow(ctx: Context) -> Iterator[Violation]:
    """DSP012: Megatron-Core <= 0.18 aborts when the HybridEP RDMA queue depth exceeds 65,535."""
    found = _hybridep_over_ib(ctx)
    if found is not None:
        domain, tokens = found
        depth = 3 * int(reads.fact(ctx, "tokens_per_rank")) + 1
        yield _violation(
            "model.moe_flex_dispatcher_backend", domain=domain, tokens=tokens, depth=depth
        )


def hybridep_ib_token_limit(ctx: Context) -> Iterator[Violation]:
    """DSP013: the same limit when the Megatron-Core version is not stated (0.19+ caps it)."""
    found = _hybridep_over_ib(ctx)
    if found is not None:
        domain, tokens = found
        yield _violation("model.moe_flex_dispatcher_backend", domain=domain, tokens=tokens)


CHECKS: dict[str, PythonCheck] = {
    "rank-capacity-backend": PythonCheck(rank_capacity_backend, frozenset({"reason"})),
    "flex-backend-gpu": PythonCheck(
        flex_backend_gpu, frozenset({"backend", "supported"}), frozenset({"gpu_name", "gpu_cc"})
    ),
    "hybridep-ib-token-overflow": PythonCheck(
        hybridep_ib_token_overflow,
        frozenset({"domain", "tokens", "depth"}),
        frozenset({"nvlink_domain", "tokens_per_rank", "dispatch_group"}),
    ),
    "hybridep-ib-token-limit": PythonCheck(
        hybridep_ib_token_limit,
        frozenset({"domain", "tokens"}),
        frozenset({"nvlink_domain", "tokens_per_rank", "dispatch_group"}),
    ),
}
