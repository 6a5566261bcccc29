"""A file a command writes (``-o``, ``--emit -o``, ``--write-baseline``): checked before the
work, so a path that cannot be written is one usage line (exit 2), and written in one call."""

from __future__ import annotations

import os
import stat

from moe_lint.bounds import bounded_repr
from moe_lint.errors import UsageError


def output_target(path: str, option: str = "-o") -> None:
    """``-o PATH`` (or ``option``: ``--write-baseline``): a regular file that may be written (or
    a new one), checked before the work; the write itself is :func:`write_output`."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise UsageError(f"{option} {bounded_repr(path, 80)}: no such folder") from None
        return
    except OSError as exc:
        shown = bounded_repr(path, 80)
        raise UsageError(f"{option} {shown}: cannot write: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{option} {bounded_repr(path, 80)}: not a regular file")
    if not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise UsageError(f"{option} {bounded_repr(path, 80)}: the file is read-only")


def write_output(path: str, text: str, option: str = "-o") -> None:
    """Write ``text`` to ``-o PATH`` (or ``option``): one usage line when it cannot be written
    (a missing folder, a full disk)."""
    output_target(path, option)
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        shown = bounded_repr(path, 80)
        raise UsageError(f"{option} {shown}: cannot write: {exc.strerror}") from None
