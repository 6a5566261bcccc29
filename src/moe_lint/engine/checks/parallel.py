"""Python checks for the parallelism rule family (PAR codes, rules/parallel.yaml).

Rules whose expressions grew too long for data, read through
:class:`~moe_lint.engine.checks.reads.Reads` so that they keep the expressions' meaning, and
``sequence_parallel`` at TP = 1, whose fix is an edit of the written key.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from moe_lint.config.versions import stated_below
from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks.reads import Reads
from moe_lint.engine.checks.reads import derived as _fact
from moe_lint.engine.checks.reads import to_int as _int
from moe_lint.engine.evaluate import Violation
from moe_lint.engine.spans import set_value_edit

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context


def sequence_parallel_at_tp1(ctx: Context) -> Iterator[Violation]:
    """sequence_parallel: true at TP = 1 is switched off by Bridge's finalize()."""
    raw = ctx.config.raw.get("model")
    if not isinstance(raw, dict) or raw.get("sequence_parallel") is not True:
        return
    tp = _int(_fact(ctx, "tp"))
    if tp is None or tp > 1:
        return
    cfg = ctx.config
    edit = set_value_edit(cfg.doc, cfg.physical("model.sequence_parallel"), False)
    yield Violation(path="model.sequence_parallel", params={"tp": tp}, edits=[edit] if edit else [])


# --------------------------------------------------------------------------------------------
# Rules converted from long expressions: each reads what its expression read, in the same order
# (an unknown field or fact raises NotDerivable: no finding), and yields the template values.
# The ``r.value(field, default)`` defaults are the expressions' own, kept literally.
# --------------------------------------------------------------------------------------------


def weight_shards_not_multiple_of_tp(ctx: Context) -> Iterator[Violation]:
    """PAR009: (expert_)tensor_parallel_num_weight_shards below or not a multiple of TP/ETP."""
    r = Reads(ctx)
    shards = r.value("model.tensor_parallel_num_weight_shards", None)
    eshards = r.value("model.expert_tensor_parallel_num_weight_shards", None)
    t_bad = shards is not None and (shards < r.fact("tp") or shards % r.fact("tp") != 0)
    e_bad = eshards is not None and (eshards < r.fact("etp") or eshards % r.fact("etp") != 0)
    if not (t_bad or e_bad):
        return
    parts = []
    if t_bad:
        parts.append(
            r.cat(
                "tensor_parallel_num_weight_shards = ",
                r.to_str(shards),
                " vs TP = ",
                r.to_str(r.fact("tp")),
            )
        )
    if e_bad:
        parts.append(
            r.cat(
                "expert_tensor_parallel_num_weight_shards = ",
                r.to_str(eshards),
                " vs ETP = ",
                r.to_str(r.fact("etp")),
            )
        )
    yield Violation("", {"detail": r.join(parts, "; ")})


def cuda_device_max_connections_one(ctx: Context) -> Iterator[Violation]:
    """PAR012: CUDA_DEVICE_MAX_CONNECTIONS = 1 with Megatron-FSDP or the UCC PP backend."""
    r = Reads(ctx)
    conn = r.to_str(r.value("env_vars.CUDA_DEVICE_MAX_CONNECTIONS", ""))
    mfsdp = bool(r.value("ddp.use_megatron_fsdp")) or bool(r.value("dist.use_megatron_fsdp"))
    ucc = r.value("model.pipeline_model_parallel_comm_backend", None) == "ucc"
    if not (conn == "1" and (mfsdp or ucc)):
        return
    if (
        mfsdp
        and ctx.config.form == "megatron-lm"
        and stated_below(ctx.config.versions, "megatron-core", "0.18")
    ):
        mfsdp = False  # a Megatron-LM command line has this assert from core_v0.18.0
        if not ucc:
            return
    if mfsdp and ctx.config.form == "megatron-lm":
        what = "Megatron-FSDP"
        check = (
            "Megatron-LM's validate_args asserts \"FSDP requires CUDA_DEVICE_MAX_CONNECTIONS > 1 "
            'or unset."'
        )
    elif mfsdp:
        what = "Megatron-FSDP"
        check = 'Bridge asserts "FSDP requires CUDA_DEVICE_MAX_CONNECTIONS > 1 or unset"'
    else:
        what = "the UCC pipeline-parallel backend"
        check = (
            'initialize_model_parallel asserts "UCC-backend requires '
            'CUDA_DEVICE_MAX_CONNECTIONS > 1"'
        )
    yield Violation("", {"what": what, "check": check})


CHECKS: dict[str, PythonCheck] = {
    "sequence-parallel-at-tp1": PythonCheck(sequence_parallel_at_tp1, frozenset({"tp"})),
    "weight-shards-not-multiple-of-tp": PythonCheck(
        weight_shards_not_multiple_of_tp, frozenset({"detail"}), frozenset({"tp", "etp"})
    ),
    "cuda-device-max-connections-one": PythonCheck(
        cuda_device_max_connections_one, frozenset({"what", "check"})
    ),
}
