"""``moe-lint plan`` end to end: the base config, the search, the lint of the top plans, the
departures from NVIDIA's long-context rules of thumb and why each plan beats the next.

The base is a model preset / HF ``config.json`` (an override-style document naming it) or a
Bridge YAML (a recipe dump or override file, whose settings the plans keep: overlap flags,
CUDA graphs, precision). Every plan shown has been linted as the YAML ``--emit`` writes, with
the full rule set; a plan with an error finding is dropped under that finding's code.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from moe_lint.config.mixed_precision import model_precision
from moe_lint.config.overrides import parse_override
from moe_lint.errors import InputError, UsageError
from moe_lint.plan import args as plan_args
from moe_lint.plan.perf import Hardware, Plan
from moe_lint.plan.search import (
    Candidate,
    Outcome,
    Request,
    best_for,
    fitting_rungs,
    plan_inputs,
    plan_values,
    rank_key,
    search,
)
from moe_lint.plan.space import plan_from_values, precision_of

#: --precision values and the Bridge mixed-precision recipe each writes.
PRECISIONS = {
    "bf16": ("bf16", None, "bf16_mixed"),
    "fp8": ("fp8", "tensorwise", "bf16_with_fp8_current_scaling_mixed"),
    "fp8-blockwise": ("fp8", "blockwise", "bf16_with_fp8_subchannel_scaling_mixed"),
    "mxfp8": ("fp8", "mxfp8", "bf16_with_mxfp8_mixed"),
    "nvfp4": ("fp4", "nvfp4", "bf16_with_nvfp4_mixed"),
}

DISPATCHERS = ("alltoall", "deepep", "hybridep")


@dataclass
class Options:
    """The command line, parsed (cli/plan.py builds it)."""

    model: str
    gpu: str | None
    gpus: tuple[int, ...]
    seq: int | None = None
    gbs: int | None = None
    tokens_per_step: int | None = None
    precision: str | None = None
    dispatcher: str | None = None
    max_ep: int | None = None
    fixed: dict[str, Any] = field(default_factory=dict)
    objective: str = "throughput"
    top: int = 10
    gpus_per_node: int | None = None
    compare: dict[str, int] | None = None  # a layout to place among the plans (--compare)
    overrides: tuple[str, ...] = ()  # `section.field=value` for the base config (--set)
    safe: bool = False  # --safe: only plans whose central memory estimate fits


@dataclass
class Result:
    request: Request
    outcome: Outcome
    shown: list[Candidate]
    dropped: list[tuple[Candidate, str]]
    base_name: str
    mixed_recipe: str | None
    priors: list[str]
    base_text: str
    base_is_yaml: bool
    lint_seconds: float = 0.0
    compared: Compared | None = None
    settings: Any = None  # the base file's resolved settings (fs), for --emit


@dataclass
class Compared:
    """A layout the user (or the seed) proposes, placed among the plans."""

    layout: dict[str, int]
    candidate: Candidate | None
    reason: str  # why it has no plan ('' when it has one)
    rank: int  # 1 + plans predicted faster; 0: slower than every kept plan
    why: str  # why the top plan is faster


def _base_document(opts: Options) -> tuple[Any, bool]:
    """The base config document: the YAML file itself, or a stub naming the model."""
    # Lazy: loaded only on the path that needs it (the planner itself is imported lazily).
    from moe_lint.config.load import load_file, parse_text

    path = _yaml_base(opts)
    if path is not None:
        return load_file(str(path)), True
    recipe = recipe_base(opts.model)
    if recipe is not None:
        return parse_text(recipe, f"<recipe {opts.model}>"), True
    seq = opts.seq or 4096
    text = f"model:\n  seq_length: {seq}\ndataset:\n  seq_length: {seq}\n"
    return parse_text(text, "<plan>"), False


def build(opts: Options) -> tuple[Request, Any, bool, str | None]:
    """The search request for the options (raises UsageError for what cannot be planned)."""
    # Lazy: the memory model (~40 ms to import) loads only when a plan is estimated.
    from moe_lint.analysis.memory_facts import config_values, model_inputs
    from moe_lint.analysis.params import Arch
    from moe_lint.config.memory_settings import memory_settings
    from moe_lint.config.settings import Settings, gpu_specs
    from moe_lint.linting import prepare

    doc, is_yaml = _base_document(opts)
    cluster: dict[str, object] = {"gpus": opts.gpus[0]}
    if not is_yaml:
        cluster["model"] = opts.model
    if opts.gpu:
        cluster["gpu"] = opts.gpu
    if opts.gpus_per_node:
        cluster["gpus-per-node"] = opts.gpus_per_node
    overrides = []
    for text in opts.overrides:
        try:
            overrides.append(parse_override(text))
        except InputError as exc:
            raise UsageError(exc.message) from None
    cfg, facts, fs = prepare(doc, Settings(), overrides, cluster)
    written = {
        ".".join(str(k) for k in o.path): o.value for o in overrides if not o.delete
    }  # what emit writes besides the plan
    if not fs.gpu:
        raise UsageError("plan needs --gpu (or a `# moe-lint: gpu=` directive in the file)")
    values = config_values(cfg)
    plain = model_inputs({n: f.value for n, f in facts.values.items()})
    try:
        arch = Arch.from_mapping(values)
    except (KeyError, ValueError) as exc:
        raise UsageError(f"plan needs the model's architecture: {exc} (pass --model)") from None
    seq = opts.seq or int(plain.get("seq") or 0)
    if not seq:
        raise UsageError("plan needs --seq (the sequence length)")
    gbs = _gbs(opts, seq, plain)
    precision, recipe, mixed = _precision(opts, values)
    spec = gpu_specs()[fs.gpu]
    hw = Hardware.from_spec(fs.gpu, spec)
    if precision not in hw.peak_tflops:
        raise UsageError(f"{fs.gpu} has no {precision} tensor cores (--precision)")
    mem, warn, margin = memory_settings(fs.memory, "memory settings")
    capacity = facts.values["gpu_hbm_gib"].value if "gpu_hbm_gib" in facts.values else None
    if capacity is None:
        raise UsageError(f"no memory capacity known for {fs.gpu}")
    if mixed is not None:
        values = {
            k: v
            for k, v in values.items()
            if not k.startswith("mixed_precision.") and k not in ("model.fp8", "model.fp4")
        }
        values["mixed_precision"] = mixed
        # the recipe's precision over the model's, as normalize writes it for the emitted file
        # (the memory model reads model.fp8: without it FP8 activations went uncounted)
        values.update(model_precision(mixed) or {})
    base_plan = plan_from_values(values, {**plain, "seq": seq, "gbs": gbs})
    flags = {
        "tp_overlap": base_plan.tp_overlap,
        "ep_overlap": base_plan.ep_overlap,
        "shared_expert_overlap": base_plan.shared_expert_overlap,
        "dp_overlap": base_plan.dp_overlap,
        "cuda_graphs": base_plan.cuda_graphs,
        "grad_fp32": base_plan.grad_fp32,
        "fp8_param_gather": base_plan.param_gather_bytes < 2,
    }
    dispatchers = (opts.dispatcher,) if opts.dispatcher else DISPATCHERS
    req = Request(
        arch=arch,
        values=values,
        facts=plain,
        gpu=fs.gpu,
        hardware=hw,
        gpus=opts.gpus,
        seq=seq,
        gbs=gbs,
        precision=precision,
        fp8_recipe=recipe,
        capacity_gib=float(capacity),
        memory_settings=mem,
        versions=dict(cfg.versions),
        dispatchers=dispatchers,
        fixed=dict(opts.fixed),
        max_ep=opts.max_ep,
        objective=opts.objective,
        keep=opts.top + 3,  # spares for plans the full estimate or the linter drops
        base_flags=flags,
        routing=(base_plan.routing, base_plan.capacity, base_plan.padded),
        written=written,
        safe=opts.safe,
        margin=margin,
        warn=warn,
    )
    return req, fs, is_yaml, mixed


def _gbs(opts: Options, seq: int, plain: dict[str, Any]) -> int:
    if opts.gbs:
        return opts.gbs
    if opts.tokens_per_step:
        return max(1, opts.tokens_per_step // seq)
    if plain.get("gbs"):
        return int(plain["gbs"])
    # 4M tokens per step, and at least one sequence per 16 GPUs so the default batch alone
    # does not force DP to 1 on a large cluster
    return max(1, 2**22 // seq, max(opts.gpus) // 16)


def _precision(opts: Options, values: dict[str, Any]) -> tuple[str, str | None, str | None]:
    """GEMM math, recipe and the mixed_precision recipe to write (None: keep the base's)."""
    if opts.precision:
        math_, recipe, mixed = PRECISIONS[opts.precision]
        return math_, recipe, mixed
    math_, recipe = precision_of(values)
    return math_, recipe, None


def run(opts: Options, lint_top: bool = True) -> Result:
    """Search, then lint the plans to show (dropping any the linter rejects)."""
    plan_args.check(opts)
    req, fs, is_yaml, mixed = build(opts)
    shown: list[Candidate] = []
    dropped: list[tuple[Candidate, str]] = []
    start = time.perf_counter()
    base_text = _base_text(opts, fs, is_yaml)
    # the linter or the every-rank estimate may drop kept plans: search again without them
    # (at most three rounds) until enough plans are left to show
    checked: dict[tuple[int, ...], str | None] = {}
    for _ in range(3):
        outcome = search(req)
        for cand in outcome.kept:
            if len(shown) >= opts.top:
                break
            key = cand.plan.key()
            if key not in checked:
                checked[key] = _full_check(req, cand, opts, fs, is_yaml, mixed, base_text, lint_top)
            else:  # shown in an earlier round: the same plan, already checked
                _full_check(req, cand, opts, fs, is_yaml, mixed, base_text, lint_top=False)
            reason = checked[key]
            if reason:
                dropped.append((cand, reason))
            else:
                shown.append(cand)
        if len(shown) >= opts.top or not dropped or len(outcome.kept) < req.keep:
            break
        req = replace(req, keep=req.keep + len(dropped),
                      exclude=frozenset(c.plan.key() for c, _ in dropped))  # fmt: skip
        shown = []
    # the every-rank estimate may change a plan's memory and verdict: rank ties again on them
    shown.sort(key=lambda c: rank_key(req, c))
    lint_s = time.perf_counter() - start
    priors = departures(req, shown, outcome)
    compared = compare(req, shown, outcome, opts.compare) if opts.compare else None
    return Result(
        req,
        outcome,
        shown,
        dropped,
        opts.model,
        mixed,
        priors,
        base_text,
        is_yaml,
        lint_s,
        compared,
        fs,
    )


def _full_check(
    req: Request,
    cand: Candidate,
    opts: Options,
    fs: Any,
    is_yaml: bool,
    mixed: str | None,
    base_text: str,
    lint_top: bool,
) -> str | None:
    """Why a kept plan is not shown (None: it is): the every-rank memory estimate (the search
    screened ranks 0, 1 and the last), --safe, then the linter on its emitted YAML."""
    est = _bounds(req, cand.plan)
    cand.lower_gib = est.lower_worst.total_gib
    cand.memory_gib = est.worst.total_gib
    verdict = est.verdict(req.warn, req.margin)
    if verdict == "does NOT fit":
        return f"MEM001: rank {est.lower_worst.stage} needs ≥ {cand.lower_gib:.1f} GiB"
    cand.verdict = str(verdict)
    if opts.safe and cand.verdict != "fits":
        return f"--safe: {cand.verdict}, central estimate {cand.memory_gib:.1f} GiB"
    if lint_top:
        return _lint_error(req, cand, opts, fs, is_yaml, mixed, base_text)
    return None


def _bounds(req: Request, p: Plan) -> Any:
    # Lazy: the memory model (~40 ms to import) loads only when a plan is estimated.
    from moe_lint.analysis.memory import estimate

    values, facts = plan_inputs(req, p)
    return estimate(values, facts, req.memory_settings, req.capacity_gib, req.versions)


def _base_text(opts: Options, fs: Any, is_yaml: bool) -> str:
    if is_yaml:
        path = _yaml_base(opts)
        return path.read_text(encoding="utf-8") if path else recipe_base(opts.model) or ""
    return ""


def _yaml_base(opts: Options) -> Path | None:
    """``--model`` as a Bridge YAML file (its own document is the base), else None."""
    path = Path(opts.model)
    return path if path.suffix in (".yaml", ".yml") and path.is_file() else None


@cache
def recipe_base(name: str) -> str | None:
    """A released Megatron Bridge recipe named as the plan's model (``--model
    deepseek_v3_pretrain_config``) as the YAML base the planner reads: what the recipe sets, as
    the launch-script reader applies it (config/bridge_launch.py::recipe_data), naming the
    preset of its HF checkpoint. None when ``name`` is no recipe (a preset or a path)."""
    # Lazy: loaded only on the path that needs it (the planner itself is imported lazily).
    import yaml

    # Lazy: the recipe table and the launch reader load only for a recipe-named base.
    from moe_lint.config import bridge_recipes
    from moe_lint.config.bridge_launch import recipe_data
    from moe_lint.config.settings import model_presets, preset_key

    if name in model_presets() or "/" in name or name.endswith((".yaml", ".yml", ".json")):
        return None
    recipe = bridge_recipes.lookup(name)
    if recipe is None:
        return None
    hf = (recipe.model or {}).get("hf")
    preset = preset_key(hf) if isinstance(hf, str) else None
    if preset is None:
        raise UsageError(
            f"recipe {name}: its model ({hf or 'not read from the recipe'}) is not one of "
            "moe-lint's presets, so its architecture is not known (see `moe-lint models`)"
        )
    data = recipe_data(recipe)
    if recipe.mixed_precision and not data.get("mixed_precision"):
        data["mixed_precision"] = recipe.mixed_precision
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=False)
    head = f"# moe-lint: model={preset}\n# Megatron Bridge recipe {name} ({recipe.function})\n"
    return head + body


def _lint_error(
    req: Request,
    cand: Candidate,
    opts: Options,
    fs: Any,
    is_yaml: bool,
    mixed: str | None,
    base_text: str,
) -> str | None:
    """The first error code the linter gives the plan's emitted YAML (None: lints clean); the
    same lint's warnings are kept on the candidate (``cand.warnings``) for the report."""
    # Lazy: the linter's data path loads only to lint the plans shown.
    from moe_lint.linting import lint_text
    from moe_lint.plan.emit import emit_text

    text = emit_text(req, cand, opts.model, fs, is_yaml, mixed, base_text)
    result = lint_text(text, _catalogue(), path="<plan>.yaml")
    if result.error:
        return f"exit 2: {result.error}"
    errors = [f for f in result.findings if str(f.severity) in ("error", "Severity.ERROR")]
    # a shown plan carries what the linter warns of it (PAR004 at DP = 1, ...), but not MEM002,
    # which its "may not fit" mark already is
    cand.warnings = tuple(
        (f.code, f.message)
        for f in result.findings
        if f.severity == "warning" and f.code != "MEM002"
    )
    return errors[0].code if errors else None


def _catalogue() -> Any:
    # Lazy: the linter's data path loads only to lint the plans shown.
    from moe_lint.engine.catalogue import shipped_catalogue

    return shipped_catalogue()


# ------------------------------------------------------------------------------ explanations


def seed_cp(seq: int) -> int:
    """The seed's CP prior: seq / 4096 rounded to a power of two (at least 1)."""
    raw = max(1.0, seq / 4096)
    return int(2 ** round(math.log2(raw)))


def compare(
    req: Request, shown: list[Candidate], outcome: Outcome, layout: dict[str, int]
) -> Compared:
    """Place ``layout`` (its fastest fitting knobs) among the plans and say why the top wins."""
    world = int(layout.get("gpus", req.gpus[0]))
    cand, reason = best_for(req, layout, world)
    if cand is None:
        return Compared(layout, None, reason, 0, "")
    speed = cand.prediction.tokens_per_s_per_gpu
    faster = [
        c
        for c in outcome.kept
        if c.plan.key() != cand.plan.key() and c.prediction.tokens_per_s_per_gpu > speed
    ]
    # the search keeps only the best req.keep plans: below all of them the rank is unknown
    rank = 1 + len(faster) if len(faster) < req.keep else 0
    why = why_better(shown[0], cand) if shown and shown[0].plan.key() != cand.plan.key() else ""
    return Compared(layout, cand, "", rank, why)


def transport_label(p: Plan) -> str:
    """``a2a+p2p [4, 4]`` / ``a2a`` for a plan whose CP does not run the default p2p ring, else
    empty."""
    if p.cp <= 1 or p.cp_comm == "p2p":
        return ""
    sizes = p.hierarchical_sizes
    return p.cp_comm + (f" [{sizes[0]}, {sizes[1]}]" if sizes else "")


def describe(p: Plan) -> str:
    rec = ",".join(p.recompute) or "no recompute"
    off = f", offload {p.offload:g}" if p.offload else ""
    transport = transport_label(p)
    cp = f"CP {p.cp}" + (f" ({transport})" if transport else "")
    return (
        f"TP {p.tp} PP {p.pp} VPP {p.vpp} {cp} EP {p.ep} ETP {p.etp} MBS {p.mbs}, "
        f"{p.dispatcher}, {rec}{off}"
    )


#: The seed's rules of thumb (docs/domain/00-seed.txt, "CP Sizing Rules Of Thumb") that a plan
#: is checked against, by the key a plan's JSON lists (``departs_from_guidance``) and the HTML
#: report marks; :func:`departures` explains the top plan's.
RULES_OF_THUMB = {
    "cp": "CP ≈ seq/4096, rounded to a power of two",
    "dp": "keep DP alive (DP > 1)",
    "nvlink": "TP and ETP·EP inside one NVLink domain",
    "full-recompute": "selective recompute before full recompute",
    "offload": "optimizer CPU offload only as extra memory help",
}


def departs_from(req: Request, p: Plan) -> list[str]:
    """The keys of :data:`RULES_OF_THUMB` that plan ``p`` departs from (a CP the user fixed
    with ``--set cp=`` is the user's choice, not the ranking's, and is not counted)."""
    dom = req.hardware.domain
    tests = {
        "cp": p.cp != seed_cp(req.seq) and "cp" not in req.fixed,
        "dp": p.dp == 1,
        "nvlink": p.tp > dom or p.ep * p.etp > dom,
        "full-recompute": "full" in p.recompute,
        "offload": bool(p.offload),
    }
    return [key for key in RULES_OF_THUMB if tests[key]]


def departures(req: Request, shown: list[Candidate], outcome: Outcome) -> list[str]:
    """Where the top plan departs from the seed's rules of thumb, and why."""
    if not shown:
        return []
    top = shown[0].plan
    departed = departs_from(req, top)
    out: list[str] = []
    cp0 = seed_cp(req.seq)
    if "cp" in departed:
        cand, reason = best_for(req, {"cp": cp0}, top.world, defaults=False)
        if cand is None:
            out.append(f"CP {top.cp}, not the guidance's seq/4096 → {cp0}: at CP {cp0}, {reason}")
        else:
            out.append(
                f"CP {top.cp}, not the guidance's seq/4096 → {cp0}: the best CP {cp0} plan "
                f"({describe(cand.plan)}) makes {cand.prediction.tokens_per_s_per_gpu:.0f} "
                f"tokens/s/GPU; the top plan {why_better(shown[0], cand)}"
            )
    if "dp" in departed and any(c.plan.dp > 1 for c in outcome.kept):
        out.append(
            "DP is 1 (the guidance says keep DP alive): the kept plans with DP > 1 are "
            "predicted slower"
        )
    if "nvlink" in departed:
        out.append(
            f"TP {top.tp} / ETP·EP {top.ep * top.etp} leave the NVLink domain of "
            f"{req.hardware.domain}: predicted faster despite the exposed scale-out all-to-all"
        )
    if "full-recompute" in departed or "offload" in departed:
        rungs = fitting_rungs(req, top)
        if "full-recompute" in departed:
            selective = [r for r in rungs if "full" not in r[0]]
            out.append(
                "full recompute (the guidance says selective first): "
                + ("no selective set fits this layout" if not selective else
                   "predicted faster than the selective sets that fit "
                   f"({', '.join(_rung_text(r) for r in selective[:2])})")
            )  # fmt: skip
        if "offload" in departed:
            kept_on = [r for r in rungs if r[1] == 0]
            out.append(
                f"optimizer CPU offload {top.offload:g}: "
                + ("without it no recompute set makes this layout fit" if not kept_on else
                   "predicted faster than without it, which needs "
                   f"{_rung_text(kept_on[0])}")
            )  # fmt: skip
    return out


def _rung_text(rung: tuple[tuple[str, ...], float]) -> str:
    rec = ",".join(rung[0]) or "no recompute"
    return rec + (f" + offload {rung[1]:g}" if rung[1] else "")


def why_better(a: Candidate, b: Candidate) -> str:
    """One line: the step-time terms where ``a`` gains most over ``b``."""
    da, db = a.prediction.breakdown.as_dict(), b.prediction.breakdown.as_dict()
    diffs = sorted(((db[k] - da[k], k) for k in da), reverse=True)
    gain = (a.prediction.tokens_per_s_per_gpu / b.prediction.tokens_per_s_per_gpu - 1) * 100
    parts = [f"{_term(k)} −{d:.2f} s" for d, k in diffs[:2] if d > 0.005 * b.prediction.step_s]
    shown = f"{gain:+.1f}".replace("-0.0", "±0.0").replace("+0.0", "±0.0")
    if not parts:
        return f"{shown} % (within the model's noise: ranked on fit, memory headroom, simplicity)"
    return f"{shown} %: " + ", ".join(parts)


def _term(name: str) -> str:
    return {
        "compute": "compute",
        "recompute": "recompute",
        "tp": "TP comm",
        "cp": "CP comm",
        "ep": "EP all-to-all",
        "pp_p2p": "PP p2p",
        "bubble": "bubble",
        "dp": "DP comm",
        "optimizer": "optimizer",
    }[name]


__all__ = [
    "DISPATCHERS",
    "PRECISIONS",
    "RULES_OF_THUMB",
    "Options",
    "Result",
    "build",
    "departs_from",
    "plan_values",
    "run",
    "seed_cp",
    "why_better",
]
