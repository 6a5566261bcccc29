"""Python checks for the precision rule family (FP codes, rules/precision.yaml).

They need code for the effective precision fields after Bridge's ``MixedPrecisionConfig.setup``
copies every field of the mixed-precision config onto the model, optimizer and DDP configs of the
same name (docs/domain/01 §b.8). The engine's normalization resolves only
bf16/fp16/fp8/fp8_recipe/fp4; the checks below need the rest (fp8_param,
first_last_layers_bf16, reuse_grad_buf_..., ...). :func:`precision_view` and :func:`effective`
are also read by the optimizer checks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.config import fields
from moe_lint.config.fields import UNKNOWN
from moe_lint.config.mixed_precision import DEFAULT_RECIPE, MP_DEFAULTS, recipe_values
from moe_lint.config.versions import stated_below
from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks.reads import Reads
from moe_lint.engine.checks.reads import violation as _violation
from moe_lint.engine.evaluate import Violation
from moe_lint.records import field, record

if TYPE_CHECKING:
    from moe_lint.config.normalize import Config
    from moe_lint.engine.evaluate import Context


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


@record
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
        if cfg.form == "megatron-lm":  # no recipe: the flags are the precision settings
            return PrecisionView("null", "Megatron-LM's precision flags")
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


def _fp8_options(ctx: Context) -> Iterator[tuple[str, Violation]]:
    """fp8_param / fp8_output_proj / fp4_param without the precision they belong to.

    Yields (rule code, violation): FP002 fp8_param, FP014 / FP015 fp8_output_proj without fp8 /
    without mxfp8, FP016 fp4_param.
    """
    cfg = ctx.config
    view = precision_view(cfg)
    fp8 = effective(cfg, "model.fp8", view)
    fp4 = effective(cfg, "model.fp4", view)
    recipe = effective(cfg, "model.fp8_recipe", view)
    param_path = _precision_path(cfg, view, "fp8_param_gather")
    if param_path == "model.fp8_param_gather":
        param_path = "model.fp8_param"
    if fp8 is None and _truthy(effective(cfg, "model.fp8_param", view)):
        yield "FP002", _violation(param_path)
    proj = cfg.get("model.fp8_output_proj")
    if proj is True and fp8 is not UNKNOWN and recipe is not UNKNOWN:
        if fp8 is None:
            yield "FP014", _violation("model.fp8_output_proj")
        elif recipe != "mxfp8":
            yield "FP015", _violation("model.fp8_output_proj", recipe=repr(recipe))
    # MixedPrecisionConfig has fp4_param(_gather) since Bridge 0.4.2 (PR #3364); older Bridge drops
    # the block's keys (FP012), so there only the model's own field reaches Megatron-Core.
    if view.kind in ("block", "recipe") and _bridge_below(ctx, _FP4_PARAM_BRIDGE):
        fp4_param = UNKNOWN if "model.fp4_param" in cfg.unknown else cfg.get("model.fp4_param")
    else:
        fp4_param = effective(cfg, "model.fp4_param", view)
    if fp4 is None and _truthy(fp4_param):
        yield "FP016", _violation("model.fp4_param")


#: First Bridge release whose MixedPrecisionConfig has fp4_param / fp4_param_gather (PR #3364,
#: cherry-picked into v0.4.2; absent from v0.3.x, v0.4.0 and v0.4.1).
_FP4_PARAM_BRIDGE = "0.4.2"


def _bridge_below(ctx: Context, text: str) -> bool:
    """Is the Bridge in use (stated, else the newest release) older than ``text``?"""
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


def _recipe_options(ctx: Context) -> Iterator[tuple[str, Violation]]:
    """first/last-layer BF16 with delayed scaling (FP003), their layer counts (FP017), custom
    recipes without a quantizer factory (FP018); yields (rule code, violation)."""
    cfg = ctx.config
    view = precision_view(cfg)
    fp8 = effective(cfg, "model.fp8", view)
    recipe = effective(cfg, "model.fp8_recipe", view)
    first_last = effective(cfg, "model.first_last_layers_bf16", view)
    if fp8 not in (None, UNKNOWN) and first_last is True:
        if recipe == "delayed":
            yield "FP003", _violation(_precision_path(cfg, view, "first_last_layers_bf16"))
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
                    yield (
                        "FP017",
                        _violation(
                            _precision_path(cfg, view, name),
                            field=name,
                            count=count,
                            limit=limit,
                            num_layers=num_layers,
                            pp=pp,
                        ),
                    )
    for kind, fallback in (("fp8", "pick a built-in recipe"), ("fp4", "use fp4_recipe nvfp4")):
        enabled = fp8 if kind == "fp8" else effective(cfg, "model.fp4", view)
        chosen = recipe if kind == "fp8" else effective(cfg, "model.fp4_recipe", view)
        factory = f"model.{kind}_quantizer_factory"
        if enabled not in (None, UNKNOWN) and chosen == "custom" and not cfg.get(factory):
            yield (
                "FP018",
                _violation(
                    _precision_path(cfg, view, f"{kind}_recipe"),
                    kind=kind,
                    factory=factory,
                    fallback=fallback,
                ),
            )


def _fsdp(cfg: Config) -> bool:
    return bool(cfg.get("dist.use_megatron_fsdp")) or bool(cfg.get("ddp.use_megatron_fsdp"))


def _mxfp8_gather(ctx: Context) -> Iterator[tuple[str, Violation]]:
    """MXFP8 parameter all-gather needs the gradient buffer reused: Bridge (FP009), MCore DDP
    (FP019), GTP with Megatron-FSDP (FP020) or without its prerequisites (FP021); yields
    (rule code, violation)."""
    cfg = ctx.config
    view = precision_view(cfg)
    fsdp = _fsdp(cfg)
    if view.kind in ("recipe", "block") and not fsdp:
        gather, recipe = view.mp("fp8_param_gather"), view.mp("fp8_recipe")
        reuse = view.mp("reuse_grad_buf_for_mxfp8_param_ag")
        if gather is True and recipe == "mxfp8" and reuse is not UNKNOWN and not reuse:
            yield (
                "FP009",
                _violation(_precision_path(cfg, view, "reuse_grad_buf_for_mxfp8_param_ag")),
            )
    reuse_ddp = effective(cfg, "ddp.reuse_grad_buf_for_mxfp8_param_ag", view)
    gather_ddp = effective(cfg, "ddp.fp8_param_gather", view)
    if reuse_ddp is True and gather_ddp is False and not fsdp:
        yield (
            "FP019",
            _violation(
                "ddp.reuse_grad_buf_for_mxfp8_param_ag"
                if view.kind not in ("recipe", "block")
                else _precision_path(cfg, view, "reuse_grad_buf_for_mxfp8_param_ag")
            ),
        )
    gtp = [cfg.get("model.gtp_weight_remat_size"), cfg.get("model.expert_gtp_weight_remat_size")]
    active = any(isinstance(s, int) and not isinstance(s, bool) and s > 1 for s in gtp)
    fp8 = effective(cfg, "model.fp8", view)
    recipe = effective(cfg, "model.fp8_recipe", view)
    if active and fp8 not in (None, UNKNOWN) and recipe == "mxfp8":
        if fsdp:
            yield (
                "FP020",
                _violation(
                    "dist.use_megatron_fsdp"
                    if cfg.get("dist.use_megatron_fsdp")
                    else "ddp.use_megatron_fsdp"
                ),
            )
        elif gather_ddp is False:
            yield (
                "FP021",
                _violation(
                    "model.gtp_weight_remat_size",
                    needed="fp8_param_gather (GTP keeps no BF16 weight copy)",
                    remedy="turn fp8_param_gather on",
                ),
            )
        elif reuse_ddp is False:
            yield (
                "FP021",
                _violation(
                    "model.gtp_weight_remat_size",
                    needed="reuse_grad_buf_for_mxfp8_param_ag",
                    remedy="set reuse_grad_buf_for_mxfp8_param_ag: true",
                ),
            )


def _precision_flags(ctx: Context) -> Iterator[tuple[str, Violation]]:
    """bf16 with fp16, model or optimizer (FP001), fp8 with fp4 (FP013), after mixed precision
    is applied; yields (rule code, violation)."""
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
            yield "FP001", _violation(path, section=section)
            if view.kind in ("recipe", "block"):
                break  # one mixed-precision setting, one finding
    fp8 = effective(cfg, "model.fp8", view)
    fp4 = effective(cfg, "model.fp4", view)
    if fp8 not in (None, UNKNOWN) and fp4 not in (None, UNKNOWN):
        yield "FP013", _violation(_precision_path(cfg, view, "fp4"), fp8=repr(fp8), fp4=repr(fp4))


# --------------------------------------------------------------------------------------------
# One code, one problem: FP001/FP002/FP003/FP009 were split (issue 11); each check above walks
# its settings once and tags what it finds with the code of the rule that reports it.
# --------------------------------------------------------------------------------------------


def _only(code: str, walk: Callable[[Context], Iterator[tuple[str, Violation]]]) -> Any:
    def check(ctx: Context) -> Iterator[Violation]:
        for found, violation in walk(ctx):
            if found == code:
                yield violation

    check.__name__ = check.__qualname__ = f"{walk.__name__.lstrip('_')}_{code.lower()}"
    check.__doc__ = f"The {code} findings of {walk.__name__}."
    return check


# --------------------------------------------------------------------------------------------
# Rules converted from long expressions: each reads what its expression read, in the same order
# (an unknown field or fact raises NotDerivable: no finding), and yields the template values.
# The ``r.value(field, default)`` defaults are the expressions' own, kept literally.
# --------------------------------------------------------------------------------------------


def _low_precision(r: Reads) -> bool:
    """``explicit('mixed_precision') and (model.fp8 is not None or model.fp4 is not None)``."""
    return bool(
        r.explicit("mixed_precision")
        and (r.field("model.fp8") is not None or r.field("model.fp4") is not None)
    )


def _recipe(r: Reads) -> Any:
    """The FP8 recipe as FP004/FP005/FP007/FP008 read it (Megatron-Core's default ``delayed``
    with ``mixed_precision: null``, else the ``tensorwise`` of Bridge's MixedPrecisionConfig)."""
    return r.value(
        "model.fp8_recipe", "delayed" if r.value("mixed_precision") is None else "tensorwise"
    )


def _align(r: Reads, recipe: Any) -> int:
    return 32 if r.field("model.fp4") is not None or recipe == "mxfp8" else 16


def _quantized(r: Reads, recipe: Any) -> str:
    if r.field("model.fp4") is not None:
        return "NVFP4"
    return "MXFP8" if recipe == "mxfp8" else r.cat("FP8 (", r.to_str(recipe), ")")


def fp8_recipe_needs_newer_te(ctx: Context) -> Iterator[Violation]:
    """FP004: an FP8 recipe or FP4 that the Transformer Engine in use cannot build."""
    r = Reads(ctx)
    recipe = _recipe(r)
    if r.field("model.fp4") is not None:
        need: str | None = "2.7"
    else:
        need = {"tensorwise": "2.2", "blockwise": "2.3", "mxfp8": "2.1"}.get(
            recipe if isinstance(recipe, str) else ""
        )
    if not (_low_precision(r) and need is not None and r.version_below("transformer-engine", need)):
        return
    what = (
        "FP4 (NVFP4)"
        if r.field("model.fp4") is not None
        else r.cat("fp8_recipe ", r.to_str(recipe))
    )
    yield Violation("", {"what": what, "need": need, "te": r.to_str(r.fact("te_version"))})


def precision_not_supported_by_gpu(ctx: Context) -> Iterator[Violation]:
    """FP005: a low-precision format the GPU's compute capability does not support."""
    r = Reads(ctx)
    recipe = _recipe(r)
    if r.field("model.fp4") is not None:
        ok = r.fact("gpu_nvfp4")
    elif recipe == "mxfp8":
        ok = r.fact("gpu_mxfp8")
    elif recipe == "blockwise":
        ok = r.fact("gpu_fp8_blockwise")
    else:
        ok = r.fact("gpu_fp8")
    if not (_low_precision(r) and not ok):
        return
    if r.field("model.fp4") is not None:
        what = "NVFP4 (fp4)"
    elif recipe == "mxfp8":
        what = "MXFP8"
    elif recipe == "blockwise":
        what = "blockwise (subchannel) FP8"
    else:
        what = r.cat("FP8 (", r.to_str(recipe), ")")
    if r.field("model.fp4") is not None or recipe == "mxfp8":
        need = "Blackwell (compute capability 10.0+)"
    elif recipe == "blockwise":
        need = "Hopper or newer (compute capability 9.0+)"
    else:
        need = "compute capability 8.9+ (Ada, Hopper, Blackwell)"
    if r.fact("gpu_fp8_blockwise"):
        instead = "bf16_with_fp8_subchannel_scaling_mixed or bf16_with_fp8_current_scaling_mixed"
    elif r.fact("gpu_fp8"):
        instead = "bf16_with_fp8_current_scaling_mixed"
    else:
        instead = "bf16_mixed"
    yield Violation("", {"what": what, "need": need, "instead": instead, "check": _te_refusal(r)})


def _te_refusal(r: Reads) -> str:
    """Which Transformer Engine check refuses the format first, with its message (TE 2.18
    ``pytorch/quantization.py``): ``autocast.__enter__`` calls ``check_recipe_support``, which
    tests the recipe's own format for the FP8 recipes and MXFP8 but does not test NVFP4;
    ``FP8GlobalStateManager.autocast_enter`` then asserts FP8 support, and NVFP4 support for an
    NVFP4 recipe."""
    if r.field("model.fp4") is not None:
        if not r.fact("gpu_fp8"):
            return (
                'FP8GlobalStateManager.autocast_enter asserts "Device compute capability 8.9 or '
                'higher required for FP8 execution." (check_recipe_support does not test NVFP4)'
            )
        return (
            'FP8GlobalStateManager.autocast_enter asserts "Device compute capability 10.0 or '
            'higher required for NVFP4 execution." (check_recipe_support does not test NVFP4)'
        )
    recipe = _recipe(r)
    if recipe == "mxfp8":
        if r.fact("gpu_cc") >= 12.0:
            text = "MXFP8 (for all gemm layouts) is not supported on 12.0+ architectures yet."
        else:
            text = "Device compute capability 10.0 or higher required for MXFP8 execution."
    elif recipe == "blockwise":
        text = "FP8 block scaled GEMM requires compute capability 9.0 or higher and CUDA >= 12.9."
    else:
        text = "Device compute capability 8.9 or higher required for FP8 execution."
    return f'check_recipe_support raises "{text}"'


def fp8_tokens_per_rank_not_aligned(ctx: Context) -> Iterator[Violation]:
    """FP007: a per-rank token count that is not a multiple of the FP8/FP4 GEMM alignment."""
    r = Reads(ctx)
    recipe = _recipe(r)
    align = _align(r, recipe)
    per_rank = r.fact("tokens_per_tp_cp_rank")
    tokens = int(per_rank)
    if not (_low_precision(r) and per_rank == tokens and tokens % align != 0):
        return
    yield Violation(
        "",
        {
            "what": _quantized(r, recipe),
            "align": align,
            "tokens": tokens,
            "fails": _misaligned_raise(r, recipe, tokens),
        },
    )


def _misaligned_raise(r: Reads, recipe: Any, tokens: int) -> str:
    """Where Transformer Engine 2.18 stops on a token count that misses the alignment: the
    Python shape assert of its linear modules' forward first (a multiple of 8, every recipe),
    then the recipe's own check."""
    if tokens % 8:
        return (
            "Transformer Engine's assert_dim_for_fp8_exec raises \"FP8 execution requires the "
            'product of all dimensions except the last to be divisible by 8" at the first forward'
        )
    if r.field("model.fp4") is not None:
        if tokens % 16:
            return (
                "Transformer Engine's NVFP4 quantizer raises \"First dim for NVFP4 must be "
                'divisible by" 16 when the first forward quantizes a layer input'
            )
        return (
            "Transformer Engine's NVFP4 quantize kernel stops the first forward (\"Number of "
            'tensor rows must be a multiple of 32")'
        )
    if recipe == "mxfp8":
        return (
            "Transformer Engine's MXFP8 quantizer raises \"MXFP8 requires tensor dims that are "
            'divisible by" 32 when the first forward quantizes a layer input'
        )
    return (
        "the weight-gradient FP8 GEMM, whose inner dimension is the tokens, stops the first "
        'step ("Caller must pad.")'
    )


def fp8_with_variable_length_batches(ctx: Context) -> Iterator[Violation]:
    """FP008: FP8/FP4 with batches whose token counts vary (packing, variable lengths)."""
    r = Reads(ctx)
    kwargs = r.field("dataset.dataset_kwargs")
    padded = "pad_to_max_length" in (kwargs or {}) and bool(kwargs["pad_to_max_length"])
    if r.field("model.variable_seq_lengths"):
        cause = "variable_seq_lengths is true"
    elif r.value("dataset.enable_in_batch_packing", False) is True:
        cause = "in-batch packing"
    elif bool(r.field("dataset.enable_offline_packing")) and not padded:
        cause = "offline packing without pad_to_max_length"
    else:
        return
    if not _low_precision(r):
        return
    recipe = _recipe(r)
    yield Violation("", {"what": _quantized(r, recipe), "align": _align(r, recipe), "cause": cause})


def fp8_attention_with_nvfp4(ctx: Context) -> Iterator[Violation]:
    """FP022: FP8 dot-product attention inside the NVFP4 recipe's autocast.

    Megatron-Core builds the NVFP4 recipe with ``fp8_dpa=fp8_dot_product_attention``
    (``fp4_utils.py::get_fp4_recipe``). TE >= 2.15's ``get_attention_backend`` then turns off
    FlashAttention (2, 4; 3 while training) and unfused attention for FP8 attention, and
    FusedAttention for an NVFP4 recipe, so ``DotProductAttention.forward`` has no backend left.
    Not for layers whose core attention is not TE's (attention_backend local, a non-TE
    transformer_impl, DSA layers), and not when the env vars the file sets re-enable a backend
    (NVTE_UnfusedDPA_Emulate_FP8=1) or switch the attention recipe (NVTE_DPA_FP8_RECIPE).
    """
    cfg = ctx.config
    view = precision_view(cfg)
    fp4 = effective(cfg, "model.fp4", view)
    dpa = effective(cfg, "model.fp8_dot_product_attention", view)
    if fp4 in (None, UNKNOWN) or dpa is not True:
        return
    if effective(cfg, "model.fp4_recipe", view) not in ("nvfp4", None):
        return
    r = Reads(ctx)
    # null reads as Megatron-Core's auto; where a recipe decides, it is a TE backend: no Bridge
    # 0.6.2 recipe or perf recipe sets attention_backend local (None, auto, fused or flash).
    backend = cfg.value("model.attention_backend")
    if (
        str(backend).rsplit(".", 1)[-1] == "local"
        or r.value("model.transformer_impl") != "transformer_engine"
        or r.value("model.experimental_attention_variant") == "dsa"
    ):
        return
    if str(r.value("env_vars.NVTE_UnfusedDPA_Emulate_FP8", "0")) == "1" or r.value(
        "env_vars.NVTE_DPA_FP8_RECIPE", ""
    ):
        return
    where = (
        "mixed_precision.fp8_dot_product_attention"
        if view.kind == "block"
        else "model.fp8_dot_product_attention"
    )
    yield _violation(where, source=view.source if view.kind in ("recipe", "block") else "model")


def precision_aware_optimizer_precision_mismatch(ctx: Context) -> Iterator[Violation]:
    """FP011: with mixed_precision null, the optimizer's bf16/fp16 differ from the model's."""
    r = Reads(ctx)
    obf16 = r.value("optimizer.bf16", False) is True
    ofp16 = r.value("optimizer.fp16", False) is True
    if r.field("model.bf16") and not obf16:
        reason = "model.bf16 is true but optimizer.bf16 is not"
    elif r.field("model.fp16") and not ofp16:
        reason = "model.fp16 is true but optimizer.fp16 is not"
    elif not r.field("model.bf16") and not r.field("model.fp16") and (obf16 or ofp16):
        reason = "the model trains in fp32 but optimizer.bf16/fp16 is true"
    else:
        reason = ""
    if (
        r.field("optimizer.use_precision_aware_optimizer")
        and r.explicit("mixed_precision")
        and r.value("mixed_precision") is None
        and (r.explicit("model.bf16") or r.explicit("model.fp16"))
        and reason != ""
    ):
        yield Violation("", {"reason": reason})


CHECKS: dict[str, PythonCheck] = {
    "fp8-attention-with-nvfp4": PythonCheck(fp8_attention_with_nvfp4, frozenset({"source"})),
    "mixed-precision-overwrites": PythonCheck(
        mixed_precision_overwrites, frozenset({"key", "written", "source", "used", "remedy"})
    ),
    "fp4-param-block-old-bridge": PythonCheck(fp4_param_block_old_bridge, frozenset({"key"})),
    "bf16-and-fp16": PythonCheck(_only("FP001", _precision_flags), frozenset({"section"})),
    "fp8-and-fp4": PythonCheck(_only("FP013", _precision_flags), frozenset({"fp8", "fp4"})),
    "fp8-param-without-fp8": PythonCheck(_only("FP002", _fp8_options), frozenset()),
    "fp8-output-proj-without-fp8": PythonCheck(_only("FP014", _fp8_options), frozenset()),
    "fp8-output-proj-needs-mxfp8": PythonCheck(_only("FP015", _fp8_options), frozenset({"recipe"})),
    "fp4-param-without-fp4": PythonCheck(_only("FP016", _fp8_options), frozenset()),
    "delayed-first-last-bf16": PythonCheck(_only("FP003", _recipe_options), frozenset()),
    "bf16-layer-count-out-of-range": PythonCheck(
        _only("FP017", _recipe_options),
        frozenset({"field", "count", "limit", "num_layers", "pp"}),
    ),
    "custom-recipe-without-factory": PythonCheck(
        _only("FP018", _recipe_options), frozenset({"kind", "factory", "fallback"})
    ),
    "mxfp8-gather-without-buffer-reuse": PythonCheck(_only("FP009", _mxfp8_gather), frozenset()),
    "mxfp8-buffer-reuse-without-gather": PythonCheck(_only("FP019", _mxfp8_gather), frozenset()),
    "gtp-mxfp8-with-megatron-fsdp": PythonCheck(_only("FP020", _mxfp8_gather), frozenset()),
    "gtp-mxfp8-prerequisites": PythonCheck(
        _only("FP021", _mxfp8_gather), frozenset({"needed", "remedy"})
    ),
    "fp8-recipe-needs-newer-te": PythonCheck(
        fp8_recipe_needs_newer_te, frozenset({"what", "need", "te"}), frozenset({"te_version"})
    ),
    "precision-not-supported-by-gpu": PythonCheck(
        precision_not_supported_by_gpu,
        frozenset({"what", "need", "instead", "check"}),
        frozenset({"gpu_nvfp4", "gpu_mxfp8", "gpu_fp8_blockwise", "gpu_fp8", "gpu_cc"}),
    ),
    "fp8-tokens-per-rank-not-aligned": PythonCheck(
        fp8_tokens_per_rank_not_aligned,
        frozenset({"what", "align", "tokens", "fails"}),
        frozenset({"tokens_per_tp_cp_rank"}),
    ),
    "fp8-with-variable-length-batches": PythonCheck(
        fp8_with_variable_length_batches, frozenset({"what", "align", "cause"})
    ),
    "precision-aware-optimizer-precision-mismatch": PythonCheck(
        precision_aware_optimizer_precision_mismatch, frozenset({"reason"})
    ),
}
