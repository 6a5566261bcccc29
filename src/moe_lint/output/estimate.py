"""Render a memory estimate (``moe-lint estimate``): per-stage term tables with bars, the
worst stage against the GPU's usable memory, the levers and the assumptions; or JSON."""

from __future__ import annotations

from typing import Any

from moe_lint.analysis.memory.results import stage_bounds
from moe_lint.output import escape
from moe_lint.output.text import Segment

BAR_WIDTH = 36


def _bounds_json(bounds: dict[str, Any]) -> dict[str, dict[str, float]]:
    return {
        name: {"lower": round(b.lower, 3), "central": round(b.central, 3),
               "band": round(b.band, 3)}
        for name, b in bounds.items()
    }  # fmt: skip


def to_json(
    path: str, est: Any, levers: list[Any], gpu: str | None, verdict: Any = None
) -> dict[str, Any]:
    """The estimate as a JSON-ready dict (documented in docs/memory-model.md, *Output*).

    ``verdict`` is the analysis/memory/verdict.py Verdict (None without a GPU). Each stage
    and the worst one carry ``bounds``: lower / central / band of the allocated peak, the
    reserved peak (allocator level) and the device total, side by side.
    """
    lower = {s.stage: s for s in est.lower}
    upper = {s.stage: s for s in est.upper}
    return {
        "file": path,
        "gpu": gpu,
        "capacity_gib": est.capacity_gib,
        "usable_gib": est.usable_gib,
        "fits": est.fits,
        "verdict": None if verdict is None else verdict.label,
        "verdict_compares": None if verdict is None else verdict.quantity,
        "verdict_text": None if verdict is None else verdict.text(),
        "worst_stage": est.worst.stage,
        "worst_total_gib": round(est.worst.total_gib, 3),
        "lower_bound_gib": round(est.lower_worst.total_gib, 3),
        "upper_band_gib": round(est.upper_worst.total_gib, 3),
        "worst_bounds": _bounds_json(stage_bounds(est, est.worst.stage)),
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
                "load_gib": round(s.load_gib, 3),
                "bounds": _bounds_json(stage_bounds(est, s.stage)),
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


#: How ``moe-lint estimate`` names each bounded quantity.
_LABELS = {
    "allocated": "allocated (PyTorch max_allocated)",
    "reserved": "reserved (allocated + allocator overhead)",
    "device": "device total (reserved + CUDA context, NCCL, DeepEP)",
}


def _ranges(est: Any, stage: Any) -> list[str]:
    """One line per quantity: its lower bound, central estimate and band, side by side."""
    bounds = stage_bounds(est, stage.stage)
    width = max(len(label) for label in _LABELS.values())
    return [
        f"{_LABELS[name]:<{width}}  lower {b.lower:7.2f}  central {b.central:7.2f}  "
        f"band {b.band:7.2f} GiB"
        for name, b in bounds.items()
    ]


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
    verdict: Any = None,
    quiet: bool = False,
) -> list[list[Segment]]:
    """Styled rows: header, one block per stage, verdict, levers, assumptions (``quiet``:
    the header and the verdict only, as ``check -q`` prints the findings only)."""
    scale = max([est.usable_gib or 0.0] + [s.total_gib for s in est.stages])
    if est.usable_gib is not None:
        where = f"{gpu}, {est.usable_gib:.1f} GiB usable"
    elif gpu:  # a GPU whose memory data/gpus.yaml does not source (vr200-nvl72): say so
        where = f"{gpu}: its memory is not in moe-lint's GPU table, no verdict"
    else:
        where = "no --gpu"
    rows: list[list[Segment]] = [[(f"{path}", "loc"), (f"  ({where})", "dim")], [("", None)]]
    for stage in () if quiet else est.stages:
        marker = "  <- worst" if stage is est.worst else ""
        rows.append(
            [(f"PP stage {stage.stage}", "code"), (f"  peak in {stage.peak_phase}{marker}", "dim")]
        )
        width = max([len("device total"), *(len(t.name) for t in stage.terms)])
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
                (f"  {'device total':<{width}} {stage.total_gib:8.2f} GiB  ", total_style),
                (_bar(stage.total_gib, scale), total_style),
            ]
        )
        rows += [[(f"  {line}", "dim")] for line in _ranges(est, stage)]
        rows.append([("", None)])
    if est.usable_gib is not None:
        headroom = est.usable_gib - est.worst.total_gib
        fallback = "fits" if headroom >= 0 else "may not fit"
        label = verdict.label if verdict is not None else fallback
        style = {"fits": "ok", "may not fit": "warning"}.get(label, "error")
        why = verdict.text() if verdict is not None else label
        rows.append(
            [
                (
                    f"Worst stage {est.worst.stage} (peak in {est.worst.peak_phase}) -> {why}",
                    style,
                )
            ]
        )
    else:
        ask = (
            f"(no verdict: {gpu}'s memory is not in moe-lint's GPU table)"
            if gpu
            else "(pass --gpu for a verdict)"
        )
        rows.append(
            [
                (
                    f"Worst stage {est.worst.stage}: device total {est.worst.total_gib:.1f} GiB "
                    + ask,
                    None,
                )
            ]
        )
    if quiet:  # the header line, then the verdict
        return [rows[0], *rows[2:], [("", None)]]
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
