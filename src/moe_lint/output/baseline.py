"""Baselines: adopt moe-lint on existing configs and fail only on new findings.

A baseline records each finding as (rule code, file relative to the repository root, config
path), with a count, and nothing about lines, so edits elsewhere in a file do not invalidate it.
Entries that no longer match any finding are reported as stale so the baseline can shrink.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from moe_lint.bounds import MAX_BYTES, too_large
from moe_lint.config.regular_file import read_file
from moe_lint.engine.findings import Finding, split_parents
from moe_lint.errors import InputError, UsageError
from moe_lint.output.formats import relative_uri
from moe_lint.output.target import write_output
from moe_lint.records import record

Key = tuple[str, str, str]
FORMAT_VERSION = 1


def _key(finding: Finding, root: Path) -> Key:
    return (finding.code, relative_uri(finding.file, root), finding.path)


def write_baseline(path: str, findings: list[Finding], root: Path) -> int:
    """Write the baseline file; returns the number of entries."""
    counts = Counter(_key(f, root) for f in findings)
    entries = [
        {"code": code, "file": file, "path": cfg_path, "count": n}
        for (code, file, cfg_path), n in sorted(counts.items())
    ]
    data = {"moe-lint-baseline": FORMAT_VERSION, "findings": entries}
    write_output(path, json.dumps(data, indent=2) + "\n", "--write-baseline")
    return len(entries)


@record
class BaselineResult:
    """Findings the baseline does not cover, how many it did, and its stale entries."""

    new: list[Finding]
    suppressed: int
    stale: list[Key]


def apply_baseline(
    path: str, findings: list[Finding], root: Path, linted: set[str]
) -> BaselineResult:
    """Drop findings the baseline records; report entries of linted files that match none.

    The file is read as any input is (a regular file of at most ``bounds.MAX_BYTES``); JSON
    nested too deep for the parser, or of another shape, is not a baseline: one usage error.
    """
    try:
        raw = read_file(path, MAX_BYTES)
    except InputError as exc:
        raise UsageError(f"--baseline {path}: {exc.message}") from None
    too_big = too_large(len(raw), MAX_BYTES, "MAX_BYTES")
    if too_big:
        raise UsageError(f"--baseline {path}: {too_big}")
    try:
        data = json.loads(raw.decode("utf-8"))
        entries = data["findings"]
        if not isinstance(entries, list):
            raise TypeError
        budget: Counter[Key] = Counter()
        for entry in entries:
            key = (entry["code"], entry["file"], entry["path"])
            count = entry.get("count", 1)
            if not all(isinstance(part, str) for part in key) or not isinstance(count, int):
                raise TypeError
            budget[key] += count
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        raise UsageError(f"--baseline {path}: not a moe-lint baseline file") from None
    new: list[Finding] = []
    suppressed = 0
    for finding in findings:
        key = _key(finding, root)
        # A code split out of an older one is also covered by the older code's entries.
        keys = [key, *((parent, key[1], key[2]) for parent in split_parents(finding.code))]
        hit = next((k for k in keys if budget[k] > 0), None)
        if hit is not None:
            budget[hit] -= 1
            suppressed += 1
        else:
            new.append(finding)
    stale = sorted(k for k, left in budget.items() if left > 0 and k[1] in linted)
    return BaselineResult(new, suppressed, stale)
