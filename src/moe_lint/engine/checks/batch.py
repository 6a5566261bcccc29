"""Python checks for the batch rule family (rules/batch.yaml, BAT codes).

``eval-batch`` needs code to follow Bridge's evaluation batch arithmetic (eval MBS, eval CP,
the copied global batch); the others are rules whose condition outgrew an expression (BAT001,
BAT006, BAT009, BAT010, BAT011), each reading the config through
:mod:`moe_lint.engine.checks.reads` exactly as its expression did.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.config.versions import stated_below
from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks.reads import derived as _fact
from moe_lint.engine.checks.reads import fact, field, known, mlm_args, mlm_flag_at, value
from moe_lint.engine.checks.reads import int_or_none as _int
from moe_lint.engine.evaluate import Violation

if TYPE_CHECKING:
    from moe_lint.engine.evaluate import Context


def eval_batch(ctx: Context) -> Iterator[Violation]:
    """The check of the evaluation batch against eval MBS × eval DP: Bridge's
    ConfigContainer.validate, or on a Megatron-LM command line validate_args (core_v0.18.0 and
    newer; it has no eval CP, and takes the eval batch sizes from the training ones the same
    way)."""
    cfg = ctx.config
    mlm = cfg.form == "megatron-lm"
    if mlm and stated_below(cfg.versions, "megatron-core", "0.18"):
        return
    gbs, mbs = _int(_fact(ctx, "gbs")), _int(_fact(ctx, "mbs"))
    world, tp, pp, cp = (_int(_fact(ctx, n)) for n in ("world", "tp", "pp", "cp"))
    if not world or not tp or not pp or not cp:
        return
    eval_gbs_set = _int(cfg.get("validation.eval_global_batch_size"))
    eval_mbs_set = _int(cfg.get("validation.eval_micro_batch_size"))
    eval_gbs = eval_gbs_set if eval_gbs_set is not None else gbs
    eval_mbs = eval_mbs_set if eval_mbs_set is not None else mbs
    eval_cp = _int(cfg.get("dist.eval_context_parallel_size")) or cp
    if not eval_gbs or not eval_mbs or world % (tp * pp * eval_cp):
        return
    eval_dp = world // (tp * pp * eval_cp)
    unit = eval_mbs * eval_dp
    if eval_gbs % unit == 0:
        return
    decrease = bool(cfg.get("train.decrease_batch_size_if_needed"))
    # With every eval value defaulted this is BAT001's condition; report it here only when an
    # eval value differs or decrease_batch_size_if_needed keeps BAT001 quiet.
    if eval_gbs_set is None and eval_mbs_set is None and eval_cp == cp and not decrease:
        return
    if eval_gbs_set is None:
        path = "train.global_batch_size"
        note = " (train.global_batch_size, copied before decrease_batch_size_if_needed rounds it)"
    else:
        path, note = "validation.eval_global_batch_size", ""
    below, above = max(unit, eval_gbs // unit * unit), (eval_gbs // unit + 1) * unit
    cp_note = f" with eval CP {eval_cp}" if eval_cp != cp else ""
    if mlm:
        asserts = (
            f"Megatron-LM's validate_args asserts \"eval_global_batch_size ({eval_gbs}) must be "
            f'divisible by eval_micro_batch_size ({eval_mbs}) * data_parallel_size ({eval_dp})" '
            "at startup"
        )
    else:
        asserts = "Bridge's ConfigContainer.validate asserts this at startup"
    yield Violation(
        path=path,
        derivation=(
            f"eval DP = {world} / (TP{tp}·PP{pp}·CP{eval_cp}) = {eval_dp}"
            + ("" if eval_cp == cp else " (dist.eval_context_parallel_size)")
        ),
        params={
            "eval_gbs": eval_gbs,
            "gbs_note": note,
            "eval_mbs": eval_mbs,
            "eval_dp": eval_dp,
            "eval_unit": unit,
            "cp_note": cp_note,
            "nearest": " or ".join(str(v) for v in sorted({below, above})),
            "asserts": asserts,
        },
    )


def global_batch_not_divisible(ctx: Context) -> Iterator[Violation]:
    """BAT001: the global batch must divide by MBS·DP (Megatron-Core's microbatch calculator)."""
    unit = fact(ctx, "mbs") * fact(ctx, "dp")
    gbs = fact(ctx, "gbs")
    if not (
        gbs >= unit and gbs % unit != 0 and not field(ctx, "train.decrease_batch_size_if_needed")
    ):
        return
    interleaved = False
    pp = 1
    if fact(ctx, "vpp") is not None:
        pp = fact(ctx, "pp")
        interleaved = pp > 1 and value(ctx, "model.microbatch_group_size_per_vp_stage", pp) == pp
    step = unit * pp if interleaved else unit
    below = max(step, gbs // step * step)
    above = (gbs // step + 1) * step
    choices = " or ".join(f"{g} ({g // unit} microbatches)" for g in sorted({below, above}))
    step_note = (
        f", and of MBS·DP·PP = {step} so the interleaved pipeline gets a multiple of "
        f"PP = {pp} microbatches"
        if interleaved
        else ""
    )
    yield Violation(
        path="train.global_batch_size",
        params={
            "unit": unit,
            "choices": choices,
            "step_note": step_note,
            "ratio": round(gbs / unit, 2),
        },
    )


def _rampup_problem(ctx: Context, start: Any, incr: Any, unit: Any) -> str:
    if start <= 0 or incr <= 0:
        return "start and increment must be positive"
    gbs = fact(ctx, "gbs")
    if start > gbs:
        return f"the start {start} is above global_batch_size {gbs}"
    if (gbs - start) % incr != 0:
        return (
            f"global_batch_size {gbs} - start {start} = {gbs - start} is not a multiple of the "
            f"increment {incr}"
        )
    if start % unit != 0 or (gbs > start and incr % unit != 0):
        return (
            f"the intermediate batch sizes {start}, {start + incr}, ... are not all multiples "
            f"of MBS·DP = {unit}"
        )
    return ""


def rampup_batch_size_invalid(ctx: Context) -> Iterator[Violation]:
    """BAT006: rampup_batch_size the ramp-up calculator rejects (Megatron-Core <= 0.17)."""
    ramp = value(ctx, "train.rampup_batch_size", [])
    start = ramp[0] if len(ramp) == 3 else 1
    incr = ramp[1] if len(ramp) == 3 else 1
    unit = fact(ctx, "mbs") * fact(ctx, "dp")
    problem = _rampup_problem(ctx, start, incr, unit)
    if len(ramp) == 3 and problem != "":
        yield Violation(
            path="train.rampup_batch_size", params={"ramp": ramp, "problem": problem, "unit": unit}
        )


def _scheduler_fields(ctx: Context, kind: str) -> list[str]:
    """The scheduler fields of one kind (iters or samples) that are set, in BAT009's order."""
    decay = f"lr_decay_{kind}"
    warmup = f"lr_warmup_{kind}"
    wsd = f"lr_wsd_decay_{kind}"
    flags = [
        (decay, field(ctx, f"scheduler.{decay}") is not None),
        (warmup, value(ctx, f"scheduler.{warmup}", 0) != 0),
        (wsd, field(ctx, f"scheduler.{wsd}") is not None),
    ]
    return [n for n, v in flags if v]


def scheduler_fields_conflict(ctx: Context) -> Iterator[Violation]:
    """BAT009: iteration and sample scheduler fields mixed, or against the run's kind."""
    iter_fields = _scheduler_fields(ctx, "iters")
    sample_fields = _scheduler_fields(ctx, "samples")
    by_samples = value(ctx, "train.train_samples") is not None
    by_iters = value(ctx, "train.train_iters") is not None and not by_samples
    problems = []
    if iter_fields and sample_fields:
        problems.append(
            f"iteration fields {', '.join(iter_fields)} are mixed with sample fields "
            f"{', '.join(sample_fields)}"
        )
    if (
        by_samples
        and (iter_fields or field(ctx, "scheduler.max_steps") is not None)
        and not sample_fields
    ):
        steps = ["max_steps"] if field(ctx, "scheduler.max_steps") is not None else []
        problems.append(
            "train.train_samples makes this a sample-based run, but the scheduler sets "
            + ", ".join(iter_fields + steps)
        )
    if by_iters and sample_fields and not iter_fields:
        problems.append(
            "train.train_iters makes this an iteration-based run, but the scheduler sets "
            + ", ".join(sample_fields)
        )
    if field(ctx, "scheduler.lr_warmup_fraction") is not None and (
        "lr_warmup_iters" in iter_fields or "lr_warmup_samples" in sample_fields
    ):
        both = [
            n for n in ("lr_warmup_iters", "lr_warmup_samples") if n in iter_fields + sample_fields
        ]
        problems.append("lr_warmup_fraction is set together with " + " and ".join(both))
    if len(problems) > 0:
        yield Violation(
            path="scheduler",
            params={
                "text": "; ".join(problems),
                "iter_text": ", ".join(iter_fields) or "none",
                "sample_text": ", ".join(sample_fields) or "none",
            },
        )


def scheduler_steps_invalid(ctx: Context) -> Iterator[Violation]:
    """BAT010: scheduler.max_steps / lr_decay_iters that Bridge's step computation rejects."""
    iters = value(ctx, "train.train_iters")
    max_steps = field(ctx, "scheduler.max_steps")
    decay = field(ctx, "scheduler.lr_decay_iters")
    if max_steps is not None and max_steps <= 0:
        problem = f"scheduler.max_steps = {max_steps} must be positive"
    elif (
        max_steps is not None
        and iters is not None
        and value(ctx, "train.train_samples") is None
        and max_steps < iters
    ):
        problem = f"scheduler.max_steps = {max_steps} is below train.train_iters = {iters}"
    elif max_steps is None and decay is not None and decay <= 0:
        problem = "lr_decay_iters = 0 gives lr_decay_steps = 0"
    else:
        return
    yield Violation(path="scheduler.max_steps", params={"problem": problem})


def lr_warmup_not_below_decay(ctx: Context) -> Iterator[Violation]:
    """BAT011: a warm-up as long as the decay (Bridge caps it at decay·GBS - 1 samples)."""
    warmup = (
        field(ctx, "scheduler.lr_warmup_iters") if known(ctx, "scheduler.lr_warmup_iters") else 0
    )
    if known(ctx, "scheduler.max_steps"):
        decay = field(ctx, "scheduler.max_steps")
    elif known(ctx, "scheduler.lr_decay_iters"):
        decay = field(ctx, "scheduler.lr_decay_iters")
    else:
        decay = value(ctx, "train.train_iters") if fact(ctx, "full_dump") else None
    if not (
        value(ctx, "train.train_samples") is None
        and decay is not None
        and value(ctx, "scheduler.lr_warmup_fraction") is None
        and decay > 0
        and warmup >= decay
    ):
        return
    capped = decay * fact(ctx, "gbs") - 1 if decay else 0
    yield Violation(
        path="scheduler.lr_warmup_iters",
        params={"warmup": warmup, "decay": decay, "capped": capped},
    )


#: Megatron-LM's flags for the scheduler's dests, where a finding points.
_SCHEDULER_PATHS = {
    "train_iters": "train.train_iters", "train_samples": "train.train_samples",
    "lr_decay_iters": "scheduler.lr_decay_iters", "lr_decay_samples": "scheduler.lr_decay_samples",
    "lr_warmup_iters": "scheduler.lr_warmup_iters",
    "lr_warmup_samples": "scheduler.lr_warmup_samples",
    "lr_warmup_fraction": "scheduler.lr_warmup_fraction",
}  # fmt: skip


def _mlm_training_args(ctx: Context) -> Any:
    """The validated arguments of a Megatron-LM command line that trains (``--train-iters`` or
    ``--train-samples`` given, no ``--skip-train``), else None."""
    args = mlm_args(ctx)
    if args is None or args["skip_train"] is True:
        return None
    if not (args.has("train_iters") or args.has("train_samples")):
        return None
    return args


def _mlm_violation(args: Any, dest: str, **params: Any) -> Violation:
    return Violation(_SCHEDULER_PATHS.get(dest, dest), params, at=mlm_flag_at(args, dest))


def scheduler_kind_mixed_mlm(ctx: Context) -> Iterator[Violation]:
    """BAT016: iteration and sample scheduler flags mixed on a Megatron-LM command line.

    megatron/training/arguments.py::validate_args (core_v0.14.0 to core_v0.19.0) asserts, for an
    iteration-based run, that no sample flag is given, and for a sample-based one that no
    iteration flag is; the first failing assert stops the job, so only it is reported.
    """
    args = _mlm_training_args(ctx)
    if args is None:
        return
    fraction = args["lr_warmup_fraction"] is not None
    checks: list[tuple[bool, str, str]] = []
    if args["train_iters"]:
        checks += [
            (args["train_samples"] is not None, "train_samples",
             "expected iteration-based training"),
            (args["lr_decay_samples"] is not None, "lr_decay_samples",
             "expected iteration-based learning rate decay"),
            (args["lr_warmup_samples"] != 0, "lr_warmup_samples",
             "expected iteration-based learning rate warmup"),
            (fraction and args["lr_warmup_iters"] != 0, "lr_warmup_iters",
             "can only specify one of lr-warmup-fraction and lr-warmup-iters"),
        ]  # fmt: skip
    if args["train_samples"]:
        checks += [
            (args["train_iters"] is not None, "train_iters", "expected sample-based training"),
            (args["lr_decay_iters"] is not None, "lr_decay_iters",
             "expected sample-based learning rate decay"),
            (args["lr_warmup_iters"] != 0, "lr_warmup_iters",
             "expected sample-based learnig rate warmup"),
            (fraction and args["lr_warmup_samples"] != 0, "lr_warmup_samples",
             "can only specify one of lr-warmup-fraction and lr-warmup-samples"),
        ]  # fmt: skip
    for failed, dest, message in checks:
        if failed:
            kind = "iteration" if args["train_iters"] else "sample"
            yield _mlm_violation(args, dest, assertion=message, kind=kind)
            return


def lr_warmup_not_below_decay_mlm(ctx: Context) -> Iterator[Violation]:
    """BAT015: a warm-up as long as the decay on a Megatron-LM command line.

    megatron/training/training.py::get_optimizer_param_scheduler turns the flags into steps
    (iterations times GBS, or samples; a warm-up fraction times the decay steps; the decay
    defaults to the whole run) and Megatron-Core's OptimizerParamScheduler.__init__ asserts
    ``lr_decay_steps > 0`` and ``lr_warmup_steps < lr_decay_steps`` (core_v0.14.0 to
    core_v0.19.0). GBS multiplies both sides, so the iterations compare directly.
    """
    args = _mlm_training_args(ctx)
    if args is None or next(scheduler_kind_mixed_mlm(ctx), None) is not None:
        return  # validate_args stops first (BAT016): the scheduler is never built
    unit = "iterations" if args["train_iters"] else "samples"
    key = "iters" if args["train_iters"] else "samples"
    decay_dest = f"lr_decay_{key}"
    decay = args[decay_dest] if args[decay_dest] is not None else args[f"train_{key}"]
    fraction = args["lr_warmup_fraction"]
    warmup_dest = "lr_warmup_fraction" if fraction is not None else f"lr_warmup_{key}"
    warmup = args[warmup_dest]
    if args.incomplete and not all(
        args.has(d) for d in (decay_dest, "lr_warmup_fraction", warmup_dest)
    ):
        return  # a flag left at its default may be in words the reader could not expand
    numbers = (decay, warmup)
    if not all(isinstance(n, int | float) and not isinstance(n, bool) for n in numbers):
        return
    if decay <= 0:
        where = decay_dest if args.has(decay_dest) else f"train_{key}"
        yield _mlm_violation(
            args, where, problem=f"{where} = {decay} leaves no decay steps",
            asserted="lr_decay_steps > 0",
        )  # fmt: skip
        return
    steps = warmup * decay if fraction is not None else warmup
    if steps < decay:
        return
    written = (
        f"lr_warmup_fraction = {warmup} (a warm-up of {steps:g} {unit})"
        if fraction is not None
        else f"lr_warmup_{key} = {warmup}"
    )
    yield _mlm_violation(
        args, warmup_dest,
        problem=f"{written} is not below the decay length of {decay} {unit}",
        asserted="lr_warmup_steps < lr_decay_steps",
    )  # fmt: skip


CHECKS: dict[str, PythonCheck] = {
    "scheduler-kind-mixed-mlm": PythonCheck(
        scheduler_kind_mixed_mlm, frozenset({"assertion", "kind"})
    ),
    "lr-warmup-not-below-decay-mlm": PythonCheck(
        lr_warmup_not_below_decay_mlm, frozenset({"problem", "asserted"})
    ),
    "eval-batch": PythonCheck(
        eval_batch,
        frozenset(
            {
                "eval_gbs",
                "gbs_note",
                "eval_mbs",
                "eval_dp",
                "eval_unit",
                "cp_note",
                "nearest",
                "asserts",
            }
        ),
    ),
    "global-batch-not-divisible": PythonCheck(
        global_batch_not_divisible,
        frozenset({"unit", "choices", "step_note", "ratio"}),
        frozenset({"mbs", "dp", "gbs", "vpp", "pp"}),
    ),
    "rampup-batch-size-invalid": PythonCheck(
        rampup_batch_size_invalid,
        frozenset({"ramp", "problem", "unit"}),
        frozenset({"mbs", "dp", "gbs"}),
    ),
    "scheduler-fields-conflict": PythonCheck(
        scheduler_fields_conflict, frozenset({"text", "iter_text", "sample_text"})
    ),
    "scheduler-steps-invalid": PythonCheck(scheduler_steps_invalid, frozenset({"problem"})),
    "lr-warmup-not-below-decay": PythonCheck(
        lr_warmup_not_below_decay,
        frozenset({"warmup", "decay", "capped"}),
        frozenset({"full_dump", "gbs"}),
    ),
}
