"""Stage 7: render findings. Plain strings everywhere; rich only colours a terminal.

Keeping rich off the path of a piped or clean run matters for a pre-commit hook: importing it
costs more than parsing a config. Machine formats (json, concise) never touch rich.

Every piece of text goes through :mod:`moe_lint.output.escape` on its way out (render_plain,
render_rich, concise, to_json), so config keys, values and file names cannot write control
characters or CI workflow commands; rich gets plain Text, never markup.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from moe_lint.engine.findings import Finding, InputProblem
from moe_lint.output import escape

JSON_SCHEMA_VERSION = 1
#: Styles used when colouring a terminal (segment kind -> rich style).
_STYLES = {
    "error": "bold red",
    "warning": "bold yellow",
    "info": "bold cyan",
    "code": "bold",
    "loc": "bold",
    "gutter": "blue",
    "caret": "bold red",
    "label": "bold blue",
    "dim": "dim",
    "ok": "bold green",
}

Segment = tuple[str, str | None]  # (text, style kind)


def concise(findings: Iterable[Finding]) -> Iterator[str]:
    """``file:line:col: CODE [severity] message`` per finding, a line at a time."""
    for f in findings:
        line, column = f.position()
        text = f"{f.file}:{line}:{column}: {f.code} [{f.severity}] {f.full_message}"
        yield escape.line(text) + "\n"


def json_records(
    findings: Iterable[Finding], problems: Sequence[InputProblem] = ()
) -> Iterator[dict[str, Any]]:
    """Finding records and input-error records (code E000), in file order. ``findings`` come
    sorted by file; each input error follows its file's findings (``heapq.merge`` of sorted
    inputs is ``sorted(chain(...))``, stable: each file's findings keep their order)."""
    # Lazy: heapq only for the formats that list input errors among records.
    import heapq

    items: Iterable[Finding | InputProblem] = findings
    errors: list[Finding | InputProblem] = sorted(problems, key=_file_of)
    for item in heapq.merge(items, errors, key=_file_of):
        yield item.to_json()


def _file_of(item: Finding | InputProblem) -> str:
    return item.file


def to_json(findings: Iterable[Finding], problems: Sequence[InputProblem] = ()) -> Iterator[str]:
    """A JSON list of finding records (fields documented in docs/output.md), in pieces."""
    yield from escape.dumps_list(json_records(findings, problems), indent=2)
    yield "\n"


def _frame(finding: Finding, lines: list[str] | None) -> list[list[Segment]]:
    if not lines or finding.line < 1 or finding.line > len(lines):
        return []
    out: list[list[Segment]] = []
    width = len(str(finding.line))
    if finding.line > 1:
        prev = escape.text(lines[finding.line - 2])
        out.append([(f"  {finding.line - 1:>{width}} | ", "gutter"), (prev, None)])
    current = lines[finding.line - 1]
    out.append([(f"  {finding.line:>{width}} | ", "gutter"), (escape.text(current), None)])
    # The caret is measured on the escaped line, as it is shown.
    start = finding.column - 1
    if finding.end_line == finding.line and finding.end_column > finding.column:
        marked = current[start : finding.end_column - 1]
    else:
        marked = current[start:].split("#")[0].rstrip()
    pad = "".join("\t" if c == "\t" else " " for c in escape.text(current[:start]))
    caret = "^" * max(1, len(escape.text(marked)))
    out.append([(f"  {' ' * width} | ", "gutter"), (pad + caret, "caret")])
    return out


def _argument_frame(finding: Finding) -> list[list[Segment]]:
    """The override argument with a caret under its key (a finding with no line in the file)."""
    assert finding.argument is not None
    text = finding.argument.text
    key = text.partition("=")[0]
    start = len(key) - len(key.lstrip("+~"))
    return [
        [("  $ ", "gutter"), (text, None)],
        [("    ", "gutter"), (" " * start + "^" * max(1, len(key) - start), "caret")],
    ]


def text_segments(finding: Finding, lines: list[str] | None) -> list[list[Segment]]:
    """One finding as styled lines: header, message, code frame, derivation, help, source."""
    where = (
        f"{finding.file}: {finding.argument.where}"
        if finding.argument is not None
        else f"{finding.file}:{finding.line}:{finding.column}"
    )
    rows: list[list[Segment]] = [
        [
            (where, "loc"),
            (": ", None),
            (finding.severity, finding.severity),
            (" ", None),
            (finding.code, "code"),
            (f" [{finding.name}]", "dim"),
        ],
        [("  " + finding.message, None)],
    ]
    rows.extend(_argument_frame(finding) if finding.argument else _frame(finding, lines))
    if finding.derivation:
        rows.append([("  = derived: ", "label"), (finding.derivation, None)])
    if finding.fix:
        tag = ""
        if finding.applicability == "safe" and finding.edits:
            tag = "  [fix: --fix]"
        elif finding.applicability == "unsafe" and finding.edits:
            tag = "  [fix: --unsafe-fixes]"
        rows.append([("  = help: ", "label"), (finding.fix, None), (tag, "dim")])
    if finding.source:
        rows.append([("  = source: ", "label"), (finding.source, "dim")])
    return rows


def summary(
    counts: Mapping[str, int],
    files: int,
    fixable: int,
    unsafe: int,
    failed: int = 0,
    hidden: int = 0,
) -> list[Segment]:
    """The last line of a text report, from the shown findings' ``counts`` by severity;
    ``failed`` files could not be linted (their errors are on stderr), ``hidden`` info
    findings were not shown (no --show-infos)."""
    shows = "shows it" if hidden == 1 else "shows them"
    infos = f"; {plural(hidden, 'info')} hidden, --show-infos {shows}" if hidden else ""
    found = any(counts.values())
    if failed:
        text = _found(counts, files, fixable, unsafe) if found else (
            f"No findings in {plural(files, 'file')}")  # fmt: skip
        could_not = f"{plural(failed, 'file')} could not be linted"
        return [(f"{text}; {could_not}{infos}.", None)]
    if not found:
        return [(f"All checks passed ({plural(files, 'file')}{infos}).", "ok")]
    return [(_found(counts, files, fixable, unsafe) + infos + ".", None)]


def plural(count: int, word: str) -> str:
    """``1 file``, ``3 files``: the count and the word, with an s unless it is one."""
    return f"{count} {word}{'s' if count != 1 else ''}"


def statistics(findings: Iterable[Finding], as_json: bool = False, hidden: int = 0) -> str:
    """``--statistics``: one line per rule, most findings first (ruff's columns: count, code,
    ``[*]`` when a finding of it has a safe fix, name); as JSON, one record per rule."""
    rows: dict[str, dict[str, Any]] = {}
    for f in findings:
        row = rows.setdefault(
            f.code,
            {"code": f.code, "name": f.name, "severity": f.severity, "count": 0, "fixable": False},
        )
        row["count"] += 1
        row["fixable"] = row["fixable"] or (f.applicability == "safe" and bool(f.edits))
    ordered = sorted(rows.values(), key=lambda r: (-r["count"], r["code"]))
    if as_json:
        return escape.dumps(ordered, indent=2) + "\n"
    width = max((len(str(r["count"])) for r in ordered), default=1)
    lines = [
        f"{r['count']:>{width}}\t{r['code']}\t{'[*]' if r['fixable'] else '   '} {r['name']}"
        for r in ordered
    ]
    if hidden:
        lines.append(f"({plural(hidden, 'info')} hidden, --show-infos counts them too)")
    return "".join(escape.line(text) + "\n" for text in lines)


def _found(counts: Mapping[str, int], files: int, fixable: int, unsafe: int) -> str:
    parts = [plural(counts.get(s, 0), s) for s in ("error", "warning", "info") if counts.get(s)]
    text = f"Found {', '.join(parts)} in {plural(files, 'file')}"
    extra = []
    if fixable:
        extra.append(f"{fixable} fixable with --fix")
    if unsafe:
        extra.append(f"{unsafe} more with --unsafe-fixes")
    if extra:
        text += f" ({'; '.join(extra)})"
    return text


def _safe(row: list[Segment]) -> list[Segment]:
    """The row as it may be shown: each piece escaped, workflow commands broken across pieces."""
    texts = escape.guard_row([escape.text(text) for text, _ in row])
    return [(text, kind) for text, (_, kind) in zip(texts, row, strict=True)]


def plain_lines(rows: Iterable[list[Segment]]) -> Iterator[str]:
    """Each row as one escaped line of plain text."""
    for row in rows:
        yield "".join(text for text, _ in _safe(row)) + "\n"


def render_plain(rows: Iterable[list[Segment]]) -> str:
    return "".join(plain_lines(rows))


def render_rich(rows: Iterable[list[Segment]], stream: Any) -> None:
    """Colour the same rows on a terminal (rich imported only here). Text objects, not markup
    strings: a ``[red]`` in a config key is printed, never interpreted."""
    # Lazy: rich (~30 ms) only for colour output on a terminal.
    from rich.console import Console
    from rich.text import Text

    console = Console(
        file=stream, highlight=False, soft_wrap=True, force_terminal=True, emoji=False
    )
    for row in rows:
        line = Text()
        for text, kind in _safe(row):
            line.append(text, style=_STYLES.get(kind or "", ""))
        console.print(line)
