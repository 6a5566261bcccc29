"""A per-user cache of the compiled rule catalogue.

Parsing and checking ~200 rules costs tens of milliseconds, more than linting a file, and a
pre-commit hook pays it on every commit. The compiled rules are stored (pickle, with code
objects through marshal) under ``$MOE_LINT_CACHE_DIR``, ``$XDG_CACHE_HOME/moe-lint`` or
``~/.cache/moe-lint``, keyed by moe-lint's version, the Python version, the engine files
that validate packs, and the path, size and mtime of every pack. Any problem (no cache
folder, a stale or unreadable entry) falls back to compiling; ``MOE_LINT_NO_CACHE=1`` turns
the cache off.
"""

from __future__ import annotations

import contextlib
import copyreg
import hashlib
import json
import marshal
import os
import pickle
import sys
import types
from pathlib import Path
from typing import Any

from moe_lint import __version__


def _reduce_code(code: types.CodeType) -> tuple[Any, tuple[bytes]]:
    return marshal.loads, (marshal.dumps(code),)


copyreg.pickle(types.CodeType, _reduce_code)

#: Files whose content decides how a pack compiles (names, fields, checks).
_ENGINE_FILES = ("expr.py", "catalogue.py", "schema.py", "checks.py", "data/bridge_fields.json")


def cache_dir() -> Path | None:
    if os.environ.get("MOE_LINT_NO_CACHE"):
        return None
    explicit = os.environ.get("MOE_LINT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "moe-lint"


def _stamp(path: Path) -> str:
    st = path.stat()
    return f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}"


def cache_key(pack_paths: list[Path], check_names: list[str]) -> str | None:
    """A digest of everything the compiled catalogue depends on (None: do not cache)."""
    here = Path(__file__).resolve().parent
    try:
        parts = [__version__, sys.version, *check_names]
        parts += [_stamp(here / name) for name in _ENGINE_FILES]
        parts += [_stamp(path) for path in pack_paths]
    except OSError:
        return None
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def load(key: str | None) -> list[Any] | None:
    folder = cache_dir()
    if key is None or folder is None:
        return None
    try:
        with (folder / f"catalogue-{key}.pickle").open("rb") as handle:
            # Our own cache folder and our own data (a writer there already owns the user).
            rules = pickle.load(handle)
    except (OSError, pickle.PickleError, EOFError, AttributeError, ImportError, ValueError):
        return None
    return rules if isinstance(rules, list) else None


def store(key: str | None, rules: list[Any]) -> None:
    folder = cache_dir()
    if key is None or folder is None:
        return
    import tempfile

    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".catalogue-", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(rules, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, folder / f"catalogue-{key}.pickle")
    except (OSError, pickle.PickleError, TypeError, AttributeError):
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(tmp)


def _path_key() -> str:
    """Stamps of the folders on sys.path: installing or removing a package changes one."""
    parts = [sys.version]
    for entry in sys.path:
        try:
            st = os.stat(entry or ".")
        except OSError:
            continue
        parts.append(f"{entry}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def _load_json(name: str) -> Any:
    folder = cache_dir()
    if folder is None:
        return None
    try:
        return json.loads((folder / name).read_text("utf-8"))
    except (OSError, ValueError):
        return None


def _store_json(name: str, data: Any) -> None:
    folder = cache_dir()
    if folder is None:
        return
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / name
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, target)


def load_entry_points() -> list[tuple[str, str]] | None:
    data = _load_json(f"entry-points-{_path_key()}.json")
    if not isinstance(data, list):
        return None
    return [(str(name), str(value)) for name, value in data]


def store_entry_points(found: list[tuple[str, str]]) -> None:
    _store_json(f"entry-points-{_path_key()}.json", found)


def _checks_key() -> str:
    here = Path(__file__).resolve().parent
    stamps = [__version__, *(_stamp(p) for p in sorted(here.glob("checks*.py")))]
    return hashlib.sha256("\n".join(stamps).encode()).hexdigest()[:32]


def load_check_index() -> dict[str, str] | None:
    data = _load_json(f"checks-{_checks_key()}.json")
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else None


def store_check_index(index: dict[str, str]) -> None:
    _store_json(f"checks-{_checks_key()}.json", index)
