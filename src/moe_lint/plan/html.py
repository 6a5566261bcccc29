"""``moe-lint plan --format html``: the plans as predicted throughput against memory headroom,
the may-not-fit plans and those that depart from the seed's rules of thumb marked, each plan's
breakdown on hover, and the table of plans below.

Every number comes from the JSON payload (:func:`moe_lint.plan.report.payload`), which the page
also embeds: the picture cannot disagree with ``--format json``.
"""

from __future__ import annotations

from typing import Any

from moe_lint.output import html
from moe_lint.plan.report import payload
from moe_lint.plan.run import Result, _term

LEFT, PLOT_W, RIGHT = 90, 760, 40
TOP, PLOT_H, BOTTOM = 24, 400, 56
FITS, RISKY, DEPARTS, COMPARED = "#4e79a7", "#f28e2b", "#e15759", "#59a14f"


def headroom(plan: dict[str, Any]) -> float:
    """Usable memory minus the central estimate (GiB; negative: over usable memory)."""
    return float(plan["memory_gib"]["usable"] - plan["memory_gib"]["central"])


def headroom_lower(plan: dict[str, Any]) -> float:
    """Usable memory minus the lower bound: the headroom if only what is certain is counted."""
    lower = plan["memory_gib"]["lower"]
    return float(plan["memory_gib"]["usable"] - (plan["memory_gib"]["central"] if lower is None
                                                  else lower))  # fmt: skip


def _layout(plan: dict[str, Any]) -> str:
    lay = plan["layout"]
    return (f"TP {lay['tp']} · PP {lay['pp']} · VPP {lay['vpp']} · CP {lay['cp']} · "
            f"EP {lay['ep']} · ETP {lay['etp']} · DP {lay['dp']} · EDP {lay['edp']}")  # fmt: skip


def _transport(plan: dict[str, Any]) -> str:
    if plan["layout"]["cp"] <= 1:
        return "–"
    sizes = plan["hierarchical_context_parallel_sizes"]
    return str(plan["cp_comm_type"]) + (f" {sizes}" if sizes else "")


def _recompute(plan: dict[str, Any]) -> str:
    return ",".join(plan["recompute"]) or "none"


def _shares(plan: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(term, seconds, share of the step) for each step-time term above 0.5 % of the step."""
    step = plan["step_s"] or 1.0
    return [(_term(k), v, v / step) for k, v in plan["breakdown_s"].items() if v / step >= 0.005]


def _name(plan: dict[str, Any], compared: bool) -> str:
    return "compared layout" if compared else f"plan #{plan['rank']}"


def _tip(plan: dict[str, Any], rules: dict[str, str], compared: bool) -> str:
    mem = plan["memory_gib"]
    departs = [rules.get(k, k) for k in plan.get("departs_from_guidance", [])]
    lines = [
        f"{_name(plan, compared)} ({plan['gpus']} GPUs): {_layout(plan)}",
        f"CP transport {_transport(plan)}; {plan['dispatcher']}; recompute {_recompute(plan)}; "
        f"offload {plan['optimizer_offload_fraction']:g}; MBS {plan['micro_batch_size']} × "
        f"{plan['microbatches']} micro-batches",
        f"memory lower {html.num(mem['lower'])} / central {mem['central']:.2f} / usable "
        f"{mem['usable']:.2f} GiB: headroom {headroom(plan):.2f} GiB ({plan['memory_verdict']})",
        f"step {plan['step_s']:.2f} s: "
        + ", ".join(f"{name} {sec:.2f} s ({share:.0%})" for name, sec, share in _shares(plan)),
        f"{plan['tokens_per_s_per_gpu']:.0f} tokens/s/GPU, "
        f"{plan['model_tflops_per_gpu']:.0f} model TFLOP/s/GPU",
    ]
    if departs:
        lines.append("departs from: " + "; ".join(departs))
    return html.tooltip(lines)


def _marker(plan: dict[str, Any], key: str, at: tuple[float, float, float],
            rules: dict[str, str], compared: bool = False) -> str:  # fmt: skip
    """One plan's point at ``at`` (x, y, and the x of its lower-bound headroom): a circle
    (fits) or a triangle (may not fit), a star for the compared layout, a dashed ring when it
    departs from a rule of thumb, the whisker to its lower-bound headroom, and its rank."""
    x, y, xl = at
    risky = plan["memory_verdict"] != "fits"
    rank = "cmp" if compared else plan["rank"]
    parts = [f'<g class="plan" data-key="{key}" data-group="plans" tabindex="0" '
             f'data-rank="{rank}">', _tip(plan, rules, compared),
             f'<line class="whisker" x1="{x:.2f}" y1="{y:.2f}" x2="{xl:.2f}" y2="{y:.2f}"/>',
             f'<line class="whisker" x1="{xl:.2f}" y1="{y - 4:.2f}" x2="{xl:.2f}" '
             f'y2="{y + 4:.2f}"/>']  # fmt: skip
    if compared:
        star = " ".join(f"{x + dx * 1.6:.2f},{y + dy * 1.6:.2f}" for dx, dy in _STAR)
        parts.append(f'<polygon class="pt" points="{star}" fill="{COMPARED}" stroke="#fff"/>')
    elif risky:
        parts.append(f'<path class="pt" d="M{x:.2f},{y - 7:.2f} L{x + 7:.2f},{y + 5:.2f} '
                     f'L{x - 7:.2f},{y + 5:.2f} Z" fill="{RISKY}" stroke="#fff"/>')  # fmt: skip
    else:
        parts.append(f'<circle class="pt" cx="{x:.2f}" cy="{y:.2f}" r="6" fill="{FITS}" '
                     'stroke="#fff"/>')  # fmt: skip
    if plan.get("departs_from_guidance"):
        parts.append(f'<circle cx="{x:.2f}" cy="{y:.2f}" r="11" fill="none" stroke="{DEPARTS}" '
                     'stroke-width="1.5" stroke-dasharray="3 2"/>')  # fmt: skip
    parts.append(f'<text class="small" x="{x + 9:.2f}" y="{y - 9:.2f}">{rank}</text></g>')
    return "".join(parts)


#: A five-pointed star's corners around (0, 0), radius 5.
_STAR = ((0.0, -5.0), (1.2, -1.6), (4.8, -1.5), (1.9, 0.7), (2.9, 4.0), (0.0, 2.0),
         (-2.9, 4.0), (-1.9, 0.7), (-4.8, -1.5), (-1.2, -1.6))  # fmt: skip


def _chart(plans: list[dict[str, Any]], compared: dict[str, Any] | None,
           rules: dict[str, str]) -> str:  # fmt: skip
    points = [*plans, *([compared] if compared else [])]
    xs = [headroom(p) for p in points] + [headroom_lower(p) for p in points] + [0.0]
    ys = [float(p["tokens_per_s_per_gpu"]) for p in points]
    x_lo, x_hi = min(xs), max(xs)
    pad = (x_hi - x_lo) * 0.06 or 1.0
    x_lo, x_hi = x_lo - pad, x_hi + pad
    y_lo, y_hi = min(ys), max(ys)
    pad = max((y_hi - y_lo) * 0.12, y_hi * 0.005, 1.0)
    y_lo, y_hi = max(0.0, y_lo - pad), y_hi + pad

    def px(gib: float) -> float:
        return LEFT + (gib - x_lo) / (x_hi - x_lo) * PLOT_W

    def py(tok: float) -> float:
        return TOP + PLOT_H - (tok - y_lo) / (y_hi - y_lo) * PLOT_H

    width, height = LEFT + PLOT_W + RIGHT, TOP + PLOT_H + BOTTOM
    out = [f'<svg class="plans" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           'role="img" aria-label="tokens/s/GPU against memory headroom">']  # fmt: skip
    zero = px(0.0)
    out.append(f'<rect class="over" x="{LEFT}" y="{TOP}" width="{max(zero - LEFT, 0):.2f}" '
               f'height="{PLOT_H}"/>')  # fmt: skip
    for tick in html.ticks(x_lo, x_hi, 8):
        out.append(
            f'<line class="grid" x1="{px(tick):.2f}" y1="{TOP}" x2="{px(tick):.2f}" '
            f'y2="{TOP + PLOT_H}"/><text class="small" x="{px(tick):.2f}" '
            f'y="{TOP + PLOT_H + 16}" text-anchor="middle">{html.tick_label(tick)}</text>'
        )
    for tick in html.ticks(y_lo, y_hi, 6):
        out.append(
            f'<line class="grid" x1="{LEFT}" y1="{py(tick):.2f}" x2="{LEFT + PLOT_W}" '
            f'y2="{py(tick):.2f}"/><text class="small" x="{LEFT - 6}" '
            f'y="{py(tick) + 4:.2f}" text-anchor="end">{html.tick_label(tick)}</text>'
        )
    out.append(f'<line class="axis" x1="{LEFT}" y1="{TOP + PLOT_H}" x2="{LEFT + PLOT_W}" '
               f'y2="{TOP + PLOT_H}"/><line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" '
               f'y2="{TOP + PLOT_H}"/>')  # fmt: skip
    out.append(f'<line class="usable" x1="{zero:.2f}" y1="{TOP}" x2="{zero:.2f}" '
               f'y2="{TOP + PLOT_H}"/><text class="small" x="{zero + 4:.2f}" y="{TOP + 12}" '
               'fill="#c62828">usable memory</text>')  # fmt: skip
    out.append(
        f'<text class="small" x="{LEFT + PLOT_W / 2}" y="{TOP + PLOT_H + 36}" '
        'text-anchor="middle">memory headroom, GiB per GPU (usable − central estimate; '
        "whisker: to the lower bound's)</text>"
        f'<text class="small" x="18" y="{TOP + PLOT_H / 2}" text-anchor="middle" '
        f'transform="rotate(-90 18 {TOP + PLOT_H / 2})">predicted tokens/s/GPU</text>'
    )

    # the best plan last, so it is drawn on top of plans at the same point
    def at(plan: dict[str, Any]) -> tuple[float, float, float]:
        return px(headroom(plan)), py(plan["tokens_per_s_per_gpu"]), px(headroom_lower(plan))

    for plan in reversed(plans):
        out.append(_marker(plan, f"p{plan['rank']}", at(plan), rules))
    if compared:
        out.append(_marker(compared, "cmp", at(compared), rules, compared=True))
    out.append("</svg>")
    return "".join(out)


def _legend(plans: list[dict[str, Any]], compared: dict[str, Any] | None) -> str:
    entries = [
        (html.swatch(f'<circle cx="7" cy="7" r="5" fill="{FITS}"/>'), "fits"),
        (html.swatch(f'<path d="M7,1 L13,12 L1,12 Z" fill="{RISKY}"/>'),
         "may not fit (MEM002: central estimate within the warning headroom or over)"),
        (html.swatch(f'<circle cx="7" cy="7" r="6" fill="none" stroke="{DEPARTS}" '
                     'stroke-width="1.5" stroke-dasharray="3 2"/>'),
         "departs from a rule of thumb (hover: which)"),
    ]  # fmt: skip
    if compared:
        star = " ".join(f"{7 + dx * 1.2:.1f},{7 + dy * 1.2:.1f}" for dx, dy in _STAR)
        entries.append((html.swatch(f'<polygon points="{star}" fill="{COMPARED}"/>'),
                        "--compare layout"))  # fmt: skip
    entries.append((html.swatch('<line class="usable" x1="0" y1="7" x2="14" y2="7"/>'),
                    "usable memory (left of it: central estimate over)"))  # fmt: skip
    return html.legend(entries)


def _rules(rules: dict[str, str], plans: list[dict[str, Any]],
           compared: dict[str, Any] | None) -> str:  # fmt: skip
    """The rules of thumb, each with the plans that depart from it."""
    named = [(f"#{p['rank']}", p) for p in plans] + ([("cmp", compared)] if compared else [])
    rows = []
    for key, rule in rules.items():
        names = [name for name, p in named if key in p.get("departs_from_guidance", [])]
        rows.append(
            f'<tr data-rule={html.attr(key)}><td class="l"><code>{html.text(key)}</code>'
            f'</td><td class="l">{html.text(rule)}</td>'
            f'<td class="l">{html.text(", ".join(names) or "none")}</td></tr>'
        )
    return html.table(["key", "rule of thumb", "plans departing"], rows, "rules")


#: The plan table's layout columns, as the JSON's ``layout`` names them.
_DIMS = ("tp", "pp", "vpp", "cp", "ep", "etp", "dp", "edp")


def _plan_row(plan: dict[str, Any], key: str, compared: bool) -> str:
    mem = plan["memory_gib"]
    risky = plan["memory_verdict"] != "fits"
    departs = " ".join(plan.get("departs_from_guidance", []))
    warnings = " ".join(w["code"] for w in plan["warnings"])
    rank = "cmp" if compared else str(plan["rank"])
    klass = ' class="warn"' if risky else ""
    dims = "".join(f"<td>{plan['layout'][d]}</td>" for d in _DIMS)
    return (
        f'<tr data-key="{key}" data-group="plans" data-rank="{rank}"{klass}>'
        f"<td>{rank}</td><td>{plan['gpus']}</td>{dims}"
        f"<td>{plan['micro_batch_size']}×{plan['microbatches']}</td>"
        f'<td class="l">{html.text(_recompute(plan))}</td>'
        f"<td>{plan['optimizer_offload_fraction']:g}</td>"
        f'<td class="l">{html.text(plan["dispatcher"])}</td>'
        f'<td class="l">{html.text(_transport(plan))}</td>'
        + html.cell(mem["lower"]) + html.cell(mem["central"]) + html.cell(mem["usable"])
        + html.cell(headroom(plan)) + html.cell(plan["step_s"])
        + html.cell(plan["tokens_per_s_per_gpu"], 0) + html.cell(plan["model_tflops_per_gpu"], 0)
        + f'<td class="l verdict">{html.text(plan["memory_verdict"])}</td>'
        f'<td class="l">{html.text(departs)}</td><td class="l">{html.text(warnings)}</td></tr>'
    )  # fmt: skip


def _detail(plan: dict[str, Any], key: str, rules: dict[str, str], compared: bool,
            shown: bool) -> str:  # fmt: skip
    """A plan's breakdown, shown on hover of its point or row."""
    mem = plan["memory_gib"]
    step = [f'<tr><td class="l">{html.text(name)}</td>{html.cell(sec)}'
            f"<td>{share:.1%}</td></tr>" for name, sec, share in _shares(plan)]  # fmt: skip
    facts = [
        f"layout: {_layout(plan)}; pipeline layout {plan['pipeline_layout'] or 'uniform'}",
        f"MBS {plan['micro_batch_size']} × {plan['microbatches']} micro-batches, GBS "
        f"{plan['global_batch_size']}; recompute {_recompute(plan)}; optimizer offload "
        f"{plan['optimizer_offload_fraction']:g}; dispatcher {plan['dispatcher']}; CP transport "
        f"{_transport(plan)}; {plan['precision']}",
        f"memory per GPU: lower bound {html.num(mem['lower'])}, central {mem['central']:.2f}, "
        f"usable {mem['usable']:.2f} GiB; headroom {headroom(plan):.2f} GiB "
        f"({plan['memory_verdict']})",
        f"{plan['tokens_per_s_per_gpu']:.0f} tokens/s/GPU, {plan['model_tflops_per_gpu']:.0f} "
        f"model TFLOP/s/GPU, {plan['step_s']:.2f} s per step",
    ]
    facts += [f"departs from the rule of thumb: {rules.get(k, k)}"
              for k in plan.get("departs_from_guidance", [])]  # fmt: skip
    facts += [f"{w['code']}: {w['message']}" for w in plan["warnings"]]
    if plan["beats_next"]:
        facts.append(f"vs the next plan: {plan['beats_next']}")
    hidden = "" if shown else " hidden"
    return (f'<div class="detail" id="detail-{key}" data-group="plans"{hidden}>'
            f"<h3>{html.text(_name(plan, compared).capitalize())}: {plan['gpus']} GPUs</h3>"
            + html.items(facts) + html.table(["step-time term", "s", "share"], step)
            + "</div>")  # fmt: skip


def page_from_payload(data: dict[str, Any]) -> str:
    """The HTML report of ``plan`` for its JSON payload."""
    plans = data["plans"]
    rules = data["rules_of_thumb"]
    cmp = data["compared"]
    compared = cmp["plan"] if cmp else None
    gpus = sorted({p["gpus"] for p in plans})
    head = (f"moe-lint plan: {data['model']} on {', '.join(map(str, gpus)) or '?'} × "
            f"{data['gpu']}, seq {data['seq']}, GBS {data['global_batch_size']}, "
            f"{data['precision']}")  # fmt: skip
    body = [f"<h1>{html.text(head)}</h1>"]
    if not plans:
        body.append('<p class="verdict does-not-fit">No layout fits and passes the rules; the '
                    "pruned values below say why.</p>")  # fmt: skip
    else:
        risky = sum(1 for p in plans if p["memory_verdict"] != "fits")
        body.append(f'<p class="sub">{len(plans)} plans ranked by predicted tokens/s/GPU'
                    + (f"; {risky} may not fit" if risky else "") + ". Hover a point or a row "
                    "for the plan's breakdown.</p>")  # fmt: skip
        body += [_chart(plans, compared, rules), _legend(plans, compared)]
        body += [_detail(p, f"p{p['rank']}", rules, False, i == 0) for i, p in enumerate(plans)]
        if compared:
            body.append(_detail(compared, "cmp", rules, True, False))
        heads = ["#", "GPUs", *(d.upper() for d in _DIMS), "MBS×M", "recompute", "offload",
                 "dispatcher", "transport", "GiB lower", "GiB central", "usable", "headroom",
                 "s/step", "tok/s/GPU", "TFLOP/s/GPU", "verdict", "departs from",
                 "warnings"]  # fmt: skip
        rows = [_plan_row(p, f"p{p['rank']}", False) for p in plans]
        if compared:
            rows.append(_plan_row(compared, "cmp", True))
        body += ["<h2>Plans</h2>", '<div class="wide">' + html.table(heads, rows, "plan-table")
                 + "</div>"]  # fmt: skip
    body += [
        "<h2>Rules of thumb</h2>",
        '<p class="sub">NVIDIA\'s long-context guidance (docs/domain/00-seed.txt); a plan '
        "that departs from one has a dashed ring.</p>",
        _rules(rules, plans, compared),
    ]
    if data["departures_from_guidance"]:
        body += ["<h3>Where the ranking departs from them</h3>",
                 html.items(data["departures_from_guidance"])]  # fmt: skip
    if cmp:
        shown = ",".join(f"{k}={v}" for k, v in cmp["layout"].items())
        if compared is None:
            line = f"--compare {shown}: no plan: {cmp['why_not']}"
        else:
            where = f"rank {cmp['rank']}" if cmp["rank"] else "below the kept plans"
            line = (f"--compare {shown}: {compared['tokens_per_s_per_gpu']:.0f} tokens/s/GPU, "
                    f"memory {compared['memory_gib']['central']:.0f} GiB; {where}")  # fmt: skip
            if cmp["top_is_faster_by"]:
                line += f"; the top plan: {cmp['top_is_faster_by']}"
        body += ["<h3>Compared layout</h3>", f"<p>{html.text(line)}</p>"]
    if data["dropped_by_lint"]:
        body += [
            "<h3>Dropped by the full check</h3>",
            html.items(f"{d['layout']}: {d['code']}" for d in data["dropped_by_lint"]),
        ]
    if data["pruned"]:
        rows = [
            f'<tr><td class="l">{html.text(dim)}</td><td class="l">{html.text(value)}</td>'
            f'<td class="l">{html.text(reason)}</td></tr>'
            for dim, values in data["pruned"].items()
            for value, reason in values.items()
        ]
        body += ["<h3>Values no plan uses, and why</h3>",
                 html.table(["dimension", "value", "reason"], rows)]  # fmt: skip
    s = data["search"]
    body.append(
        f'<p class="note">{s["layouts"]} layouts past the rules, {s["timed"]} plans '
        f"timed, {s['memory_checks']} memory estimates, {s['kept']} kept, in "
        f"{s['seconds']:.2f} s; the shown plans lint clean (--emit N writes one).</p>"
    )
    return html.page(head, body, data)


def page(result: Result) -> str:
    """The HTML report of a plan search."""
    return page_from_payload(payload(result))


__all__ = ["headroom", "page", "page_from_payload"]
