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
from moe_lint.analysis.memory_facts import run_estimate  # noqa: E402
from moe_lint.config.load import load_file  # noqa: E402
from moe_lint.config.memory_settings import (  # noqa: E402
    DEFAULT_ERROR_MARGIN,
    DEFAULT_WARN_FRACTION,
    MemorySettings,
)
from moe_lint.config.settings import Settings  # noqa: E402
from moe_lint.linting import prepare  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _generated import write_or_check  # noqa: E402

POINTS = REPO / "tests" / "data" / "memory-points"
INDEX = POINTS / "points.yaml"
OUTPUT = REPO / "docs" / "memory-validation.md"
GB_PER_GIB = GIB / 1e9

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


def estimate_point(point: dict[str, Any], settings: MemorySettings | None = None) -> Estimate:
    """The estimate ``moe-lint estimate`` makes for the point's file (directive included)."""
    doc = load_file(str(POINTS / point["file"]))
    cfg, facts, _ = prepare(doc, Settings(), [], {})
    return run_estimate(cfg, facts, settings or MemorySettings())


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


def _row(point: dict[str, Any], settings: MemorySettings | None) -> Row:
    try:
        est = estimate_point(point, settings)
    except Exception as exc:  # reported in the table; the tests require none
        return Row(point, None, f"{type(exc).__name__}: {exc}")
    row = Row(point, est, verdict=est.verdict(DEFAULT_WARN_FRACTION, DEFAULT_ERROR_MARGIN))
    found = {m["stat"]: m for m in point["measurements"] if m.get("value") is not None}
    measured = next((found[s] for s in ALLOCATED if s in found), None)
    if measured is not None:
        first = "iteration 1" in str(measured.get("when") or "")
        scope = str(measured["scope"])
        row.stat, row.moment = str(measured["stat"]), "iteration 1" if first else "peak"
        value = float(measured["value"])
        row.measured_gb = value if measured["unit"] == "GB" else value * GB_PER_GIB
        row.central_gb = _allocated(_stage(est.stages, est.worst, scope), first)
        row.lower_gb = _allocated(_stage(est.lower, est.lower_worst, scope), first)
        row.upper_gb = _allocated(_stage(est.upper, est.upper_worst, scope), first)
    reserved = found.get("max_reserved")
    if reserved is not None:
        row.reserved_gb = float(reserved["value"])
        row.reserved_pred_gb = est.worst.reserved_gib * GB_PER_GIB
    return row


def predict(settings: MemorySettings | None = None) -> list[Row]:
    return [_row(p, settings) for p in load_points()]


def median_abs_error(rows: list[Row]) -> float:
    return statistics.median(abs(r.error) for r in rows if r.counted and r.error is not None)


def worst_errors(rows: list[Row]) -> tuple[float, float]:
    """The largest under- and over-prediction of the counted points."""
    errors = [r.error for r in rows if r.counted and r.error is not None]
    return min(errors), max(errors)


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


def render(rows: list[Row]) -> str:
    counted = [r for r in rows if r.counted]
    low, high = worst_errors(rows)
    violations = lower_bound_violations(rows)
    judged = [r for r in rows if r.verdict_right is not None]
    right = [r for r in judged if r.verdict_right]
    ran = [r for r in rows if r.outcome == "ran" and r.verdict is not None]
    false_errors = [r for r in ran if r.verdict == "does NOT fit" and r.point[
        "reconstruction"] != "insufficient"]  # fmt: skip
    settings = MemorySettings()
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
        "in the file next to the index, estimated exactly as `moe-lint estimate FILE` does. "
        "GB = 10⁹ bytes, as Bridge logs memory (domain/06 §1). *central* is the allocated peak of "
        "the central estimate, *lower* and *upper* the lower bound and band; the verdict is "
        '`moe-lint`\'s (MEM001 "does NOT fit" when the lower bound exceeds usable memory, '
        'MEM002 "may not fit" when the central estimate is within 5 % of it or above).',
        "",
        "| point | GPUs | recon. | stat (moment) | measured GB | central GB | error | lower | "
        "upper | reserved meas. / pred. | verdict (real) |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        p = r.point
        mark = "" if r.verdict_right is None else (" ✓" if r.verdict_right else " ✗")
        stat = f"{r.stat} ({r.moment})" if r.stat else "–"
        reserved = (
            f"{r.reserved_gb:.2f} / {r.reserved_pred_gb:.2f}" if r.reserved_gb is not None else "–"
        )
        recon = p["reconstruction"] + (", historical" if p["historical"] else "")
        if r.est is None:
            out.append(f"| {p['id']} | {_layout(p)} | {recon} | {r.problem} ||||||||")
            continue
        out.append(
            f"| {p['id']} | {_layout(p)} | {recon} | {stat} | {_gb(r.measured_gb)} | "
            f"{_gb(r.central_gb)} | {_pct(r.error)} | {_gb(r.lower_gb)} | {_gb(r.upper_gb)} | "
            f"{reserved} | {r.verdict} ({r.outcome}){mark} |"
        )
    slope_pred, slope_meas = offload_slope(rows)
    out += [
        "",
        "## Accuracy",
        "",
        f"- Median absolute error of the central estimate on the allocated peak, over the "
        f"{len(counted)} complete reconstructions of runs that ran with a stated peak: "
        f"**{100 * median_abs_error(rows):.1f}%** (target ≤ 5 %); worst under-prediction "
        f"**{100 * low:+.1f}%**, worst over-prediction **{100 * high:+.1f}%**. The band "
        f"(`band` = {settings.band:g}) covers the worst under-prediction.",
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
    out += ["", "## Term breakdown of the counted points (worst stage, GiB)", ""]
    for r in counted:
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
