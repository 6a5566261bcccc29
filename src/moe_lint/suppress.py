"""Stage 6: inline suppressions, scanned from raw lines so they work on any YAML.

``# moe-lint: disable=CODE[,CODE] -- reason`` at the end of a line suppresses findings on that
line; on a line of its own it suppresses findings on the next line. When the suppressed line
holds a mapping key, findings anywhere in that key's block are covered too.
``# moe-lint: disable-file=CODE[,CODE]`` anywhere suppresses them in the whole file. A
suppression that suppresses nothing, or names a code that does not exist, is itself reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from moe_lint.findings import Finding
from moe_lint.load import Document

_SUPPRESS = re.compile(
    r"#\s*moe-lint:\s*(?P<kind>disable-file|disable)\s*=\s*"
    r"(?P<codes>[A-Za-z0-9_\-, ]+?)\s*(?:--\s*(?P<reason>.*))?$"
)


@dataclass
class Suppression:
    line: int  # 1-based line of the comment
    column: int
    end_column: int
    target_line: int  # the line whose findings it covers (0 for the whole file)
    codes: list[str]
    reason: str | None
    used: set[str] = field(default_factory=set)


def parse_suppressions(text: str) -> list[Suppression]:
    out: list[Suppression] = []
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        match = _SUPPRESS.search(line)
        if not match:
            continue
        codes = [c.strip() for c in match.group("codes").split(",") if c.strip()]
        own_line = line[: match.start()].strip() == ""
        if match.group("kind") == "disable-file":
            target = 0
        elif own_line:
            target = number + 1
            while target <= len(lines) and lines[target - 1].strip().startswith("#"):
                target += 1
        else:
            target = number
        out.append(
            Suppression(
                number, match.start() + 1, len(line) + 1, target, codes, match.group("reason")
            )
        )
    return out


def _block_end(doc: Document, line: int) -> int:
    """Last line of the mapping block whose key sits on ``line`` (the line itself if none)."""
    end = line
    for span in doc.spans.values():
        if span.key_start is not None and span.key_start.line == line and not span.scalar:
            last = span.value_end.line
            if span.value_end.column == 1:
                last -= 1
            end = max(end, last)
    return end


def apply_suppressions(
    findings: list[Finding],
    doc: Document,
    suppressions: list[Suppression],
    known: set[str],
    names: dict[str, str],
) -> tuple[list[Finding], list[Suppression]]:
    """Drop suppressed findings; mark which suppression codes were used."""
    kept: list[Finding] = []
    ranges = [
        (s, s.target_line, _block_end(doc, s.target_line) if s.target_line else 0)
        for s in suppressions
    ]
    for finding in findings:
        hit = None
        for sup, start, end in ranges:
            codes = {names.get(c, c) for c in sup.codes}
            if finding.code not in codes:
                continue
            if sup.target_line == 0 or start <= finding.line <= end:
                hit = sup
                break
        if hit is None:
            kept.append(finding)
        else:
            hit.used.add(finding.code)
    _ = known
    return kept, suppressions
