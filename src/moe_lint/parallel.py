"""Lint many files on several cores (forked workers share the loaded catalogue).

A pre-commit run over a whole config repository or a CI gate can pass hundreds of files in one
call. Forking after the catalogue is loaded costs a few milliseconds and the work is
independent per file, so from a few dozen files on it pays even on a 2-core machine. Results
come back in the order the files were given, so the output does not depend on scheduling.
"""

from __future__ import annotations

import multiprocessing
import os
from typing import Any

from moe_lint.lint import FileResult, lint_path
from moe_lint.load import Document

#: Below this many files one process is faster than starting workers.
MIN_FILES = 48
_STATE: dict[str, Any] = {}


def workers_for(count: int) -> int:
    """How many processes to use for ``count`` files (1 = lint in this process)."""
    if count < MIN_FILES or os.environ.get("MOE_LINT_JOBS") == "1":
        return 1
    try:
        multiprocessing.get_context("fork")
    except ValueError:
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    wanted = int(os.environ.get("MOE_LINT_JOBS") or (cpus or 1))
    return max(1, min(wanted, count // (MIN_FILES // 2), 16))


def _slim(result: FileResult) -> FileResult:
    """What the report needs from a worker: findings and the text for code frames."""
    if result.doc is not None:
        doc = result.doc
        result.doc = Document(path=doc.path, text=doc.text, data={}, spans=doc.spans.__class__(),
                              had_bom=doc.had_bom)  # fmt: skip
    return result


def _work(path: str) -> FileResult:
    catalogue, settings, overrides, cluster, convert = (
        _STATE[k] for k in ("catalogue", "settings", "overrides", "cluster", "convert")
    )
    return _slim(convert(lint_path(path, catalogue, settings, overrides, cluster)))


def lint_many(
    paths: list[str], catalogue: Any, settings: Any, overrides: Any, cluster: Any, convert: Any
) -> list[FileResult]:
    """Lint ``paths`` in order, on several processes when that pays."""
    jobs = workers_for(len(paths))
    if jobs == 1:
        return [convert(lint_path(p, catalogue, settings, overrides, cluster)) for p in paths]
    _STATE.update(catalogue=catalogue, settings=settings, overrides=overrides, cluster=cluster,
                  convert=convert)  # fmt: skip
    context = multiprocessing.get_context("fork")
    chunk = max(1, len(paths) // (jobs * 4))
    with context.Pool(jobs) as pool:
        return list(pool.imap(_work, paths, chunksize=chunk))
