"""The page around the HTML reports (``estimate --format html``, ``plan --format html``).

One self-contained file that opens offline: the charts are SVG written here (no charting
library, nothing to download or vendor), the style and the one small script are inline, and a
Content-Security-Policy allows only those two, by hash, and no load of any kind, so a page
that escaping failed on still could not run or fetch anything. Every string from a config
(file and model names, messages) goes through :func:`moe_lint.output.escape.html`. The report's
JSON payload is embedded as a data block (``<script type="application/json"
id="moe-lint-data">``), so what the page shows can be checked against ``--format json``.

Hover: every bar segment and point carries an SVG ``<title>`` (the browser's own tooltip, no
script needed); elements with ``data-key`` also show the detail panel of that key
(``id="detail-KEY"``) and highlight each other (a stage's bar and table row, a plan's point
and row). Keys are made here from numbers, never from config text.
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Iterable
from typing import Any

from moe_lint.output import escape

STYLE = """
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans",
       sans-serif; margin: 24px; color: #1d1d1f; background: #fff; max-width: 1320px; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 4px; word-break: break-all; }
h3 { font-size: 15px; margin: 18px 0 6px; }
p.sub, p.note { color: #555; margin: 2px 0 8px; }
p.verdict { font-weight: 600; padding: 6px 10px; border-left: 4px solid #999;
            background: #f4f4f4; }
p.verdict.fits { border-color: #2e8540; background: #eef7f0; }
p.verdict.may-not-fit { border-color: #d98c00; background: #fff6e0; }
p.verdict.does-not-fit { border-color: #c62828; background: #fdecec; }
svg { display: block; margin: 8px 0; overflow: visible; }
svg text { font: 12px system-ui, sans-serif; fill: #333; }
svg text.small { font-size: 11px; fill: #555; }
svg text.bold { font-weight: 600; }
svg .axis { stroke: #888; stroke-width: 1; }
svg .grid { stroke: #e4e4e4; stroke-width: 1; }
svg .usable { stroke: #c62828; stroke-width: 1.5; stroke-dasharray: 6 4; }
svg .range { stroke: #222; stroke-width: 1.5; }
svg .whisker { stroke: #8a8a8a; stroke-width: 1.2; }
svg .over { fill: #fdecec; }
svg g.hl rect.seg { stroke: #000; stroke-width: 1; }
svg g.hl .pt { stroke: #000; stroke-width: 2.5; }
svg [data-key] { cursor: pointer; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
th, td { border-bottom: 1px solid #e2e2e2; padding: 3px 8px; text-align: right;
         vertical-align: top; }
th { background: #f6f6f6; font-weight: 600; }
td.l, th.l { text-align: left; }
tr.hl td { background: #fff3c4; }
div.wide { overflow-x: auto; }
table.plan-table { font-size: 12px; }
table.plan-table th, table.plan-table td { padding: 3px 5px; }
tr.warn td.verdict { color: #a86a00; font-weight: 600; }
.detail { border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; margin: 8px 0;
          background: #fbfbfb; }
.detail h3 { margin-top: 2px; }
p.legend { margin: 2px 0 8px; color: #333; }
p.legend span { display: inline-block; margin: 0 16px 2px 0; white-space: nowrap; }
p.legend svg.sw { display: inline-block; margin: 0 5px 0 0; vertical-align: -2px; }
ul { margin: 4px 0 10px; padding-left: 22px; }
code { font-size: 12px; }
"""

#: Marks the elements of one key and shows its detail panel (the keys are ours, never data).
SCRIPT = """
"use strict";
(function () {
  function show(key, group) {
    document.querySelectorAll('.hl[data-group="' + group + '"]').forEach(function (e) {
      e.classList.remove("hl");
    });
    document.querySelectorAll('[data-key="' + key + '"]').forEach(function (e) {
      e.classList.add("hl");
    });
    document.querySelectorAll('.detail[data-group="' + group + '"]').forEach(function (d) {
      d.hidden = d.id !== "detail-" + key;
    });
  }
  document.querySelectorAll("[data-key]").forEach(function (e) {
    var key = e.getAttribute("data-key"), group = e.getAttribute("data-group");
    e.addEventListener("mouseenter", function () { show(key, group); });
    e.addEventListener("focus", function () { show(key, group); });
  });
})();
"""


def _sha256(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


#: Nothing may load (default-src 'none'); only our own style and script run.
CSP = (
    f"default-src 'none'; style-src {_sha256(STYLE)}; script-src {_sha256(SCRIPT)}; "
    "base-uri 'none'; form-action 'none'"
)


def text(value: object) -> str:
    """Element content from any value (config text included), escaped."""
    return escape.html(str(value))


def attr(value: object) -> str:
    """A double-quoted attribute value, quotes included."""
    return '"' + escape.html(str(value)) + '"'


def data_block(data: Any) -> str:
    """The payload as JSON inside ``<script type="application/json">``: a ``<`` in a string
    cannot close the element (``\\u003c``), and the JSON escaping layer keeps it valid UTF-8."""
    body = escape.dumps(data)
    body = body.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="moe-lint-data">{body}</script>'


def page(title: str, body: list[str], data: Any) -> str:
    """The whole file: head (CSP, style), ``body`` (already escaped HTML pieces), the data
    block and the script."""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content={attr(CSP)}>',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="generator" content="moe-lint">',
            f"<title>{text(title)}</title>",
            f"<style>{STYLE}</style>",
            "</head>",
            "<body>",
            *body,
            data_block(data),
            f"<script>{SCRIPT}</script>",
            "</body>",
            "</html>",
            "",
        ]
    )


def ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    """Round axis ticks covering ``lo``..``hi`` (steps of 1, 2 or 5 × a power of ten)."""
    span = hi - lo
    if not math.isfinite(span) or span <= 0:
        return [lo]
    raw = span / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    out = []
    value = first
    while value <= hi + step * 1e-9:
        out.append(0.0 if abs(value) < step * 1e-9 else value)
        value += step
    return out


def tick_label(value: float) -> str:
    """A tick's text: no trailing ``.0``, thousands grouped."""
    if abs(value - round(value)) < 1e-9:
        return f"{round(value):,}"
    return f"{value:,.1f}" if abs(value * 10 - round(value * 10)) < 1e-6 else f"{value:,.2f}"


def num(value: float | None, digits: int = 2) -> str:
    """A number as the reports print it (``–`` for none)."""
    return "–" if value is None else f"{value:,.{digits}f}"


def cell(value: float | None, digits: int = 2) -> str:
    """A numeric table cell carrying the payload's exact value in ``data-value``, so a test
    (or a reader's script) can compare the page with the JSON."""
    raw = "" if value is None else repr(value)
    return f'<td data-value="{raw}">{num(value, digits)}</td>'


def table(heads: Iterable[str], rows: Iterable[str], cls: str = "") -> str:
    """A table from head names (ours, escaped anyway) and finished ``<tr>`` rows."""
    left = {"file", "phase", "peak in", "term", "kind", "lever", "requires", "recompute",
            "dispatcher", "transport", "verdict", "departs from", "warnings", "derivation",
            "value", "reason", "dimension", "key", "rule of thumb", "plans departing"}  # fmt: skip
    head = "".join(
        f'<th class="l">{text(h)}</th>' if h.lower() in left else f"<th>{text(h)}</th>"
        for h in heads
    )
    klass = f" class={attr(cls)}" if cls else ""
    return f"<table{klass}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def items(lines: Iterable[str]) -> str:
    """A bulleted list of (unescaped) text lines."""
    return "<ul>" + "".join(f"<li>{text(line)}</li>" for line in lines) + "</ul>"


def swatch(shapes: str) -> str:
    """A 14×14 SVG legend mark drawn by ``shapes`` (our markup)."""
    return f'<svg class="sw" width="14" height="14" viewBox="0 0 14 14">{shapes}</svg>'


def legend(entries: Iterable[tuple[str, str]]) -> str:
    """A legend line that wraps: (swatch markup, unescaped label) pairs."""
    return '<p class="legend">' + "".join(
        f"<span>{mark}{text(label)}</span>" for mark, label in entries) + "</p>"  # fmt: skip


def tooltip(lines: Iterable[str]) -> str:
    """An SVG ``<title>``: the browser's tooltip, one line per item (``&#10;`` breaks, so no
    raw line of the file starts with config text)."""
    return "<title>" + "&#10;".join(text(line) for line in lines) + "</title>"


__all__ = ["attr", "cell", "data_block", "items", "legend", "num", "page", "swatch", "table",
           "text", "ticks", "tooltip"]  # fmt: skip
