"""The findings report of ``moe-lint check``: baselines, hidden infos, the exit code the
findings decide, and the report in the chosen format (to stdout or ``-o``), with the
``--summary`` Markdown table."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from moe_lint.bounds import bounded_repr
from moe_lint.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, _silence_stdout, _stderr
from moe_lint.cli.options import _use_color
from moe_lint.engine.findings import SEVERITY_RANK, Finding, InputProblem
from moe_lint.errors import UsageError
from moe_lint.output import text as report


def _report(results: list[Any], fail_on: str, fmt: str, ns: argparse.Namespace) -> int:
    findings: list[Finding] = sorted((f for r in results for f in r.findings), key=Finding.sort_key)
    errors = [r for r in results if r.error is not None]
    for r in errors:
        _stderr(f"{r.path}: error: {r.error}")
    problems = [InputProblem.parse(r.path, r.error) for r in errors]
    if ns.write_baseline and not errors:
        # Lazy: baselines (~10 ms) only with --baseline / --write-baseline.
        from moe_lint.output.baseline import write_baseline
        from moe_lint.output.formats import repo_root

        count = write_baseline(ns.write_baseline, findings, repo_root())
        _stderr(f"moe-lint: wrote {count} baseline entries to {ns.write_baseline}")
        return EXIT_OK
    stale: list[Any] = []
    if ns.baseline:
        # Lazy: baselines (~10 ms) only with --baseline / --write-baseline.
        from moe_lint.output.baseline import apply_baseline
        from moe_lint.output.formats import relative_uri, repo_root

        root = repo_root()
        linted = {relative_uri(r.path, root) for r in results if r.error is None}
        applied = apply_baseline(ns.baseline, findings, root, linted)
        findings, stale = applied.new, applied.stale
        kept = set(map(id, findings))
        for r in results:
            r.findings = [f for f in r.findings if id(f) in kept]
        for code, file, cfg_path in stale:
            _stderr(f"moe-lint: stale baseline entry: {code} {file} {cfg_path} (no longer found)")
    hidden = 0
    if not (ns.show_infos or fail_on == "info"):
        # Quiet by default: advice does not fail the run, so it is shown only when asked for.
        shown = [f for f in findings if f.severity != "info"]
        hidden, findings = len(findings) - len(shown), shown
        if hidden:
            for r in results:
                r.findings = [f for f in r.findings if f.severity != "info"]
    if errors:
        status = EXIT_USAGE
    else:
        threshold = SEVERITY_RANK[fail_on]
        failing = [f for f in findings if SEVERITY_RANK[f.severity] >= threshold]
        status = EXIT_FINDINGS if failing and not ns.exit_zero else EXIT_OK
    out: Any = sys.stdout
    handle = None
    if ns.output:
        try:  # any writable path (/dev/stdout too); one usage line when it is not
            handle = open(ns.output, "w", encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise UsageError(
                f"-o {bounded_repr(ns.output, 80)}: cannot write: {exc.strerror}"
            ) from None
        out = handle
    try:
        if ns.statistics:
            out.write(report.statistics(findings, fmt == "json", hidden))
        else:
            _write_format(results, findings, fmt, ns, out, problems, fail_on, hidden)
        out.flush()
    except BrokenPipeError:
        _silence_stdout()  # a closed pipe cuts the report short; the exit code still holds
    finally:
        if handle is not None:
            handle.close()
    summary_path = ns.summary or (
        os.environ.get("GITHUB_STEP_SUMMARY") if fmt == "github" else None
    )
    if summary_path:
        # Lazy: machine formats (~11 ms) only when one is asked for.
        from moe_lint.output.formats import markdown_summary

        with open(summary_path, "a", encoding="utf-8") as summary:
            summary.write(markdown_summary(findings, problems))
    return status


def _write_format(
    results: list[Any],
    findings: list[Finding],
    fmt: str,
    ns: argparse.Namespace,
    out: Any,
    problems: list[Any],
    fail_on: str = "error",
    hidden: int = 0,
) -> None:
    """Write the report; every format escapes what it echoes (moe_lint.output.escape), and the
    machine formats carry the input errors too (docs/output.md "Input errors")."""
    if fmt in ("sarif", "gitlab", "junit", "github", "json-lines"):
        # Lazy: machine formats (~11 ms) only when one is asked for.
        from moe_lint.output import formats
    if fmt in ("sarif", "gitlab", "junit"):
        root = formats.repo_root()
        if fmt == "sarif":
            out.write(formats.sarif(findings, ns.catalogue_rules, root, problems))
        elif fmt == "gitlab":
            out.write(formats.gitlab(findings, root, problems))
        else:
            files = [r.path for r in results if r.error is None]
            notices = {r.path: r.notice for r in results if r.notice is not None}
            out.write(formats.junit(findings, files, problems, fail_on, notices))
        return
    if fmt == "github":
        out.write(formats.github(findings, problems))
        return
    if fmt == "json-lines":
        out.write(formats.json_lines(findings, problems))
        return
    if fmt == "json":
        out.write(report.to_json(findings, problems))
    elif fmt == "concise":
        out.write(report.concise(findings))
    else:
        rows: list[list[Any]] = []
        for r in results:
            lines = r.doc.lines if r.doc is not None else None
            for finding in r.findings:
                rows.extend(report.text_segments(finding, lines))
                rows.append([("", None)])
        for r in results:
            if r.notice and not ns.quiet:
                rows.append([(f"{r.path}: skipped: {r.notice}", "dim")])
        # With input errors the summary still comes, for the other files (not when every
        # file failed: each already has its one line on stderr).
        if not ns.quiet and (not results or len(problems) < len(results)):
            fixable = sum(1 for f in findings if f.applicability == "safe" and f.edits)
            unsafe = sum(1 for f in findings if f.applicability == "unsafe" and f.edits)
            linted = sum(1 for r in results if r.notice is None and r.error is None)
            rows.append(report.summary(findings, linted, fixable, unsafe, len(problems), hidden))
        if rows:
            if _use_color(out, ns.color):
                report.render_rich(rows, out)
            else:
                out.write(report.render_plain(rows))
