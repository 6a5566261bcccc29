"""``moe-lint estimate --format html``: each file's pipeline stages as stacked memory bars
against usable memory, with the lower bound / central / band range, the verdict, a table of the
stages, each stage's terms on hover, the levers and the assumptions.

Every number comes from the JSON payload (:func:`moe_lint.output.estimate.to_json`), which the
page also embeds: the picture cannot disagree with ``--format json``.
"""

from __future__ import annotations

from typing import Any

from moe_lint.output import html

#: Bar colours per term kind (analysis/memory/results.py::Term), darkest first; a kind's
#: terms take its shades in turn so neighbouring segments stay apart.
SHADES = {
    "state": ("#2f5d8a", "#4e79a7", "#7aa6d6", "#a9c8ea"),
    "activation": ("#c8641a", "#f28e2b", "#ffb26b", "#ffd0a1"),
    "step": ("#7b4f73", "#b07aa1", "#d4a6c8"),
    "load": ("#6e4f3d", "#9c755f", "#c9a48e"),
    "fixed": ("#5f5f5f", "#8c8c8c", "#b4b4b4"),
    "margin": ("#cfcfcf", "#e3e3e3"),
}
#: What each kind holds, for the legend.
KIND_NAMES = {
    "state": "weights, gradients, optimizer states",
    "activation": "activations and backward working sets",
    "step": "optimizer-step transients",
    "load": "checkpoint-load transients",
    "fixed": "outside PyTorch: CUDA context, NCCL, DeepEP",
    "margin": "allocator overhead",
}

LABEL_W, BAR_W, RIGHT_W = 130, 600, 220
ROW_H, BAR_H, TOP = 34, 16, 28


def peak_kinds(phase: str) -> set[str]:
    """The term kinds a stage's device total adds up (analysis/memory/estimate.py): states,
    the transients of the phase the peak is in, the fixed costs and the allocator overhead.
    The other phase's transients are not at the peak and are not in the bar."""
    kinds = {"state", "fixed", "margin"}
    if "forward/backward" in phase:
        kinds.add("activation")
    if "optimizer step" in phase:
        kinds.add("step")
    if "checkpoint load" in phase:
        kinds.add("load")
    return kinds


def bar_terms(stage: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """The terms of the stage's bar, in stacking order (by kind, then as the payload lists
    them), each with its colour."""
    kinds = peak_kinds(stage["peak_phase"])
    out: list[tuple[dict[str, Any], str]] = []
    for kind, shades in SHADES.items():
        if kind not in kinds:
            continue
        terms = [t for t in stage["terms"] if t["kind"] == kind and t["gib"] > 0]
        out += [(t, shades[i % len(shades)]) for i, t in enumerate(terms)]
    return out


def _verdict_class(label: str | None) -> str:
    return {"fits": "fits", "may not fit": "may-not-fit", "does NOT fit": "does-not-fit"}.get(
        label or "", ""
    )


def _chart(n: int, est: dict[str, Any]) -> str:
    """The stages' stacked bars, the range whiskers and the usable-memory line, as SVG."""
    stages = est["stages"]
    usable = est["usable_gib"]
    top = max([usable or 0.0, *(s["bounds"]["device"]["band"] for s in stages),
               *(s["total_gib"] for s in stages)])  # fmt: skip
    grid = html.ticks(0.0, top * 1.02 or 1.0)
    scale_max = max(grid[-1], top * 1.02) or 1.0

    def x(gib: float) -> float:
        return LABEL_W + max(gib, 0.0) / scale_max * BAR_W

    height = TOP + len(stages) * ROW_H + 30
    width = LABEL_W + BAR_W + RIGHT_W
    out = [f'<svg class="stages" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="memory per pipeline stage">']  # fmt: skip
    bottom = TOP + len(stages) * ROW_H
    for tick in grid:
        out.append(f'<line class="grid" x1="{x(tick):.1f}" y1="{TOP - 4}" x2="{x(tick):.1f}" '
                   f'y2="{bottom}"/>')  # fmt: skip
        out.append(f'<text class="small" x="{x(tick):.1f}" y="{bottom + 16}" '
                   f'text-anchor="middle">{html.tick_label(tick)}</text>')  # fmt: skip
    out.append(f'<text class="small" x="{LABEL_W + BAR_W / 2}" y="{bottom + 30}" '
               'text-anchor="middle">GiB per GPU (device total)</text>')  # fmt: skip
    for i, stage in enumerate(stages):
        key = f"f{n}s{stage['stage']}"
        y = TOP + i * ROW_H
        worst = stage["stage"] == est["worst_stage"]
        over = usable is not None and stage["total_gib"] > usable
        out.append(f'<g class="stage" data-key="{key}" data-group="f{n}" tabindex="0">')
        label = f"stage {stage['stage']}" + (" (worst)" if worst else "")
        out.append(f'<text class="{"bold" if worst else ""}" x="{LABEL_W - 8}" '
                   f'y="{y + BAR_H - 3}" text-anchor="end">{html.text(label)}</text>')  # fmt: skip
        at = 0.0
        for term, colour in bar_terms(stage):
            x0, x1 = x(at), x(at + term["gib"])
            at += term["gib"]
            tip = html.tooltip(
                [
                    f"stage {stage['stage']}: {term['name']} "
                    f"{term['gib']:.2f} GiB ({term['kind']})",
                    term["derivation"],
                ]
            )
            out.append(f'<rect class="seg" x="{x0:.2f}" y="{y}" width="{max(x1 - x0, 0.0):.2f}" '
                       f'height="{BAR_H}" fill="{colour}" stroke="#fff" stroke-width="0.5" '
                       f'data-term={html.attr(term["name"])} data-gib="{term["gib"]!r}">'
                       f"{tip}</rect>")  # fmt: skip
        dev = stage["bounds"]["device"]
        ry = y + BAR_H + 5
        tip = html.tooltip([f"stage {stage['stage']} device total: lower bound "
                            f"{dev['lower']:.2f}, central {dev['central']:.2f}, "
                            f"band {dev['band']:.2f} GiB"])  # fmt: skip
        out.append(
            f'<g class="range-mark">{tip}'
            f'<line class="range" x1="{x(dev["lower"]):.2f}" y1="{ry}" x2="{x(dev["band"]):.2f}" '
            f'y2="{ry}"/>'
            f'<line class="range" x1="{x(dev["lower"]):.2f}" y1="{ry - 4}" '
            f'x2="{x(dev["lower"]):.2f}" y2="{ry + 4}"/>'
            f'<line class="range" x1="{x(dev["band"]):.2f}" y1="{ry - 4}" '
            f'x2="{x(dev["band"]):.2f}" y2="{ry + 4}"/>'
            f'<circle cx="{x(dev["central"]):.2f}" cy="{ry}" r="3" fill="#222"/></g>'
        )
        style = ' fill="#c62828"' if over else ""
        out.append(f'<text x="{LABEL_W + BAR_W + 12}" y="{y + BAR_H - 3}"{style}>'
                   f'{dev["central"]:.1f} GiB</text>'
                   f'<text class="small" x="{LABEL_W + BAR_W + 80}" y="{y + BAR_H - 3}">'
                   f'{dev["lower"]:.1f} – {dev["band"]:.1f}</text>')  # fmt: skip
        out.append("</g>")
    if usable is not None:
        ux = x(usable)
        out.append(f'<line class="usable" x1="{ux:.2f}" y1="{TOP - 14}" x2="{ux:.2f}" '
                   f'y2="{bottom}"/>'
                   f'<text class="small" x="{ux:.2f}" y="{TOP - 18}" text-anchor="middle" '
                   f'fill="#c62828">usable {usable:.1f} GiB</text>')  # fmt: skip
    out.append(f'<text class="small" x="{LABEL_W + BAR_W + 12}" y="{TOP - 10}">central</text>'
               f'<text class="small" x="{LABEL_W + BAR_W + 80}" y="{TOP - 10}">'
               "lower – band</text>")  # fmt: skip
    out.append("</svg>")
    return "".join(out)


def _legend(est: dict[str, Any]) -> str:
    """The kinds in this file's bars, what the whisker and the dashed line mean."""
    kinds = {k for s in est["stages"] for k in peak_kinds(s["peak_phase"])
             if any(t["kind"] == k and t["gib"] > 0 for t in s["terms"])}  # fmt: skip
    entries = [
        (html.swatch(f'<rect x="1" y="1" width="12" height="12" fill="{shades[1]}"/>'),
         KIND_NAMES[kind])
        for kind, shades in SHADES.items() if kind in kinds
    ]  # fmt: skip
    entries.append((html.swatch('<line class="range" x1="0" y1="7" x2="14" y2="7"/>'
                                '<circle cx="7" cy="7" r="3" fill="#222"/>'),
                    "lower bound – central – band"))  # fmt: skip
    if est["usable_gib"] is not None:
        entries.append((html.swatch('<line class="usable" x1="0" y1="7" x2="14" y2="7"/>'),
                        "usable memory"))  # fmt: skip
    return html.legend(entries)


def _stage_table(n: int, est: dict[str, Any]) -> str:
    heads = ["stage", "peak in", "device lower", "device central", "device band",
             "allocated", "reserved", "usable − central"]  # fmt: skip
    rows = []
    usable = est["usable_gib"]
    for stage in est["stages"]:
        b = stage["bounds"]
        key = f"f{n}s{stage['stage']}"
        spare = None if usable is None else round(usable - b["device"]["central"], 3)
        rows.append(
            f'<tr data-key="{key}" data-group="f{n}" data-stage="{stage["stage"]}">'
            f'<td>{stage["stage"]}</td><td class="l">{html.text(stage["peak_phase"])}</td>'
            + html.cell(b["device"]["lower"]) + html.cell(b["device"]["central"])
            + html.cell(b["device"]["band"]) + html.cell(b["allocated"]["central"])
            + html.cell(b["reserved"]["central"]) + html.cell(spare) + "</tr>"
        )  # fmt: skip
    return html.table(heads, rows, "stage-table")


def _details(n: int, est: dict[str, Any]) -> list[str]:
    """Per stage, its terms (the bar's and the other phase's), shown on hover of its bar or row;
    the worst stage's is shown first."""
    out = []
    for stage in est["stages"]:
        key = f"f{n}s{stage['stage']}"
        kinds = peak_kinds(stage["peak_phase"])
        rows = [
            f'<tr><td class="l">{html.text(t["name"])}</td><td class="l">{html.text(t["kind"])}'
            f"{'' if t['kind'] in kinds else ' (not at the peak)'}</td>{html.cell(t['gib'])}"
            f'<td class="l"><code>{html.text(t["derivation"])}</code></td></tr>'
            for t in stage["terms"]
        ]
        hidden = "" if stage["stage"] == est["worst_stage"] else " hidden"
        out.append(
            f'<div class="detail" id="detail-{key}" data-group="f{n}"{hidden}>'
            f"<h3>Stage {stage['stage']}: {stage['total_gib']:.2f} GiB device total, peak in "
            f"{html.text(stage['peak_phase'])}</h3>"
            + html.table(["term", "kind", "GiB", "derivation"], rows) + "</div>"
        )  # fmt: skip
    return out


def _section(n: int, est: dict[str, Any]) -> list[str]:
    usable = est["usable_gib"]
    if usable is not None:
        where = f"{est['gpu']}, {usable:.1f} GiB usable"
    elif est["gpu"]:
        where = f"{est['gpu']}: its memory is not in moe-lint's GPU table, no verdict"
    else:
        where = "no --gpu: no usable-memory line and no verdict"
    worst = f"worst stage {est['worst_stage']}"
    if est["verdict_text"]:
        verdict = f"{worst}: {est['verdict_text']}"
    else:
        verdict = (
            f"{worst}: device total {est['worst_total_gib']:.1f} GiB (pass --gpu for a verdict)"
        )
    klass = _verdict_class(est["verdict"])
    out = [
        f'<section class="file" id="file-{n}" data-file={html.attr(est["file"])}>',
        f"<h2>{html.text(est['file'])}</h2>",
        f'<p class="sub">{html.text(where)}; {len(est["stages"])} pipeline stages</p>',
        f'<p class="verdict {klass}">{html.text(verdict)}</p>',
        _chart(n, est),
        _legend(est),
        "<p class=\"note\">Hover a bar or a row for the stage's terms; each segment's tooltip "
        "gives its formula.</p>",
        _stage_table(n, est),
        *_details(n, est),
    ]
    if est["levers"]:
        rows = [
            f'<tr><td class="l">{html.text(lv["name"])}</td>{html.cell(lv["delta_gib"], 1)}'
            f'<td class="l">{html.text(lv["requires"])}</td></tr>'
            for lv in est["levers"][:5]
        ]
        out += ["<h3>Levers (each re-runs the model)</h3>",
                html.table(["lever", "GiB", "requires"], rows)]  # fmt: skip
    if est["assumptions"]:
        out += ["<h3>Assumptions</h3>", html.items(est["assumptions"])]
    out.append("</section>")
    return out


def page(payload: list[dict[str, Any]]) -> str:
    """The HTML report of ``estimate`` for the files of ``payload`` (one section each)."""
    files = [est["file"] for est in payload]
    body = [
        "<h1>moe-lint estimate: memory per pipeline stage</h1>",
        f'<p class="sub">{len(files)} file{"" if len(files) == 1 else "s"}; bars are the '
        "central device total (reserved memory plus CUDA context, NCCL and DeepEP buffers), "
        "the whisker its lower bound and band (docs/memory-model.md).</p>",
    ]
    if not payload:
        body.append('<p class="note">No file was estimated.</p>')
    for n, est in enumerate(payload, 1):
        body += _section(n, est)
    title = "moe-lint estimate: " + ", ".join(files) if files else "moe-lint estimate"
    return html.page(title, body, payload)


__all__ = ["bar_terms", "page", "peak_kinds"]
