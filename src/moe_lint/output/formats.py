"""Machine output formats for CI: SARIF 2.1.0, GitHub annotations, GitLab Code Quality, JUnit,
JSON lines. All are deterministic (sorted findings, no timestamps) so outputs diff cleanly.

Paths in SARIF and GitLab reports are relative to the repository root (the nearest folder with
``.git`` above the working directory), as code-scanning services expect.

Files that could not be linted (:class:`~moe_lint.engine.findings.InputProblem`, code ``E000``) are
in
every format: SARIF ``invocations[0].toolExecutionNotifications`` with
``executionSuccessful: false``, a GitHub ``::error``, a GitLab entry, a JUnit ``<error>``
testcase, a JSON record. All text goes through :mod:`moe_lint.output.escape`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from moe_lint import __version__
from moe_lint.engine.findings import (
    INPUT_ERROR_CODE,
    INPUT_ERROR_NAME,
    SEVERITY_RANK,
    Finding,
    InputProblem,
    docs_url,
)
from moe_lint.output import escape
from moe_lint.output.text import json_records

#: The project's home (a rule's own page: engine.findings.docs_url).
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


def _artifact(file: str, root: Path) -> dict[str, str]:
    """A SARIF artifactLocation: a percent-encoded URI relative to %SRCROOT% when the file is
    inside the repository, else an absolute ``file:`` URI."""
    path = Path(file).resolve()
    try:
        return {"uri": escape.uri_path(path.relative_to(root).as_posix()), "uriBaseId": "%SRCROOT%"}
    except ValueError:
        return {"uri": path.as_uri()}


def fingerprint(finding: Finding, uri: str) -> str:
    """Stable across edits elsewhere in the file: rule, file and config path, not the line."""
    return _digest(finding.code, uri, finding.path)


def _digest(code: str, uri: str, path: str) -> str:
    # surrogatepass: a non-UTF-8 file name (lone surrogates from os.fsdecode) hashes without
    # failing, and names that are valid UTF-8 keep the fingerprints they always had.
    key = f"{code}\x00{uri}\x00{path}"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def json_lines(findings: Sequence[Finding], problems: Sequence[InputProblem] = ()) -> str:
    return "".join(escape.dumps(record) + "\n" for record in json_records(findings, problems))


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
        "helpUri": docs_url(rule.code),
        "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity]},
        "properties": {"tags": [rule.pack], "precision": "high"},
    }


#: The notification descriptor SARIF input errors point to (driver.notifications[0]).
_INPUT_DESCRIPTOR = {
    "id": INPUT_ERROR_CODE,
    "name": INPUT_ERROR_NAME,
    "shortDescription": {"text": "The file could not be linted (bad or hostile input)."},
    "fullDescription": {
        "text": "Malformed YAML, a duplicate key, a value of the wrong type, or an unreadable, "
        "oversized or hostile file. moe-lint exits with code 2."
    },
    "defaultConfiguration": {"level": "error"},
}


def _notification(problem: InputProblem, root: Path) -> dict[str, Any]:
    location: dict[str, Any] = {"artifactLocation": _artifact(problem.file, root)}
    if problem.line is not None:
        region = {"startLine": problem.line}
        if problem.column is not None:
            region["startColumn"] = problem.column
        location["region"] = region
    return {
        "level": "error",
        "message": {"text": problem.message},
        "locations": [{"physicalLocation": location}],
        "descriptor": {"id": INPUT_ERROR_CODE, "index": 0},
    }


def sarif(
    findings: Sequence[Finding],
    rules: Sequence[Any],
    root: Path,
    problems: Sequence[InputProblem] = (),
) -> str:
    """A SARIF 2.1.0 log GitHub code scanning accepts (validated in the tests). Files that
    could not be linted are tool execution notifications of a failed invocation. The driver
    lists only the rules its results report (as ruff's SARIF does): the whole catalogue made
    a two-result log 620 KB."""
    reported = {f.code for f in findings}
    rules = [rule for rule in rules if rule.code in reported]
    index = {rule.code: i for i, rule in enumerate(rules)}
    results = []
    uris: dict[str, tuple[str, dict[str, str]]] = {}  # per file: resolving a path costs ~50 µs
    for f in findings:
        if f.file not in uris:
            uris[f.file] = (relative_uri(f.file, root), _artifact(f.file, root))
        uri, artifact = uris[f.file]
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
                        "artifactLocation": dict(artifact),
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
                        "notifications": [_INPUT_DESCRIPTOR],
                    }
                },
                "invocations": [
                    {
                        "executionSuccessful": not problems,
                        "toolExecutionNotifications": [_notification(p, root) for p in problems],
                    }
                ],
                "originalUriBaseIds": {"%SRCROOT%": {"uri": root.as_uri() + "/"}},
                "results": results,
            }
        ],
    }
    return escape.dumps(log, indent=2) + "\n"


def _escape_data(text: str) -> str:
    return escape.github_data(text)


def _escape_property(text: str) -> str:
    return escape.github_property(text)


def github(findings: Iterable[Finding], problems: Sequence[InputProblem] = ()) -> str:
    """GitHub Actions workflow commands, one annotation per finding and per input error."""
    lines = []
    for p in problems:
        props = [f"file={_escape_property(p.file)}"]
        if p.line is not None:
            props.append(f"line={p.line}")
            if p.column is not None:
                props.append(f"col={p.column}")
        props.append(f"title={_escape_property(f'{INPUT_ERROR_CODE} {INPUT_ERROR_NAME}')}")
        lines.append(f"::error {','.join(props)}::{_escape_data(p.message)}\n")
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


def markdown_summary(findings: Sequence[Finding], problems: Sequence[InputProblem] = ()) -> str:
    """The full findings table for ``$GITHUB_STEP_SUMMARY`` (annotations show only 10 per step).
    Cells are escaped: config text cannot add links, images or HTML to the summary."""
    if not findings and not problems:
        return "### moe-lint\n\nAll checks passed.\n"
    rows = [
        "### moe-lint",
        "",
        f"{len(findings)} finding(s)."
        + (f" {len(problems)} file(s) could not be linted." if problems else ""),
        "",
        "| severity | code | location | message | fix |",
        "|---|---|---|---|---|",
    ]
    input_code = f"`{INPUT_ERROR_CODE}` {INPUT_ERROR_NAME}"
    cells_list = [["error", input_code, escape.markdown(p.where), p.message, ""] for p in problems]
    for f in findings:
        where = f"{f.file}, {f.argument.label}" if f.argument else f"{f.file}:{f.line}:{f.column}"
        cells_list.append(
            [f.severity, f"`{f.code}` {f.name}", escape.markdown(where), f.message, f.fix or ""]
        )
    for cells in cells_list:
        cells[3:] = [escape.markdown(c) for c in cells[3:]]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def gitlab(findings: Sequence[Finding], root: Path, problems: Sequence[InputProblem] = ()) -> str:
    """GitLab Code Quality report (a JSON array), with unique, stable fingerprints. An input
    error is a ``blocker`` entry with check_name ``E000``."""
    out = []
    seen: set[str] = set()

    def unique(fp: str) -> str:
        salt = 0
        while fp in seen:  # the same rule and path twice in a file: keep both, distinctly
            salt += 1
            fp = hashlib.sha256(f"{fp}:{salt}".encode()).hexdigest()
        seen.add(fp)
        return fp

    for p in problems:
        uri = relative_uri(p.file, root)
        out.append(
            {
                "description": p.message,
                "check_name": INPUT_ERROR_CODE,
                "fingerprint": unique(_digest(INPUT_ERROR_CODE, uri, "")),
                "severity": "blocker",
                "location": {"path": uri, "lines": {"begin": p.line or 1}},
            }
        )
    for f in findings:
        uri = relative_uri(f.file, root)
        out.append(
            {
                "description": f.full_message,
                "check_name": f.code,
                "fingerprint": unique(fingerprint(f, uri)),
                "severity": _GITLAB_SEVERITY[f.severity],
                "location": {"path": uri, "lines": {"begin": f.position()[0]}},
            }
        )
    return escape.dumps(out, indent=2) + "\n"


def junit(
    findings: Sequence[Finding],
    files: Sequence[str],
    problems: Sequence[InputProblem] = (),
    fail_on: str = "error",
    skipped: Mapping[str, str] | None = None,
) -> str:
    """JUnit XML: one testsuite per file, one testcase per finding.

    A finding at or above ``fail_on`` (the findings that fail the run) is a ``<failure>``; one
    below it (infos, and warnings with the default ``--fail-on error``) is a passing testcase
    whose text is in ``<system-out>``. A file that could not be linted is a testcase with an
    ``<error>``; skipped non-config YAML a ``<skipped>`` one; a clean file a passing
    "No errors found"."""
    attr, text = escape.xml_attr, escape.xml_text
    threshold = SEVERITY_RANK[fail_on]
    skipped = skipped or {}
    by_file: dict[str, list[Finding]] = {path: [] for path in files}
    errors: dict[str, list[InputProblem]] = {}
    for p in problems:
        by_file.setdefault(p.file, [])
        errors.setdefault(p.file, []).append(p)
    for f in findings:
        by_file.setdefault(f.file, []).append(f)
    suites = []
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for path, items in by_file.items():
        cases = []
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        input_name = attr(f"{INPUT_ERROR_CODE} {INPUT_ERROR_NAME}")
        for p in errors.get(path, []):
            counts["tests"] += 1
            counts["errors"] += 1
            cases += [
                f"    <testcase classname={attr(path)} name={input_name}>",
                f"      <error type={attr(INPUT_ERROR_NAME)} message={attr(p.message)}>"
                f"{text(f'{p.where}: {p.message}')}</error>",
                "    </testcase>",
            ]
        for f in items:
            counts["tests"] += 1
            if f.argument is not None:
                name = f"{f.code} {f.path} ({f.argument.where})"
                body = f"{f.file}: {f.full_message}"
            else:
                name = f"{f.code} {f.path} ({f.line}:{f.column})"
                body = f"{f.file}:{f.line}:{f.column}: {f.full_message}"
            if f.fix:
                body += f"\nhelp: {f.fix}"
            cases.append(f"    <testcase classname={attr(path)} name={attr(name)}>")
            if SEVERITY_RANK[f.severity] >= threshold:
                counts["failures"] += 1
                cases.append(
                    f"      <failure type={attr(f.severity)} message={attr(f.message)}>"
                    f"{text(body)}</failure>"
                )
            else:
                cases.append(f"      <system-out>{text(f'{f.severity}: {body}')}</system-out>")
            cases.append("    </testcase>")
        if not counts["tests"]:
            counts["tests"] = 1
            if path in skipped:
                counts["skipped"] = 1
                cases += [
                    f'    <testcase classname={attr(path)} name="Not a config">',
                    f"      <skipped message={attr(skipped[path])}/>",
                    "    </testcase>",
                ]
            else:
                cases.append(f'    <testcase classname={attr(path)} name="No errors found"/>')
        for key in totals:
            totals[key] += counts[key]
        suites.append(
            f"  <testsuite name={attr(path)} "
            + " ".join(f'{key}="{n}"' for key, n in counts.items())
            + ">"
        )
        suites += [*cases, "  </testsuite>"]
    head = " ".join(f'{key}="{n}"' for key, n in totals.items())
    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<testsuites name="moe-lint" {head}>',
        *suites,
        "</testsuites>",
    ]
    return "\n".join(parts) + "\n"
