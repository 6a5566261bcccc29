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
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
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


def json_lines(findings: Iterable[Finding], problems: Sequence[InputProblem] = ()) -> Iterator[str]:
    for record in json_records(findings, problems):
        yield escape.dumps(record) + "\n"


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
    findings: Iterable[Finding],
    rules: Sequence[Any],
    root: Path,
    problems: Sequence[InputProblem] = (),
    reported: Collection[str] | None = None,
) -> Iterator[str]:
    """A SARIF 2.1.0 log GitHub code scanning accepts (validated in the tests), in pieces.
    Files that could not be linted are tool execution notifications of a failed invocation.
    The driver lists only the rules its results report (as ruff's SARIF does): the whole
    catalogue made a two-result log 620 KB. ``reported`` (the codes of ``findings``, when the
    caller has counted them) lets the results be written one at a time."""
    if reported is None:
        findings = list(findings)
        reported = {f.code for f in findings}
    rules = [rule for rule in rules if rule.code in reported]
    index = {rule.code: i for i, rule in enumerate(rules)}
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
                "results": _RESULTS,
            }
        ],
    }
    # The log with its results list written in place of the placeholder (the list is the
    # last member of runs[0], three levels deep): the same text as dumping it whole.
    head, tail = escape.dumps(log, indent=2).split(escape.dumps(_RESULTS))
    yield head
    yield from escape.dumps_list(_sarif_results(findings, index, root), indent=2, level=3)
    yield tail + "\n"


#: Stands in for SARIF's results list while the rest of the log is serialized.
_RESULTS = "\x00moe-lint results\x00"


def _sarif_results(
    findings: Iterable[Finding], index: Mapping[str, int], root: Path
) -> Iterator[dict[str, Any]]:
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
        yield result


def _escape_data(text: str) -> str:
    return escape.github_data(text)


def _escape_property(text: str) -> str:
    return escape.github_property(text)


def github(findings: Iterable[Finding], problems: Sequence[InputProblem] = ()) -> Iterator[str]:
    """GitHub Actions workflow commands, one annotation per finding and per input error."""
    for p in problems:
        props = [f"file={_escape_property(p.file)}"]
        if p.line is not None:
            props.append(f"line={p.line}")
            if p.column is not None:
                props.append(f"col={p.column}")
        props.append(f"title={_escape_property(f'{INPUT_ERROR_CODE} {INPUT_ERROR_NAME}')}")
        yield f"::error {','.join(props)}::{_escape_data(p.message)}\n"
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
        yield f"::{_GITHUB_LEVEL[f.severity]} {','.join(props)}::{_escape_data(f.full_message)}\n"


def markdown_summary(
    findings: Iterable[Finding], problems: Sequence[InputProblem] = (), count: int | None = None
) -> Iterator[str]:
    """The full findings table for ``$GITHUB_STEP_SUMMARY`` (annotations show only 10 per step),
    a line at a time; ``count`` is the number of ``findings``, when the caller has it. Cells
    are escaped: config text cannot add links, images or HTML to the summary."""
    if count is None:
        findings = list(findings)
        count = len(findings)
    if not count and not problems:
        yield "### moe-lint\n\nAll checks passed.\n"
        return
    yield from (
        "### moe-lint\n",
        "\n",
        f"{count} finding(s)."
        + (f" {len(problems)} file(s) could not be linted." if problems else "")
        + "\n",
        "\n",
        "| severity | code | location | message | fix |\n",
        "|---|---|---|---|---|\n",
    )
    input_code = f"`{INPUT_ERROR_CODE}` {INPUT_ERROR_NAME}"
    for p in problems:
        yield _markdown_row(["error", input_code, escape.markdown(p.where), p.message, ""])
    for f in findings:
        where = f"{f.file}, {f.argument.label}" if f.argument else f"{f.file}:{f.line}:{f.column}"
        yield _markdown_row(
            [f.severity, f"`{f.code}` {f.name}", escape.markdown(where), f.message, f.fix or ""]
        )


def _markdown_row(cells: list[str]) -> str:
    cells[3:] = [escape.markdown(c) for c in cells[3:]]
    return "| " + " | ".join(cells) + " |\n"


def gitlab(
    findings: Iterable[Finding], root: Path, problems: Sequence[InputProblem] = ()
) -> Iterator[str]:
    """GitLab Code Quality report (a JSON array), with unique, stable fingerprints, in pieces.
    An input error is a ``blocker`` entry with check_name ``E000``."""
    yield from escape.dumps_list(_gitlab_entries(findings, root, problems), indent=2)
    yield "\n"


def _gitlab_entries(
    findings: Iterable[Finding], root: Path, problems: Sequence[InputProblem]
) -> Iterator[dict[str, Any]]:
    # A fingerprint hashes the file's path, so only entries of one file can share one: the
    # input errors' are kept for the run, the findings' (sorted by file) for their file.
    kept: set[str] = set()
    seen: set[str] = set()
    current: str | None = None

    def unique(fp: str) -> str:
        salt = 0
        while fp in seen or fp in kept:  # the same rule and path twice in a file: keep both
            salt += 1
            fp = hashlib.sha256(f"{fp}:{salt}".encode()).hexdigest()
        seen.add(fp)
        return fp

    for p in problems:
        uri = relative_uri(p.file, root)
        yield {
            "description": p.message,
            "check_name": INPUT_ERROR_CODE,
            "fingerprint": unique(_digest(INPUT_ERROR_CODE, uri, "")),
            "severity": "blocker",
            "location": {"path": uri, "lines": {"begin": p.line or 1}},
        }
    kept, seen = seen, set()
    uri = ""
    for f in findings:
        if f.file != current:
            current, uri, seen = f.file, relative_uri(f.file, root), set()
        yield {
            "description": f.full_message,
            "check_name": f.code,
            "fingerprint": unique(fingerprint(f, uri)),
            "severity": _GITLAB_SEVERITY[f.severity],
            "location": {"path": uri, "lines": {"begin": f.position()[0]}},
        }


def junit(
    files: Sequence[str],
    findings_of: Callable[[str], Sequence[Finding]],
    problems: Sequence[InputProblem] = (),
    fail_on: str = "error",
    skipped: Mapping[str, str] | None = None,
    others: Sequence[str] = (),
) -> Iterator[str]:
    """JUnit XML: one testsuite per file, one testcase per finding, in pieces.

    The suites are ``files`` (those linted), then the files of ``problems``, then ``others``
    (files with findings that were not linted as themselves: stdin under its name); a file's
    testcases are its input errors, then ``findings_of(file)``. That is asked twice per file
    (the totals head the document), so a report of many files never holds all its findings.

    A finding at or above ``fail_on`` (the findings that fail the run) is a ``<failure>``; one
    below it (infos, and warnings with the default ``--fail-on error``) is a passing testcase
    whose text is in ``<system-out>``. A file that could not be linted is a testcase with an
    ``<error>``; skipped non-config YAML a ``<skipped>`` one; a clean file a passing
    "No errors found"."""
    threshold = SEVERITY_RANK[fail_on]
    skipped = skipped or {}
    errors: dict[str, list[InputProblem]] = {}
    for p in problems:
        errors.setdefault(p.file, []).append(p)
    suites = list(dict.fromkeys([*files, *errors, *others]))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for path in suites:
        items = findings_of(path)
        failures = sum(1 for f in items if SEVERITY_RANK[f.severity] >= threshold)
        tests = len(errors.get(path, ())) + len(items)
        totals["tests"] += tests or 1
        totals["failures"] += failures
        totals["errors"] += len(errors.get(path, ()))
        totals["skipped"] += not tests and path in skipped
    head = " ".join(f'{key}="{n}"' for key, n in totals.items())
    yield f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="moe-lint" {head}>\n'
    for path in suites:
        lines = _junit_suite(path, findings_of(path), errors, threshold, skipped)
        yield "".join(line + "\n" for line in lines)
    yield "</testsuites>\n"


def _junit_suite(
    path: str,
    items: Sequence[Finding],
    errors: Mapping[str, list[InputProblem]],
    threshold: int,
    skipped: Mapping[str, str],
) -> list[str]:
    """One file's testsuite, as lines."""
    attr, text = escape.xml_attr, escape.xml_text
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
    head = " ".join(f'{key}="{n}"' for key, n in counts.items())
    return [f"  <testsuite name={attr(path)} {head}>", *cases, "  </testsuite>"]
