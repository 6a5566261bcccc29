"""Render a memory estimate (``moe-lint estimate``): per-stage term tables with bars, the
worst stage against the GPU's usable memory, the levers and the assumptions; or JSON."""

from __future__ import annotations

from typing import Any

from moe_lint.output import escape
from moe_lint.output.text import Segment

BAR_WIDTH = 36


def to_json(
    path: str, est: Any, levers: list[Any], gpu: str | None, verdict: str | None = None
) -> dict[str, Any]:
    """The estimate as a JSON-ready dict (documented in docs/memory-model.md)."""
    lower = {s.stage: s for s in est.lower}
    upper = {s.stage: s for s in est.upper}
    return {
        "file": path,
        "gpu": gpu,
        "capacity_gib": est.capacity_gib,
        "usable_gib": est.usable_gib,
        "fits": est.fits,
        "verdict": verdict,
        "worst_stage": est.worst.stage,
        "worst_total_gib": round(est.worst.total_gib, 3),
        "lower_bound_gib": round(est.lower_worst.total_gib, 3),
        "upper_band_gib": round(est.upper_worst.total_gib, 3),
        "stages": [
            {
                "stage": s.stage,
                "peak_phase": s.peak_phase,
                "total_gib": round(s.total_gib, 3),
                "lower_bound_gib": round(lower[s.stage].total_gib, 3) if lower else None,
                "upper_band_gib": round(upper[s.stage].total_gib, 3) if upper else None,
                "allocated_gib": round(s.allocated_gib, 3),
                "reserved_gib": round(s.reserved_gib, 3),
                "forward_backward_gib": round(s.forward_backward_gib, 3),
                "step_gib": round(s.step_gib, 3),
                "terms": [
                    {
                        "name": t.name,
                        "kind": t.kind,
                        "gib": round(t.gib, 3),
                        "derivation": t.derivation,
                    }
                    for t in s.terms
                ],
            }
            for s in est.stages
        ],
        "levers": [
            {"name": lv.name, "delta_gib": lv.delta_gib, "requires": lv.requires} for lv in levers
        ],
        "assumptions": list(est.assumptions),
    }


def dumps(payload: list[dict[str, Any]]) -> str:
    """The estimate's JSON through the one JSON escaping layer (any file name, inert bytes)."""
    return escape.dumps(payload, indent=2) + "\n"


def _range(est: Any, stage: Any) -> str:
    """One stage's allocated/reserved peak and its lower bound and band."""
    lower = next((s for s in est.lower if s.stage == stage.stage), stage)
    upper = next((s for s in est.upper if s.stage == stage.stage), stage)
    return (
        f"allocated {stage.allocated_gib:.2f}, reserved {stage.reserved_gib:.2f} GiB; "
        f"lower bound {lower.total_gib:.2f}, band up to {upper.total_gib:.2f} GiB"
    )


def _bar(gib: float, scale: float) -> str:
    if scale <= 0:
        return ""
    cells = gib / scale * BAR_WIDTH
    full = int(cells)
    return "█" * full + ("▌" if cells - full >= 0.5 else "")


def text_rows(
    path: str,
    est: Any,
    levers: list[Any],
    gpu: str | None,
    verbose: bool = False,
    verdict: str | None = None,
) -> list[list[Segment]]:
    """Styled rows: header, one block per stage, verdict, levers, assumptions."""
    scale = max([est.usable_gib or 0.0] + [s.total_gib for s in est.stages])
    where = f"{gpu}, {est.usable_gib:.1f} GiB usable" if est.usable_gib is not None else "no --gpu"
    rows: list[list[Segment]] = [[(f"{path}", "loc"), (f"  ({where})", "dim")], [("", None)]]
    for stage in est.stages:
        marker = "  <- worst" if stage is est.worst else ""
        rows.append(
            [(f"PP stage {stage.stage}", "code"), (f"  peak in {stage.peak_phase}{marker}", "dim")]
        )
        width = max(len(t.name) for t in stage.terms)
        for term in sorted(stage.terms, key=lambda t: t.gib, reverse=True):
            rows.append(
                [
                    (f"  {term.name:<{width}} {term.gib:8.2f} GiB  ", None),
                    (_bar(term.gib, scale), "gutter"),
                ]
            )
            if verbose:
                rows.append([(f"      {term.derivation}", "dim")])
        over = est.usable_gib is not None and stage.total_gib > est.usable_gib
        total_style = "error" if over else "ok"
        rows.append(
            [
                (f"  {'total':<{width}} {stage.total_gib:8.2f} GiB  ", total_style),
                (_bar(stage.total_gib, scale), total_style),
            ]
        )
        rows.append([(f"  {_range(est, stage)}", "dim")])
        rows.append([("", None)])
    if est.usable_gib is not None:
        headroom = est.usable_gib - est.worst.total_gib
        shown = verdict or ("fits" if headroom >= 0 else "may not fit")
        style = {"fits": "ok", "may not fit": "warning"}.get(shown, "error")
        rows.append(
            [
                (
                    f"Worst stage {est.worst.stage}: {est.worst.total_gib:.1f} of "
                    f"{est.usable_gib:.1f} GiB usable -> {shown} "
                    f"(headroom {headroom:+.1f} GiB; lower bound "
                    f"{est.lower_worst.total_gib:.1f}, band up to "
                    f"{est.upper_worst.total_gib:.1f} GiB)",
                    style,
                )
            ]
        )
    else:
        rows.append(
            [
                (
                    f"Worst stage {est.worst.stage}: {est.worst.total_gib:.1f} GiB "
                    "(pass --gpu for a verdict)",
                    None,
                )
            ]
        )
    if levers:
        rows += [[("", None)], [("Levers (each re-runs the model):", "label")]]
        for lever in levers[:5]:
            rows.append(
                [
                    (f"  {lever.name:<24} {lever.delta_gib:+7.1f} GiB  ", None),
                    (lever.requires, "dim"),
                ]
            )
    if est.assumptions:
        rows += [[("", None)], [("Assumptions:", "label")]]
        rows += [[(f"  - {a}", "dim")] for a in est.assumptions]
    return rows
