"""Python checks for Megatron-LM command lines (rules/mlm.yaml, MLM codes).

They read the flags of a Megatron-LM launch script, ``MODEL_ARGS`` file or ``--`` argument
list (``doc.mlm_flags``, config/mlm_args.py) and apply only to that input
(``cfg.form == "megatron-lm"``): Megatron Bridge parses no command line and never runs
``validate_args``.

* MLM001: a flag the stated Megatron-LM release does not define (data/mlm_releases.json);
* MLM002-MLM012: the asserts of ``megatron/training/arguments.py::validate_args`` that exist
  only there (docs/coverage.md "only in Megatron-LM"), one rule per catalogue ID. Each message
  quotes the assert's own text. The values are the flags' as argparse sets them, over
  the release's defaults (config/mlm_releases.MlmArgs); a value the list cannot tell (an
  unexpanded ``$VAR``) keeps the assert silent.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from moe_lint.bounds import MAX_SUGGESTIONS
from moe_lint.config.suggest import closest
from moe_lint.config.versions import effective_version, stated_below
from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.evaluate import Violation

if TYPE_CHECKING:
    from moe_lint.config.mlm_releases import (
        UNSET,
        MlmArgs,
        flag_name,
        flags_of,
        py_names,
        release_for,
        releases_with,
    )
    from moe_lint.engine.evaluate import Context

#: The names of config/mlm_releases.py these checks use: bound into this module by _flags on the
#: first Megatron-LM input, so a Bridge YAML file (whose lint runs these checks, which return
#: at once) never loads the release table.
_RELEASE_NAMES = (
    "UNSET", "MlmArgs", "flag_name", "flags_of", "py_names", "release_for", "releases_with",
)  # fmt: skip


def _bind_releases() -> None:
    if "UNSET" not in globals():
        # Lazy: the release table (~3 ms) only for Megatron-LM input.
        from moe_lint.config import mlm_releases

        globals().update({name: getattr(mlm_releases, name) for name in _RELEASE_NAMES})


FORM = "megatron-lm"

#: Flags after which validate_args does not see the command line's values: a YAML file
#: (``validate_yaml`` runs instead of ``validate_args``). With ``--use-checkpoint-args`` it still
#: runs, on the arguments load_args_from_checkpoint leaves (MlmArgs reads the ones it takes from
#: the checkpoint as UNSET, so a check that needs them stays silent).
_REPLACED_BY = ("yaml_cfg",)


def _flags(ctx: Context) -> list[Any]:
    """The flags of Megatron-LM input (none for any other); every check starts here."""
    cfg = ctx.config
    if getattr(cfg, "form", None) != FORM:
        return []
    flags = list(getattr(cfg.doc, "mlm_flags", None) or [])
    if flags:
        _bind_releases()
    return flags


def _release(ctx: Context) -> str | None:
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


_MODEL_ARGS = re.compile(r"^MODEL_ARGS\s*:", re.M)


def _args(ctx: Context) -> MlmArgs | None:
    """The validated arguments, or None when validate_args will not see these flags."""
    flags = _flags(ctx)
    release = _release(ctx) if flags else None
    if release is None:
        return None
    doc = ctx.config.doc
    # A MODEL_ARGS file names every flag as a key (a ${...} value is only that flag's value
    # unknown); a script's unexpanded words may hold flags.
    hidden = bool(getattr(doc, "mlm_notes", None)) and not _MODEL_ARGS.search(
        str(getattr(doc, "text", "") or "")
    )
    args = MlmArgs(release, flags, incomplete=hidden)
    if any(args[dest] not in (False, None) for dest in _REPLACED_BY):
        return None
    return args


#: Entry scripts whose parser is ``add_megatron_arguments`` alone (plus ``add_modelopt_args``,
#: whose flags the list has): pretrain_*.py of Megatron-LM's root, core_v0.14.0 .. core_v0.19.0.
_PLAIN_ENTRY = re.compile(r"pretrain_(?:gpt|hybrid|mamba|bert|t5|ict|retro|vision_\w+)")
#: Entry scripts that add flags of their own (``extra_args_provider``): pretrain_vlm.py,
#: train_rl.py, the examples' train.py and the inference, export and conversion tools.
_OTHER_ENTRY = re.compile(r"(?:pretrain_vlm|train_rl|train|run_\w+)$")
_OTHER_PART = re.compile(
    r"generat|inference|server|export|convert|quantiz|prune|finetune|distill|mmlu|validate"
)
#: How far back from a ``.py`` a script's name is read (a longer one is no entry script).
_MAX_SCRIPT_NAME = 200


def _in_name(char: str) -> bool:
    return char.isalnum() or char == "_"


def _py_stems(text: str) -> Iterator[str]:
    """The file stem of each ``NAME.py`` word in ``text`` (``pretrain_gpt`` of
    ``/opt/megatron/pretrain_gpt.py``), over at most _MAX_SCRIPT_NAME word characters."""
    for start, end in py_names(text, _in_name, _MAX_SCRIPT_NAME):
        yield text[start:end]


def _is_plain_entry(text: str) -> bool:
    """Names ``text`` a plain entry script and no script with flags of its own?"""
    plain = other = False
    for stem in _py_stems(text):
        if _PLAIN_ENTRY.fullmatch(stem):
            plain = True
        if _OTHER_ENTRY.search(stem) or _OTHER_PART.search(stem):
            other = True
    return plain and not other


def _plain_entry(ctx: Context) -> bool:
    """Does the command run an entry script without flags of its own (pretrain_gpt.py, ...)?

    ``doc.mlm_script`` when the reader records it, else the ``*.py`` names in the text: a
    MODEL_ARGS file or an argument list names none, so only its version findings are certain.
    """
    doc = ctx.config.doc
    script = getattr(doc, "mlm_script", None)
    text = str(script) if script else str(getattr(doc, "text", "") or "")
    return _is_plain_entry(text)


def unknown_flags(ctx: Context) -> Iterator[Violation]:
    """Flags the stated Megatron-LM release's parser does not define.

    A flag of another release always (no entry script adds Megatron-LM's own flags back); any
    other unknown flag only for an entry script without flags of its own.
    """
    flags = _flags(ctx)
    release = _release(ctx) if flags else None
    if release is None:
        return
    known = flags_of(release)
    plain = _plain_entry(ctx)
    seen: set[tuple[str, Any]] = set()
    searches = MAX_SUGGESTIONS  # each "did you mean" is a difflib pass over ~1,000 flags
    ordered = sorted(known)
    for item in flags:
        name = flag_name(str(item.name))
        if not name.startswith("--") or name in known or (name, _at(item)) in seen:
            continue  # a word the reader reached twice (a variable used twice) counts once
        seen.add((name, _at(item)))
        elsewhere = releases_with(name)
        if elsewhere and Version(elsewhere[0]) > Version(release):
            why = f"was added in Megatron-LM {elsewhere[0]}"
        elif elsewhere:
            why = f"was removed after Megatron-LM {elsewhere[-1]}"
        elif not plain:
            continue
        else:
            guess = closest(name, ordered) if searches > 0 else None
            searches -= 1
            why = (f"did you mean {guess}?" if guess else "no flag of that release is close"
                   if searches >= 0 else "not a flag of that release")  # fmt: skip
        yield Violation(
            path=name.lstrip("-").replace("-", "_"),
            params={"flag": name, "release": release, "why": why},
            at=_at(item),
        )


def _fail(
    args: MlmArgs, dest: str, message: str, *, why: str, reads: tuple[str, ...] = ()
) -> Violation | None:
    """A finding at ``dest``'s flag (else at the document start) quoting ``message``.

    ``reads``: the dests the failing condition reads. Where one of them keeps its default and
    the reader noted words it could not expand (``$EXTRA_ARGS``, ``$(...)``: they may hold that
    very flag), the condition is not certain and gives no finding.
    """
    if args.incomplete and any(not args.has(d) for d in reads):
        return None
    flag = args.flag(dest)
    return Violation(
        path=dest, params={"release": args.release, "problem": message, "why": why}, at=_at(flag)
    )


def _is(value: Any, expected: Any) -> bool:
    """``value == expected`` for a value the flag list tells (UNSET never matches)."""
    return value is not UNSET and value == expected


def _given(value: Any) -> bool:
    """A value other than None / False / UNSET (an optional argument that is set)."""
    return value is not UNSET and value not in (None, False)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _keep(found: Iterator[Violation | None]) -> Iterator[Violation]:
    return (v for v in found if v is not None)


def _below(args: MlmArgs, release: str) -> bool:
    return Version(args.release) < Version(release)


def torch_fsdp2(ctx: Context) -> Iterator[Violation]:
    """``if args.use_torch_fsdp2:`` in validate_args (core_v0.14.0 .. core_v0.19.0)."""
    args = _args(ctx)
    if args is None or not _is(args["use_torch_fsdp2"], True):
        return
    yield from _keep(_torch_fsdp2(args))


def _torch_fsdp2(args: MlmArgs) -> Iterator[Violation | None]:
    at = "use_torch_fsdp2"
    pp, ep = _int(args["pipeline_model_parallel_size"]), _int(args["expert_model_parallel_size"])
    if pp is not None and pp != 1:
        yield _fail(
            args,
            at,
            "--use-torch-fsdp2 is not supported with pipeline parallelism",
            why=f"--pipeline-model-parallel-size {pp}",
        )
    if ep is not None and ep != 1:
        yield _fail(
            args,
            at,
            "--use-torch-fsdp2 is not supported with expert parallelism",
            why=f"--expert-model-parallel-size {ep}",
        )
    if _is(args["use_distributed_optimizer"], True):
        yield _fail(
            args,
            at,
            "--use-torch-fsdp2 is not supported with MCore's distributed optimizer",
            why="--use-distributed-optimizer is set",
        )
    if _is(args["gradient_accumulation_fusion"], True):
        yield _fail(
            args,
            at,
            "--use-torch-fsdp2 is not supported with gradient accumulation fusion",
            why="gradient accumulation fusion is on unless "
            "--no-gradient-accumulation-fusion is given",
            reads=("gradient_accumulation_fusion",),
        )
    fmt = args["ckpt_format"]
    if isinstance(fmt, str) and fmt not in ("torch_dist", "torch_dcp"):
        yield _fail(
            args,
            at,
            "--use-torch-fsdp2 requires --ckpt-format torch_dist or torch_dcp",
            why=f"--ckpt-format {fmt}",
        )
    heterogeneous = _given(args["heterogeneous_layers_config_path"]) or _given(
        args["heterogeneous_layers_config_encoded_json"]
    )
    if _is(args["untie_embeddings_and_output_weights"], False) and not heterogeneous:
        yield _fail(
            args,
            at,
            "--use-torch-fsdp2 requires --untie-embeddings-and-output-weights",
            why="--untie-embeddings-and-output-weights is not given",
            reads=("untie_embeddings_and_output_weights",),
        )
    if _is(args["fp16"], True):
        yield _fail(args, at, "--use-torch-fsdp2 not supported with fp16 yet", why="--fp16 is set")


def overlap_param_gather_with_optimizer_step(ctx: Context) -> Iterator[Violation]:
    """``if args.overlap_param_gather_with_optimizer_step:`` in validate_args (0.14 .. 0.19)."""
    args = _args(ctx)
    if args is None or not _is(args["overlap_param_gather_with_optimizer_step"], True):
        return
    yield from _keep(_opg_step(args))


def _opg_step(args: MlmArgs) -> Iterator[Violation | None]:
    at = "overlap_param_gather_with_optimizer_step"
    if _is(args["use_distributed_optimizer"], False):
        yield _fail(
            args,
            at,
            "--overlap-param-gather-with-optimizer-step only supported with distributed optimizer",
            why="--use-distributed-optimizer is not given",
            reads=("use_distributed_optimizer",),
        )
    if _is(args["overlap_param_gather"], False):
        yield _fail(
            args,
            at,
            "Must use --overlap-param-gather-with-optimizer-step with --overlap-param-gather",
            why="--overlap-param-gather is not given",
            reads=("overlap_param_gather",),
        )
    vpp = args.virtual_pipeline_size()
    if vpp is None:
        yield _fail(
            args,
            at,
            "--overlap-param-gather-with-optimizer-step only supported with "
            "interleaved pipeline parallelism",
            why=_vpp_why(args),
            reads=_VPP_ARGS,
        )
    fmt = args["ckpt_format"]
    if isinstance(fmt, str) and fmt != "torch":
        # update_use_dist_ckpt (megatron/training/utils): use_dist_ckpt = ckpt_format != "torch"
        yield _fail(
            args,
            at,
            "--overlap-param-gather-with-optimizer-step not supported with "
            "distributed checkpointing yet",
            why=f"--ckpt-format {fmt} is a distributed format "
            "(use_dist_ckpt = ckpt_format != 'torch')",
            reads=("ckpt_format",),
        )


_VPP_ARGS = (
    "num_layers_per_virtual_pipeline_stage",
    "num_virtual_stages_per_pipeline_rank",
    "pipeline_model_parallel_layout",
)


def _vpp_why(args: MlmArgs) -> str:
    """Why validate_args leaves the virtual pipeline size None (MlmArgs.virtual_pipeline_size)."""
    if args.has("num_virtual_stages_per_pipeline_rank"):
        return "--num-virtual-stages-per-pipeline-rank 1"
    if args.has("pipeline_model_parallel_layout"):
        return "--pipeline-model-parallel-layout has as many stages as PP (one virtual stage)"
    if args.has("num_layers_per_virtual_pipeline_stage"):
        per = args["num_layers_per_virtual_pipeline_stage"]
        return (
            f"--num-layers-per-virtual-pipeline-stage {per} is all the layers of a pipeline "
            "stage (one virtual stage)"
        )
    if _given(args["hybrid_layer_pattern"]) or _given(args["hybrid_override_pattern"]):
        return "the hybrid layer pattern has no more pipe segments than PP"
    return (
        "no --num-virtual-stages-per-pipeline-rank, --num-layers-per-virtual-pipeline-stage or "
        "--pipeline-model-parallel-layout"
    )


def qk_clip(ctx: Context) -> Iterator[Violation]:
    """``if args.qk_clip:`` and ``if args.log_max_attention_logit:`` in validate_args
    (core_v0.16.0 .. core_v0.19.0; older releases have neither flag)."""
    args = _args(ctx)
    if args is None:
        return
    yield from _keep(_qk_clip(args, ctx))


def _qk_clip(args: MlmArgs, ctx: Context) -> Iterator[Violation | None]:
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


def virtual_pipeline_args(ctx: Context) -> Iterator[Violation]:
    """The uneven/virtual pipeline block of validate_args (core_v0.14.0 .. core_v0.19.0)."""
    args = _args(ctx)
    if args is None or _given(args["hybrid_layer_pattern"]):
        return
    yield from _keep(_virtual_pipeline_args(args))


def _virtual_pipeline_args(args: MlmArgs) -> Iterator[Violation | None]:
    given = [d for d in _VPP_ARGS if _given(args[d]) or (args.has(d) and args[d] is not None)]
    if len(given) > 1:
        values = ", ".join(f"args.{d}={_shown_arg(args, d)}" for d in _VPP_ARGS)
        yield _fail(
            args,
            given[1],
            "No more than one of the following arguments can be set at the same time: "
            "--num-layers-per-virtual-pipeline-stage, --num-virtual-stages-per-pipeline-rank,"
            f"--pipeline-model-parallel-layout. {values}.",
            why=", ".join("--" + d.replace("_", "-") for d in given),
        )
        return
    per_stage = args["num_layers_per_virtual_pipeline_stage"]
    if given != ["num_layers_per_virtual_pipeline_stage"] or _int(per_stage) is None:
        return
    at = "num_layers_per_virtual_pipeline_stage"
    uneven = [
        d
        for d in ("decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers")
        if _given(args[d])
    ]
    if uneven:
        yield _fail(
            args,
            at,
            "please use --num-virtual-stages-per-pipeline-rank to specify virtual "
            "pipeline parallel degree when enable uneven pipeline parallelism",
            why="--" + uneven[0].replace("_", "-") + " is set",
        )
        return
    layers = (
        _int(args["num_layers"]) if args.has("num_layers") else _int(args["decoder_num_layers"])
    )
    pp = _int(args["pipeline_model_parallel_size"])
    extras = [
        args["account_for_embedding_in_pipeline_split"],
        args["account_for_loss_in_pipeline_split"],
    ]
    if layers is None or pp is None or pp < 1 or not all(isinstance(e, bool) for e in extras):
        return
    total = layers + sum(bool(e) for e in extras)
    shown = f"{total} layers" + (f" ({layers} + the account_for_* ones)" if total != layers else "")
    if total % pp != 0:
        yield _fail(
            args,
            at,
            "number of layers of the model must be divisible pipeline model parallel size",
            why=f"{shown}, PP {pp}",
        )
    elif (total // pp) % per_stage != 0:
        yield _fail(
            args,
            at,
            "number of layers per pipeline stage must be divisible number of layers per "
            "virtual pipeline stage",
            why=f"{total // pp} layers per stage, --num-layers-per-virtual-pipeline-stage "
            f"{per_stage}",
        )


def _shown_arg(args: MlmArgs, dest: str) -> str:
    """``dest`` as validate_args' ``f"{args.x=}"`` shows it (repr), or as written when the
    flag list cannot tell its value."""
    value = args[dest]
    if value is UNSET:
        flag = args.flag(dest)
        return str(flag.value) if flag is not None and flag.value is not None else "?"
    return repr(value)


def max_position_embeddings(ctx: Context) -> Iterator[Violation]:
    """``assert args.max_position_embeddings >= args.seq_length`` in validate_args."""
    args = _args(ctx)
    if args is None:
        return
    if _given(args["heterogeneous_layers_config_path"]) or _given(
        args["heterogeneous_layers_config_encoded_json"]
    ):
        return
    mpe = _int(args["max_position_embeddings"])
    seq = _int(args["seq_length"]) if args.has("seq_length") else _int(args["encoder_seq_length"])
    if mpe is None:
        return
    if seq is not None and mpe < seq:
        found = _fail(
            args,
            "max_position_embeddings",
            f"max_position_embeddings ({mpe}) must be greater than or equal to seq_length ({seq}).",
            why=f"--max-position-embeddings {mpe} < the sequence length {seq}",
        )
        if found is not None:
            yield found
    decoder = _int(args["decoder_seq_length"])
    if decoder is not None and mpe < decoder:
        found = _fail(
            args,
            "max_position_embeddings",
            "assert args.max_position_embeddings >= args.decoder_seq_length (an AssertionError "
            "with no message)",
            why=f"--max-position-embeddings {mpe} < --decoder-seq-length {decoder}",
        )
        if found is not None:
            yield found


def overlap_param_gather(ctx: Context) -> Iterator[Violation]:
    """``if args.overlap_param_gather:`` in validate_args; dist_muon joins in core_v0.17.0."""
    args = _args(ctx)
    if args is None or not _is(args["overlap_param_gather"], True):
        return
    yield from _keep(_overlap_param_gather(args))


def _overlap_param_gather(args: MlmArgs) -> Iterator[Violation | None]:
    at = "overlap_param_gather"
    muon = not _below(args, "0.17.0")
    optimizer = args["optimizer"]
    unsharded = (
        _is(args["use_distributed_optimizer"], False)
        and _is(args["use_megatron_fsdp"], False)
        and not (muon and (optimizer == "dist_muon" or not isinstance(optimizer, str)))
    )
    if unsharded:
        message = (
            "--overlap-param-gather only supported with distributed optimizer, megatron fsdp, "
            "or dist_muon"
            if muon
            else "--overlap-param-gather only supported with distributed optimizer or megatron fsdp"
        )
        yield _fail(
            args,
            at,
            message,
            why="neither --use-distributed-optimizer nor "
            "--use-megatron-fsdp" + (" nor --optimizer dist_muon" if muon else ""),
            reads=("use_distributed_optimizer", "use_megatron_fsdp"),
        )
    if _is(args["overlap_grad_reduce"], False):
        yield _fail(
            args,
            at,
            "Must use --overlap-param-gather with --overlap-grad-reduce",
            why="--overlap-grad-reduce is not given",
            reads=("overlap_grad_reduce",),
        )


def fp8_param_gather(ctx: Context) -> Iterator[Violation]:
    """``if args.fp8_param_gather:`` in validate_args (core_v0.14.0 .. core_v0.19.0)."""
    args = _args(ctx)
    if args is None or not _is(args["fp8_param_gather"], True):
        return
    dests = ("use_distributed_optimizer", "use_torch_fsdp2", "use_megatron_fsdp")
    if all(_is(args[d], False) for d in dests):
        found = _fail(
            args,
            "fp8_param_gather",
            "--fp8-param-gather only supported with distributed optimizer, torch fsdp2, "
            "megatron fsdp, or inference mode",
            why="neither --use-distributed-optimizer, --use-torch-fsdp2 nor "
            "--use-megatron-fsdp (training runs with gradients enabled)",
            reads=dests,
        )
        if found is not None:
            yield found


def mla_args(ctx: Context) -> Iterator[Violation]:
    """MLA asserts at the end of validate_args: GQA (core_v0.16.0 on), --mla-down-proj-fusion
    (core_v0.17.0 on)."""
    args = _args(ctx)
    if args is None or _given(args["hybrid_layer_pattern"]):
        return
    found: list[Violation | None] = []
    mla = _is(args["multi_latent_attention"], True)
    if mla and _is(args["group_query_attention"], True) and not _below(args, "0.16.0"):
        found.append(
            _fail(
                args,
                "group_query_attention",
                "Group query attention is mutually exclusive with multi latent attention.",
                why="--multi-latent-attention and --group-query-attention",
            )
        )
    if (
        _is(args["mla_down_proj_fusion"], True)
        and _is(args["multi_latent_attention"], False)
        and not _below(args, "0.17.0")
    ):
        found.append(
            _fail(
                args,
                "mla_down_proj_fusion",
                "--mla-down-proj-fusion requires --multi-latent-attention",
                why="--multi-latent-attention is not given",
                reads=("multi_latent_attention",),
            )
        )
    yield from _keep(iter(found))


def moe_latent_size(ctx: Context) -> Iterator[Violation]:
    """``if args.moe_latent_size is not None:`` in validate_args (core_v0.16.0 on)."""
    args = _args(ctx)
    if args is None or _below(args, "0.16.0"):
        return
    size = _int(args["moe_latent_size"])
    if size is None:
        return
    found: list[Violation | None] = []
    if size <= 0:
        found.append(
            _fail(
                args,
                "moe_latent_size",
                "MoE latent projection dimension has to be greater than zero.",
                why=f"--moe-latent-size {size}",
            )
        )
    if args["num_experts"] is None:
        found.append(
            _fail(
                args,
                "moe_latent_size",
                "MoE latent projections are applicable only for MoE models.",
                why="--num-experts is not given",
                reads=("num_experts",),
            )
        )
    yield from _keep(iter(found))


def fake_process_group(ctx: Context) -> Iterator[Violation]:
    """``if args.fake_process_group:`` in validate_args (core_v0.16.0 on)."""
    args = _args(ctx)
    if args is None or _below(args, "0.16.0") or not _is(args["fake_process_group"], True):
        return
    if _is(args["moe_token_dispatcher_type"], "flex"):
        found = _fail(
            args,
            "moe_token_dispatcher_type",
            "Fake process group is not supported with flex token dispatcher.",
            why="--fake-process-group with --moe-token-dispatcher-type flex",
        )
        if found is not None:
            yield found


def local_attention_backend(ctx: Context) -> Iterator[Violation]:
    """``if args.attention_backend == AttnBackend.local:`` in validate_args (0.14 .. 0.19)."""
    args = _args(ctx)
    if args is None or not _is(args["attention_backend"], "local"):
        return
    spec = args["spec"]
    if spec is UNSET:
        return
    if spec is None:
        found = _fail(
            args,
            "attention_backend",
            "--attention-backend local is only supported with --spec local",
            why="--spec is not given, so validate_args fails on args.spec[0] "
            "(a TypeError) before the assert can say so",
            reads=("spec",),
        )
    elif str(spec).split()[0] != "local":
        found = _fail(
            args,
            "spec",
            "--attention-backend local is only supported with --spec local",
            why=f"--spec {spec}",
        )
    else:
        return
    if found is not None:
        yield found


_PARAMS = frozenset({"release", "problem", "why"})

CHECKS: dict[str, PythonCheck] = {
    "mlm-unknown-flags": PythonCheck(unknown_flags, frozenset({"flag", "release", "why"})),
    "mlm-torch-fsdp2": PythonCheck(torch_fsdp2, _PARAMS),
    "mlm-overlap-param-gather-with-optimizer-step": PythonCheck(
        overlap_param_gather_with_optimizer_step, _PARAMS
    ),
    "mlm-qk-clip": PythonCheck(qk_clip, _PARAMS),
    "mlm-virtual-pipeline-args": PythonCheck(virtual_pipeline_args, _PARAMS),
    "mlm-max-position-embeddings": PythonCheck(max_position_embeddings, _PARAMS),
    "mlm-overlap-param-gather": PythonCheck(overlap_param_gather, _PARAMS),
    "mlm-fp8-param-gather": PythonCheck(fp8_param_gather, _PARAMS),
    "mlm-mla-args": PythonCheck(mla_args, _PARAMS),
    "mlm-moe-latent-size": PythonCheck(moe_latent_size, _PARAMS),
    "mlm-fake-process-group": PythonCheck(fake_process_group, _PARAMS),
    "mlm-local-attention-backend": PythonCheck(local_attention_backend, _PARAMS),
}
