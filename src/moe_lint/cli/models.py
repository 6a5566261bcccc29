"""``moe-lint models``: the bundled model presets as a table (``--sources``, ``--format json``
or ``markdown``), or what an HF config.json or model directory maps to."""

from __future__ import annotations

import sys
from typing import Any

from moe_lint.cli import EXIT_OK
from moe_lint.cli.options import _Parser
from moe_lint.config.settings import model_presets, normalize_model, preset_fields
from moe_lint.output import escape


def model_json(key: str, entry: dict[str, Any]) -> dict[str, Any]:
    """One preset for ``moe-lint models``: names, architecture, computed parameter counts
    (analysis/params.py, embedding and output included, MTP excluded) and its sources."""
    # Lazy: the parameter counter loads only for `moe-lint models`.
    from moe_lint.analysis.params import Arch, count_params

    counts = count_params(Arch.from_preset(key))
    return {
        "name": key,
        "display_name": entry.get("display_name"),
        "hf_id": entry.get("hf_id"),
        "hf_architecture": entry.get("hf_architecture"),
        "bridge": entry.get("bridge"),
        "aliases": list(entry.get("aliases") or []),
        "layers": preset_fields(key).get("num_layers"),
        "experts": preset_fields(key).get("num_moe_experts"),
        "topk": preset_fields(key).get("moe_router_topk"),
        "total_params": counts.total,
        "active_params": counts.active,
        "published_params": dict(entry.get("published_params") or {}),
        "sources": list(entry.get("sources") or []),
    }


def _billions(count: int) -> str:
    return f"{count / 1e9:.1f}B"


def _cmd_models(argv: list[str]) -> int:
    """``moe-lint models``: the bundled presets; ``moe-lint models PATH``: what an HF
    config.json (or a model directory) maps to."""
    p = _Parser(prog="moe-lint models")
    p.add_argument("target", nargs="?", help="an HF config.json or model directory to map")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.add_argument(
        "--sources", action="store_true", help="list each preset's sources under its row"
    )
    ns = p.parse_args(argv)
    if ns.target:
        key = normalize_model(ns.target, "models")
        fields = preset_fields(key)
        if ns.format == "json":
            sys.stdout.write(escape.dumps({"model": key, "fields": fields}, indent=2) + "\n")
        elif ns.format == "markdown":
            print(escape.line("| field | value |\n|---|---|"))
            for name, value in fields.items():
                print(escape.line(f"| `model.{name}` | `{value!r}` |"))
        else:
            print(escape.line(f"# {key}"))
            for name, value in fields.items():
                print(escape.line(f"model.{name} = {value!r}"))
        return EXIT_OK
    rows = [model_json(k, e) for k, e in model_presets().items()]
    if ns.format == "json":
        sys.stdout.write(escape.dumps(rows, indent=2) + "\n")
        return EXIT_OK
    header = ("preset", "model", "HF architecture", "layers", "experts", "total", "active")
    table = [
        (
            r["name"],
            str(r["display_name"] or "").split(" (")[0],  # the notes stay in --format json
            str(r["hf_architecture"] or ""),
            str(r["layers"]),
            f"{r['experts']} top-{r['topk']}" if r["experts"] else "dense",
            _billions(r["total_params"]),
            _billions(r["active_params"]),
        )
        for r in rows
    ]
    if ns.format == "markdown":
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * 3 + "---:|" * 4)
        for cells in table:
            print(escape.line("| " + " | ".join(cells) + " |"))
        return EXIT_OK
    widths = [max(len(c) for c in column) for column in zip(header, *table, strict=True)]
    right = {3, 5, 6}  # counts align right

    def row(cells: tuple[str, ...]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    print(row(header))
    for r, cells in zip(rows, table, strict=True):
        print(escape.line(row(cells)))
        if ns.sources:
            for source in r["sources"]:
                print(escape.line(f"    {source}"))
    if not ns.sources:
        print("(total and active: parameters without MTP; --sources lists where each comes from)")
    return EXIT_OK
