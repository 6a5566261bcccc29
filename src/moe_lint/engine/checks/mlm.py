"""Python checks for Megatron-LM command lines (rules/mlm.yaml, MLM codes).

They read the flags of a Megatron-LM launch script, ``MODEL_ARGS`` file or ``--`` argument
list (``doc.mlm_flags``, config/mlm_args.py) and apply only to that input
(``cfg.form == "megatron-lm"``): Megatron Bridge parses no command line and never runs
``validate_args``.

* MLM001: a flag the stated Megatron-LM release does not define (data/mlm_flags.json);
* MLM002-MLM004: the asserts of ``megatron/training/arguments.py::validate_args`` that exist
  only there (docs/coverage.md): torch FSDP2's restrictions,
  ``--overlap-param-gather-with-optimizer-step``'s prerequisites, ``--qk-clip``'s ranges. Each
  message quotes the assert's own text. The values are the flags' as argparse sets them, over
  the release's defaults (config/mlm_flags.MlmArgs); a value the list cannot tell (an
  unexpanded ``$VAR``) keeps the assert silent.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.evaluate import Violation

if TYPE_CHECKING:
    from moe_lint.config.mlm_flags import MlmArgs
    from moe_lint.engine.evaluate import Context

FORM = "megatron-lm"

#: Flags after which validate_args does not see the command line's values: the arguments come
#: from a checkpoint (``parse_and_validate_args`` loads them before validating) or a YAML file
#: (``validate_yaml`` runs instead of ``validate_args``).
_REPLACED_BY = ("use_checkpoint_args", "yaml_cfg")


def _flags(ctx: Context) -> list[Any]:
    cfg = ctx.config
    if getattr(cfg, "form", None) != FORM:
        return []
    return list(getattr(cfg.doc, "mlm_flags", None) or [])


def _release(ctx: Context) -> str | None:
    from moe_lint.config.mlm_flags import release_for
    from moe_lint.config.versions import effective_version

    settings = ctx.settings
    versions = settings.versions if settings is not None else {}
    return release_for(effective_version(versions, "megatron-core"))


def _at(flag: Any) -> tuple[int, int] | None:
    """1-based (line, column) of the ``--flag`` token."""
    span = getattr(flag, "span", None)
    if span is None:
        return None
    start = getattr(span, "key_start", None) or getattr(span, "value_start", None)
    if start is not None:
        return (start.line, start.column)
    if isinstance(span, tuple) and len(span) >= 2 and all(isinstance(x, int) for x in span[:2]):
        return (span[0], span[1])
    return None


def _args(ctx: Context) -> MlmArgs | None:
    """The validated arguments, or None when validate_args will not see these flags."""
    from moe_lint.config.mlm_flags import MlmArgs

    flags = _flags(ctx)
    release = _release(ctx) if flags else None
    if release is None:
        return None
    args = MlmArgs(release, flags)
    if any(args[dest] not in (False, None) for dest in _REPLACED_BY):
        return None
    return args


def unknown_flags(ctx: Context) -> Iterator[Violation]:
    """Flags the stated Megatron-LM release's parser does not define."""
    from packaging.version import Version

    from moe_lint.config.mlm_flags import flag_name, flags_of, releases_with
    from moe_lint.config.suggest import closest

    flags = _flags(ctx)
    release = _release(ctx) if flags else None
    if release is None:
        return
    known = flags_of(release)
    for item in flags:
        name = flag_name(str(item.name))
        if not name.startswith("--") or name in known:
            continue
        elsewhere = releases_with(name)
        if elsewhere and Version(elsewhere[0]) > Version(release):
            why = f"was added in Megatron-LM {elsewhere[0]}"
        elif elsewhere:
            why = f"was removed after Megatron-LM {elsewhere[-1]}"
        else:
            guess = closest(name, sorted(known))
            why = f"did you mean {guess}?" if guess else "no flag of that release is close"
        yield Violation(
            path=name.lstrip("-").replace("-", "_"),
            params={"flag": name, "release": release, "why": why},
            at=_at(item),
        )


def _fail(args: MlmArgs, dest: str, message: str, **params: Any) -> Violation:
    flag = args.flag(dest)
    return Violation(
        path=dest, params={"release": args.release, "problem": message, **params}, at=_at(flag)
    )


def _is(value: Any, expected: Any) -> bool:
    """``value == expected`` for a value the flag list tells (UNSET never matches)."""
    from moe_lint.config.mlm_flags import UNSET

    return value is not UNSET and value == expected


def torch_fsdp2(ctx: Context) -> Iterator[Violation]:
    """``if args.use_torch_fsdp2:`` in validate_args (core_v0.14.0 .. core_v0.19.0)."""
    args = _args(ctx)
    if args is None or not _is(args["use_torch_fsdp2"], True):
        return
    pp, ep = args["pipeline_model_parallel_size"], args["expert_model_parallel_size"]
    if isinstance(pp, int) and pp != 1:
        yield _fail(
            args,
            "use_torch_fsdp2",
            "--use-torch-fsdp2 is not supported with pipeline parallelism",
            why=f"--pipeline-model-parallel-size {pp}",
        )
    if isinstance(ep, int) and ep != 1:
        yield _fail(
            args,
            "use_torch_fsdp2",
            "--use-torch-fsdp2 is not supported with expert parallelism",
            why=f"--expert-model-parallel-size {ep}",
        )
    if _is(args["use_distributed_optimizer"], True):
        yield _fail(
            args,
            "use_torch_fsdp2",
            "--use-torch-fsdp2 is not supported with MCore's distributed optimizer",
            why="--use-distributed-optimizer is set",
        )
    if _is(args["gradient_accumulation_fusion"], True):
        yield _fail(
            args,
            "use_torch_fsdp2",
            "--use-torch-fsdp2 is not supported with gradient accumulation fusion",
            why="gradient accumulation fusion is on unless "
            "--no-gradient-accumulation-fusion is given",
        )
    fmt = args["ckpt_format"]
    if isinstance(fmt, str) and fmt not in ("torch_dist", "torch_dcp"):
        yield _fail(
            args,
            "use_torch_fsdp2",
            "--use-torch-fsdp2 requires --ckpt-format torch_dist or torch_dcp",
            why=f"--ckpt-format {fmt}",
        )
    heterogeneous = (
        args["heterogeneous_layers_config_path"] or args["heterogeneous_layers_config_encoded_json"]
    )
    if _is(args["untie_embeddings_and_output_weights"], False) and heterogeneous in (None, False):
        yield _fail(
            args,
            "use_torch_fsdp2",
            "--use-torch-fsdp2 requires --untie-embeddings-and-output-weights",
            why="--untie-embeddings-and-output-weights is not given",
        )
    if _is(args["fp16"], True):
        yield _fail(
            args,
            "use_torch_fsdp2",
            "--use-torch-fsdp2 not supported with fp16 yet",
            why="--fp16 is set",
        )


def overlap_param_gather_with_optimizer_step(ctx: Context) -> Iterator[Violation]:
    """``if args.overlap_param_gather_with_optimizer_step:`` in validate_args (0.14 .. 0.19)."""
    args = _args(ctx)
    dest = "overlap_param_gather_with_optimizer_step"
    if args is None or not _is(args[dest], True):
        return
    if _is(args["use_distributed_optimizer"], False):
        yield _fail(
            args,
            dest,
            "--overlap-param-gather-with-optimizer-step only supported with distributed optimizer",
            why="--use-distributed-optimizer is not given",
        )
    if _is(args["overlap_param_gather"], False):
        yield _fail(
            args,
            dest,
            "Must use --overlap-param-gather-with-optimizer-step with --overlap-param-gather",
            why="--overlap-param-gather is not given",
        )
    vpp = _vpp(args)
    if vpp is not None and vpp <= 1:
        yield _fail(
            args,
            dest,
            "--overlap-param-gather-with-optimizer-step only supported with interleaved "
            "pipeline parallelism",
            why=_vpp_why(args),
        )
    fmt = args["ckpt_format"]
    if isinstance(fmt, str) and fmt != "torch":
        # update_use_dist_ckpt (megatron/training/utils): use_dist_ckpt = ckpt_format != "torch"
        yield _fail(
            args,
            dest,
            "--overlap-param-gather-with-optimizer-step not supported with distributed "
            "checkpointing yet",
            why=f"--ckpt-format {fmt} is a distributed format "
            "(use_dist_ckpt = ckpt_format != 'torch')",
        )


def _vpp(args: MlmArgs) -> int | None:
    """The virtual pipeline size validate_args derives (1 for none), None when not known.

    validate_args sets it from --pipeline-model-parallel-layout, --num-virtual-stages-per-
    pipeline-rank or --num-layers-per-virtual-pipeline-stage and to None otherwise (a hybrid
    layer pattern derives it from its pipe segments: not re-derived here).
    """
    if args["hybrid_layer_pattern"] not in (None, False):
        return None
    if args["pipeline_model_parallel_layout"] not in (None, False):
        return None
    stages = args["num_virtual_stages_per_pipeline_rank"]
    if args.has("num_virtual_stages_per_pipeline_rank"):
        return stages if isinstance(stages, int) else None
    if args.has("num_layers_per_virtual_pipeline_stage"):
        return None
    return 1


def _vpp_why(args: MlmArgs) -> str:
    if args.has("num_virtual_stages_per_pipeline_rank"):
        return "--num-virtual-stages-per-pipeline-rank 1"
    return (
        "no --num-virtual-stages-per-pipeline-rank, --num-layers-per-virtual-pipeline-stage or "
        "--pipeline-model-parallel-layout"
    )


def qk_clip(ctx: Context) -> Iterator[Violation]:
    """``if args.qk_clip:`` and ``if args.log_max_attention_logit:`` in validate_args
    (core_v0.16.0 .. core_v0.19.0; older releases have neither flag)."""
    from moe_lint.config.versions import stated_below

    args = _args(ctx)
    if args is None:
        return
    settings = ctx.settings
    old_te = stated_below(settings.versions if settings else None, "transformer-engine", "2.9.0")
    if old_te and _is(args["log_max_attention_logit"], True):
        yield _fail(
            args,
            "log_max_attention_logit",
            "--log-max-attention-logit is only supported with TE >= 2.9.0.",
            why="the stated Transformer Engine is older than 2.9.0",
        )
    if not _is(args["qk_clip"], True):
        return
    if old_te:
        yield _fail(
            args,
            "qk_clip",
            "--qk-clip is only supported with TE >= 2.9.0.",
            why="the stated Transformer Engine is older than 2.9.0",
        )
    alpha, threshold = args["qk_clip_alpha"], args["qk_clip_threshold"]
    if isinstance(alpha, int | float) and not 0.0 < alpha < 1.0:
        yield _fail(
            args,
            "qk_clip_alpha" if args.has("qk_clip_alpha") else "qk_clip",
            "--qk-clip-alpha must be between 0.0 and 1.0 when using --qk-clip.",
            why=f"--qk-clip-alpha {alpha:g}",
        )
    if isinstance(threshold, int | float) and not threshold > 0:
        yield _fail(
            args,
            "qk_clip_threshold" if args.has("qk_clip_threshold") else "qk_clip",
            "--qk-clip-threshold must be greater than 0 when using --qk-clip.",
            why=f"--qk-clip-threshold {threshold:g}",
        )


_PARAMS = frozenset({"release", "problem", "why"})

CHECKS: dict[str, PythonCheck] = {
    "mlm-unknown-flags": PythonCheck(unknown_flags, frozenset({"flag", "release", "why"})),
    "mlm-torch-fsdp2": PythonCheck(torch_fsdp2, _PARAMS),
    "mlm-overlap-param-gather-with-optimizer-step": PythonCheck(
        overlap_param_gather_with_optimizer_step, _PARAMS
    ),
    "mlm-qk-clip": PythonCheck(qk_clip, _PARAMS),
}
