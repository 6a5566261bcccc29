"""Stage 5: inline suppressions, scanned from raw lines so they work on any YAML.

``# moe-lint: disable=CODE[,CODE] -- reason`` at the end of a line suppresses findings on that
line; on a line of its own it suppresses findings on the next line. When the suppressed line
holds a mapping key, findings anywhere in that key's block are covered too.
``# moe-lint: disable-file=CODE[,CODE]`` anywhere suppresses them in the whole file. A
suppression that suppresses nothing, or names a code that does not exist, is itself reported
-- by this stage, after the rules have run: :func:`suppress` is the whole stage.
"""

from __future__ import annotations

import heapq
import re

from moe_lint.bounds import MAX_SUPPRESSIONS
from moe_lint.config.load import Document
from moe_lint.engine.catalogue import Catalogue, Rule
from moe_lint.engine.evaluate import Context, Evaluator, run_rule
from moe_lint.engine.findings import SPLIT_FROM, Finding, split_parents
from moe_lint.errors import InputError
from moe_lint.records import field, record

#: The checks that report on the suppression comments themselves (SUP rules): they need to
#: know which comments covered a finding, so this stage runs them, not the rules stage.
SUPPRESSION_CHECKS = frozenset({"unused-suppressions", "unknown-suppressions"})

#: The directive up to its codes. The codes and the reason are read by hand in linear time
#: (:func:`_match`): the old single pattern, ``(?P<codes>[...]+?)\s*(?:--\s*(?P<reason>.*))?$``,
#: backtracked quadratically over a long run of spaces (30 KB of comment took 15 s).
_PREFIX = re.compile(r"#\s*moe-lint:\s*(?P<kind>disable-file|disable)\s*=(?P<space>\s*)")
_CODE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-, ")


@record
class Suppression:
    """One ``# moe-lint: disable`` comment: what it covers and which codes it has silenced."""

    line: int  # 1-based line of the comment
    column: int
    end_column: int
    target_line: int  # the line whose findings it covers (0 for the whole file)
    codes: list[str]
    reason: str | None
    used: set[str] = field(default_factory=set)


def _match(line: str) -> tuple[int, str, str, str | None] | None:
    r"""(start, kind, codes, reason) of the first suppression comment in ``line``, or None.

    The same match as ``#\s*moe-lint:\s*(disable-file|disable)\s*=\s*`` followed by the
    shortest run of code characters after which only whitespace, or whitespace and ``--``
    and a reason, ends the line. Each candidate start scans its own run once: O(len(line)).
    """
    n = len(line)
    for prefix in _PREFIX.finditer(line):
        start = prefix.end()
        end = start
        while end < n and line[end] in _CODE_CHARS:
            end += 1
        after = end  # first non-whitespace at or after the run
        while after < n and line[after].isspace():
            after += 1
        following = after
        # Backwards over the run: the first non-whitespace at or after each position.
        nxt = [0] * (end - start + 1)
        nxt[end - start] = after
        for i in range(end - 1, start - 1, -1):
            following = following if line[i].isspace() else i
            nxt[i - start] = following
        for stop in range(start + 1, end + 1):
            at = nxt[stop - start]
            if at == n:
                return prefix.start(), prefix.group("kind"), line[start:stop], None
            if line.startswith("--", at):
                reason = line[at + 2 :].lstrip()
                return prefix.start(), prefix.group("kind"), line[start:stop], reason
        # The pattern's greedy ``=\s*`` gives back one space for the codes when nothing else
        # fits: ``disable= `` (no codes) or ``disable= -- why`` still match, with no codes.
        if " " in prefix.group("space"):
            if start == n:
                return prefix.start(), prefix.group("kind"), " ", None
            if line.startswith("--", start):
                reason = line[start + 2 :].lstrip()
                return prefix.start(), prefix.group("kind"), " ", reason
    return None


def parse_suppressions(text: str) -> list[Suppression]:
    out: list[Suppression] = []
    if "moe-lint" not in text:  # most files: no line to look at
        return out
    lines = text.splitlines()
    next_code: list[int] | None = None  # only for an own-line suppression (most files: none)
    for number, line in enumerate(lines, start=1):
        if "moe-lint" not in line:
            continue
        match = _match(line)
        if not match:
            continue
        start, kind, code_text, reason = match
        codes = [c.strip() for c in code_text.split(",") if c.strip()]
        own_line = line[:start].strip() == ""
        if kind == "disable-file":
            target = 0
        elif own_line:
            if next_code is None:
                next_code = _next_code_lines(lines)
            target = next_code[number + 1] if number < len(lines) else number + 1
        else:
            target = number
        out.append(Suppression(number, start + 1, len(line) + 1, target, codes, reason))
        if len(out) > MAX_SUPPRESSIONS:
            raise InputError(
                f"line {number}: more than {MAX_SUPPRESSIONS:,} suppression comments in one "
                "file, moe-lint's bound (bounds.MAX_SUPPRESSIONS)"
            )
    return out


def _next_code_lines(lines: list[str]) -> list[int]:
    """The first line at or after each line that is not a comment (own-line suppressions cover
    it), computed once from the end: thousands of stacked comments stay linear. Only a file
    with an own-line suppression needs it: a ``# moe-lint: gpus=...`` directive alone does
    not."""
    next_code = [len(lines) + 1] * (len(lines) + 2)
    for number in range(len(lines), 0, -1):
        is_comment = lines[number - 1].strip().startswith("#")
        next_code[number] = next_code[number + 1] if is_comment else number
    return next_code


def _block_ends(doc: Document, lines: set[int]) -> dict[int, int]:
    """Last line of the mapping block whose key sits on each of ``lines`` (itself if none),
    in one pass over the spans."""
    ends = {line: line for line in lines}
    for span in doc.spans.values():
        if span.key_start is not None and span.key_start.line in ends and not span.scalar:
            last = span.value_end.line
            if span.value_end.column == 1:
                last -= 1
            if last > ends[span.key_start.line]:
                ends[span.key_start.line] = last
    return ends


def suppress(
    findings: list[Finding], ctx: Context, catalogue: Catalogue, rules: list[Rule]
) -> list[Finding]:
    """The findings no suppression comment covers, plus the selected suppression rules'
    findings about the comments (``rules`` are those whose check is in SUPPRESSION_CHECKS)."""
    doc = ctx.config.doc
    suppressions = parse_suppressions(doc.text)
    names = {name: rule.code for name, rule in catalogue.by_name.items()}
    kept = apply_suppressions(findings, doc, suppressions, names)
    if rules:
        ctx.suppressions = suppressions
        ctx.catalogue = catalogue
        ev = Evaluator(ctx)
        for rule in rules:
            kept.extend(run_rule(rule, ctx, ev, catalogue))
    return kept


def apply_suppressions(
    findings: list[Finding],
    doc: Document,
    suppressions: list[Suppression],
    names: dict[str, str],
) -> list[Finding]:
    """Drop suppressed findings; mark in ``suppressions`` which codes were used.

    A finding is covered by the first suppression (in file order) that names its code and
    covers its line. Per code, a sweep over the findings' lines with a heap of the open
    ranges finds it in O((findings + suppressions) log suppressions), not their product.
    """
    if not suppressions or not findings:
        return list(findings)
    ends = _block_ends(doc, {s.target_line for s in suppressions if s.target_line})
    by_code: dict[str, list[tuple[int, int, int]]] = {}  # code -> (start, end, index)
    wanted = {f.code for f in findings}
    for index, sup in enumerate(suppressions):
        if sup.target_line == 0:
            start, end = -1, 1 << 62
        else:
            start, end = sup.target_line, ends[sup.target_line]
        named = {names.get(c, c) for c in sup.codes}
        covered = named.union(*(SPLIT_FROM.get(c, ()) for c in named))
        for code in covered & wanted:
            by_code.setdefault(code, []).append((start, end, index))
    hits: list[int | None] = [None] * len(findings)
    for code, ranges in by_code.items():
        ranges.sort()
        order = sorted((f.line, i) for i, f in enumerate(findings) if f.code == code)
        heap: list[tuple[int, int]] = []  # (suppression index, end line) of open ranges
        nxt = 0
        for line, i in order:
            while nxt < len(ranges) and ranges[nxt][0] <= line:
                heapq.heappush(heap, (ranges[nxt][2], ranges[nxt][1]))
                nxt += 1
            while heap and heap[0][1] < line:
                heapq.heappop(heap)
            if heap:
                hits[i] = heap[0][0]
    kept: list[Finding] = []
    for finding, hit in zip(findings, hits, strict=True):
        if hit is None:
            kept.append(finding)
        else:
            used = suppressions[hit].used
            used.add(finding.code)
            used.update(split_parents(finding.code))
    return kept
