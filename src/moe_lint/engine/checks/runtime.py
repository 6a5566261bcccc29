"""Python checks for the runtime rule family (listed in moe_lint.engine.checks.MODULES).

Most rules are pure data in rules/*.yaml; put a check here only when a condition truly needs
code. Each entry maps a check name (used as `check: <name>`) to a PythonCheck whose params are
the template placeholders its violations provide.

The raw CUDA-graph flags (``enable_cuda_graph``, ``cuda_graph_scope``/``cuda_graph_modules``,
``inference_cuda_graph_scope``) need code before moe-lint's normalization migrates them, because
the conflicts Megatron-Core rejects are conflicts between the *written* spellings. The precision
checks are in :mod:`moe_lint.engine.checks.precision`, the optimizer ones in
:mod:`moe_lint.engine.checks.optimizer`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks.reads import Reads

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context, Violation


def _violation(path: str, **params: Any) -> Violation:
    from moe_lint.engine.evaluate import Violation

    return Violation(path=path, params=params)


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


def cuda_graph_settings(ctx: Context) -> Iterator[Violation]:
    """Conflicting CUDA-graph spellings Megatron-Core rejects at config time."""
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
        yield _violation(
            "model.external_cuda_graph",
            problem="enable_cuda_graph and external_cuda_graph are both true",
            hint="drop both and set cuda_graph_impl: transformer_engine (or local for "
            "full-iteration capture)",
        )
    elif (enable or external) and impl != "none":
        legacy = "enable_cuda_graph" if enable else "external_cuda_graph"
        yield _violation(
            f"model.{legacy}",
            problem=f"the deprecated {legacy} is combined with cuda_graph_impl {impl!r}",
            hint=f"drop {legacy}; cuda_graph_impl alone selects the implementation",
        )
    if impl == "none":
        impl = "local" if enable else "transformer_engine" if external else "none"
    scope = model.get("cuda_graph_scope")
    modules = model.get("cuda_graph_modules")
    from moe_lint.config.normalize import scope_is_canonical

    if scope_is_canonical(cfg):  # Megatron-Core < 0.18 has no cuda_graph_modules field
        modules = None
        scope = "full" if scope is None else scope
    if scope is not None and modules not in ("full", None, []):
        yield _violation(
            "model.cuda_graph_scope",
            problem="cuda_graph_scope (deprecated) and cuda_graph_modules are both set",
            hint="keep only cuda_graph_modules",
        )
        return
    written = "model.cuda_graph_scope" if scope is not None else "model.cuda_graph_modules"
    items = _module_items(scope if scope is not None else modules)
    if "full" in items and items != ["full"]:
        yield _violation(
            written,
            problem=f"'full' (whole layer) is combined with other modules [{', '.join(items)}]",
            hint="use [] (or 'full') for whole-layer capture, or list only the modules",
        )
        return
    unknown = [
        i for i in items if i not in GRAPH_MODULES and i not in _DEPRECATED_MODULES and i != "full"
    ]
    if unknown:
        yield _violation(
            written,
            problem=f"unknown CUDA-graph module(s) [{', '.join(unknown)}]; Megatron-Core knows "
            f"{', '.join(sorted(GRAPH_MODULES))}",
            hint="use the CudaGraphModule names",
        )
    deprecated = sorted({i for i in items if i in _DEPRECATED_MODULES})
    inference = model.get("inference_cuda_graph_scope")
    inference = str(inference).rsplit(".", 1)[-1] if inference is not None else None
    if len(deprecated) > 1:
        yield _violation(
            written,
            problem=f"more than one deprecated value ({', '.join(deprecated)})",
            hint="use cuda_graph_impl: full_iteration or inference_cuda_graph_scope instead",
        )
        return
    if deprecated == ["full_iteration"]:
        if impl not in ("none", "local", "full_iteration"):
            yield _violation(
                written,
                problem=f"'full_iteration' cannot be combined with cuda_graph_impl {impl!r}",
                hint="set cuda_graph_impl: full_iteration and an empty module list",
            )
            return
        if inference not in (None, "none"):
            yield _violation(
                "model.inference_cuda_graph_scope",
                problem=f"'full_iteration' cannot be combined with inference_cuda_graph_scope "
                f"{inference!r}",
                hint="drop inference_cuda_graph_scope",
            )
            return
        impl = "full_iteration"
    elif deprecated == ["full_iteration_inference"]:
        if impl not in ("none", "local"):
            yield _violation(
                written,
                problem="'full_iteration_inference' cannot be combined with cuda_graph_impl "
                f"{impl!r}",
                hint="use cuda_graph_impl: local with inference_cuda_graph_scope: block",
            )
            return
        if inference not in (None, "block"):
            yield _violation(
                "model.inference_cuda_graph_scope",
                problem="'full_iteration_inference' cannot be combined with "
                f"inference_cuda_graph_scope {inference!r}",
                hint="use inference_cuda_graph_scope: block",
            )
            return
        if impl != "none":
            inference = "block"
    real = [i for i in items if i in GRAPH_MODULES]
    if impl == "full_iteration" and real:
        yield _violation(
            written,
            problem="cuda_graph_impl full_iteration needs an empty module list, got "
            f"[{', '.join(real)}]",
            hint="drop cuda_graph_modules (full-iteration capture takes the whole step)",
        )
    if impl in _INFERENCE_SCOPES:
        scope_eff = inference or ("layer" if impl == "local" else "none")
        if scope_eff not in _INFERENCE_SCOPES[impl]:
            yield _violation(
                "model.inference_cuda_graph_scope",
                problem=f"inference_cuda_graph_scope {scope_eff!r} is not allowed with "
                f"cuda_graph_impl {impl!r} (allowed: {', '.join(sorted(_INFERENCE_SCOPES[impl]))})",
                hint="only cuda_graph_impl local supports layer/block inference graphs",
            )


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
# Rules converted from long expressions: each reads what its expression read, in the same order
# (an unknown field or fact raises NotDerivable: no finding), and yields the template values.
# The ``r.value(field, default)`` defaults are the expressions' own, kept literally.
# --------------------------------------------------------------------------------------------


def _softmax_and_packing(r: Reads) -> tuple[str, bool]:
    """(softmax_type, packed THD batches) as RT002/RT003 read them."""
    st = r.to_str(r.value("model.softmax_type", "vanilla"))
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
    "cuda-graph-settings": PythonCheck(cuda_graph_settings, frozenset({"problem", "hint"})),
    "local-cuda-graph": PythonCheck(local_cuda_graph, frozenset({"scope"})),
    "cp-attention-without-te-backend": PythonCheck(
        cp_attention_without_te_backend, frozenset({"reason"}), frozenset({"cp"})
    ),
    "sink-softmax-thd-needs-cudnn": PythonCheck(
        sink_softmax_thd_needs_cudnn, frozenset({"st", "cp_note"}), frozenset({"cp"})
    ),
}
