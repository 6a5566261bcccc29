"""Lint many files on several cores (forked workers share the loaded catalogue).

A pre-commit run over a whole config repository or a CI gate can pass hundreds of files in one
call. Forking after the catalogue is loaded costs a few milliseconds and the work is
independent per file, so from a few dozen files on it pays even on a 2-core machine. Results
come back in the order the files were given, so the output does not depend on scheduling.

The parent hands each worker one file at a time over a pipe, so it always knows which file a
worker is on and since when. A worker that dies (the OOM killer's SIGKILL, a crash in a C
extension) is replaced and its file is tried once more in a fresh worker; a file that kills two
workers is reported as that file's error. A file that takes longer than the per-file limit
(``MOE_LINT_FILE_TIMEOUT`` seconds, default 30) has its worker killed and is reported as that
file's error. Both are one line naming the file, exit code 2, and the other files' results are
unaffected. Without workers (one process: few files, ``MOE_LINT_JOBS=1``, ``--fix``,
``--diff``) the same limit is a ``SIGALRM`` timer around each file's lint (and fix loop), where
the platform has one: the file gets the same one-line error and nothing is written for it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

from moe_lint.errors import RulePackError, UsageError
from moe_lint.linting import FileResult, lint_path, slim
from moe_lint.spool import SPOOL_AFTER, Spilled, Spool, decode, encode

#: Below this many files one process is faster than starting workers.
MIN_FILES = 48
#: The per-file time limit in workers, in seconds (``MOE_LINT_FILE_TIMEOUT``).
DEFAULT_FILE_TIMEOUT = 30.0
#: How many workers a file may take down before it is reported instead of retried.
MAX_DEATHS = 2
_STATE: dict[str, Any] = {}


def _cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def jobs_setting() -> int | None:
    """``MOE_LINT_JOBS``: a positive integer or ``auto`` (None: unset or auto)."""
    raw = os.environ.get("MOE_LINT_JOBS")
    if raw is None or raw.strip() == "" or raw.strip().lower() == "auto":
        return None
    text = raw.strip()
    if not (text.isdigit() and len(text) <= 6) or int(text) < 1:
        shown = text if len(text) <= 20 else text[:20] + "..."
        raise UsageError(
            f"MOE_LINT_JOBS={shown!r}: expected a positive number of processes or 'auto'"
        )
    return min(int(text), 1024)


def file_timeout() -> float:
    """``MOE_LINT_FILE_TIMEOUT``: seconds one file may take in a worker (default 30)."""
    raw = os.environ.get("MOE_LINT_FILE_TIMEOUT")
    if raw is None or not raw.strip():
        return DEFAULT_FILE_TIMEOUT
    try:
        value = float(raw.strip())
    except ValueError:
        value = -1.0
    if not 0 < value < 1e6:
        shown = raw.strip()[:20]
        raise UsageError(f"MOE_LINT_FILE_TIMEOUT={shown!r}: expected a positive number of seconds")
    return value


def workers_for(count: int) -> int:
    """How many processes to use for ``count`` files (1 = lint in this process)."""
    wanted = jobs_setting()
    file_timeout()  # a bad value is an error whether or not workers start
    if count < MIN_FILES or wanted == 1:
        return 1
    # Lazy: multiprocessing (~7 ms of imports) only from MIN_FILES files on.
    import multiprocessing

    try:
        multiprocessing.get_context("fork")
    except ValueError:
        return 1
    return max(1, min(wanted or _cpus(), count // (MIN_FILES // 2), 16))


def _work(path: str) -> bytes:
    """Lint one file; its slim result, encoded here so the parent can spool it unread."""
    catalogue, settings, overrides, cluster, convert, keep_text = (
        _STATE[k] for k in ("catalogue", "settings", "overrides", "cluster", "convert", "keep_text")
    )
    result = convert(lint_path(path, catalogue, settings, overrides, cluster))
    return encode(slim(result, keep_text))


def _serve(conn: Any) -> None:
    """A worker: lint each (index, path) received until None; send back (index, kind, value)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops the workers
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        index, path = task
        try:
            reply: tuple[int, str, Any] = (index, "ok", _work(path))
        except (RulePackError, UsageError) as exc:
            reply = (index, type(exc).__name__, str(exc))
        except Exception as exc:  # surfaced in the parent as the run's internal error
            reply = (index, "internal", f"{type(exc).__name__}: {exc}")
        conn.send(reply)


class _Worker:
    def __init__(self, context: Any) -> None:
        parent, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child,), daemon=True)
        self.process.start()
        child.close()
        self.conn = parent
        self.task: int | None = None
        self.started = 0.0

    def give(self, index: int, path: str) -> None:
        self.task, self.started = index, time.monotonic()
        self.conn.send((index, path))

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.process.kill()
        else:
            with contextlib.suppress(OSError):
                self.conn.send(None)
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


def _death(process: Any) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (out of memory?)" if -code == signal.SIGKILL else ""
        return f"killed by {name}{hint}"
    return f"exit status {code}"


def _pool(
    paths: list[str], jobs: int, limit: float, spool: Spool | None
) -> list[FileResult | Spilled]:
    # Lazy: multiprocessing only when several workers run.
    import multiprocessing
    from multiprocessing.connection import wait

    context = multiprocessing.get_context("fork")
    results: list[FileResult | Spilled | None] = [None] * len(paths)
    deaths = [0] * len(paths)
    todo: deque[int] = deque(range(len(paths)))
    workers = [_Worker(context) for _ in range(min(jobs, len(paths)))]
    failure: Exception | None = None
    try:
        while failure is None and any(r is None for r in results):
            for worker in workers:
                if worker.task is None and todo:
                    index = todo.popleft()
                    try:
                        worker.give(index, paths[index])
                    except OSError:  # died between tasks: let the death check below see it
                        worker.task = index
            busy = [w for w in workers if w.task is not None]
            if not busy:
                break
            now = time.monotonic()
            timeout = max(0.0, min(w.started + limit for w in busy) - now)
            ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout))
            for slot, worker in enumerate(workers):
                if worker.task is None:
                    continue
                index = worker.task
                path = paths[index]
                if worker.conn in ready:
                    try:
                        got, kind, value = worker.conn.recv()
                    except (EOFError, OSError):
                        pass  # died while answering: handled as a death below
                    else:
                        worker.task = None
                        if kind == "ok":
                            results[got] = spool.put(value) if spool else decode(value)
                        elif kind == "RulePackError":
                            failure = RulePackError(value)
                        elif kind == "UsageError":
                            failure = UsageError(value)
                        else:
                            failure = RuntimeError(f"{path}: {value}")
                        continue
                if worker.process.sentinel in ready or not worker.process.is_alive():
                    worker.process.join()
                    deaths[index] += 1
                    why = _death(worker.process)
                    worker.stop(kill=True)
                    workers[slot] = _Worker(context)
                    if deaths[index] >= MAX_DEATHS:
                        results[index] = FileResult(
                            path,
                            error=f"the worker process linting it died {deaths[index]} times "
                            f"({why}); not linted",
                        )
                    else:
                        todo.appendleft(index)
                elif time.monotonic() - worker.started >= limit:
                    worker.stop(kill=True)
                    workers[slot] = _Worker(context)
                    results[index] = FileResult(path, error=overtime_message(limit))
    finally:
        for worker in workers:
            worker.stop(kill=failure is not None or worker.task is not None)
    if failure is not None:
        raise failure
    return [r for r in results if r is not None]


def overtime_message(limit: float) -> str:
    return (
        f"linting it took longer than {limit:g} s, the per-file limit (MOE_LINT_FILE_TIMEOUT); "
        "not linted"
    )


class Overtime(BaseException):
    """A file ran past the per-file limit in this process (a BaseException, so no ``except
    Exception`` inside the lint swallows it)."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`Overtime` in this (main) thread after ``seconds`` of wall time."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise Overtime

    try:
        previous = signal.signal(signal.SIGALRM, on_alarm)
        armed = True
    except ValueError:  # not the main thread (signal.signal's own test): no limit there
        armed = False
    if not armed:
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def lint_one(
    path: str, catalogue: Any, settings: Any, overrides: Any, cluster: Any, convert: Any
) -> FileResult:
    """Lint one file in this process under the per-file limit (the result keeps its doc)."""
    limit = file_timeout()
    try:
        with time_limit(limit):
            result: FileResult = convert(lint_path(path, catalogue, settings, overrides, cluster))
            return result
    except Overtime:
        return FileResult(path, error=overtime_message(limit))


def lint_many(
    paths: list[str],
    catalogue: Any,
    settings: Any,
    overrides: Any,
    cluster: Any,
    convert: Any,
    keep_text: bool = True,
) -> list[FileResult | Spilled]:
    """Lint ``paths`` in order, on several processes when that pays.

    Each result keeps only what the report needs (``lint.slim``; the file's text only with
    ``keep_text``), so memory does not grow with the number of parsed documents; from
    ``spool.SPOOL_AFTER`` files on, results are kept on disk (``spool.load`` reads one back),
    so it does not grow with the number of findings either.
    """
    jobs = workers_for(len(paths))
    spool = Spool() if len(paths) > SPOOL_AFTER else None
    if jobs == 1:
        results: list[FileResult | Spilled] = []
        for path in paths:
            result = lint_one(path, catalogue, settings, overrides, cluster, convert)
            kept = slim(result, keep_text)
            results.append(spool.put(encode(kept)) if spool else kept)
        return results
    _STATE.update(catalogue=catalogue, settings=settings, overrides=overrides, cluster=cluster,
                  convert=convert, keep_text=keep_text)  # fmt: skip
    try:
        return _pool(paths, jobs, file_timeout(), spool)
    finally:
        _STATE.clear()
