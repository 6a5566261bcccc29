"""Python checks for the CUDA-graph rule family (rules/cudagraph.yaml, CG codes).

Two kinds of check live here:

* the raw CUDA-graph flags (``enable_cuda_graph``, ``cuda_graph_scope``/``cuda_graph_modules``,
  ``inference_cuda_graph_scope``) before moe-lint's normalization migrates them, because the
  conflicts Megatron-Core rejects are conflicts between the *written* spellings. One walk over
  the spellings (:func:`_settings_problems`) follows Megatron-Core's order of asserts (the first
  that fails stops the config); each problem it finds has its own code (CG007, CG019-CG024);
* rules whose condition outgrew an expression (CG001, CG010, CG012, CG013, CG016): each reads
  the config through :mod:`moe_lint.engine.checks.reads` (CG001 as Bridge's packing check
  reads it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.config.normalize import bridge_clears_graph_modules, scope_is_canonical
from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks.reads import field, mlm_args, mlm_flag_at, value
from moe_lint.engine.checks.reads import violation as _violation
from moe_lint.engine.evaluate import Violation

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context


# --------------------------------------------------------------------------------------------
# CUDA-graph spellings (TransformerConfig.__post_init__, cuda_graph_config.py)
# --------------------------------------------------------------------------------------------

GRAPH_MODULES = frozenset({"attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba"})
_DEPRECATED_MODULES = ("full_iteration", "full_iteration_inference")
_INFERENCE_SCOPES = {
    "none": {"none"},
    "local": {"layer", "block"},
    "transformer_engine": {"none"},
    "full_iteration": {"none"},
}


def _module_items(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list):
        return [str(v).rsplit(".", 1)[-1] for v in value]
    return [str(value)]


def _settings_problems(ctx: Context) -> Iterator[tuple[str, Violation]]:
    """Conflicting CUDA-graph spellings Megatron-Core rejects at config time, as (kind, violation).

    The kinds are the rules: ``legacy`` CG019, ``scope-and-modules`` CG007, ``full-mixed``
    CG020, ``unknown-module`` CG021, ``deprecated`` CG022, ``full-iteration-modules`` CG023,
    ``inference-scope`` CG024. A problem after which Megatron-Core's checks would not go on ends
    the walk, so a file gets the problems it would meet in order.
    """
    cfg = ctx.config
    model = cfg.raw.get("model")
    if not isinstance(model, dict):
        return
    impl = model.get("cuda_graph_impl") or "none"
    if not isinstance(impl, str):
        return
    enable = model.get("enable_cuda_graph") is True
    external = model.get("external_cuda_graph") is True
    if enable and external:
        yield (
            "legacy",
            _violation(
                "model.external_cuda_graph",
                problem="enable_cuda_graph and external_cuda_graph are both true",
                hint="drop both and set cuda_graph_impl: transformer_engine (or local for "
                "full-iteration capture)",
            ),
        )
    elif (enable or external) and impl != "none":
        legacy = "enable_cuda_graph" if enable else "external_cuda_graph"
        yield (
            "legacy",
            _violation(
                f"model.{legacy}",
                problem=f"the deprecated {legacy} is combined with cuda_graph_impl {impl!r}",
                hint=f"drop {legacy}; cuda_graph_impl alone selects the implementation",
            ),
        )
    cleared = impl == "none" and bridge_clears_graph_modules(cfg)
    if impl == "none":
        impl = "local" if enable else "transformer_engine" if external else "none"
    scope = model.get("cuda_graph_scope")
    modules = model.get("cuda_graph_modules")
    if scope_is_canonical(cfg):  # Megatron-Core < 0.18 has no cuda_graph_modules field
        modules = None
        scope = "full" if scope is None else scope
    if cleared:
        # Bridge >= 0.6 (utils/cuda_graph.py::validate_cuda_graph_configuration) empties both
        # before Megatron-Core's __post_init__ sees them: nothing below can conflict.
        scope, modules = None, []
    if scope is not None and modules not in ("full", None, []):
        yield "scope-and-modules", _violation("model.cuda_graph_scope")
        return
    written = "model.cuda_graph_scope" if scope is not None else "model.cuda_graph_modules"
    items = _module_items(scope if scope is not None else modules)
    if "full" in items and items != ["full"]:
        yield "full-mixed", _violation(written, items=", ".join(items))
        return
    unknown = [
        i for i in items if i not in GRAPH_MODULES and i not in _DEPRECATED_MODULES and i != "full"
    ]
    if unknown:
        yield (
            "unknown-module",
            _violation(written, unknown=", ".join(unknown), known=", ".join(sorted(GRAPH_MODULES))),
        )
    deprecated = sorted({i for i in items if i in _DEPRECATED_MODULES})
    inference = model.get("inference_cuda_graph_scope")
    inference = str(inference).rsplit(".", 1)[-1] if inference is not None else None
    if len(deprecated) > 1:
        yield (
            "deprecated",
            _violation(
                written,
                problem=f"more than one deprecated value ({', '.join(deprecated)})",
                hint="use cuda_graph_impl: full_iteration or inference_cuda_graph_scope instead",
            ),
        )
        return
    if deprecated == ["full_iteration"]:
        if impl not in ("none", "local", "full_iteration"):
            yield (
                "deprecated",
                _violation(
                    written,
                    problem=f"'full_iteration' cannot be combined with cuda_graph_impl {impl!r}",
                    hint="set cuda_graph_impl: full_iteration and an empty module list",
                ),
            )
            return
        if inference not in (None, "none"):
            yield (
                "deprecated",
                _violation(
                    "model.inference_cuda_graph_scope",
                    problem=f"'full_iteration' cannot be combined with inference_cuda_graph_scope "
                    f"{inference!r}",
                    hint="drop inference_cuda_graph_scope",
                ),
            )
            return
        impl = "full_iteration"
    elif deprecated == ["full_iteration_inference"]:
        if impl not in ("none", "local"):
            yield (
                "deprecated",
                _violation(
                    written,
                    problem="'full_iteration_inference' cannot be combined with cuda_graph_impl "
                    f"{impl!r}",
                    hint="use cuda_graph_impl: local with inference_cuda_graph_scope: block",
                ),
            )
            return
        if inference not in (None, "block"):
            yield (
                "deprecated",
                _violation(
                    "model.inference_cuda_graph_scope",
                    problem="'full_iteration_inference' cannot be combined with "
                    f"inference_cuda_graph_scope {inference!r}",
                    hint="use inference_cuda_graph_scope: block",
                ),
            )
            return
        if impl != "none":
            inference = "block"
    real = [i for i in items if i in GRAPH_MODULES]
    if impl == "full_iteration" and real:
        yield "full-iteration-modules", _violation(written, modules=", ".join(real))
    if impl in _INFERENCE_SCOPES:
        scope_eff = inference or ("layer" if impl == "local" else "none")
        if scope_eff not in _INFERENCE_SCOPES[impl]:
            yield (
                "inference-scope",
                _violation(
                    "model.inference_cuda_graph_scope",
                    scope=repr(scope_eff),
                    impl=repr(impl),
                    allowed=", ".join(sorted(_INFERENCE_SCOPES[impl])),
                ),
            )


def _settings_check(kind: str) -> Callable[[Context], Iterator[Violation]]:
    def check(ctx: Context) -> Iterator[Violation]:
        for found, violation in _settings_problems(ctx):
            if found == kind:
                yield violation

    check.__name__ = f"cuda_graph_settings_{kind.replace('-', '_')}"
    check.__doc__ = f"The {kind!r} problems of :func:`_settings_problems`."
    return check


def _bridge_graph_names(value: Any) -> list[str]:
    """Bridge ``utils/cuda_graph.py::_member_name_list``: "" / "full" -> [], "a,b" -> [a, b]."""
    if value is None or value in ("", "full"):
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",")]
    items = value if isinstance(value, list) else [value]
    return [str(v).rsplit(".", 1)[-1] for v in items]


def local_cuda_graph(ctx: Context) -> Iterator[Violation]:
    """Bridge >= 0.6 accepts cuda_graph_impl local only for full-iteration (or inference) graphs.

    ``validate_cuda_graph_configuration`` runs in ``ConfigContainer.validate`` on the values as
    written, before Megatron-Core migrates anything, and again after ``model.finalize()``. A
    written ``local`` passes only when a module/scope name is ``full_iteration``, or when no
    per-layer module is named and inference_cuda_graph_scope is layer or block. The legacy
    ``enable_cuda_graph: true`` leaves the written impl ``none``: Bridge then clears the modules,
    and after finalize the default inference scope ``layer`` makes it a local inference graph,
    which passes both calls.
    """
    cfg = ctx.config
    model = cfg.raw.get("model")
    if not isinstance(model, dict) or model.get("cuda_graph_impl") != "local":
        return
    modules, scope = model.get("cuda_graph_modules"), model.get("cuda_graph_scope")
    names = _bridge_graph_names(modules) + _bridge_graph_names(scope)
    if "full_iteration" in names:
        return
    layers = [n for n in dict.fromkeys(names) if n not in ("full_iteration_inference", "full")]
    if not layers:
        # A recipe may supply a full_iteration scope (Bridge's Llama perf recipes do).
        dump = cfg.form == "full-dump"
        if not dump and not (
            cfg.explicit("model.cuda_graph_scope") and cfg.explicit("model.cuda_graph_modules")
        ):
            return
        inference = set(_bridge_graph_names(model.get("inference_cuda_graph_scope")))
        if inference & {"layer", "block"}:
            return
    written = [
        key
        for key in ("cuda_graph_impl", "cuda_graph_modules", "cuda_graph_scope")
        if cfg.physical(f"model.{key}") in cfg.doc.spans
    ]
    yield _violation(
        f"model.{written[0] if written else 'cuda_graph_impl'}",
        scope=f"scopes [{', '.join(layers)}]" if layers else "whole-layer capture",
    )


# --------------------------------------------------------------------------------------------
# Conditions that outgrew an expression (each reads the config as its expression did)
# --------------------------------------------------------------------------------------------


def cuda_graph_dynamic_shapes(ctx: Context) -> Iterator[Violation]:
    """CG001: offline-packed batches not padded to a fixed width with training CUDA graphs.

    Bridge's ConfigContainer.validate raises "Offline packing with CUDA graphs requires dataset
    pad_to_max_length=True." for full-iteration graphs and cuda_graph_impl transformer_engine,
    read as written (before Megatron-Core migrates enable_cuda_graph / external_cuda_graph), and
    before it forces pad_to_max_length for PP > 1 or EP > 1. variable_seq_lengths is not part
    of it: its only reader is the pipeline's shape exchange (CG025).
    """
    cfg = ctx.config
    written = cfg.raw_get("model.cuda_graph_impl", "none")
    impl = field(ctx, "model.cuda_graph_impl")
    if written == "none" or impl not in ("transformer_engine", "full_iteration"):
        return
    kwargs = field(ctx, "dataset.dataset_kwargs") or {}
    padded = value(ctx, "dataset.pad_to_max_length", False) is True or (
        isinstance(kwargs, dict) and kwargs.get("pad_to_max_length", False) is True
    )
    if bool(field(ctx, "dataset.enable_offline_packing")) and not padded:
        yield _violation("model.cuda_graph_impl")


def moe_preprocess_graph_host_sync(ctx: Context) -> Iterator[Violation]:
    """CG010: a graphed moe_preprocess with alltoall syncs with the host when it drops tokens."""
    capacity = "model.moe_expert_capacity_factor"
    if not (
        field(ctx, "model.cuda_graph_impl") in ("transformer_engine", "local")
        and "moe_preprocess" in field(ctx, "model.cuda_graph_modules")
        and field(ctx, "model.moe_token_dispatcher_type") == "alltoall"
        and not (
            field(ctx, capacity) is not None
            and field(ctx, "model.moe_pad_expert_input_to_capacity")
        )
        and (
            field(ctx, capacity) is not None
            or value(ctx, "model.moe_router_padding_for_fp8", False) is True
        )
    ):
        return
    cause = (
        "moe_expert_capacity_factor " + str(field(ctx, capacity))
        if field(ctx, capacity) is not None
        else "moe_router_padding_for_fp8"
    )
    yield _violation("model.cuda_graph_modules", cause=cause)


def _graphed_recompute_reason(ctx: Context) -> str:
    impl = field(ctx, "model.cuda_graph_impl")
    mods = field(ctx, "model.cuda_graph_modules")
    rmods = field(ctx, "model.recompute_modules") or []
    whole = impl == "full_iteration" or len(mods) == 0
    attn_drop = value(ctx, "model.attention_dropout", 0.0)
    hid_drop = value(ctx, "model.hidden_dropout", 0.0)
    if impl == "transformer_engine" and "moe" in rmods and "moe_router" in mods:
        return "moe recompute would wrap the graphed moe_router (transformer_engine)"
    if attn_drop != 0 and "core_attn" in rmods and (whole or "attn" in mods):
        return f"attention_dropout {attn_drop} with core_attn recompute inside the graph"
    if hid_drop != 0 and "mlp" in rmods and (whole or "mlp" in mods):
        return f"hidden_dropout {hid_drop} with mlp recompute inside the graph"
    if hid_drop != 0 and "moe" in rmods and (whole or "moe" in mods):
        return f"hidden_dropout {hid_drop} with moe recompute inside the graph"
    if (
        value(ctx, "model.moe_input_jitter_eps") is not None
        and "moe" in rmods
        and (whole or "moe" in mods)
    ):
        return "moe_input_jitter_eps with moe recompute inside the graph"
    return ""


def graphed_recompute_randomness(ctx: Context) -> Iterator[Violation]:
    """CG012: selective recompute of a random (dropout, jitter) region inside a CUDA graph."""
    reason = _graphed_recompute_reason(ctx)
    if (
        field(ctx, "model.cuda_graph_impl") != "none"
        and field(ctx, "model.recompute_granularity") == "selective"
        and reason != ""
    ):
        yield _violation("model.recompute_modules", reason=reason)


#: Offload modules the local (Megatron-Core) graph implementation can capture.
_LOCAL_OFFLOADABLE = ("expert_fc1", "moe_act", "fused_group_mlp")


def _graphed_offloading_reason(ctx: Context, impl: Any) -> str:
    mods = field(ctx, "model.cuda_graph_modules")
    offl = value(ctx, "model.offload_modules") or []
    bad_local = [m for m in offl if m not in _LOCAL_OFFLOADABLE]
    if impl == "local" and len(bad_local) > 0:
        return (
            "cuda_graph_impl local can only offload expert_fc1, moe_act and fused_group_mlp, "
            "not " + ", ".join(str(m) for m in bad_local)
        )
    if impl == "local" and len(mods) == 0:
        return (
            "cuda_graph_impl local cannot offload with whole-layer capture "
            "(empty cuda_graph_modules)"
        )
    if "moe" in mods:
        return "the moe graph scope (token-drop MoE) is not supported with activation offloading"
    warmup = value(ctx, "model.cuda_graph_warmup_steps")
    if warmup <= 0:
        return f"cuda_graph_warmup_steps must be greater than 0, got {warmup}"
    if (
        impl == "full_iteration"
        and value(ctx, "model.fine_grained_offloading_max_inflight_offloads") is None
    ):
        return "full-iteration graphs need fine_grained_offloading_max_inflight_offloads to be set"
    return ""


def graphed_fine_grained_offloading(ctx: Context) -> Iterator[Violation]:
    """CG013: fine-grained activation offloading combined with CUDA graphs."""
    impl = field(ctx, "model.cuda_graph_impl")
    reason = _graphed_offloading_reason(ctx, impl)
    if (
        impl != "none"
        and value(ctx, "model.fine_grained_activation_offloading") is True
        and reason != ""
    ):
        yield _violation("model.offload_modules", impl=impl, reason=reason)


def thd_graph_static_packing(ctx: Context) -> Iterator[Violation]:
    """CG016: graphs over packed THD batches need a static sequence count and padding."""
    missing = " and ".join(
        n
        for n in ("thd_max_packed_sequences", "pad_packed_seq_alignment")
        if value(ctx, "model." + n) is None
    )
    if not (
        field(ctx, "model.cuda_graph_impl") != "none"
        and (
            value(ctx, "model.sequence_packing_scheduler") is not None
            or value(ctx, "model.dynamic_context_parallel", False) is True
        )
        and missing != ""
    ):
        return
    cause = (
        "dynamic_context_parallel"
        if value(ctx, "model.dynamic_context_parallel", False) is True
        else "sequence_packing_scheduler " + str(value(ctx, "model.sequence_packing_scheduler"))
    )
    yield _violation("model.cuda_graph_impl", cause=cause, missing=missing)


def full_iteration_nan_check_mlm(ctx: Context) -> Iterator[Violation]:
    """CG026: a Megatron-LM command line with full-iteration graphs and the NaN check on.

    megatron/training/arguments.py::validate_args (core_v0.18.0 and newer) asserts that
    ``--no-check-for-nan-in-loss-and-grad`` is given with ``--cuda-graph-impl full_iteration``;
    just before, ``--fp16`` without ``--loss-scale`` (dynamic loss scaling) turns the check off.
    """
    args = mlm_args(ctx)
    if args is None or args["cuda_graph_impl"] != "full_iteration":
        return
    if args.incomplete and not all(
        args.has(d) for d in ("check_for_nan_in_loss_and_grad", "fp16", "loss_scale")
    ):
        return  # unexpanded words may hold the flag
    if args["check_for_nan_in_loss_and_grad"] is not True:
        return
    if args["fp16"] is True and not args["loss_scale"]:
        return
    yield Violation("model.cuda_graph_impl", at=mlm_flag_at(args, "cuda_graph_impl"))


CHECKS: dict[str, PythonCheck] = {
    "full-iteration-nan-check-mlm": PythonCheck(full_iteration_nan_check_mlm, frozenset()),
    "cuda-graph-settings": PythonCheck(_settings_check("scope-and-modules"), frozenset()),
    "legacy-cuda-graph-flags": PythonCheck(
        _settings_check("legacy"), frozenset({"problem", "hint"})
    ),
    "cuda-graph-full-with-modules": PythonCheck(
        _settings_check("full-mixed"), frozenset({"items"})
    ),
    "unknown-cuda-graph-modules": PythonCheck(
        _settings_check("unknown-module"), frozenset({"unknown", "known"})
    ),
    "deprecated-cuda-graph-modules": PythonCheck(
        _settings_check("deprecated"), frozenset({"problem", "hint"})
    ),
    "full-iteration-graph-modules": PythonCheck(
        _settings_check("full-iteration-modules"), frozenset({"modules"})
    ),
    "inference-cuda-graph-scope": PythonCheck(
        _settings_check("inference-scope"), frozenset({"scope", "impl", "allowed"})
    ),
    "local-cuda-graph": PythonCheck(local_cuda_graph, frozenset({"scope"})),
    "cuda-graph-dynamic-shapes": PythonCheck(cuda_graph_dynamic_shapes, frozenset()),
    "moe-preprocess-graph-host-sync": PythonCheck(
        moe_preprocess_graph_host_sync, frozenset({"cause"})
    ),
    "graphed-recompute-randomness": PythonCheck(
        graphed_recompute_randomness, frozenset({"reason"})
    ),
    "graphed-fine-grained-offloading": PythonCheck(
        graphed_fine_grained_offloading, frozenset({"impl", "reason"})
    ),
    "thd-graph-static-packing": PythonCheck(
        thd_graph_static_packing, frozenset({"cause", "missing"})
    ),
}
