"""Python checks for the overlap rule family (OVL codes, rules/overlap.yaml).

The checks here need code for one of two reasons: the finding must point at whichever of
``model.X`` / ``comm_overlap.X`` actually set the EP-overlap flags (Bridge's CommOverlapConfig
copies its values onto the model), or one rule reports a list of independent problems in one
finding (the EP-overlap prerequisites) so that one root cause gives one finding with every
reason in it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.config.fields import UNKNOWN
from moe_lint.config.versions import stated_below
from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks.reads import Reads, mlm_args, mlm_flag_at, written_or_unknown
from moe_lint.engine.checks.reads import violation as _violation
from moe_lint.engine.evaluate import Violation
from moe_lint.engine.spans import set_value_edit

if TYPE_CHECKING:
    from moe_lint.config.normalize import Config
    from moe_lint.engine.evaluate import Context

_value = written_or_unknown

#: The two model flags a ``comm_overlap`` block overwrites (docs/domain/01 §b.6).
_EP_OVERLAP_KEYS = ("overlap_moe_expert_parallel_comm", "delay_wgrad_compute")


def _fact(ctx: Context, name: str) -> Any:
    fact = ctx.facts.values.get(name)
    return fact.value if fact is not None else UNKNOWN


def _flag_source(cfg: Config, key: str) -> str:
    """Where Bridge takes the EP-overlap flag ``key`` from."""
    return (
        f"comm_overlap.{key}" if isinstance(cfg.raw.get("comm_overlap"), dict) else f"model.{key}"
    )


def _stated(ctx: Context, dotted: str) -> bool:
    """True when the file (or a full dump) states ``dotted``; recipes set the rest."""
    return _fact(ctx, "full_dump") is True or ctx.config.explicit(dotted)


def _precision_known(ctx: Context) -> bool:
    """bf16/fp16 are known from a full dump, a mixed_precision recipe name, or written flags."""
    cfg = ctx.config
    mp = cfg.raw.get("mixed_precision")
    return bool(
        _fact(ctx, "full_dump") is True
        or isinstance(mp, str)
        or (isinstance(mp, dict) and ("bf16" in mp or "fp16" in mp))
        or cfg.explicit("model.bf16")
        or cfg.explicit("model.fp16")
    )


def _graph_modules(cfg: Config) -> list[str]:
    modules = cfg.values.get("model.cuda_graph_modules") or []
    return [str(m) for m in modules] if isinstance(modules, list) else []


def ep_overlap_prerequisites(ctx: Context) -> Iterator[Violation]:
    """EP A2A overlap on without what Bridge's CommOverlapConfig and MCore require (OVL-01)."""
    cfg = ctx.config
    if not cfg.values.get("model.overlap_moe_expert_parallel_comm"):
        return
    where = _flag_source(cfg, "overlap_moe_expert_parallel_comm")
    problems: list[str] = []
    ep, pp = _fact(ctx, "ep"), _fact(ctx, "pp")
    if ep == 1 and _stated(ctx, "model.expert_model_parallel_size"):
        problems.append("expert_model_parallel_size is 1 (EP overlap needs EP > 1)")
    experts = _value(cfg, "model.num_moe_experts")
    if isinstance(experts, int) and experts <= 1:
        problems.append(f"num_moe_experts is {experts} (needs more than 1)")
    kind = _value(cfg, "model.moe_token_dispatcher_type")
    if kind is not UNKNOWN and kind not in ("alltoall", "flex"):
        problems.append(f"moe_token_dispatcher_type is {kind} (needs alltoall or flex)")
    vpp = cfg.values.get("model.virtual_pipeline_model_parallel_size")
    if (
        isinstance(pp, int)
        and pp > 1
        and vpp is None
        and _stated(ctx, "model.virtual_pipeline_model_parallel_size")
    ):
        problems.append(f"PP = {pp} without virtual_pipeline_model_parallel_size")
    if cfg.values.get("model.recompute_granularity") == "full":
        # Bridge's CommOverlapConfig and TransformerConfig.__post_init__ (0.16 to 0.19.2) both
        # assert it; only Megatron-LM's unreleased dev branch runs full recompute under EP overlap.
        problems.append("recompute_granularity is full (EP overlap needs it off)")
    method = cfg.values.get("model.recompute_method")
    if method is not None:
        problems.append(f"recompute_method is {method} (must be unset)")
    layers = cfg.values.get("model.recompute_num_layers")
    if layers is not None:
        problems.append(f"recompute_num_layers is {layers} (must be unset)")
    modules = cfg.values.get("model.recompute_modules") or []
    if isinstance(modules, list) and "moe" in modules:
        problems.append("recompute_modules contains moe")
    if _precision_known(ctx) and not (cfg.values.get("model.bf16") or cfg.values.get("model.fp16")):
        problems.append("the model is neither bf16 nor fp16")
    if cfg.values.get("model.moe_shared_expert_overlap"):
        problems.append("moe_shared_expert_overlap is on")
    mtp = _value(cfg, "model.mtp_num_layers")
    if isinstance(mtp, int) and mtp > 1:
        problems.append(f"mtp_num_layers is {mtp} (at most 1)")
    if cfg.values.get("model.cuda_graph_impl") == "transformer_engine":
        scoped = [m for m in ("moe", "mlp") if m in _graph_modules(cfg)]
        if scoped:
            problems.append(f"TE CUDA graphs capture {' and '.join(scoped)}")
    backend = cfg.values.get("model.moe_flex_dispatcher_backend")
    offload = _value(cfg, "model.offload_modules")
    if (
        kind == "flex"
        and backend == "ncclep"
        and _value(cfg, "model.fine_grained_activation_offloading") is True
        and isinstance(offload, list)
        and "expert_fc1" in offload
    ):
        problems.append("ncclep with expert_fc1 activation offloading")
    if problems:
        yield _violation(where, where=where, problems="; ".join(problems), count=len(problems))


def delay_wgrad_without_overlap(ctx: Context) -> Iterator[Violation]:
    """delay_wgrad_compute on while EP overlap ends up off (OVL-02)."""
    cfg = ctx.config
    if not cfg.values.get("model.delay_wgrad_compute"):
        return
    if cfg.values.get("model.overlap_moe_expert_parallel_comm"):
        return
    where = _flag_source(cfg, "delay_wgrad_compute")
    yield _violation(
        where, where=where, overlap=_flag_source(cfg, "overlap_moe_expert_parallel_comm")
    )


def _te_below(ctx: Context, text: str) -> bool:
    """Is the Transformer Engine in use (stated, else the newest release) older than ``text``?"""
    return stated_below(ctx.settings.versions if ctx.settings else None, "transformer-engine", text)


def delay_wgrad_constraints(ctx: Context) -> Iterator[Violation]:
    """delay_wgrad_compute with CUDA graphs, grad-reduce overlap or old TE (OVL-02)."""
    cfg = ctx.config
    if not (
        cfg.values.get("model.delay_wgrad_compute")
        and cfg.values.get("model.overlap_moe_expert_parallel_comm")
    ):
        return
    where = _flag_source(cfg, "delay_wgrad_compute")
    problems: list[str] = []
    te_graphs = cfg.values.get("model.cuda_graph_impl") == "transformer_engine"
    modules = _graph_modules(cfg)
    if te_graphs and _te_below(ctx, "2.10"):
        problems.append("TE CUDA graphs need Transformer Engine >= 2.10")
    shared = _value(cfg, "model.moe_shared_expert_intermediate_size")
    in_scope = te_graphs and (
        "attn" in modules
        or (
            "moe_router" in modules
            and shared not in (None, UNKNOWN)
            and not cfg.values.get("model.moe_shared_expert_overlap")
        )
    )
    if in_scope:
        scope = "attn" if "attn" in modules else "moe_router (shared experts not overlapped)"
        if _te_below(ctx, "2.12"):
            problems.append(
                f"weight gradients inside the {scope} graph need Transformer Engine >= 2.12"
            )
        if _value(cfg, "model.gradient_accumulation_fusion") is False:
            problems.append(f"the {scope} graph needs gradient_accumulation_fusion")
        if "attn" in modules and (
            _value(cfg, "model.add_bias_linear") is True
            or _value(cfg, "model.add_qkv_bias") is True
        ):
            problems.append("the attn graph does not support attention bias")
    grad_reduce = _value(cfg, "ddp.overlap_grad_reduce") is True or (
        _value(cfg, "comm_overlap.overlap_grad_reduce") is True
    )
    if grad_reduce and _te_below(ctx, "2.7"):
        problems.append("overlap_grad_reduce needs Transformer Engine >= 2.7")
    if _value(cfg, "model.gradient_accumulation_fusion") is True and _te_below(ctx, "2.7"):
        problems.append("gradient_accumulation_fusion needs Transformer Engine >= 2.7")
    if problems:
        yield _violation(where, where=where, problems="; ".join(problems), count=len(problems))


def comm_overlap_reset(ctx: Context) -> Iterator[Violation]:
    """A model EP-overlap flag that the comm_overlap block overwrites (SEED-B6)."""
    cfg = ctx.config
    block = cfg.raw.get("comm_overlap")
    if _fact(ctx, "full_dump") is True or not isinstance(block, dict):
        return
    model = cfg.raw.get("model")
    if not isinstance(model, dict):
        return
    for key in _EP_OVERLAP_KEYS:
        written = model.get(key)
        if not isinstance(written, bool):
            continue
        from_block = block.get(key)
        used = bool(from_block) if from_block is not None else False
        if written == used:
            continue
        violation = _violation(
            f"model.{key}",
            field=key,
            written=str(written).lower(),
            used=str(used).lower(),
            why=(
                f"comm_overlap sets {key} = {str(used).lower()}"
                if from_block is not None
                else f"comm_overlap does not set {key}, so Bridge uses its default false"
            ),
        )
        if from_block is None:
            edit = set_value_edit(cfg.doc, cfg.physical(f"comm_overlap.{key}"), written)
            if edit is not None:
                violation.edits = [edit]
        yield violation


# --------------------------------------------------------------------------------------------
# Rules converted from long expressions: each reads what its expression read, in the same order
# (an unknown field or fact raises NotDerivable: no finding), and yields the template values.
# The ``r.value(field, default)`` defaults are the expressions' own, kept literally.
# --------------------------------------------------------------------------------------------


def dispatch_backward_overlap_conflict(ctx: Context) -> Iterator[Violation]:
    """OVL004: overlap_dispatch_backward_with_experts_wgrad with EP overlap, delayed wgrad or
    an old Transformer Engine."""
    r = Reads(ctx)
    if not (
        r.field("model.overlap_dispatch_backward_with_experts_wgrad") is True
        and (
            r.field("model.overlap_moe_expert_parallel_comm")
            or r.field("model.delay_wgrad_compute")
            or r.version_below("transformer-engine", "2.3")
        )
    ):
        return
    if r.field("model.overlap_moe_expert_parallel_comm"):
        reason = "overlap_moe_expert_parallel_comm is also on (use only one)"
    elif r.field("model.delay_wgrad_compute"):
        reason = "delay_wgrad_compute is also on (use only one)"
    else:
        reason = "it needs Transformer Engine >= 2.3"
    yield Violation("", {"reason": reason})


def tp_comm_overlap_without_sp_mlm(ctx: Context) -> Iterator[Violation]:
    """OVL008: ``--tp-comm-overlap`` on a Megatron-LM command line without sequence parallelism.

    megatron/training/arguments.py::validate_args (core_v0.14.0 to core_v0.19.0) first turns
    ``--sequence-parallel`` off at TP = 1, then asserts that TP overlap has it on (Bridge only
    switches the overlap off: OVL007).
    """
    args = mlm_args(ctx)
    if args is None or args["tp_comm_overlap"] is not True:
        return
    if args.incomplete and not all(
        args.has(d) for d in ("sequence_parallel", "tensor_model_parallel_size")
    ):
        return
    tp, sp = args["tensor_model_parallel_size"], args["sequence_parallel"]
    if not isinstance(tp, int) or not isinstance(sp, bool):
        return
    if sp and tp > 1:
        return
    reason = (
        "TP = 1, where validate_args turns --sequence-parallel off first"
        if sp
        else "no --sequence-parallel"
    )
    yield Violation(
        "model.tp_comm_overlap", {"reason": reason}, at=mlm_flag_at(args, "tp_comm_overlap")
    )


CHECKS: dict[str, PythonCheck] = {
    "tp-comm-overlap-without-sp-mlm": PythonCheck(
        tp_comm_overlap_without_sp_mlm, frozenset({"reason"})
    ),
    "ep-overlap-prerequisites": PythonCheck(
        ep_overlap_prerequisites, frozenset({"where", "problems", "count"})
    ),
    "delay-wgrad-without-overlap": PythonCheck(
        delay_wgrad_without_overlap, frozenset({"where", "overlap"})
    ),
    "delay-wgrad-constraints": PythonCheck(
        delay_wgrad_constraints, frozenset({"where", "problems", "count"})
    ),
    "comm-overlap-reset": PythonCheck(
        comm_overlap_reset, frozenset({"field", "written", "used", "why"})
    ),
    "dispatch-backward-overlap-conflict": PythonCheck(
        dispatch_backward_overlap_conflict, frozenset({"reason"})
    ),
}


# --------------------------------------------------------------------------------------------
# DSP rules whose conditions outgrew an expression (each reads the config as its expression did)
# --------------------------------------------------------------------------------------------
