"""The ranked table, the pruned values and the departures from the guidance, as text or JSON."""

from __future__ import annotations

import json
from typing import Any

from moe_lint.plan.perf import Plan
from moe_lint.plan.run import (
    RULES_OF_THUMB,
    Result,
    departs_from,
    describe,
    transport_label,
    why_better,
)
from moe_lint.plan.search import DIMENSIONS, Candidate, Request

_TERMS = ("compute", "recompute", "tp", "cp", "ep", "pp_p2p", "bubble", "dp", "optimizer")


def _shares(pred: Any) -> str:
    """The step breakdown as shares of the step (terms under 0.5 % left out)."""
    return " ".join(
        f"{k} {v / pred.step_s * 100:.0f}%"
        for k, v in pred.breakdown.as_dict().items()
        if v / pred.step_s >= 0.005
    )


def _memory_cell(c: Candidate) -> str:
    return f"{c.lower_gib or 0:.0f}/{c.memory_gib:.0f}/{c.usable_gib:.0f}"


def _recompute(c: Candidate) -> str:
    return ",".join(c.plan.recompute) or "none"


def plan_json(c: Candidate, rank: int, nxt: Candidate | None, req: Request) -> dict[str, Any]:
    """One plan of the JSON report (docs/planner.md, *JSON*): the numbers the text and HTML
    reports show."""
    p, pred = c.plan, c.prediction
    return {
        "rank": rank,
        "gpus": p.world,
        "layout": {
            "tp": p.tp,
            "pp": p.pp,
            "vpp": p.vpp,
            "cp": p.cp,
            "ep": p.ep,
            "etp": p.etp,
            "dp": p.dp,
            "edp": p.edp,
        },
        "pipeline_layout": c.layout_text,
        "micro_batch_size": p.mbs,
        "global_batch_size": p.gbs,
        "microbatches": p.microbatches,
        "recompute": list(p.recompute),
        "optimizer_offload_fraction": p.offload,
        "dispatcher": p.dispatcher,
        "precision": p.precision,
        "memory_gib": {"lower": c.lower_gib, "central": c.memory_gib, "usable": c.usable_gib},
        "memory_verdict": c.verdict,
        "cp_comm_type": p.cp_comm,
        "hierarchical_context_parallel_sizes": p.hierarchical_sizes,
        "warnings": [{"code": code, "message": message} for code, message in c.warnings],
        "step_s": pred.step_s,
        "tokens_per_s_per_gpu": pred.tokens_per_s_per_gpu,
        "model_tflops_per_gpu": pred.model_tflops_per_gpu,
        "breakdown_s": pred.breakdown.as_dict(),
        "beats_next": why_better(c, nxt) if nxt else None,
        "departs_from_guidance": departs_from(req, p),
    }


def pruned_lines(result: Result) -> dict[str, dict[str, str]]:
    """Per dimension, each value no shown plan uses and its most frequent reason."""
    used: dict[str, set[str]] = {d: set() for d in DIMENSIONS}
    for c in result.shown:
        p = c.plan
        for name, value in (
            ("tp", p.tp),
            ("cp", p.cp),
            ("pp", p.pp),
            ("vpp", p.vpp),
            ("ep", p.ep),
            ("etp", p.etp),
            ("mbs", p.mbs),
            ("dispatcher", p.dispatcher),
        ):
            used[name].add(str(value))
    out: dict[str, dict[str, str]] = {}
    for dim, values in result.outcome.pruned.items():
        rows: dict[str, str] = {}
        for value, reasons in sorted(values.items(), key=lambda kv: _order(kv[0])):
            if value in used[dim]:
                continue
            rows[value] = "; ".join(f"{r} ({n}×)" for r, n in _decisive(reasons))
        if rows:
            out[dim] = rows
    return out


def _decisive(reasons: Any) -> list[tuple[str, int]]:
    """The rule or memory verdict first (it decides), then the most common other reason."""
    ranked = reasons.most_common()
    rules = [rn for rn in ranked if not rn[0].startswith(("ranked", "fits"))]
    rest = [rn for rn in ranked if rn not in rules]
    return (rules[:1] + rest[:1]) if rules else rest[:1]


def _order(value: str) -> tuple[int, Any]:
    return (0, int(value)) if value.isdigit() else (1, value)


def _compared_json(result: Result) -> dict[str, Any] | None:
    c = result.compared
    if c is None:
        return None
    return {
        "layout": c.layout,
        "plan": plan_json(c.candidate, c.rank, None, result.request) if c.candidate else None,
        "rank": c.rank or None,
        "why_not": c.reason or None,
        "top_is_faster_by": c.why or None,
    }


def compared_lines(result: Result) -> list[str]:
    c = result.compared
    if c is None:
        return []
    shown = ",".join(f"{k}={v}" for k, v in c.layout.items())
    if c.candidate is None:
        return ["", f"--compare {shown}: no plan: {c.reason}"]
    pred = c.candidate.prediction
    lines = [
        "",
        f"--compare {shown}: best knobs {describe(c.candidate.plan)}; "
        f"{pred.tokens_per_s_per_gpu:.0f} tokens/s/GPU, memory {c.candidate.memory_gib:.0f} GiB; "
        + (f"rank {c.rank}" if c.rank else f"below the {len(result.outcome.kept)} best plans"),
    ]
    if c.why:
        lines.append(f"  the top plan: {c.why}")
    return lines


def payload(result: Result) -> dict[str, Any]:
    """The report as a JSON-ready dict: what ``--format json`` writes and the HTML report
    draws, so the two cannot disagree."""
    shown = result.shown
    o = result.outcome
    return {
        "model": result.base_name,
        "gpu": result.request.gpu,
        "seq": result.request.seq,
        "global_batch_size": result.request.gbs,
        "precision": result.request.precision,
        "plans": [
            plan_json(c, i + 1, shown[i + 1] if i + 1 < len(shown) else None, result.request)
            for i, c in enumerate(shown)
        ],
        "dropped_by_lint": [{"layout": c.plan.key(), "code": code} for c, code in result.dropped],
        "pruned": pruned_lines(result),
        "departures_from_guidance": result.priors,
        "rules_of_thumb": dict(RULES_OF_THUMB),
        "compared": _compared_json(result),
        "search": {
            "layouts": o.visited,
            "timed": o.timed,
            "memory_checks": o.memory_checks,
            "kept": len(o.kept),
            "seconds": round(o.seconds, 3),
        },
    }


def to_json(result: Result) -> str:
    return json.dumps(payload(result), indent=2) + "\n"


def to_text(result: Result) -> str:
    req = result.request
    shown = result.shown
    o = result.outcome
    lines = [
        f"moe-lint plan: {result.base_name} on {', '.join(str(g) for g in req.gpus)} × {req.gpu}, "
        f"seq {req.seq}, GBS {req.gbs}, {req.precision}"
        + (f" ({req.fp8_recipe})" if req.fp8_recipe else ""),
        "",
    ]
    if not shown:
        lines.append("no layout fits and passes the rules; the pruned values say why:")
    header = (
        f"{'#':>2} {'GPUs':>5} {'TP':>2} {'PP':>2} {'VPP':>3} {'CP':>3} {'EP':>3} "
        f"{'ETP':>3} {'DP':>3} {'MBS':>3} {'M':>4}  {'recompute':<28} {'off':>3} "
        f"{'dispatch':<8} {'mem GiB low/mid/usable':>22} {'s/step':>7} {'tok/s/GPU':>9}"
    )
    if shown:
        lines.append(header)
    for i, c in enumerate(shown):
        p, pred = c.plan, c.prediction
        mem = _memory_cell(c)
        mem += "" if c.verdict == "fits" else "!"
        lines.append(
            f"{i + 1:>2} {p.world:>5} {p.tp:>2} {p.pp:>2} {p.vpp:>3} {p.cp:>3} {p.ep:>3} "
            f"{p.etp:>3} {p.dp:>3} {p.mbs:>3} {p.microbatches:>4}  {_recompute(c)[:28]:<28} "
            f"{p.offload:>3g} {p.dispatcher:<8} {mem:>22} {pred.step_s:>7.2f} "
            f"{pred.tokens_per_s_per_gpu:>9.0f}"
        )
        parts = _shares(pred)
        nxt = shown[i + 1] if i + 1 < len(shown) else None
        beats = f"; vs #{i + 2}: {why_better(c, nxt)}" if nxt else ""
        lines.append(f"   step: {parts}{transport_note(p)}{beats}")
        lines += [f"   {code}: {message}" for code, message in c.warnings]
    if result.dropped:
        lines += ["", "dropped by the full check (every rank's memory, then the linter):"]
        lines += [f"  {c.plan.key()}: {code}" for c, code in result.dropped]
    pruned = pruned_lines(result)
    if pruned:
        lines += ["", "values no plan above uses, and why:"]
        for dim, rows in pruned.items():
            for value, reason in rows.items():
                lines.append(f"  {dim} {value}: {reason}")
    lines += compared_lines(result)
    if result.priors:
        lines += ["", "where the ranking departs from NVIDIA's long-context rules of thumb:"]
        lines += [f"  - {text}" for text in result.priors]
    risky = sum(1 for c in shown if c.verdict != "fits")
    if risky:
        lines += [
            "",
            f"! {risky} of these may not fit: the central estimate is within the warning "
            "headroom or over it, the lower bound fits (MEM002, not MEM001); --safe shows only "
            "plans whose central estimate is within usable memory",
        ]
    lines += [
        "",
        f"{o.visited} layouts past the rules ({o.prunes} prunes), {o.timed} plans timed, "
        f"{o.memory_checks} memory estimates ({o.inferred} layouts over by dominance), "
        f"{len(o.kept)} kept, in {o.seconds:.2f} s; the shown plans lint clean "
        f"(`--emit N` writes one).",
    ]
    return "\n".join(lines) + "\n"


#: The terminal table's short dispatcher names (the full names are in the text and JSON).
_DISPATCH = {"alltoall": "a2a", "allgather": "ag", "deepep": "deepep", "hybridep": "hybrid"}


def _terminal_rows(shown: list[Candidate]) -> tuple[list[str], list[list[str]]]:
    """Heads and cells of the terminal table, narrow enough for 80 columns: PP×VPP and
    MBS×micro-batches share a column, GPUs and ETP appear only when a plan varies them, the
    recompute set is shortened, and a plan that may not fit ends its memory cell with '!'."""
    gpus = len({c.plan.world for c in shown}) > 1
    etp = any(c.plan.etp > 1 for c in shown)
    heads = ["#", *(["GPUs"] if gpus else []), "TP", "PP×V", "CP", "EP", *(["ETP"] if etp else []),
             "DP", "MBS×M", "recompute", "off", "disp", "GiB", "s/step", "tok/s"]  # fmt: skip
    rows = []
    for i, c in enumerate(shown):
        p, pred = c.plan, c.prediction
        recompute = _recompute(c)
        if len(recompute) > 11:
            recompute = recompute[:10] + "…"
        rows.append([
            str(i + 1), *([str(p.world)] if gpus else []), str(p.tp), f"{p.pp}×{p.vpp}",
            str(p.cp), str(p.ep), *([str(p.etp)] if etp else []), str(p.dp),
            f"{p.mbs}×{p.microbatches}", recompute, f"{p.offload:g}",
            _DISPATCH.get(p.dispatcher, p.dispatcher),
            _memory_cell(c) + ("" if c.verdict == "fits" else "!"),
            f"{pred.step_s:.2f}", f"{pred.tokens_per_s_per_gpu:.0f}",
        ])  # fmt: skip
    return heads, rows


def transport_note(p: Plan) -> str:
    """``; CP a2a+p2p [4, 4]`` for a plan whose CP does not run the default p2p ring."""
    label = transport_label(p)
    return f"; CP {label}" if label else ""


def to_rich(result: Result, stream: Any) -> None:
    """The same report on a terminal: the plans as a rich table, the rest as plain lines
    (Text objects, never markup: a config value cannot inject styles)."""
    # Lazy: rich (~30 ms) only for a terminal.
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(file=stream, highlight=False, soft_wrap=True, emoji=False)
    text = to_text(result).splitlines()
    console.print(Text(text[0], style="bold"))
    shown = result.shown
    heads, rows = _terminal_rows(shown)
    table = Table(box=None, pad_edge=False, padding=(0, 1, 0, 0), header_style="bold")
    for head in heads:
        table.add_column(head, justify="left" if head in ("recompute", "disp") else "right",
                         no_wrap=True)  # fmt: skip
    notes: list[str] = []
    for i, (c, cells) in enumerate(zip(shown, rows, strict=True)):
        style = "" if c.verdict == "fits" else "yellow"
        table.add_row(*(Text(cell, style=style) for cell in cells))
        nxt = f"; vs #{i + 2}: {why_better(c, shown[i + 1])}" if i + 1 < len(shown) else ""
        notes.append(f"#{i + 1} step: {_shares(c.prediction)}{transport_note(c.plan)}{nxt}")
        notes += [f"#{i + 1} {code}: {message}" for code, message in c.warnings]
    if shown:
        console.print(table)
        console.print(Text("GiB: memory lower bound/central/usable; ! may not fit (MEM002)",
                           style="dim"))  # fmt: skip
        for line in notes:
            console.print(Text(line, style="dim"))
    rest = text[1:]
    if shown:  # the plain table and its step lines are in the rich table
        start = next((i for i, line in enumerate(rest) if line.startswith("dropped")
                      or line.startswith("values no plan") or line.startswith("--compare")
                      or line.startswith("where the ranking") or line.startswith("!")
                      or " layouts past the rules" in line), len(rest))  # fmt: skip
        rest = rest[start:]
    for line in rest:
        console.print(Text(line))


__all__ = ["payload", "to_json", "to_rich", "to_text"]
