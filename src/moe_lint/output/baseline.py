"""Baselines: adopt moe-lint on existing configs and fail only on new findings.

A baseline records each finding as (rule code, file relative to the repository root, config
path), with a count, and nothing about lines, so edits elsewhere in a file do not invalidate it.
Entries that no longer match any finding are reported as stale so the baseline can shrink.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from moe_lint.bounds import MAX_BYTES, too_large
from moe_lint.config.regular_file import read_file
from moe_lint.engine.findings import Finding, split_parents
from moe_lint.errors import InputError, UsageError
from moe_lint.output.formats import relative_uri
from moe_lint.output.target import write_output

Key = tuple[str, str, str]
FORMAT_VERSION = 1


def write_baseline(path: str, findings: Iterable[Finding], root: Path) -> int:
    """Write the baseline file; returns the number of entries."""
    uris: dict[str, str] = {}  # per file: resolving a path costs ~50 µs
    counts: Counter[Key] = Counter()
    for f in findings:
        uri = uris.get(f.file) or uris.setdefault(f.file, relative_uri(f.file, root))
        counts[(f.code, uri, f.path)] += 1
    entries = [
        {"code": code, "file": file, "path": cfg_path, "count": n}
        for (code, file, cfg_path), n in sorted(counts.items())
    ]
    data = {"moe-lint-baseline": FORMAT_VERSION, "findings": entries}
    write_output(path, json.dumps(data, indent=2) + "\n", "--write-baseline")
    return len(entries)


class Baseline:
    """A baseline's entries, each with the number of findings it still covers.

    ``covers`` is asked of a run's findings in report order (sorted): the first findings of
    an entry's rule, file and path use it up, as many as its count, and the rest are new."""

    def __init__(self, path: str, root: Path) -> None:
        """Read ``path`` as any input is read (a regular file of at most ``bounds.MAX_BYTES``);
        JSON nested too deep for the parser, or of another shape, is not a baseline: one
        usage error."""
        self.root = root
        self._uris: dict[str, str] = {}
        try:
            raw = read_file(path, MAX_BYTES)
        except InputError as exc:
            raise UsageError(f"--baseline {path}: {exc.message}") from None
        too_big = too_large(len(raw), MAX_BYTES, "MAX_BYTES")
        if too_big:
            raise UsageError(f"--baseline {path}: {too_big}")
        self.budget: Counter[Key] = Counter()
        try:
            data = json.loads(raw.decode("utf-8"))
            entries = data["findings"]
            if not isinstance(entries, list):
                raise TypeError
            for entry in entries:
                key = (entry["code"], entry["file"], entry["path"])
                count = entry.get("count", 1)
                if not all(isinstance(part, str) for part in key) or not isinstance(count, int):
                    raise TypeError
                self.budget[key] += count
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            raise UsageError(f"--baseline {path}: not a moe-lint baseline file") from None

    def uri(self, file: str) -> str:
        """``file`` as the baseline names it: relative to the repository root."""
        uri = self._uris.get(file)
        if uri is None:
            uri = self._uris[file] = relative_uri(file, self.root)
        return uri

    def covers(self, finding: Finding) -> bool:
        """Whether the baseline records ``finding`` (and, if so, one use of its entry)."""
        key = (finding.code, self.uri(finding.file), finding.path)
        # A code split out of an older one is also covered by the older code's entries.
        keys = [key, *((parent, key[1], key[2]) for parent in split_parents(finding.code))]
        hit = next((k for k in keys if self.budget[k] > 0), None)
        if hit is None:
            return False
        self.budget[hit] -= 1
        return True

    def stale(self, linted: set[str]) -> list[Key]:
        """Entries of linted files (repository-relative) that matched fewer findings than
        their count."""
        return sorted(k for k, left in self.budget.items() if left > 0 and k[1] in linted)
