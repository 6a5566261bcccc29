"""Machine output formats for CI: SARIF 2.1.0, GitHub annotations, GitLab Code Quality, JUnit,
JSON lines. All are deterministic (sorted findings, no timestamps) so outputs diff cleanly.

Paths in SARIF and GitLab reports are relative to the repository root (the nearest folder with
``.git`` above the working directory), as code-scanning services expect.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from moe_lint import __version__
from moe_lint.findings import Finding

#: Where each rule's documentation page lives; `{code}` is replaced. The pages are generated into
#: docs/rules/ from the rule packs (`python tools/rule_docs.py`).
DOCS_URL = "https://github.com/moe-lint/moe-lint/blob/main/docs/rules/{code}.md"
INFORMATION_URI = "https://github.com/moe-lint/moe-lint"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
_GITHUB_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}
_GITLAB_SEVERITY = {"error": "major", "warning": "minor", "info": "info"}


def repo_root(start: Path | None = None) -> Path:
    """The nearest folder holding ``.git`` above ``start`` (default: cwd), else cwd."""
    here = (start or Path.cwd()).resolve()
    for folder in [here, *here.parents]:
        if (folder / ".git").exists():
            return folder
    return here


def relative_uri(file: str, root: Path) -> str:
    """A POSIX path relative to ``root`` when the file is inside it, else as given."""
    path = Path(file).resolve()
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def fingerprint(finding: Finding, uri: str) -> str:
    """Stable across edits elsewhere in the file: rule, file and config path, not the line."""
    key = f"{finding.code}\x00{uri}\x00{finding.path}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def json_lines(findings: Iterable[Finding]) -> str:
    return "".join(json.dumps(f.to_json(), ensure_ascii=False) + "\n" for f in findings)


def _rule_descriptor(rule: Any) -> dict[str, Any]:
    docs = rule.docs
    help_text = (
        f"{docs['what'].strip()}\n\nWhy: {docs['why'].strip()}\n\nExample:\n{docs['example']}\n"
        f"Use instead:\n{docs['use_instead']}"
    )
    markdown = (
        f"{docs['what'].strip()}\n\n**Why is this bad?** {docs['why'].strip()}\n\n"
        f"**Example**\n```yaml\n{docs['example'].rstrip()}\n```\n\n"
        f"**Use instead**\n```yaml\n{docs['use_instead'].rstrip()}\n```\n\nChecks: {rule.source}"
    )
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": docs["what"].strip()},
        "help": {"text": help_text, "markdown": markdown},
        "helpUri": DOCS_URL.format(code=rule.code),
        "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity]},
        "properties": {"tags": [rule.pack], "precision": "high"},
    }


def sarif(findings: Sequence[Finding], rules: Sequence[Any], root: Path) -> str:
    """A SARIF 2.1.0 log GitHub code scanning accepts (validated in the tests)."""
    index = {rule.code: i for i, rule in enumerate(rules)}
    results = []
    for f in findings:
        uri = relative_uri(f.file, root)
        line, column = f.position()
        # GitHub code scanning needs region.startLine, so a command-line finding sits at 1:1
        # of its config file; the argument itself is in the message and the properties.
        region: dict[str, int] = {"startLine": line, "startColumn": column}
        if f.argument is None and (f.end_line, f.end_column) > (f.line, f.column):
            region.update(endLine=f.end_line, endColumn=f.end_column)
        result: dict[str, Any] = {
            "ruleId": f.code,
            "level": _SARIF_LEVEL[f.severity],
            "message": {"text": f.full_message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                        "region": region,
                    }
                }
            ],
            "partialFingerprints": {"moeLint/v1": fingerprint(f, uri)},
            "properties": {"configPath": f.path},
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        if f.fix:
            result["properties"]["fix"] = f.fix
        if f.argument is not None:
            result["properties"]["commandLineArgument"] = f.argument.to_json()
        results.append(result)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "moe-lint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": [_rule_descriptor(rule) for rule in rules],
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": root.as_uri() + "/"}},
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github(findings: Iterable[Finding]) -> str:
    """GitHub Actions workflow commands, one annotation per finding."""
    lines = []
    for f in findings:
        props = [f"file={_escape_property(f.file)}"]
        if f.argument is None:  # a command-line finding is a file-level annotation
            props.append(f"line={f.line}")
            single_line = f.end_line == f.line
            if single_line:
                props.append(f"col={f.column}")
            props.append(f"endLine={f.end_line}")
            if single_line:
                props.append(f"endColumn={f.end_column}")
        props.append(f"title={_escape_property(f'{f.code} {f.name}')}")
        lines.append(
            f"::{_GITHUB_LEVEL[f.severity]} {','.join(props)}::{_escape_data(f.full_message)}\n"
        )
    return "".join(lines)


def markdown_summary(findings: Sequence[Finding]) -> str:
    """The full findings table for ``$GITHUB_STEP_SUMMARY`` (annotations show only 10 per step)."""
    if not findings:
        return "### moe-lint\n\nAll checks passed.\n"
    rows = [
        "### moe-lint",
        "",
        f"{len(findings)} finding(s).",
        "",
        "| severity | code | location | message | fix |",
        "|---|---|---|---|---|",
    ]
    for f in findings:
        cells = [
            f.severity,
            f"`{f.code}` {f.name}",
            f"`{f.file}`, {f.argument.label}" if f.argument else f"`{f.file}:{f.line}:{f.column}`",
            f.message,
            f.fix or "",
        ]
        rows.append(
            "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"
        )
    return "\n".join(rows) + "\n"


def gitlab(findings: Sequence[Finding], root: Path) -> str:
    """GitLab Code Quality report (a JSON array), with unique, stable fingerprints."""
    out = []
    seen: set[str] = set()
    for f in findings:
        uri = relative_uri(f.file, root)
        fp = fingerprint(f, uri)
        salt = 0
        while fp in seen:  # the same rule and path twice in a file: keep both, distinctly
            salt += 1
            fp = hashlib.sha256(f"{fp}:{salt}".encode()).hexdigest()
        seen.add(fp)
        out.append(
            {
                "description": f.full_message,
                "check_name": f.code,
                "fingerprint": fp,
                "severity": _GITLAB_SEVERITY[f.severity],
                "location": {"path": uri, "lines": {"begin": f.position()[0]}},
            }
        )
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"


def junit(findings: Sequence[Finding], files: Sequence[str]) -> str:
    """JUnit XML: one testsuite per file, one failing testcase per finding."""
    from xml.sax.saxutils import escape, quoteattr

    by_file: dict[str, list[Finding]] = {path: [] for path in files}
    for f in findings:
        by_file.setdefault(f.file, []).append(f)
    total = len(findings)
    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<testsuites name="moe-lint" tests="{sum(max(1, len(v)) for v in by_file.values())}" '
        f'failures="{total}">',
    ]
    for path, items in by_file.items():
        parts.append(
            f'  <testsuite name={quoteattr(path)} tests="{max(1, len(items))}" '
            f'failures="{len(items)}">'
        )
        if not items:
            parts.append(f'    <testcase classname={quoteattr(path)} name="No errors found"/>')
        for f in items:
            if f.argument is not None:
                name = f"{f.code} {f.path} ({f.argument.where})"
                body = f"{f.file}: {f.full_message}"
            else:
                name = f"{f.code} {f.path} ({f.line}:{f.column})"
                body = f"{f.file}:{f.line}:{f.column}: {f.full_message}"
            if f.fix:
                body += f"\nhelp: {f.fix}"
            parts += [
                f"    <testcase classname={quoteattr(path)} name={quoteattr(name)}>",
                f"      <failure type={quoteattr(f.severity)} message={quoteattr(f.message)}>"
                f"{escape(body)}</failure>",
                "    </testcase>",
            ]
        parts.append("  </testsuite>")
    parts.append("</testsuites>")
    return "\n".join(parts) + "\n"
