"""Write a generated file, or in ``--check`` mode say whether the file on disk is stale.

Every generator in ``tools/`` ends the same way; one helper keeps their ``--check`` semantics
(missing file counts as stale, message on stderr naming the command to run) identical.
"""

from __future__ import annotations

import sys
from pathlib import Path


def write_or_check(path: Path, text: str, *, check: bool, command: str) -> int:
    """Return 1 when ``check`` and ``path`` differs from ``text``; otherwise write it, return 0."""
    if check:
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != text:
            print(f"{path} is out of date: run {command}", file=sys.stderr)
            return 1
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return 0
