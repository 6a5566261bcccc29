"""Validate the planner against NVIDIA's published MoE throughput rows (docs/planner-validation.md).

Every MoE row of Megatron Bridge's performance summary with a reconstructed config
(tests/data/published-rows/*.yaml, tools/published_rows.py) is timed by the planner's
performance model (src/moe_lint/plan/perf.py) with the row's own layout and settings, and
searched by the planner on the row's model, GPU, GPU count, precision, sequence and global
batch. The report gives issue 14's four measures:

(a) every published layout passes the planner's feasibility and memory filters;
(b) median |error| of predicted tokens/s/GPU;
(c) Spearman rank correlation of predicted vs published within each (model, GPU) with >= 4 rows;
(d) per published (model, GPU, count, precision): the planner's top plan is predicted at least
    as fast as the published layout, and the published layout is in its top 10.

Usage::

    python tools/planner_report.py              # rewrite docs/planner-validation.md
    python tools/planner_report.py --check      # exit 1 when it is stale
    python tools/planner_report.py --calibrate  # refit the `calibrated:` block of
                                                # src/moe_lint/data/planner.yaml, then rewrite
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _generated import write_or_check  # noqa: E402

TSV = REPO / "tests" / "data" / "published-performance.tsv"
ROWS = REPO / "tests" / "data" / "published-rows"
LONG = REPO / "tests" / "data" / "published-long-context"
OUT = REPO / "docs" / "planner-validation.md"
CONSTANTS = REPO / "src" / "moe_lint" / "data" / "planner.yaml"


@dataclass
class Row:
    """One published row with its reconstructed config, ready to time."""

    file: str
    line: int
    release: str
    model: str
    gpu: str  # moe-lint GPU key
    precision_label: str
    published: float  # tokens/s/GPU
    published_tflops: float | None
    values: dict[str, Any]
    facts: dict[str, Any]
    model_key: str | None  # preset name (override-style rows)
    #: "short" (Bridge's performance tables), "long-context" (the calibration series) or
    #: "validation" (published long-context points held back: never fitted)
    series: str = "short"

    @property
    def group(self) -> tuple[str, str]:
        return (self.model, self.gpu)


def _tsv() -> dict[int, dict[str, str]]:
    """The published rows by their TSV line (tools/published_rows.py reads the file)."""
    import published_rows

    return {row.line: row.values for row in published_rows.read_rows(TSV)[1]}


def _configs(folder: Path, tsv: str) -> Iterator[tuple[Path, int, Any, dict[str, Any], Any]]:
    """(path, TSV line, values, facts, settings) of every config in ``folder`` that cites its
    line in ``tsv``, read as the linter reads it."""
    from moe_lint.analysis.memory_facts import config_values, model_inputs
    from moe_lint.config.load import load_file
    from moe_lint.config.settings import Settings
    from moe_lint.linting import prepare

    for path in sorted(folder.glob("*.yaml")):
        found = re.search(re.escape(tsv) + r" line (\d+)", path.read_text(encoding="utf-8"))
        if not found:
            continue
        cfg, facts, fs = prepare(load_file(str(path)), Settings(), [], {})
        plain = model_inputs({n: f.value for n, f in facts.values.items()})
        yield path, int(found.group(1)), config_values(cfg), plain, fs


@cache
def rows() -> tuple[Row, ...]:
    """Every published row with a config, in file order, then the long-context rows."""
    table = _tsv()
    out: list[Row] = []
    for path, line, values, plain, fs in _configs(ROWS, "published-performance.tsv"):
        row = table[line]
        tflops = row.get("model_tflops_per_gpu", "")
        out.append(
            Row(
                file=path.name,
                line=line,
                release=row["release"],
                model=row["model"],
                gpu=str(fs.gpu),
                precision_label=row["precision"],
                published=float(row["tokens_per_sec_per_gpu"]),
                published_tflops=float(tflops) if re.fullmatch(r"[\d.]+", tflops) else None,
                values=values,
                facts=plain,
                model_key=fs.model,
            )
        )
    return tuple(out) + _long_context_rows()


def _long_context_rows() -> tuple[Row, ...]:
    """The long-context series (tests/data/published-long-context.tsv, configs written by
    tools/long_context_rows.py). The TSV gives model TFLOP/s/GPU; ``published`` is that over
    the model FLOPs per token the planner counts (Bridge's flop_utils)."""
    import long_context_rows

    from moe_lint.analysis.params import Arch
    from moe_lint.config.settings import gpu_specs
    from moe_lint.plan.perf import Hardware, Model

    table = dict(long_context_rows.read_rows())
    out: list[Row] = []
    for path, line, values, plain, fs in _configs(LONG, "published-long-context.tsv"):
        row = table[line]
        hw = Hardware.from_spec(str(fs.gpu), gpu_specs()[str(fs.gpu)])
        model = Model.build(Arch.from_mapping(values), hw, int(plain["seq"]), values)
        tflops = float(row["value"])
        out.append(
            Row(
                file=path.name,
                line=line,
                release="ModelZoo",
                model=row["model"],
                gpu=str(fs.gpu),
                precision_label=row["precision"],
                published=tflops * 1e12 / model.flops_token,
                published_tflops=tflops,
                values=values,
                facts=plain,
                model_key=fs.model,
                series="validation" if row["scope"] == "validation" else "long-context",
            )
        )
    out.sort(key=lambda r: (r.series, r.gpu, r.file.split("__")[-1], int(r.facts["seq"])))
    return tuple(out)


def series_indices(name: str) -> list[int]:
    """Indices in :func:`rows` of one series."""
    return [i for i, r in enumerate(rows()) if r.series == name]


@cache
def _model(index: int) -> Any:
    from moe_lint.analysis.params import Arch
    from moe_lint.config.settings import gpu_specs
    from moe_lint.plan.perf import Hardware, Model

    r = rows()[index]
    arch = Arch.from_mapping(r.values)
    hw = Hardware.from_spec(r.gpu, gpu_specs()[r.gpu])
    return Model.build(arch, hw, int(r.facts["seq"]), r.values)


@cache
def _plan(index: int) -> Any:
    from moe_lint.plan.space import plan_from_values

    r = rows()[index]
    return plan_from_values(r.values, r.facts)


def predictions(fresh: bool = False) -> list[float]:
    """Predicted tokens/s/GPU of every row's own layout (``fresh``: after a constant changed,
    drop the models' memoized layer times)."""
    out = []
    for i in range(len(rows())):
        model = _model(i)
        if fresh:
            model.forget()
        out.append(model.predict(_plan(i)).tokens_per_s_per_gpu)
    return out


def errors(pred: list[float] | None = None) -> list[float]:
    pred = predictions() if pred is None else pred
    return [p / r.published - 1.0 for p, r in zip(pred, rows(), strict=True)]


def spearman(xs: list[float], ys: list[float]) -> float:
    """Spearman's rho with average ranks for ties."""

    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=lambda i: v[i])
        out = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                out[order[k]] = (i + j) / 2 + 1
            i = j + 1
        return out

    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    sy = math.sqrt(sum((b - my) ** 2 for b in ry))
    if sx == 0 or sy == 0:
        return float("nan")
    return sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True)) / (sx * sy)


def groups(pred: list[float]) -> list[tuple[tuple[str, str], int, float]]:
    """(model, GPU), row count and Spearman rho for every group with >= 4 rows."""
    by: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(rows()):
        if r.series == "short":
            by.setdefault(r.group, []).append(i)
    out = []
    for key, idx in sorted(by.items()):
        if len(idx) >= 4:
            rho = spearman([pred[i] for i in idx], [rows()[i].published for i in idx])
            out.append((key, len(idx), rho))
    return out


# ------------------------------------------------------------------------------ calibration


#: Fitted constants and the physical range each may take (the fit may not buy accuracy with a
#: GEMM at 95 % of peak or a millisecond of launch overhead per layer).
_FITTED: dict[tuple[str, str | None], tuple[float, float]] = {
    ("gemm_efficiency", None): (0.25, 0.80),
    ("fp8_relative_efficiency", None): (0.5, 1.0),
    ("fp4_relative_efficiency", None): (0.3, 1.0),
    ("quantize_passes", None): (0.0, 60.0),
    ("dropless_expert_imbalance", None): (1.0, 1.6),
    ("gemm_half_rows", None): (32.0, 512.0),
    ("elementwise_passes", None): (10.0, 100.0),
    ("routed_copy_passes", None): (2.0, 40.0),
    ("launch_us_per_layer", None): (20.0, 500.0),
    ("cuda_graph_factor", None): (0.1, 1.0),
    ("cp_step_us", None): (5.0, 100.0),
}


def _get(cal: dict[str, Any], key: tuple[str, str | None]) -> float:
    name, sub = key
    return float(cal[name][sub] if sub else cal[name])


def _set(cal: dict[str, Any], key: tuple[str, str | None], value: float) -> None:
    name, sub = key
    if sub:
        cal[name][sub] = value
    else:
        cal[name] = value


def objective(pred: list[float], only: set[int] | None = None) -> float:
    """Mean |log(predicted / published)| of the short rows plus that of the long-context series,
    each row capped at log 2 (what the fit minimises: smooth enough for coordinate descent, and
    a row the model cannot explain weighs no more than a factor of 2). The two series weigh the
    same, so the 8 long-context rows are not outvoted by the 189 short ones; the validation
    rows are never fitted."""
    total = 0.0
    for series in ("short", "long-context"):
        terms = [
            min(abs(math.log(pred[i] / rows()[i].published)), math.log(2))
            for i in series_indices(series)
            if only is None or i in only
        ]
        if terms:
            total += statistics.fmean(terms)
    return total


def median_log_error(pred: list[float]) -> float:
    """Median |log(predicted / published)|."""
    return statistics.median(
        abs(math.log(p / r.published)) for p, r in zip(pred, rows(), strict=True)
    )


#: Where every fit starts (the whole-set fit and each cross-validation fold alike), so a
#: fold never starts from values the held-out rows shaped.
START: dict[str, Any] = {
    "gemm_efficiency": 0.5,
    "fp8_relative_efficiency": 0.85,
    "fp4_relative_efficiency": 0.7,
    "quantize_passes": 10.0,
    "dropless_expert_imbalance": 1.2,
    "gemm_half_rows": 128.0,
    "elementwise_passes": 40.0,
    "routed_copy_passes": 12.0,
    "launch_us_per_layer": 200.0,
    "cuda_graph_factor": 0.5,
    "cp_step_us": 30.0,
}


def calibrate(log: Callable[[str], None] = print, only: set[int] | None = None) -> dict[str, Any]:
    """Coordinate descent on the calibrated constants from :data:`START` (multiplicative steps,
    a few passes), fitted on the rows ``only`` (all by default)."""
    import copy

    from moe_lint.plan.perf import constants

    cal = constants()["calibrated"]
    cal.clear()
    cal.update(copy.deepcopy(START))
    best = objective(predictions(fresh=True), only)
    log(f"start: mean capped |log err| {best:.4f}")
    for step in (1.5, 1.25, 1.1, 1.04, 1.015):
        improved = True
        while improved:
            improved = False
            for key in _FITTED:
                old = _get(cal, key)
                low, high = _FITTED[key]
                for factor in (step, 1 / step):
                    new = old * factor
                    if not low <= new <= high:
                        continue
                    _set(cal, key, new)
                    score = objective(predictions(fresh=True), only)
                    if score < best - 1e-6:
                        best, old, improved = score, new, True
                        log(f"  {key[0]}{'.' + key[1] if key[1] else ''} -> {new:.4g}: {best:.4f}")
                    else:
                        _set(cal, key, old)
    return cal


def cross_validate(log: Callable[[str], None] = print) -> float:
    """Two folds by model (the models alternate between them in name order): fit on one, predict
    the other; the median |error| of those out-of-fold predictions."""
    from moe_lint.plan.perf import constants

    models = sorted({r.model for r in rows()})
    fold = {m: i % 2 for i, m in enumerate(models)}
    errors: list[float] = []
    for k in (0, 1):
        train = {i for i, r in enumerate(rows()) if fold[r.model] != k}
        calibrate(lambda _: None, train)
        pred = predictions(fresh=True)
        errors += [
            pred[i] / r.published - 1
            for i, r in enumerate(rows())
            if i not in train and r.series == "short"
        ]
    constants.cache_clear()  # back to the whole-set fit as planner.yaml holds it
    predictions(fresh=True)
    result = statistics.median(abs(e) for e in errors)
    log(f"2-fold by model, out-of-fold median |error|: {result:.3f}")
    return result


def write_record(in_sample: float, out_of_fold: float) -> None:
    """The calibration's own numbers, in planner.yaml's `calibration_record:` block."""
    text = CONSTANTS.read_text(encoding="utf-8")
    head, _, _ = text.partition("\ncalibration_record:\n")
    record = (
        "\ncalibration_record:\n"
        f"  rows: {len(rows())}\n"
        f"  median_abs_error_in_sample: {in_sample:.3f}\n"
        f"  median_abs_error_two_fold_by_model: {out_of_fold:.3f}\n"
    )
    CONSTANTS.write_text(head.rstrip("\n") + "\n" + record, encoding="utf-8")


def write_calibration(cal: dict[str, Any]) -> None:
    """Rewrite the numbers of the `calibrated:` block in planner.yaml, keeping its comments."""
    text = CONSTANTS.read_text(encoding="utf-8")
    head, sep, block = text.partition("\ncalibrated:\n")
    block, rsep, record = block.partition("\ncalibration_record:\n")
    lines = block.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"(\s+)(\w+): (.*)$", line)
        if not m or m.group(2) not in cal:
            continue
        value = cal[m.group(2)]
        if isinstance(value, dict):
            shown = ", ".join(f"{k}: {_num(v)}" for k, v in value.items())
            lines[i] = f"{m.group(1)}{m.group(2)}: {{{shown}}}"
        else:
            lines[i] = f"{m.group(1)}{m.group(2)}: {_num(value)}"
    text = head + sep + "\n".join(lines) + "\n"
    if rsep:
        text += rsep.lstrip("\n") + record
    CONSTANTS.write_text(text, encoding="utf-8")


def _num(value: float) -> str:
    value = float(value)
    if value >= 10:
        return str(round(value))
    return f"{value:.3g}"


# ------------------------------------------------------------------------------ the report


def _record(name: str) -> float:
    from moe_lint.plan.perf import constants

    return float(constants().get("calibration_record", {}).get(name, float("nan")))


def render() -> str:
    pred = predictions()
    every = errors(pred)
    short = series_indices("short")
    errs = [every[i] for i in short]
    out = [
        "# Planner validation against NVIDIA's published MoE throughput",
        "",
        "GENERATED by `python tools/planner_report.py` from tests/data/published-performance.tsv,",
        "tests/data/published-rows/, tests/data/published-long-context.tsv,",
        "tests/data/published-long-context/ and src/moe_lint/data/planner.yaml; do not edit.",
        "",
        f"Three sets of published rows, reported apart: {len(short)} short-sequence rows of "
        "Megatron Bridge's performance tables (4K-8K tokens) with a reconstructed config (the",
        "rows without one are in tests/data/published-rows/SKIPPED.tsv), NVIDIA's long-context",
        f"calibration series ({len(series_indices('long-context'))} rows) and "
        f"{len(series_indices('validation'))} further long-context point(s) held back from the "
        "fit. Each is timed with its own layout and settings.",
        "",
        render_long_context(pred),
        "## (b) Error of predicted tokens/s/GPU (short-sequence rows)",
        "",
        f"- median |error|: **{statistics.median(abs(e) for e in errs) * 100:.1f} %**",
        f"- median signed error: {statistics.median(errs) * 100:+.1f} %",
        f"- within ±25 %: {sum(abs(e) <= 0.25 for e in errs)} of {len(errs)}",
        "- the constants were fitted on these rows (`--calibrate`); fitted on half the models and",
        "  tested on the other half (two folds by model), the median |error| is "
        f"**{_record('median_abs_error_two_fold_by_model') * 100:.1f} %**.",
        "",
        "## (c) Spearman rank correlation within (model, GPU), groups of >= 4 rows",
        "",
        "| model | GPU | rows | rho |",
        "|---|---|---:|---:|",
    ]
    gs = groups(pred)
    for (model, gpu), n, rho in gs:
        shown = f"{rho:.2f}" if rho == rho else "n/a: one predicted value"
        out.append(f"| {model} | {gpu} | {n} | {shown} |")
    ranked = [rho for *_, rho in gs if rho == rho]
    passing = sum(1 for rho in ranked if rho >= 0.7)
    out += [
        "",
        f"{passing} of the {len(ranked)} groups whose rows the model tells apart have rho >= 0.7 "
        f"({len(gs)} groups in all). In the other {len(gs) - len(ranked)} every row has the same "
        "layout and the same settings the model reads (one recipe across releases), so it "
        "predicts one value for all of them and a rank correlation is undefined: what differs "
        "between those rows is the software release, which the model does not see.",
        "",
        "## Every row",
        "",
        "| row | release | model | GPU | precision | published | predicted | error |",
        "|---|---|---|---|---|---:|---:|---:|",
    ]
    for r, p, e in ((rows()[i], pred[i], every[i]) for i in short):
        out.append(
            f"| {r.file.removesuffix('.yaml')} | {r.release} | {r.model} | {r.gpu} | "
            f"{r.precision_label} | {r.published:.0f} | {p:.0f} | {e * 100:+.0f} % |"
        )
    return "\n".join(out) + "\n"


def render_long_context(pred: list[float]) -> str:
    """The long-context rows: the calibration series and the held-back points, each with its
    predicted and published model TFLOP/s/GPU and the medians."""
    every = errors(pred)
    out = ["## Long context", ""]
    for series, title in (
        ("long-context", "Calibration series: Qwen3-235B-A22B on 256 H100, 16K to 128K (fitted)"),
        ("validation", "Held back (never fitted)"),
    ):
        idx = series_indices(series)
        if not idx:
            continue
        med = statistics.median(abs(every[i]) for i in idx)
        out += [
            f"### {title}",
            "",
            f"- median |error| of model TFLOP/s/GPU: **{med * 100:.1f} %** over {len(idx)} rows",
            "",
            "| row | seq | TP/CP/EP/PP/VPP | routing | published TFLOP/s | predicted | error |",
            "|---|---:|---|---|---:|---:|---:|",
        ]
        for i in idx:
            r, plan = rows()[i], _plan(i)
            tflops = _model(i).predict(plan).model_tflops_per_gpu
            routing = r.file.removesuffix(".yaml").split("__")[-1]
            out.append(
                f"| {r.file.removesuffix('.yaml')} | {int(r.facts['seq']) // 1024}K | "
                f"{plan.tp}/{plan.cp}/{plan.ep}/{plan.pp}/{plan.vpp} | {routing} | "
                f"{r.published_tflops:.0f} | {tflops:.0f} | {every[i] * 100:+.0f} % |"
            )
        out.append("")
    return "\n".join(out) + "\n"


def searched() -> list[dict[str, Any]]:
    """(a) and (d): per published (model, GPU, count, precision), the planner's search from the
    row's own config (its settings kept), with the row's sequence and global batch."""
    from moe_lint.plan.run import Options, build
    from moe_lint.plan.search import _feasible_layouts, _Memory, _Pruned, _usable, best_for, search

    seen: set[tuple[Any, ...]] = set()
    out: list[dict[str, Any]] = []
    for i, r in enumerate(rows()):
        world = int(r.facts["world"])
        key: tuple[Any, ...] = (r.model, r.gpu, world, r.precision_label)
        if r.series != "short":  # each long-context row is its own search (seq, routing)
            key = (r.file,)
        if key in seen:
            continue
        seen.add(key)
        opts = Options(
            model=str((ROWS if r.series == "short" else LONG) / r.file),
            gpu=r.gpu,
            gpus=(world,),
            seq=int(r.facts["seq"]),
            gbs=int(r.facts.get("gbs") or 0) or None,
        )
        req, *_ = build(opts)
        pub = _plan(i)
        lay = {
            "tp": pub.tp,
            "cp": pub.cp,
            "pp": pub.pp,
            "vpp": pub.vpp,
            "ep": pub.ep,
            "etp": pub.etp,
            "mbs": pub.mbs,
        }
        layouts = [
            {k: v for k, v in d.items() if k != "dp"}
            for d in _feasible_layouts(req, world, _Pruned())
        ]
        rules_ok = lay in layouts
        # MEM001's criterion on every rank: the lower bound within usable memory
        need = _Memory(req).estimate(pub, bounds="lower-only").lower_worst.total_gib
        fits = need <= _usable(req) * (1 + req.margin)
        outcome = search(req)
        pub_speed = _model(i).predict(pub).tokens_per_s_per_gpu
        top = outcome.kept[0].prediction.tokens_per_s_per_gpu if outcome.kept else 0.0
        faster = [
            c
            for c in outcome.kept
            if c.plan.key() != pub.key() and c.prediction.tokens_per_s_per_gpu > pub_speed
        ]
        own, _ = best_for(req, lay, world)  # the published layout with the planner's knobs
        out.append(
            {
                "row": r.file.removesuffix(".yaml"),
                "rules": rules_ok,
                "fits": fits,
                "memory": need,
                "usable": _usable(req),
                "published": pub_speed,
                "top": top,
                "rank": len(faster) + 1,
                "planner_knobs": own.prediction.tokens_per_s_per_gpu if own else 0.0,
                "seconds": outcome.seconds,
                "layouts": outcome.visited,
            }
        )
    return out


def render_search() -> str:
    res = searched()
    a = sum(1 for x in res if x["rules"] and x["fits"])
    # plans within 0.1 % rank the simpler first (search.rank_key): "at least as fast" allows it
    d1 = sum(1 for x in res if x["top"] >= x["published"] * 0.999)
    d1k = sum(1 for x in res if x["top"] >= x["planner_knobs"] * 0.999)
    d2 = sum(1 for x in res if x["rank"] <= 10)
    near = sum(1 for x in res if x["published"] >= x["top"] * 0.95)
    out = [
        "",
        "## (a) and (d): the search on every published (model, GPU, count, precision)",
        "",
        "Each search starts from the row's own config (its overlap, CUDA-graph and precision "
        "settings kept) with the row's GPU count, sequence length and global batch; every other "
        "dimension is free. Memory passes when the lower bound fits (MEM001's criterion).",
        "",
        f"- (a) published layout passes the rule and memory filters: **{a} of {len(res)}**",
        f"- (d) top plan predicted at least as fast as the published layout with its own knobs: "
        f"**{d1} of {len(res)}**; as the published layout with the planner's knobs (it takes "
        f"the cheapest recompute/offload whose central estimate fits): **{d1k} of {len(res)}**",
        f"- (d) published layout in the top 10: **{d2} of {len(res)}**",
        f"- published layout predicted within 5 % of the top plan: **{near} of {len(res)}**",
        f"- layouts searched per row: median {statistics.median(x['layouts'] for x in res):.0f}, "
        f"max {max(x['layouts'] for x in res)}",
        "",
        "| row | rules | lower-bound memory GiB (usable) | published layout tok/s/GPU | top plan "
        "| rank |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for x in res:
        out.append(
            f"| {x['row']} | {'pass' if x['rules'] else 'PRUNED'} | {x['memory']:.0f} "
            f"({x['usable']:.0f}){'' if x['fits'] else ' OVER'} | {x['published']:.0f} | "
            f"{x['top']:.0f} | {x['rank'] if x['rank'] <= 10 else '>10'} |"
        )
    return "\n".join(out) + "\n"


#: The seed's three representative families (domain 00-seed.txt "Representative Config
#: Families"): model, GPU, count, sequence, precision and the seed's layout.
SEED_FAMILIES = (
    ("DSV3 at 128K on 256 H100", "deepseek-v3", "h100", 256, 131072, "fp8-blockwise",
     {"tp": 1, "cp": 32, "ep": 32, "pp": 8, "vpp": 4}),
    ("DSV3 at 256K on 512 H100", "deepseek-v3", "h100", 512, 262144, "fp8-blockwise",
     {"tp": 1, "cp": 64, "ep": 32, "pp": 8, "vpp": 4}),
    ("Qwen3-235B at 128K on 128 GB200", "qwen3-235b-a22b", "gb200", 128, 131072, "mxfp8",
     {"tp": 4, "cp": 4, "ep": 32, "pp": 4, "vpp": 12}),
)  # fmt: skip


def render_seed() -> str:
    """The seed's families: the planner's top 5 and where the seed's own layout ranks."""
    from moe_lint.plan.run import Options, describe, run

    out = ["", "## The guidance's three families", "",
           "`moe-lint plan --model M --gpu G --gpus N --seq S --precision P --compare LAYOUT` "
           "(default GBS: 4M tokens per step); the guidance's layout gets the planner's fastest "
           "knobs that fit.", ""]  # fmt: skip
    for name, model, gpu, gpus, seq, precision, layout in SEED_FAMILIES:
        # ten plans kept (and ranked), five shown
        result = run(Options(model=model, gpu=gpu, gpus=(gpus,), seq=seq, precision=precision,
                             top=10, compare=dict(layout)))  # fmt: skip
        out += [f"### {name} (GBS {result.request.gbs})", ""]
        for i, c in enumerate(result.shown[:5], 1):
            out.append(f"{i}. {describe(c.plan)}: {c.prediction.tokens_per_s_per_gpu:.0f} "
                       f"tokens/s/GPU, {c.memory_gib:.0f} GiB ({c.verdict})")  # fmt: skip
        cmp = result.compared
        seed = ", ".join(f"{k.upper()} {v}" for k, v in layout.items())
        if cmp is None or cmp.candidate is None:
            out.append(f"- the guidance's layout ({seed}): no plan: {cmp.reason if cmp else '?'}")
        else:
            rank = f"rank {cmp.rank}" if cmp.rank else "below the kept plans"
            out.append(
                f"- the guidance's layout ({seed}): {describe(cmp.candidate.plan)}: "
                f"{cmp.candidate.prediction.tokens_per_s_per_gpu:.0f} tokens/s/GPU, {rank}"
                + (f"; the top plan {cmp.why}" if cmp.why else "")
            )
        out += [f"- {text}" for text in result.priors]
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--calibrate", action="store_true")
    args = parser.parse_args(argv)
    if args.calibrate:
        from moe_lint.plan.perf import constants

        write_calibration(calibrate())
        held_out = cross_validate()  # ends with planner.yaml's (rounded) constants loaded
        errs = errors(predictions(fresh=True))
        in_sample = statistics.median(abs(errs[i]) for i in series_indices("short"))
        write_record(in_sample, held_out)
        constants.cache_clear()
    text = render() + render_search() + render_seed()
    return write_or_check(OUT, text, check=args.check, command="python tools/planner_report.py")


if __name__ == "__main__":
    sys.exit(main())
