"""Apply fixes as text splices, so every byte outside the edited spans stays as it was.

Edits come from parser marks (character indices into the decoded text), are applied in reverse
order, and overlapping edits are dropped for this pass (the fix loop re-lints and tries again).
Writes are atomic: a temporary file in the same folder, then ``os.replace``, keeping the mode.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable

from moe_lint.findings import Edit, Finding

MAX_FIX_PASSES = 10


def applicable_edits(findings: Iterable[Finding], unsafe: bool) -> list[Edit]:
    allowed = {"safe", "unsafe"} if unsafe else {"safe"}
    edits: list[Edit] = []
    for finding in findings:
        if finding.applicability in allowed and finding.edits:
            edits.extend(finding.edits)
    return edits


def apply_edits(text: str, edits: list[Edit]) -> str:
    """Splice non-overlapping edits into ``text``; later overlapping ones wait for a next pass."""
    chosen: list[Edit] = []
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if chosen and (
            edit.start < chosen[-1].end
            or (edit.start == chosen[-1].start == chosen[-1].end == edit.end)
        ):
            continue
        chosen.append(edit)
    out = text
    for edit in reversed(chosen):
        out = out[: edit.start] + edit.content + out[edit.end :]
    return out


def fix_loop(
    text: str, lint: Callable[[str], list[Finding]], unsafe: bool
) -> tuple[str, list[Finding], int]:
    """Apply fixes and re-lint until nothing changes; returns (text, remaining, passes)."""
    findings = lint(text)
    passes = 0
    while passes < MAX_FIX_PASSES:
        edits = applicable_edits(findings, unsafe)
        if not edits:
            break
        new_text = apply_edits(text, edits)
        if new_text == text:
            break
        text = new_text
        passes += 1
        findings = lint(text)
    return text, findings, passes


def unified_diff(path: str, before: str, after: str) -> str:
    import difflib

    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )


def write_atomic(path: str, text: str, had_bom: bool) -> None:
    """Replace ``path`` with ``text`` atomically, keeping its permission bits."""
    import tempfile

    data = (b"\xef\xbb\xbf" if had_bom else b"") + text.encode("utf-8")
    folder = os.path.dirname(os.path.abspath(path))
    mode = os.stat(path).st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=".moe-lint-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
