"""moe-lint's per-user cache folder: JSON data only, in a folder only its user can write.

The shipped rule catalogue is never cached here: it is compiled when the wheel is built
(``_compiled_rules``, served by Python's own bytecode cache), and packs from a linted
repository are compiled in every run. What remains is data that is expensive to recompute and
cannot execute: the Bridge class overlay of ``introspect-bridge`` (importing Bridge costs
seconds; see bridge_introspect).

The folder is ``$MOE_LINT_CACHE_DIR``, else ``$XDG_CACHE_HOME/moe-lint`` or
``~/.cache/moe-lint``. Like pip, moe-lint refuses a folder it does not own or that its group or
others may write (a planted file there would be trusted data), and refuses entries that are not
regular files owned by the user; the folder is opened once and every entry is read and written
relative to that descriptor, so it cannot be swapped between the check and the use. Any problem
(no home, a read-only or foreign folder, a corrupt or wrong-shaped entry) only means no cache:
nothing is printed and the value is recomputed and rewritten. ``MOE_LINT_NO_CACHE=1`` or
``--no-cache`` turns it off. Platforms without ``dir_fd`` support (Windows) get no cache.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: Entries kept per kind (file-name prefix) when a new one is stored; older ones are removed.
KEEP_PER_KIND = 8
#: Files earlier versions wrote (a pickled catalogue, JSON indexes); removed when seen.
_LEGACY = ("catalogue-", "checks-", "entry-points-")
_disabled = False


def disable() -> None:
    """Turn the cache off for this process (``--no-cache``)."""
    global _disabled
    _disabled = True


def cache_dir() -> Path | None:
    """The configured cache folder (not yet checked), or None when caching is off."""
    if _disabled or os.environ.get("MOE_LINT_NO_CACHE"):
        return None
    explicit = os.environ.get("MOE_LINT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "moe-lint"
    try:
        home = Path.home()
    except (RuntimeError, KeyError, OSError):  # no HOME and no passwd entry
        return None
    return home / ".cache" / "moe-lint"


def _supported() -> bool:
    return (
        hasattr(os, "geteuid")
        and os.open in os.supports_dir_fd
        and os.stat in os.supports_dir_fd
        and os.listdir in os.supports_fd
        and hasattr(os, "O_NOFOLLOW")
        and hasattr(os, "O_DIRECTORY")
    )


def trusted(st: os.stat_result, kind: int) -> bool:
    """Owned by this user, of the expected kind, and writable by nobody else."""
    return (
        stat.S_IFMT(st.st_mode) == kind
        and st.st_uid == os.geteuid()
        and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


@contextlib.contextmanager
def _folder(create: bool) -> Iterator[int | None]:
    """A descriptor of the checked cache folder, or None when there is none to use."""
    folder = cache_dir()
    if folder is None or not _supported():
        yield None
        return
    fd = -1
    try:
        if create and not folder.is_dir():
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        if not trusted(os.fstat(fd), stat.S_IFDIR):
            os.close(fd)
            fd = -1
    except (OSError, ValueError):
        fd = -1
    try:
        yield fd if fd >= 0 else None
    finally:
        if fd >= 0:
            os.close(fd)


def _valid_name(name: str) -> bool:
    return bool(name) and "/" not in name and not name.startswith(".") and name.endswith(".json")


def _load_json(name: str) -> Any:
    """The JSON value stored under ``name``, or None (no cache, untrusted, corrupt entry)."""
    if not _valid_name(name):
        return None
    with _folder(create=False) as dir_fd:
        if dir_fd is None:
            return None
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
        except OSError:
            return None
        try:
            if not trusted(os.fstat(fd), stat.S_IFREG):
                return None
            with os.fdopen(fd, "rb", closefd=False) as handle:
                return json.loads(handle.read().decode("utf-8"))
        except (OSError, ValueError, RecursionError):
            return None
        finally:
            os.close(fd)


def _store_json(name: str, data: Any) -> None:
    """Write ``data`` under ``name`` atomically (a temp file renamed); prune old entries."""
    if not _valid_name(name):
        return
    with _folder(create=True) as dir_fd:
        if dir_fd is None:
            return
        tmp = f".{name}.{os.getpid()}.tmp"
        try:
            text = json.dumps(data).encode("utf-8")
            fd = os.open(
                tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dir_fd
            )
            with os.fdopen(fd, "wb") as handle:
                handle.write(text)
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except (OSError, TypeError, ValueError):
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            return
        _prune(dir_fd, name)


def _kind(name: str) -> str:
    """``bridge-classes-<digest>.json`` -> ``bridge-classes-``."""
    return name.rpartition("-")[0] + "-"


def _prune(dir_fd: int, stored: str) -> None:
    """Keep the newest KEEP_PER_KIND entries of ``stored``'s kind; drop legacy files."""
    kind = _kind(stored)
    entries: list[tuple[int, str]] = []
    with contextlib.suppress(OSError):
        for name in os.listdir(dir_fd):
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                continue
            if not trusted(st, stat.S_IFREG):
                continue
            if name.startswith(_LEGACY):
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=dir_fd)
            elif name != stored and _valid_name(name) and _kind(name) == kind:
                entries.append((st.st_mtime_ns, name))
    entries.sort(reverse=True)
    for _, name in entries[KEEP_PER_KIND - 1 :]:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
