"""The findings report of ``moe-lint check``: baselines, hidden infos, the exit code the
findings decide, and the report in the chosen format (to stdout or ``-o``), with the
``--summary`` Markdown table.

The report reads the run's results through :class:`Findings`, one file at a time and as often
as it needs (a count, the baseline, the writing), and every format is written in pieces: a
batch whose results are spooled to disk (:mod:`moe_lint.spool`) is reported in memory that
does not grow with the number of files.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from moe_lint.bounds import bounded_repr
from moe_lint.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, _silence_stdout, _stderr
from moe_lint.cli.options import _use_color
from moe_lint.engine.findings import SEVERITY_RANK, Finding, InputProblem
from moe_lint.errors import UsageError
from moe_lint.output import text as report
from moe_lint.spool import Spilled, load

if TYPE_CHECKING:
    from moe_lint.linting import FileResult


class Findings:
    """A run's results as the report reads them: which files failed or were skipped, each
    file's findings in report order (``Finding.sort_key``), what the baseline covers, and the
    counts of what is shown. A result is loaded again each time it is read (free when it is in
    memory, one unpickling when it was spooled), so nothing holds every finding at once."""

    def __init__(self, results: Sequence[FileResult | Spilled], show_infos: bool) -> None:
        self.results = results
        self.show_infos = show_infos
        self.errors: list[tuple[str, str]] = []
        self.notices: list[tuple[str, str]] = []
        #: Results with no input error (skipped ones included), in order.
        self.checked: list[str] = []
        #: Results neither skipped nor failed.
        self.linted = 0
        #: Findings the baseline covers, as (result index, position in its findings).
        self.covered: set[tuple[int, int]] = set()
        self._holders: dict[str, list[int]] = {}  # file -> the results with findings in it
        self._counts: Counter[tuple[str, str]] | None = None
        counts: Counter[tuple[str, str]] = Counter()
        for index, entry in enumerate(results):
            result = load(entry)
            if result.error is not None:
                self.errors.append((result.path, result.error))
            else:
                self.checked.append(result.path)
            if result.notice is not None:
                self.notices.append((result.path, result.notice))
            self.linted += result.error is None and result.notice is None
            for finding in result.findings:
                held = self._holders.setdefault(finding.file, [])
                if not held or held[-1] != index:
                    held.append(index)
                counts.update(_kinds(finding))
        self._counts = counts

    def _shown(self, index: int, position: int, finding: Finding) -> bool:
        return (index, position) not in self.covered and (
            self.show_infos or finding.severity != "info"
        )

    def _of_file(self, file: str) -> list[tuple[int, int, Finding]]:
        """All of ``file``'s findings in report order: the results' order, each result's own,
        then a stable sort (so the same order as sorting every finding of the run)."""
        items = [
            (index, position, finding)
            for index in self._holders[file]
            for position, finding in enumerate(load(self.results[index]).findings)
            if finding.file == file
        ]
        items.sort(key=lambda item: item[2].sort_key())
        return items

    def files(self) -> list[str]:
        """The files findings are in, in report order."""
        return sorted(self._holders)

    def every(self) -> Iterator[tuple[int, int, Finding]]:
        """Every finding (baselined and info included) in report order, with its place."""
        for file in self.files():
            yield from self._of_file(file)

    def of_file(self, file: str) -> list[Finding]:
        """The shown findings of ``file``, in report order."""
        if file not in self._holders:
            return []
        return [f for i, n, f in self._of_file(file) if self._shown(i, n, f)]

    def shown(self) -> Iterator[Finding]:
        """The findings the report shows, in report order."""
        for file in self.files():
            yield from self.of_file(file)

    def by_result(self) -> Iterator[tuple[FileResult, list[Finding]]]:
        """Each result with its shown findings in its own order (the text report's order)."""
        for index, entry in enumerate(self.results):
            result = load(entry)
            shown = [f for n, f in enumerate(result.findings) if self._shown(index, n, f)]
            yield result, shown

    def apply(self, baseline: Any) -> None:
        """Mark what ``baseline`` (output.baseline.Baseline) covers, in report order."""
        for index, position, finding in self.every():
            if baseline.covers(finding):
                self.covered.add((index, position))
        if self.covered:
            self._counts = None

    def counts(self) -> Counter[tuple[str, str]]:
        """(kind, severity) counts of the shown findings, kind one of ``all``, ``safe``,
        ``unsafe`` (with a fix of that applicability) and ``code:CODE``."""
        if self._counts is None:
            counts: Counter[tuple[str, str]] = Counter()
            for index, entry in enumerate(self.results):
                for position, finding in enumerate(load(entry).findings):
                    if (index, position) not in self.covered:
                        counts.update(_kinds(finding))
            self._counts = counts
        if self.show_infos:
            return self._counts
        return Counter({k: n for k, n in self._counts.items() if k[1] != "info"})

    def hidden(self) -> int:
        """Info findings not shown (none with --show-infos)."""
        if self.show_infos:
            return 0
        self.counts()
        assert self._counts is not None
        return self._counts[("all", "info")]


def _kinds(finding: Finding) -> list[tuple[str, str]]:
    kinds = [("all", finding.severity), (f"code:{finding.code}", finding.severity)]
    if finding.edits and finding.applicability in ("safe", "unsafe"):
        kinds.append((finding.applicability, finding.severity))
    return kinds


def _total(counts: Counter[tuple[str, str]], kind: str) -> int:
    return sum(n for (k, _), n in counts.items() if k == kind)


def _report(
    results: Sequence[FileResult | Spilled], fail_on: str, fmt: str, ns: argparse.Namespace
) -> tuple[int, int]:
    """Write the report; (exit code, number of findings shown)."""
    run = Findings(results, show_infos=ns.show_infos or fail_on == "info")
    for path, error in run.errors:
        _stderr(f"{path}: error: {error}")
    problems = [InputProblem.parse(path, error) for path, error in run.errors]
    if ns.write_baseline and not run.errors:
        # Lazy: baselines (~10 ms) only with --baseline / --write-baseline.
        from moe_lint.output.baseline import write_baseline
        from moe_lint.output.formats import repo_root

        findings = (finding for _, _, finding in run.every())
        count = write_baseline(ns.write_baseline, findings, repo_root())
        _stderr(f"moe-lint: wrote {count} baseline entries to {ns.write_baseline}")
        return EXIT_OK, 0
    if ns.baseline:
        # Lazy: baselines (~10 ms) only with --baseline / --write-baseline.
        from moe_lint.output.baseline import Baseline
        from moe_lint.output.formats import repo_root

        baseline = Baseline(ns.baseline, repo_root())
        run.apply(baseline)
        for code, file, cfg_path in baseline.stale({baseline.uri(p) for p in run.checked}):
            _stderr(f"moe-lint: stale baseline entry: {code} {file} {cfg_path} (no longer found)")
    counts = run.counts()
    shown = _total(counts, "all")
    if run.errors:
        status = EXIT_USAGE
    else:
        threshold = SEVERITY_RANK[fail_on]
        failing = sum(
            n
            for (kind, sev), n in counts.items()
            if kind == "all" and SEVERITY_RANK[sev] >= threshold
        )
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
            out.write(report.statistics(run.shown(), fmt == "json", run.hidden()))
        else:
            out.writelines(_format(run, fmt, ns, out, problems, fail_on))
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
            summary.writelines(markdown_summary(run.shown(), problems, shown))
    return status, shown


def _format(
    run: Findings,
    fmt: str,
    ns: argparse.Namespace,
    out: Any,
    problems: list[InputProblem],
    fail_on: str = "error",
) -> Iterator[str]:
    """The report in pieces; every format escapes what it echoes (moe_lint.output.escape), and
    the machine formats carry the input errors too (docs/output.md "Input errors")."""
    if fmt in ("sarif", "gitlab", "junit", "github", "json-lines"):
        # Lazy: machine formats (~11 ms) only when one is asked for.
        from moe_lint.output import formats
    if fmt == "sarif":
        codes = {kind[5:] for kind, _ in run.counts() if kind.startswith("code:")}
        root = formats.repo_root()
        return formats.sarif(run.shown(), ns.catalogue_rules, root, problems, codes)
    if fmt == "gitlab":
        return formats.gitlab(run.shown(), formats.repo_root(), problems)
    if fmt == "junit":
        checked = set(run.checked)
        others = [f for f in run.files() if f not in checked]
        notices = dict(run.notices)
        return formats.junit(run.checked, run.of_file, problems, fail_on, notices, others)
    if fmt == "github":
        return formats.github(run.shown(), problems)
    if fmt == "json-lines":
        return formats.json_lines(run.shown(), problems)
    if fmt == "json":
        return report.to_json(run.shown(), problems)
    if fmt == "concise":
        return report.concise(run.shown())
    rows = _text_rows(run, ns, problems)
    first = next(rows, None)
    if first is None:
        return iter(())
    rows = _chain_one(first, rows)
    if _use_color(out, ns.color):
        report.render_rich(rows, out)
        return iter(())
    return report.plain_lines(rows)


def _text_rows(
    run: Findings, ns: argparse.Namespace, problems: list[InputProblem]
) -> Iterator[list[Any]]:
    """The text report's rows: each file's findings with their code frames, in the order the
    files were given, then the skipped files and the summary line."""
    for result, shown in run.by_result():
        lines = result.doc.lines if result.doc is not None else None
        for finding in shown:
            yield from report.text_segments(finding, lines)
            yield [("", None)]
    if not ns.quiet:
        for path, notice in run.notices:
            if notice:
                yield [(f"{path}: skipped: {notice}", "dim")]
    # With input errors the summary still comes, for the other files (not when every file
    # failed: each already has its one line on stderr).
    if not ns.quiet and (not run.results or len(problems) < len(run.results)):
        counts = run.counts()
        severities = Counter({sev: n for (k, sev), n in counts.items() if k == "all"})
        yield report.summary(
            severities, run.linted, _total(counts, "safe"), _total(counts, "unsafe"),
            len(problems), run.hidden(),
        )  # fmt: skip


def _chain_one(first: list[Any], rest: Iterable[list[Any]]) -> Iterator[list[Any]]:
    yield first
    yield from rest
