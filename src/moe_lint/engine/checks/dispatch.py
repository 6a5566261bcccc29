"""Python checks for the dispatch rule family (listed in moe_lint.engine.checks.MODULES).

Most rules are pure data in rules/*.yaml; put a check here only when a condition truly needs
code. Each entry maps a check name (used as `check: <name>` in a pack) to a PythonCheck whose
params are the template placeholders its violations provide.

The checks here need code for one of two reasons: the finding must point at whichever of
``model.X`` / ``comm_overlap.X`` actually set the EP-overlap flags (Bridge's CommOverlapConfig
copies its values onto the model), or one rule reports a list of independent problems in one
finding (the EP-overlap prerequisites, group-limited routing, paged stash) so that one root cause
gives one finding with every reason in it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.config.fields import UNKNOWN
from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks import reads

if TYPE_CHECKING:
    from moe_lint.config.normalize import Config
    from moe_lint.engine.evaluate import Context, Violation

_UNKNOWN = UNKNOWN  # the one marker (config/fields.py)

#: The two model flags a ``comm_overlap`` block overwrites (docs/domain/01 §b.6).
_EP_OVERLAP_KEYS = ("overlap_moe_expert_parallel_comm", "delay_wgrad_compute")


def _violation(path: str, **params: Any) -> Violation:
    from moe_lint.engine.evaluate import Violation

    return Violation(path=path, params=params)


def _raw(cfg: Config, dotted: str) -> Any:
    return cfg.raw_get(dotted, _UNKNOWN)


def _value(cfg: Config, dotted: str) -> Any:
    """The effective value of ``dotted``, or ``_UNKNOWN`` when the recipe decides it.

    Typed fields use the normalized value (framework default when unset); untyped fields are
    known only when the file (or a full dump) writes them, else from the model preset.
    """
    if dotted in cfg.unknown:
        return _UNKNOWN
    if dotted in cfg.values:
        return cfg.values[dotted]
    raw = _raw(cfg, dotted)
    if raw is not _UNKNOWN:
        return raw
    section, _, field = dotted.partition(".")
    if section == "model" and cfg.preset:
        from moe_lint.config.settings import preset_fields

        preset = preset_fields(cfg.preset)
        if field in preset:
            return preset[field]
    return _UNKNOWN


def _fact(ctx: Context, name: str) -> Any:
    fact = ctx.facts.values.get(name)
    return fact.value if fact is not None else _UNKNOWN


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
    if kind is not _UNKNOWN and kind not in ("alltoall", "flex"):
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
    from moe_lint.config.versions import stated_below

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
            and shared not in (None, _UNKNOWN)
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
    from moe_lint.engine.spans import set_value_edit

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


def group_limited_routing(ctx: Context) -> Iterator[Violation]:
    """Group-limited (device-limited) routing that MCore rejects or cannot route (MOE-06)."""
    cfg = ctx.config

    def count(dotted: str) -> Any:
        value = _value(cfg, dotted)
        return value if isinstance(value, int) and not isinstance(value, bool) else _UNKNOWN

    group_topk = count("model.moe_router_group_topk")
    if group_topk is _UNKNOWN or group_topk <= 0:
        return
    groups = _value(cfg, "model.moe_router_num_groups")
    experts = count("model.num_moe_experts")
    topk = count("model.moe_router_topk")
    problems: list[str] = []
    if groups in (None, 0):
        problems.append(f"moe_router_group_topk = {group_topk} without moe_router_num_groups")
    elif isinstance(groups, int) and not isinstance(groups, bool) and groups > 0:
        if isinstance(experts, int) and experts % groups:
            problems.append(
                f"num_moe_experts = {experts} is not divisible by moe_router_num_groups = {groups}"
            )
        if group_topk > groups:
            problems.append(
                f"moe_router_group_topk = {group_topk} exceeds moe_router_num_groups = {groups}"
            )
        elif isinstance(experts, int) and experts % groups == 0 and isinstance(topk, int):
            per_group = experts // groups
            if topk // group_topk > per_group:
                problems.append(
                    f"each group is scored by its top {topk} // {group_topk} = "
                    f"{topk // group_topk} experts but holds only {per_group} "
                    "(torch.topk fails at the first forward)"
                )
            elif topk > group_topk * per_group:
                problems.append(
                    f"top-{topk} routing can only reach {group_topk}·{per_group} = "
                    f"{group_topk * per_group} experts in the selected groups (the router "
                    "picks masked experts)"
                )
    if problems:
        yield _violation(
            "model.moe_router_group_topk", problems="; ".join(problems), count=len(problems)
        )


def paged_stash_constraints(ctx: Context) -> Iterator[Violation]:
    """moe_paged_stash without what TransformerConfig requires (MOE-25)."""
    cfg = ctx.config
    if _value(cfg, "model.moe_paged_stash") is not True:
        return
    problems: list[str] = []
    if _value(cfg, "model.cpu_offloading") is True:
        problems.append("cpu_offloading is on")
    if _value(cfg, "model.moe_expert_rank_capacity_factor") is None:
        problems.append("moe_expert_rank_capacity_factor is not set")
    offload = _value(cfg, "model.offload_modules")
    if isinstance(offload, list):
        clash = [m for m in ("expert_fc1", "moe_act", "fused_group_mlp") if m in offload]
        if clash:
            problems.append(f"offload_modules contains {', '.join(clash)}")
    if problems:
        yield _violation("model.moe_paged_stash", problems="; ".join(problems), count=len(problems))


CHECKS: dict[str, PythonCheck] = {
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
    "group-limited-routing": PythonCheck(group_limited_routing, frozenset({"problems", "count"})),
    "paged-stash-constraints": PythonCheck(
        paged_stash_constraints, frozenset({"problems", "count"})
    ),
}


# --------------------------------------------------------------------------------------------
# DSP rules whose conditions outgrew an expression (each reads the config as its expression did)
# --------------------------------------------------------------------------------------------


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


CHECKS.update(
    {
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
)
