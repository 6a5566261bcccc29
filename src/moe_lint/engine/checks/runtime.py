"""Python checks for the runtime rule family (listed in moe_lint.engine.checks.MODULES).

Most rules are pure data in rules/*.yaml; put a check here only when a condition truly needs
code. Each entry maps a check name (used as `check: <name>`) to a PythonCheck whose params are
the template placeholders its violations provide.

The checks here need code for the effective precision fields after Bridge's
``MixedPrecisionConfig.setup`` copies every field of the mixed-precision config onto the model,
optimizer and DDP configs of the same name (docs/domain/01 §b.8). The engine's normalization
resolves only bf16/fp16/fp8/fp8_recipe/fp4; the checks below need the rest (fp8_param,
first_last_layers_bf16, reuse_grad_buf_..., ...). (The CUDA-graph checks are in cudagraph.py.)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from moe_lint.config import fields
from moe_lint.config.fields import UNKNOWN
from moe_lint.config.mixed_precision import DEFAULT_RECIPE, MP_DEFAULTS, recipe_values
from moe_lint.engine.catalogue import PythonCheck

if TYPE_CHECKING:
    from moe_lint.config.normalize import Config
    from moe_lint.engine.evaluate import Context, Violation


def _violation(path: str, **params: Any) -> Violation:
    from moe_lint.engine.evaluate import Violation

    return Violation(path=path, params=params)


def _show(value: Any) -> str:
    if isinstance(value, dict) and "_target_" in value:
        return str(value["_target_"])
    if isinstance(value, str):
        return repr(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# --------------------------------------------------------------------------------------------
# Mixed precision: the recipe table is moe_lint.config.mixed_precision (one table for all readers)
# --------------------------------------------------------------------------------------------

_DTYPE_FIELDS = frozenset({"params_dtype", "pipeline_dtype", "autocast_dtype"})
#: The engine already resolves these five (and says so in its notes); the rest are ours.
PRECISION_SECTIONS = ("model", "optimizer", "ddp")


@dataclass
class PrecisionView:
    """How Bridge's mixed-precision step resolves the precision fields of one config.

    kind: ``recipe`` (a registered name), ``block`` (a mapping), ``null`` (``mixed_precision:
    null``: the sections keep their own values), ``absent`` (an override file without the key: the
    recipe's own mixed_precision, ``bf16_mixed`` by default, decides) or ``unknown`` (a name
    Bridge does not register).
    """

    kind: str
    source: str
    #: MixedPrecisionConfig values that are known (all of them for a recipe or a full dump).
    values: dict[str, Any] = field(default_factory=dict)
    complete: bool = False

    def mp(self, name: str) -> Any:
        """The mixed-precision config's own value of ``name``, or UNKNOWN."""
        if name in self.values:
            return self.values[name]
        if self.complete:
            return MP_DEFAULTS.get(name)
        return UNKNOWN


def precision_view(cfg: Config) -> PrecisionView:
    mp = cfg.raw.get("mixed_precision", UNKNOWN)
    if mp is UNKNOWN:
        if cfg.form == "full-dump":
            return PrecisionView("null", "no mixed_precision")
        return PrecisionView("absent", "the recipe's mixed_precision")
    if mp is None:
        return PrecisionView("null", "mixed_precision: null")
    if isinstance(mp, str):
        values = recipe_values(mp)
        if values is None:
            return PrecisionView("unknown", f"mixed_precision {mp}")
        return PrecisionView("recipe", f"mixed_precision {mp}", values, complete=True)
    if isinstance(mp, dict):
        values = {k: v for k, v in mp.items() if k in MP_DEFAULTS}
        for param, gather in (("fp8_param", "fp8_param_gather"), ("fp4_param", "fp4_param_gather")):
            if values.get(gather) is not None:
                values[param] = values[gather]
            elif values.get(param) is not None:
                values[gather] = values[param]
        # A block is a whole MixedPrecisionConfig: the fields it leaves out take their defaults.
        return PrecisionView("block", "the mixed_precision block", values, complete=True)
    return PrecisionView("unknown", "mixed_precision")


def _has_field(section: str, name: str) -> bool:
    return name in fields.section(section)


def effective(cfg: Config, dotted: str, view: PrecisionView | None = None) -> Any:
    """The value ``section.field`` has after Bridge's mixed-precision step (or UNKNOWN)."""
    section, name = dotted.split(".", 1)
    view = view or precision_view(cfg)
    if section in PRECISION_SECTIONS and name in MP_DEFAULTS and _has_field(section, name):
        if view.kind in ("recipe", "block"):
            return view.mp(name)
        if view.kind != "null":
            return UNKNOWN
    if dotted in cfg.unknown:
        return UNKNOWN
    return cfg.get(dotted)


def raw_value(cfg: Config, dotted: str) -> Any:
    """The value as written in the file or an override (before normalization), or UNKNOWN."""
    return cfg.raw_get(dotted, UNKNOWN)


def dtype_name(value: Any) -> str | None:
    """``torch.bfloat16`` / ``{_target_: torch.bfloat16}`` / ``bf16`` -> ``bfloat16``."""
    if isinstance(value, dict):
        value = value.get("_target_")
    if value is None:
        return None
    text = str(value).strip().lower()
    text = text.removeprefix("torch.")
    aliases = {
        "bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "half": "float16",
        "float16": "float16", "fp32": "float32", "float": "float32", "float32": "float32",
        "fp8": "uint8", "uint8": "uint8",
    }  # fmt: skip
    return aliases.get(text, text)


def _same(a: Any, b: Any, name: str) -> bool:
    if name in _DTYPE_FIELDS:
        return dtype_name(a) == dtype_name(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a) == bool(b) if a is not None and b is not None else a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    return bool(a == b)


def mixed_precision_overwrites(ctx: Context) -> Iterator[Violation]:
    """Model/optimizer/DDP precision fields written here that mixed_precision overwrites."""
    cfg = ctx.config
    if cfg.form == "full-dump":
        return  # a dump is taken before setup(): its section copies are not user choices
    view = precision_view(cfg)
    if view.kind in ("null", "unknown"):
        return
    default = recipe_values(DEFAULT_RECIPE) or {}
    for section in PRECISION_SECTIONS:
        for name in MP_DEFAULTS:
            dotted = f"{section}.{name}"
            if not _has_field(section, name):
                continue
            written = raw_value(cfg, dotted)
            if written is UNKNOWN:
                continue
            if view.kind == "absent":
                used = default.get(name)
                if _same(written, used, name):
                    continue
                yield _violation(
                    dotted,
                    key=dotted,
                    written=_show(written),
                    source=view.source,
                    used=(
                        f"the recipe's value ({_show(used)} under {DEFAULT_RECIPE}, "
                        "the default of Bridge's recipes)"
                    ),
                    remedy=(
                        f"set it through mixed_precision (a recipe name, or mixed_precision.{name})"
                        ", or write mixed_precision: null to keep the section's own values"
                    ),
                )
                continue
            if view.kind == "block" and name not in view.values:
                continue  # only what the block itself sets is reported
            used = view.mp(name)
            if used is UNKNOWN or _same(written, used, name):
                continue
            yield _violation(
                dotted,
                key=dotted,
                written=_show(written),
                source=view.source,
                used=_show(used),
                remedy=f"drop it, or set mixed_precision.{name} (a block) instead of {dotted}",
            )


# --------------------------------------------------------------------------------------------
# Precision options that need fp8/fp4 (TransformerConfig.__post_init__, MixedPrecisionConfig)
# --------------------------------------------------------------------------------------------


def _truthy(value: Any) -> bool:
    return value is not UNKNOWN and bool(value)


def _precision_path(cfg: Config, view: PrecisionView, name: str) -> str:
    """Where to point a finding about precision field ``name``: the line that decides it."""
    block = cfg.raw.get("mixed_precision")
    if view.kind == "block" and isinstance(block, dict) and name in block:
        return f"mixed_precision.{name}"
    if view.kind in ("recipe", "block"):
        return "mixed_precision"
    return f"model.{name}"


def fp8_options_without_fp8(ctx: Context) -> Iterator[Violation]:
    """fp8_param / fp8_output_proj / fp4_param without the precision they belong to."""
    cfg = ctx.config
    view = precision_view(cfg)
    fp8 = effective(cfg, "model.fp8", view)
    fp4 = effective(cfg, "model.fp4", view)
    recipe = effective(cfg, "model.fp8_recipe", view)
    param_path = _precision_path(cfg, view, "fp8_param_gather")
    if param_path == "model.fp8_param_gather":
        param_path = "model.fp8_param"
    if fp8 is None and _truthy(effective(cfg, "model.fp8_param", view)):
        yield _violation(
            param_path,
            problem="fp8_param (fp8 parameters, kept in sync with fp8_param_gather) is on but fp8 "
            "is not set",
            hint="set fp8 (e.g. mixed_precision: bf16_with_fp8_current_scaling_mixed) or turn "
            "fp8_param_gather off",
        )
    proj = cfg.get("model.fp8_output_proj")
    if proj is True and fp8 is not UNKNOWN and recipe is not UNKNOWN:
        if fp8 is None:
            yield _violation(
                "model.fp8_output_proj",
                problem="fp8_output_proj is on but fp8 is not set",
                hint="turn fp8_output_proj off or use mixed_precision: bf16_with_mxfp8_mixed",
            )
        elif recipe != "mxfp8":
            yield _violation(
                "model.fp8_output_proj",
                problem=f"fp8_output_proj needs fp8_recipe 'mxfp8', but the recipe is {recipe!r}",
                hint="turn fp8_output_proj off or use the mxfp8 recipe",
            )
    # MixedPrecisionConfig has fp4_param(_gather) since Bridge 0.4.2 (PR #3364); older Bridge drops
    # the block's keys (FP012), so there only the model's own field reaches Megatron-Core.
    if view.kind in ("block", "recipe") and _bridge_below(ctx, _FP4_PARAM_BRIDGE):
        fp4_param = UNKNOWN if "model.fp4_param" in cfg.unknown else cfg.get("model.fp4_param")
    else:
        fp4_param = effective(cfg, "model.fp4_param", view)
    if fp4 is None and _truthy(fp4_param):
        yield _violation(
            "model.fp4_param",
            problem="fp4_param is on but fp4 is not set",
            hint="turn fp4_param off or set fp4 (mixed_precision: bf16_with_nvfp4_mixed)",
        )


#: First Bridge release whose MixedPrecisionConfig has fp4_param / fp4_param_gather (PR #3364,
#: cherry-picked into v0.4.2; absent from v0.3.x, v0.4.0 and v0.4.1).
_FP4_PARAM_BRIDGE = "0.4.2"


def _bridge_below(ctx: Context, text: str) -> bool:
    """Is the Bridge in use (stated, else the newest release) older than ``text``?"""
    from moe_lint.config.versions import stated_below

    return stated_below(ctx.settings.versions if ctx.settings else None, "bridge", text)


def fp4_param_block_old_bridge(ctx: Context) -> Iterator[Violation]:
    """fp4_param / fp4_param_gather in a mixed_precision block on a Bridge that lacks them."""
    cfg = ctx.config
    block = cfg.raw.get("mixed_precision")
    if not isinstance(block, dict) or not _bridge_below(ctx, _FP4_PARAM_BRIDGE):
        return
    for name in ("fp4_param_gather", "fp4_param"):
        if name in block:
            yield _violation(f"mixed_precision.{name}", key=name)


def fp8_recipe_options(ctx: Context) -> Iterator[Violation]:
    """first/last-layer BF16 with delayed scaling, their layer counts, custom recipes."""
    cfg = ctx.config
    view = precision_view(cfg)
    fp8 = effective(cfg, "model.fp8", view)
    recipe = effective(cfg, "model.fp8_recipe", view)
    first_last = effective(cfg, "model.first_last_layers_bf16", view)
    if fp8 not in (None, UNKNOWN) and first_last is True:
        if recipe == "delayed":
            yield _violation(
                _precision_path(cfg, view, "first_last_layers_bf16"),
                problem="first_last_layers_bf16 is on with the delayed-scaling FP8 recipe, which "
                "does not support BF16 first/last layers",
                hint="use a current-scaling recipe (tensorwise) or turn first_last_layers_bf16 off",
            )
        num_layers = cfg.get("model.num_layers")
        pp = cfg.get("model.pipeline_model_parallel_size") or 1
        if "model.num_layers" not in cfg.unknown and isinstance(num_layers, int) and pp:
            limit = num_layers // int(pp)
            for name in ("num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16"):
                count = effective(cfg, f"model.{name}", view)
                if (
                    isinstance(count, int)
                    and not isinstance(count, bool)
                    and not (0 <= count <= limit)
                ):
                    yield _violation(
                        _precision_path(cfg, view, name),
                        problem=f"{name} = {count} is outside 0..{limit} (layers per pipeline "
                        f"stage = {num_layers} // PP{pp})",
                        hint=f"set {name} between 0 and {limit}",
                    )
    for kind, fallback in (("fp8", "pick a built-in recipe"), ("fp4", "use fp4_recipe nvfp4")):
        enabled = fp8 if kind == "fp8" else effective(cfg, "model.fp4", view)
        chosen = recipe if kind == "fp8" else effective(cfg, "model.fp4_recipe", view)
        factory = f"model.{kind}_quantizer_factory"
        if enabled not in (None, UNKNOWN) and chosen == "custom" and not cfg.get(factory):
            yield _violation(
                _precision_path(cfg, view, f"{kind}_recipe"),
                problem=f"{kind}_recipe 'custom' needs {factory} (an import path)",
                hint=f"set {factory} or {fallback}",
            )


def _fsdp(cfg: Config) -> bool:
    return bool(cfg.get("dist.use_megatron_fsdp")) or bool(cfg.get("ddp.use_megatron_fsdp"))


def mxfp8_param_gather(ctx: Context) -> Iterator[Violation]:
    """MXFP8 parameter all-gather needs the gradient buffer reused (Bridge, MCore DDP, GTP)."""
    cfg = ctx.config
    view = precision_view(cfg)
    fsdp = _fsdp(cfg)
    if view.kind in ("recipe", "block") and not fsdp:
        gather, recipe = view.mp("fp8_param_gather"), view.mp("fp8_recipe")
        reuse = view.mp("reuse_grad_buf_for_mxfp8_param_ag")
        if gather is True and recipe == "mxfp8" and reuse is not UNKNOWN and not reuse:
            yield _violation(
                _precision_path(cfg, view, "reuse_grad_buf_for_mxfp8_param_ag"),
                problem="fp8_param_gather with fp8_recipe 'mxfp8' requires "
                "reuse_grad_buf_for_mxfp8_param_ag: true (Bridge ConfigContainer.validate)",
                hint="set mixed_precision.reuse_grad_buf_for_mxfp8_param_ag: true",
            )
    reuse_ddp = effective(cfg, "ddp.reuse_grad_buf_for_mxfp8_param_ag", view)
    gather_ddp = effective(cfg, "ddp.fp8_param_gather", view)
    if reuse_ddp is True and gather_ddp is False and not fsdp:
        yield _violation(
            "ddp.reuse_grad_buf_for_mxfp8_param_ag"
            if view.kind not in ("recipe", "block")
            else _precision_path(cfg, view, "reuse_grad_buf_for_mxfp8_param_ag"),
            problem="reuse_grad_buf_for_mxfp8_param_ag needs fp8_param_gather "
            "(DistributedDataParallelConfig)",
            hint="turn fp8_param_gather on or reuse_grad_buf_for_mxfp8_param_ag off",
        )
    gtp = [cfg.get("model.gtp_weight_remat_size"), cfg.get("model.expert_gtp_weight_remat_size")]
    active = any(isinstance(s, int) and not isinstance(s, bool) and s > 1 for s in gtp)
    fp8 = effective(cfg, "model.fp8", view)
    recipe = effective(cfg, "model.fp8_recipe", view)
    if active and fp8 not in (None, UNKNOWN) and recipe == "mxfp8":
        if fsdp:
            yield _violation(
                "dist.use_megatron_fsdp"
                if cfg.get("dist.use_megatron_fsdp")
                else "ddp.use_megatron_fsdp",
                problem="GTP weight rematerialization with MXFP8 is not supported with "
                "Megatron-FSDP (it needs reuse_grad_buf_for_mxfp8_param_ag)",
                hint="turn Megatron-FSDP off or drop GTP",
            )
        elif gather_ddp is False:
            yield _violation(
                "model.gtp_weight_remat_size",
                problem="GTP with MXFP8 requires fp8_param_gather (GTP keeps no BF16 weight copy)",
                hint="turn fp8_param_gather on (bf16_with_mxfp8_mixed does)",
            )
        elif reuse_ddp is False:
            yield _violation(
                "model.gtp_weight_remat_size",
                problem="GTP with MXFP8 requires reuse_grad_buf_for_mxfp8_param_ag",
                hint="set reuse_grad_buf_for_mxfp8_param_ag: true (bf16_with_mxfp8_mixed does)",
            )


def precision_flags(ctx: Context) -> Iterator[Violation]:
    """bf16 with fp16 (model or optimizer), fp8 with fp4, after mixed precision is applied."""
    cfg = ctx.config
    view = precision_view(cfg)
    for section in ("model", "optimizer"):
        bf16 = effective(cfg, f"{section}.bf16", view)
        fp16 = effective(cfg, f"{section}.fp16", view)
        if bf16 is True and fp16 is True:
            path = (
                _precision_path(cfg, view, "fp16")
                if view.kind in ("recipe", "block")
                else f"{section}.fp16"
            )
            yield _violation(
                path,
                problem=f"{section}.bf16 and {section}.fp16 are both true",
                hint="keep one of bf16 and fp16",
            )
            if view.kind in ("recipe", "block"):
                break  # one mixed-precision setting, one finding
    fp8 = effective(cfg, "model.fp8", view)
    fp4 = effective(cfg, "model.fp4", view)
    if fp8 not in (None, UNKNOWN) and fp4 not in (None, UNKNOWN):
        yield _violation(
            _precision_path(cfg, view, "fp4"),
            problem=f"fp8 ({fp8!r}) and fp4 ({fp4!r}) are both set; they cannot be used together",
            hint="choose FP8 or FP4 (NVFP4), not both",
        )


def optimizer_step_overlap_buffer_reuse(ctx: Context) -> Iterator[Violation]:
    """overlap_param_gather_with_optimizer_step together with the MXFP8 gradient-buffer reuse."""
    cfg = ctx.config
    if cfg.get("optimizer.overlap_param_gather_with_optimizer_step") is not True:
        return
    view = precision_view(cfg)
    reuse = effective(cfg, "optimizer.reuse_grad_buf_for_mxfp8_param_ag", view)
    if reuse is True:
        source = view.source if view.kind in ("recipe", "block") else "optimizer"
        yield _violation("optimizer.overlap_param_gather_with_optimizer_step", source=source)


# --------------------------------------------------------------------------------------------
# Optimizer state dtypes (OptimizerConfig.__post_init__)
# --------------------------------------------------------------------------------------------

_STATE_DTYPES = ("main_grads_dtype", "main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype")


def optimizer_state_dtypes(ctx: Context) -> Iterator[Violation]:
    """Non-fp32 optimizer state dtypes without the precision-aware optimizer."""
    cfg = ctx.config
    aware_known = cfg.form == "full-dump" or cfg.explicit("optimizer.use_precision_aware_optimizer")
    if not aware_known or cfg.get("optimizer.use_precision_aware_optimizer"):
        return
    for name in _STATE_DTYPES:
        written = raw_value(cfg, f"optimizer.{name}")
        if written is UNKNOWN or written is None:
            continue
        dtype = dtype_name(written)
        if dtype is None or dtype == "float32":
            continue
        yield _violation(f"optimizer.{name}", field=name, dtype=dtype)


CHECKS: dict[str, PythonCheck] = {
    "mixed-precision-overwrites": PythonCheck(
        mixed_precision_overwrites, frozenset({"key", "written", "source", "used", "remedy"})
    ),
    "fp8-options-without-fp8": PythonCheck(fp8_options_without_fp8, frozenset({"problem", "hint"})),
    "fp4-param-block-old-bridge": PythonCheck(fp4_param_block_old_bridge, frozenset({"key"})),
    "fp8-recipe-options": PythonCheck(fp8_recipe_options, frozenset({"problem", "hint"})),
    "mxfp8-param-gather": PythonCheck(mxfp8_param_gather, frozenset({"problem", "hint"})),
    "optimizer-state-dtypes": PythonCheck(optimizer_state_dtypes, frozenset({"field", "dtype"})),
    "precision-flags": PythonCheck(precision_flags, frozenset({"problem", "hint"})),
    "optimizer-step-overlap-buffer-reuse": PythonCheck(
        optimizer_step_overlap_buffer_reuse, frozenset({"source"})
    ),
}
