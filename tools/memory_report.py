"""Run the memory model on every published measurement and write docs/memory-validation.md.

Usage::

    python tools/memory_report.py            # rewrite docs/memory-validation.md
    python tools/memory_report.py --check    # exit 1 when the file is out of date

Each point of tests/data/memory-points/points.yaml is a published per-GPU memory figure of an
NVIDIA Megatron Bridge run; its config, reconstructed from the recipe at the measured commit, is
the file next to it, with the GPU count, GPU, model and framework versions in its
``# moe-lint:`` directive. The report lints nothing: it runs the same ``prepare`` and
``run_estimate`` as ``moe-lint estimate`` and compares like with like (Bridge logs bytes/1e9 as
"GB", docs/domain/06 §1). Nothing here is fitted per run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from moe_lint.analysis.memory import BAND, GIB, Estimate, StageEstimate  # noqa: E402
from moe_lint.analysis.memory.allocator import FITS  # noqa: E402
from moe_lint.analysis.memory.context import _Values, loads_optimizer_state  # noqa: E402
from moe_lint.analysis.memory.verdict import judge  # noqa: E402
from moe_lint.analysis.memory_facts import config_values, run_estimate  # noqa: E402
from moe_lint.config.load import load_file  # noqa: E402
from moe_lint.config.memory_settings import (  # noqa: E402
    DEFAULT_ERROR_MARGIN,
    DEFAULT_WARN_FRACTION,
    MemorySettings,
)
from moe_lint.config.settings import GPU_ALIASES, Settings, gpu_specs  # noqa: E402
from moe_lint.linting import prepare  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _generated import write_or_check  # noqa: E402

POINTS = REPO / "tests" / "data" / "memory-points"
INDEX = POINTS / "points.yaml"
OUTPUT = REPO / "docs" / "memory-validation.md"
GB_PER_GIB = GIB / 1e9
GB_PER_MIB = 2**20 / 1e9
#: A device-level figure at or above this share of the GPU's nvidia-smi total: the device was
#: full, so the figure is a lower bound on what the run would take.
AT_LIMIT = 0.99
#: Long context for the calibration split (sequence length in tokens).
LONG_CONTEXT = 32768
#: The v2 model's accuracy on the calibration points (docs/memory-validation.md before issue 23):
#: the calibration points must stay within it (tests/test_memory.py).
CALIBRATION_V2 = {"median": 0.015, "under": -0.035, "over": 0.063}

#: Statistics that are an allocator peak (what the central estimate's allocated peak predicts).
PEAKS = ("max_allocated", "peak_unnamed")
#: Statistics compared with the central estimate but not a stated peak (maybe current memory).
ALLOCATED = (*PEAKS, "allocated_unnamed")


@dataclass
class Row:
    """One point: what was measured and what the model says about the same rank and moment."""

    point: dict[str, Any]
    est: Estimate | None
    problem: str | None = None
    stat: str | None = None
    measured_gb: float | None = None
    central_gb: float | None = None
    lower_gb: float | None = None
    upper_gb: float | None = None
    reserved_gb: float | None = None
    reserved_pred_gb: float | None = None
    verdict: str | None = None
    moment: str = "peak"
    #: Why the point is outside the calibration set (PP > 1, hundreds of GPUs, DSA, full
    #: recompute, resume, long context); empty for a single-stage short-context run.
    features: tuple[str, ...] = ()
    #: A device-level (nvidia-smi-like) figure in GiB and the model's device total, central
    #: and band, for the measured rank.
    device_gib: float | None = None
    device_central_gib: float | None = None
    device_band_gib: float | None = None
    at_limit: bool = False
    verdict_text: str | None = None
    peak_phase: str | None = None

    @property
    def outcome(self) -> str:
        return str(self.point["outcome"]["kind"])

    @property
    def counted(self) -> bool:
        """In the accuracy figures: a complete reconstruction of a current run with a peak."""
        p = self.point
        return (
            p["reconstruction"] == "complete"
            and not p["historical"]
            and self.outcome == "ran"
            and self.stat in PEAKS
            and self.central_gb is not None
        )

    @property
    def calibration(self) -> bool:
        """In the calibration set: counted, with none of the features the v2 set lacked."""
        return self.counted and not self.features

    @property
    def checked(self) -> bool:
        """Outside the calibration set, a usable reconstruction of a run that ran, with a
        stated allocated peak: held within 5 % when it has one of the features."""
        return (
            not self.calibration
            and self.point["reconstruction"] != "insufficient"
            and self.outcome == "ran"
            and self.stat in ALLOCATED
            and self.central_gb is not None
        )

    @property
    def device_covered(self) -> bool | None:
        """A device-level figure at the limit: the band must reach it (None: no such figure)."""
        if self.device_gib is None or self.device_band_gib is None:
            return None
        return self.device_band_gib >= self.device_gib

    @property
    def error(self) -> float | None:
        if self.central_gb is None or not self.measured_gb:
            return None
        return self.central_gb / self.measured_gb - 1

    @property
    def verdict_right(self) -> bool | None:
        """A run that ran must get "fits" (no MEM001, no MEM002); an OOM must not."""
        if self.verdict is None or self.point["reconstruction"] == "insufficient":
            return None
        return (self.verdict == "fits") == (self.outcome == "ran")


def load_points(path: Path = INDEX) -> list[dict[str, Any]]:
    points: list[dict[str, Any]] = yaml.safe_load(path.read_text(encoding="utf-8"))["points"]
    return points


def estimate_point(
    point: dict[str, Any], settings: MemorySettings | None = None
) -> tuple[Estimate, dict[str, Any]]:
    """The estimate ``moe-lint estimate`` makes for the point's file (directive included), and
    the config values it read."""
    doc = load_file(str(POINTS / point["file"]))
    cfg, facts, _ = prepare(doc, Settings(), [], {})
    return run_estimate(cfg, facts, settings or MemorySettings()), config_values(cfg)


def features(point: dict[str, Any], est: Estimate, values: dict[str, Any]) -> tuple[str, ...]:
    """What puts a point outside the v2 calibration set (all single-stage, 8-16 GPUs, no full
    recompute, no DSA, no resume, at most 8K tokens)."""
    v = _Values(values)
    found = []
    if len(est.stages) > 1:
        found.append(f"PP {len(est.stages)}")
    if int(point["num_gpus"]) >= 100:
        found.append(f"{point['num_gpus']} GPUs")
    if v.get("model.experimental_attention_variant") == "dsa":
        found.append("DSA")
    if v.get("model.recompute_granularity") == "full":
        found.append("full recompute")
    if loads_optimizer_state(v):
        found.append("resume")
    if int(v.get("model.seq_length", default=0) or 0) >= LONG_CONTEXT:
        found.append("long context")
    return tuple(found)


def _stage(stages: tuple[StageEstimate, ...], worst: StageEstimate, scope: str) -> StageEstimate:
    """The measured rank: rank 0 is PP stage 0; otherwise the worst stage."""
    if scope == "rank0" and stages:
        return next(s for s in stages if s.stage == 0)
    return worst


def _moments(stage: StageEstimate) -> float:
    term = stage.term("optimizer moments")
    return term.gib if term is not None else 0.0


def _allocated(stage: StageEstimate, first_iteration: bool) -> float:
    """Allocated peak in GB (with the model band in the upper band); before the first
    optimizer step Adam's moments do not exist yet (the optimizer creates its state lazily in
    its first step), so iteration 1's forward/backward runs without them."""
    band = stage.term(BAND)
    extra = 1 + (band.gib / stage.allocated_gib if band is not None and stage.allocated_gib else 0)
    if not first_iteration:
        return stage.allocated_gib * extra * GB_PER_GIB
    fb = stage.forward_backward_gib - _moments(stage)
    return max(fb, stage.step_gib) * extra * GB_PER_GIB


def _measured_gb(m: dict[str, Any]) -> float:
    """A measurement in GB (10⁹ B): Bridge's figures already are; GiB and MiB converted."""
    value = float(m["value"])
    return {"GB": value, "GiB": value * GB_PER_GIB, "MiB": value * GB_PER_MIB}[m["unit"]]


def _device_limit_mib(gpu: str) -> float:
    spec = gpu_specs()[GPU_ALIASES.get(gpu, gpu)]["memory"]
    return float(spec["nvidia_smi_total_mib"])


def _row(point: dict[str, Any], settings: MemorySettings | None) -> Row:
    try:
        est, values = estimate_point(point, settings)
    except Exception as exc:  # reported in the table; the tests require none
        return Row(point, None, f"{type(exc).__name__}: {exc}")
    verdict = judge(est, DEFAULT_WARN_FRACTION, DEFAULT_ERROR_MARGIN)
    row = Row(point, est, verdict=None if verdict is None else verdict.label,
              features=features(point, est, values),
              verdict_text=None if verdict is None else verdict.text())  # fmt: skip
    found = {m["stat"]: m for m in point["measurements"] if m.get("value") is not None}
    measured = next((found[s] for s in ALLOCATED if s in found), None)
    if measured is not None:
        first = "iteration 1" in str(measured.get("when") or "")
        scope = str(measured["scope"])
        row.stat, row.moment = str(measured["stat"]), "iteration 1" if first else "peak"
        row.measured_gb = _measured_gb(measured)
        stage = _stage(est.stages, est.worst, scope)
        row.peak_phase = stage.peak_phase
        row.central_gb = _allocated(stage, first)
        row.lower_gb = _allocated(_stage(est.lower, est.lower_worst, scope), first)
        row.upper_gb = _allocated(_stage(est.upper, est.upper_worst, scope), first)
    reserved = found.get("max_reserved")
    if reserved is not None and not reserved.get("approx"):
        row.reserved_gb = _measured_gb(reserved)
        row.reserved_pred_gb = est.worst.reserved_gib * GB_PER_GIB
    device = found.get("device")
    if device is not None:
        limit = _device_limit_mib(str(point["gpu"]))
        row.device_gib = _measured_gb(device) / GB_PER_GIB
        row.at_limit = float(device["value"]) >= AT_LIMIT * limit
        row.device_central_gib = est.worst.total_gib
        row.device_band_gib = est.upper_worst.total_gib
        row.peak_phase = est.worst.peak_phase
    return row


def predict(settings: MemorySettings | None = None) -> list[Row]:
    return [_row(p, settings) for p in load_points()]


def median_abs_error(rows: list[Row], which: str = "counted") -> float:
    """Median |error| of the counted points, the calibration set or the rest ("checked")."""
    return statistics.median(abs(r.error) for r in _set(rows, which) if r.error is not None)


def _set(rows: list[Row], which: str) -> list[Row]:
    return [r for r in rows if getattr(r, which) and r.error is not None]


def worst_errors(rows: list[Row], which: str = "counted") -> tuple[float, float]:
    """The largest under- and over-prediction of the counted points (or one set)."""
    errors = [r.error for r in _set(rows, which) if r.error is not None]
    return min(errors), max(errors)


def off_points(rows: list[Row]) -> list[Row]:
    """Points outside the calibration set with one of its missing features whose central
    estimate is more than 5 % from the measured allocated peak."""
    return [r for r in rows if r.checked and r.features and r.error is not None
            and abs(r.error) > 0.05]  # fmt: skip


def allocator_pairs(rows: list[Row]) -> dict[tuple[str, bool], list[tuple[str, float]]]:
    """max_reserved / max_allocated of every point that publishes both (GB, same run), by GPU
    and allocator setting (PYTORCH_CUDA_ALLOC_CONF expandable_segments in the config)."""
    out: dict[tuple[str, bool], list[tuple[str, float]]] = {}
    for r in rows:
        p = r.point
        found = {m["stat"]: m for m in p["measurements"] if m.get("value") is not None}
        alloc, res = found.get("max_allocated"), found.get("max_reserved")
        if alloc is None or res is None or res.get("approx") or alloc.get("approx"):
            continue
        text = (POINTS / p["file"]).read_text(encoding="utf-8")
        expandable = "expandable_segments:True" in text
        key = (GPU_ALIASES.get(str(p["gpu"]), str(p["gpu"])), expandable)
        ratio = round(_measured_gb(res) / _measured_gb(alloc), 4)
        out.setdefault(key, []).append((str(p["id"]), ratio))
    return out


def lower_bound_violations(rows: list[Row]) -> list[Row]:
    """Runs that ran with a stated peak below the model's lower bound (must be none)."""
    return [
        r
        for r in rows
        if r.outcome == "ran"
        and r.stat in PEAKS
        and r.point["reconstruction"] != "insufficient"
        and r.lower_gb is not None
        and r.measured_gb is not None
        and r.lower_gb > r.measured_gb
    ]


def offload_slope(rows: list[Row]) -> tuple[float, float]:
    """GB saved per 25 % of optimizer offload: (predicted, measured), least squares."""
    pts = [
        (fraction, r.central_gb, r.measured_gb)
        for r in rows
        if "cpu-offload" in r.point["id"] and r.central_gb and r.measured_gb
        for fraction in [_offload_fraction(r.point)]
    ]

    def slope(pairs: list[tuple[float, float]]) -> float:
        mx = statistics.mean(x for x, _ in pairs)
        my = statistics.mean(y for _, y in pairs)
        num = sum((x - mx) * (y - my) for x, y in pairs)
        return -num / sum((x - mx) ** 2 for x, _ in pairs) / 4

    return slope([(x, p) for x, p, _ in pts]), slope([(x, m) for x, _, m in pts])


def _offload_fraction(point: dict[str, Any]) -> float:
    """The optimizer offload fraction the point's config sets (0 without offload)."""
    optimizer = yaml.safe_load((POINTS / point["file"]).read_text(encoding="utf-8"))["optimizer"]
    return float(optimizer.get("optimizer_offload_fraction") or 0) if optimizer.get(
        "optimizer_cpu_offload") else 0.0  # fmt: skip


def _layout(point: dict[str, Any]) -> str:
    return f"{point['gpu']} ×{point['num_gpus']}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:+.1f}%"


def _gb(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _point_line(r: Row) -> str:
    p = r.point
    mark = "" if r.verdict_right is None else (" ✓" if r.verdict_right else " ✗")
    stat = f"{r.stat} ({r.moment})" if r.stat else "–"
    reserved = (
        f"{r.reserved_gb:.2f} / {r.reserved_pred_gb:.2f}" if r.reserved_gb is not None else "–"
    )
    recon = p["reconstruction"] + (", historical" if p["historical"] else "")
    feats = ", ".join(r.features) or "–"
    if r.est is None:
        return f"| {p['id']} | {_layout(p)} | {recon} | {feats} | {r.problem} ||||||||"
    return (
        f"| {p['id']} | {_layout(p)} | {recon} | {feats} | {stat} | {_gb(r.measured_gb)} | "
        f"{_gb(r.central_gb)} | {_pct(r.error)} | {_gb(r.lower_gb)} | {_gb(r.upper_gb)} | "
        f"{reserved} | {r.peak_phase or '–'} | {r.verdict} ({r.outcome}){mark} |"
    )


_HEADER = [
    "| point | GPUs | recon. | outside calibration | stat (moment) | measured GB | central GB | "
    "error | lower | upper | reserved meas. / pred. | peak phase | verdict (real) |",
    "|---|---|---|---|---|---:|---:|---:|---:|---:|---|---|---|",
]


def _accuracy(rows: list[Row], which: str, label: str) -> str:
    chosen = _set(rows, which)
    if not chosen:
        return f"- {label}: no point"
    low, high = worst_errors(rows, which)
    return (
        f"- {label} ({len(chosen)} points): median absolute error of the central estimate on "
        f"the allocated peak **{100 * median_abs_error(rows, which):.1f}%**, worst "
        f"under-prediction **{100 * low:+.1f}%**, worst over-prediction **{100 * high:+.1f}%**."
    )


def _fit_lines(rows: list[Row]) -> list[str]:
    out = [
        "| GPU | expandable segments | pairs | reserved/allocated (min-median-max) | central "
        "overhead | band overhead |",
        "|---|---|---:|---|---:|---:|",
    ]
    for (gpu, expandable), pairs in sorted(allocator_pairs(rows).items()):
        ratios = sorted(r for _, r in pairs)
        med = statistics.median(ratios)
        out.append(
            f"| {gpu} | {expandable} | {len(ratios)} | {ratios[0]:.3f} - {med:.3f} - "
            f"{ratios[-1]:.3f} | {100 * (med - 1):.1f}% | {100 * (ratios[-1] - 1):.1f}% |"
        )
    fitted = ", ".join(f"{k[0]} {100 * f.central:.1f}% / {100 * f.high:.1f}%"
                       for k, f in sorted(FITS.items()))  # fmt: skip
    return [
        *out,
        "",
        f"The model uses (analysis/memory/allocator.py, central / band): {fitted}; a GPU "
        "without published pairs takes the `fragmentation` settings centrally and the largest "
        "fitted overhead in the band.",
    ]


def _device_lines(rows: list[Row]) -> list[str]:
    device = [r for r in rows if r.device_gib is not None]
    out = [
        "| point | GPUs | outside calibration | measured device GiB | at the limit | model device "
        "total, central | band | band reaches it | verdict |",
        "|---|---|---|---:|---|---:|---:|---|---|",
    ]
    for r in device:
        covered = "yes" if r.device_covered else "**no**"
        out.append(
            f"| {r.point['id']} | {_layout(r.point)} | {', '.join(r.features) or '–'} | "
            f"≥ {r.device_gib:.1f} | {'yes' if r.at_limit else 'no'} | "
            f"{r.device_central_gib:.1f} | {r.device_band_gib:.1f} | {covered} | {r.verdict} |"
        )
    return out


def render(rows: list[Row]) -> str:
    counted = [r for r in rows if r.counted]
    violations = lower_bound_violations(rows)
    judged = [r for r in rows if r.verdict_right is not None]
    right = [r for r in judged if r.verdict_right]
    ran = [r for r in rows if r.outcome == "ran" and r.verdict is not None]
    false_errors = [r for r in ran if r.verdict == "does NOT fit" and r.point[
        "reconstruction"] != "insufficient"]  # fmt: skip
    settings = MemorySettings()
    calibration = [r for r in rows if r.calibration]
    rest = [r for r in rows if not r.calibration]
    off = off_points(rows)
    uncovered = [r for r in rows if r.at_limit and r.device_covered is False]
    out = [
        "# Memory model validation (generated)",
        "",
        "<!-- Generated by tools/memory_report.py from tests/data/memory-points/. Do not edit by "
        "hand; run `python tools/memory_report.py`. -->",
        "",
        "Every published per-GPU memory figure of an NVIDIA Megatron Bridge MoE run we found "
        "(`tests/data/memory-points/points.yaml`; sources, commits and what could not be "
        "determined are listed there), against the model's prediction for the same rank "
        "(PP stage 0 when the source says rank 0, else the worst stage) and moment (a figure "
        "logged after iteration 1 is compared without Adam's moments, which the optimizer "
        "creates in its first step). Each point's config is the recipe at the measured commit, "
        "in the file next to the index, estimated exactly as `moe-lint estimate FILE` does.",
        "",
        "**Units.** Bridge's memory line prints `torch.cuda.memory_stats()` bytes / 10⁹ with "
        "five significant digits (training/utils/train_utils.py::report_memory), so a card's "
        '"62.166 GiB" or "169.54 GiB" is read as **GB (10⁹ B)**: the five-digit form only fits '
        "that division, and the same cards print device figures in MiB. Allocator figures are "
        "compared in GB; nvidia-smi-style device figures (MiB, 2²⁰ B) in GiB. *central* is the "
        "allocated peak of the central estimate, *lower* and *upper* the lower bound and band "
        'of the same quantity; the verdict is `moe-lint`\'s (MEM001 "does NOT fit" when the '
        'lower bound of the device total exceeds usable memory, MEM002 "may not fit" when the '
        "central device total is within 5 % of it or above).",
        "",
        "**Calibration and the rest.** The *calibration* points are the complete "
        "reconstructions of single-stage runs on 8-16 GPUs without full recompute, DSA, resume "
        f"or long context ({len(calibration)} points, the set the v2 model was built on); "
        "*the rest* are every other point, with what puts each outside the calibration set.",
        "",
        "## Calibration points",
        "",
        *_HEADER,
        *[_point_line(r) for r in calibration],
        "",
        "## The rest",
        "",
        *_HEADER,
        *[_point_line(r) for r in rest],
        "",
        "## Device-level figures (lower bounds on demand)",
        "",
        'A device-level peak (nvidia-smi-style "GPU memory used") at 99 % or more of the '
        "device means the device was full: what the run would take is at least that, so it is "
        "compared with the model's *device total* and only as a lower bound, never as a fit. "
        "The band must reach it.",
        "",
        *_device_lines(rows),
        "",
        "## Allocator overhead: reserved / allocated",
        "",
        "Every point that publishes max_reserved next to max_allocated (both GB, same run), by "
        "GPU and `PYTORCH_CUDA_ALLOC_CONF` setting; the central estimate takes the median, the "
        "band the largest.",
        "",
        *_fit_lines(rows),
    ]
    slope_pred, slope_meas = offload_slope(rows)
    low, _ = worst_errors(rows)
    out += [
        "",
        "## Accuracy",
        "",
        _accuracy(rows, "calibration", "Calibration points"),
        _accuracy(
            rows, "checked", "The rest, with a stated allocated peak and a usable reconstruction"
        ),
        f"- Every counted point ({len(counted)}): median "
        f"**{100 * median_abs_error(rows):.1f}%** (target ≤ 5 %); the band (`band` = "
        f"{settings.band:g}) covers the worst under-prediction ({100 * low:+.1f}%).",
        f"- Points outside calibration with PP > 1, hundreds of GPUs, DSA, full recompute, "
        f"resume or long context more than 5 % off: **{len(off)}**"
        + ("" if not off else " (" + ", ".join(r.point["id"] for r in off) + ")"),
        f"- Device-level peaks at the limit the band does not reach: **{len(uncovered)}**"
        + ("" if not uncovered else " (" + ", ".join(r.point["id"] for r in uncovered) + ")"),
        f"- Lower bound above a measured peak: **{len(violations)}** "
        + ("" if not violations else "(" + ", ".join(r.point["id"] for r in violations) + ")"),
        f'- Verdict right ("fits" for a run that ran, MEM001/MEM002 for an OOM) on '
        f"**{len(right)}/{len(judged)}** points with a usable reconstruction; MEM001 on a run "
        f"that ran: **{len(false_errors)}**.",
        f"- Optimizer-offload sweep: predicted **{slope_pred:.2f} GB** saved per 25 % of offload, "
        f"measured **{slope_meas:.2f} GB** (least squares over 0-100 %).",
        "",
        "Points marked *partial* rest on an assumed value (GPU count, batch, sequence; see "
        "`not_determined` in the index) and are shown but not counted; *insufficient* ones "
        "(layout unpublished) are shown for completeness only. Wrong verdicts:",
        "",
    ]
    wrong = [r for r in judged if not r.verdict_right]
    out += [
        f"- {r.point['id']}: {r.verdict} vs {r.outcome} ({r.point['outcome'].get('detail', '')})"
        for r in wrong
    ] or ["- none"]
    shown = [r for r in rows if (r.counted or (r.checked and r.features) or r.device_gib
                                 is not None) and r.est is not None]  # fmt: skip
    out += ["", "## Term breakdown (worst stage, GiB)", ""]
    for r in shown:
        assert r.est is not None
        st = r.est.worst
        out += [
            f"### {r.point['id']} (stage {st.stage}, peak in {st.peak_phase})",
            "",
            "| term | GiB | derivation |",
            "|---|---:|---|",
            *[f"| {t.name} | {t.gib:.2f} | {t.derivation.replace('|', '/')} |" for t in st.terms],
            "",
        ]
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the page, or with --check return 1 when it differs from a fresh render."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    text = render(predict())
    code = write_or_check(
        args.output, text, check=args.check, command="python tools/memory_report.py"
    )
    if not args.check:
        print(f"wrote {args.output}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
