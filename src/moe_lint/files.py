"""Which files a command line names, the way linters take them (no printing, no linting).

``moe-lint configs/ 'runs/**/*.yaml' one.yaml -`` names a directory, a quoted glob, a file
and stdin. :func:`expand` turns the arguments into the list of files to lint, in order:

- a **file** named on the command line is linted whatever its name, even when an exclude
  pattern matches it, unless ``--force-exclude`` (as in ruff: editors and pre-commit pass
  files one by one);
- a **directory** is walked: files ending in :data:`SUFFIXES`, sorted, skipping hidden files
  and folders (a leading ``.``), symlinked folders and what the exclude patterns match
  (:data:`DEFAULT_EXCLUDE` unless ``exclude`` replaces it; ``extend-exclude`` adds);
- an argument that is no path but holds ``*``, ``?`` or ``[...]`` is a **glob** (``**``
  spans folders): each match is taken as if named (a folder is walked), except that the
  exclude patterns apply and a trailing ``**`` takes only what a walk takes; a glob that
  matches nothing is that argument's one error;
- ``-`` is **stdin** (:data:`STDIN`), read by :func:`read_stdin` under ``bounds.MAX_BYTES``.

Exclude patterns are gitignore-like: a pattern without ``/`` matches a file or folder name
at any depth (``node_modules``, ``*.draft.yaml``); one with ``/`` matches the path relative
to its base folder (the pyproject's folder, or the current folder for ``--exclude``):
``configs/old/**``, ``**/scratch/*.yaml``; a trailing ``/`` matches folders only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from moe_lint.bounds import MAX_BYTES, MAX_PATTERN_CHARS
from moe_lint.config.load import Document, decode, parse_text
from moe_lint.errors import InputError
from moe_lint.globs import check_pattern, path_regex
from moe_lint.records import record

#: The argument that names stdin.
STDIN = "-"
#: What a directory walk collects: YAML configs and argument files, shell launch scripts.
SUFFIXES = (".yaml", ".yml", ".sh")
#: Folders no config lives in (ruff's default ``exclude``, plus ``__pycache__``). Hidden
#: folders are skipped in a walk whatever the patterns say.
DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints",
    ".mypy_cache", ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache",
    ".svn", ".tox", ".venv", ".vscode", "__pycache__", "__pypackages__", "_build", "buck-out",
    "dist", "node_modules", "site-packages", "venv",
)  # fmt: skip
_MAGIC = re.compile(r"[*?\[]")


@record(frozen=True)
class Target:
    """One entry of the expanded command line: a file to lint, or why an argument gave none."""

    path: str
    #: Named on the command line (not found by a walk or a glob).
    explicit: bool = True
    #: The argument's one-line error (a glob that matches nothing, an unreadable folder).
    error: str | None = None
    #: Why the argument gave no file although nothing is wrong (an empty folder).
    notice: str | None = None


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A ``/``-separated glob as a regex over ``/``-separated relative paths (``**``: any
    number of folders; a trailing ``**``: everything below), matched in linear time
    (moe_lint.globs)."""
    return path_regex(pattern)


@record(frozen=True)
class _Pattern:
    """One compiled exclude pattern and the folder an anchored one is relative to."""

    regex: re.Pattern[str]
    anchored: bool
    dir_only: bool
    base: str


class Excluder:
    """Exclude patterns, each with the folder its anchored form is relative to."""

    def __init__(self, patterns: Sequence[tuple[str, Path | str | None]]) -> None:
        self.patterns: list[_Pattern] = []
        for text, base in patterns:
            raw = check_pattern(text, "exclude pattern").strip()
            if not raw:
                continue
            dir_only = raw.endswith("/")
            raw = raw.rstrip("/")
            while raw.startswith("./"):
                raw = raw[2:]
            anchored = "/" in raw
            self.patterns.append(
                _Pattern(
                    compile_glob(raw.lstrip("/")),
                    anchored,
                    dir_only,
                    os.path.abspath(base if base is not None else os.curdir),
                )
            )

    def excluded(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` itself (not its folders) matches a pattern."""
        if not self.patterns:
            return False
        full = os.path.abspath(path)
        name = os.path.basename(full)
        for p in self.patterns:
            if p.dir_only and not is_dir:
                continue
            if not p.anchored:
                if p.regex.fullmatch(name):
                    return True
                continue
            rel = os.path.relpath(full, p.base)
            if rel == os.curdir or rel.startswith(os.pardir + os.sep) or rel == os.pardir:
                continue
            if p.regex.fullmatch(rel.replace(os.sep, "/")):
                return True
        return False

    def excluded_with_parents(self, path: str) -> bool:
        """Whether ``path`` or one of its folders below the current folder (or below a
        pattern's base) matches: ``--force-exclude`` for a file named on the command line."""
        if self.excluded(path, os.path.isdir(path)):
            return True
        full = Path(os.path.abspath(path))
        roots = {os.path.abspath(os.curdir), *(p.base for p in self.patterns)}
        for parent in full.parents:
            if not any(str(parent).startswith(root + os.sep) for root in roots):
                break
            if self.excluded(str(parent), True):
                return True
        return False


def excluder_for(
    exclude: Sequence[tuple[str, Path | str | None]] | None,
    extend: Sequence[tuple[str, Path | str | None]],
) -> Excluder:
    """``exclude`` (None: :data:`DEFAULT_EXCLUDE`) plus ``extend``."""
    base = [(p, None) for p in DEFAULT_EXCLUDE] if exclude is None else list(exclude)
    return Excluder([*base, *extend])


def _join(folder: str, name: str) -> str:
    return os.path.normpath(os.path.join(folder, name))


def _scan(folder: str) -> list[os.DirEntry[str]]:
    with os.scandir(folder) as entries:
        return sorted(entries, key=lambda e: e.name)


def walk(root: str, excluder: Excluder) -> Iterator[str | Target]:
    """Files under ``root`` ending in :data:`SUFFIXES`, sorted (a folder's files before its
    subfolders'); an unreadable folder is yielded as a :class:`Target` with its error."""
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = _scan(folder)
        except OSError as exc:
            yield Target(folder, error=f"cannot read folder: {exc.strerror or exc}")
            continue
        subfolders = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = _join(folder, entry.name)
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not excluder.excluded(path, True):
                        subfolders.append(path)
                elif (
                    entry.name.endswith(SUFFIXES)
                    and entry.is_file()
                    and not excluder.excluded(path, False)
                ):
                    yield path
            except OSError:
                continue  # vanished while walking
        stack.extend(reversed(subfolders))


def _glob(pattern: str, excluder: Excluder) -> list[str]:
    """Files a glob matches (matched folders give their walk), sorted, excludes applied."""
    parts = pattern.replace(os.sep, "/").split("/")
    fixed = 0
    while fixed < len(parts) - 1 and not _MAGIC.search(parts[fixed]):
        fixed += 1
    root = "/".join(parts[:fixed]) or (os.sep if pattern.startswith("/") else os.curdir)
    if pattern.startswith("/") and not root.startswith("/"):
        root = "/" + root
    rest = "/".join(parts[fixed:])
    regex = compile_glob(rest)
    depth = None if "**" in rest else len([p for p in rest.split("/") if p])
    # A trailing ``**`` ("everything below") takes what a folder walk takes, not every file.
    suffixed = rest.split("/")[-1] == "**"
    if not os.path.isdir(root):
        return []
    found: list[str] = []
    stack: list[tuple[str, str]] = [(root, "")]
    while stack:
        folder, rel = stack.pop()
        try:
            entries = _scan(folder)
        except OSError:
            continue
        subfolders = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = os.path.join(folder, entry.name) if folder != os.curdir else entry.name
            sub = f"{rel}/{entry.name}" if rel else entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                if excluder.excluded(path, is_dir):
                    continue
                if regex.fullmatch(sub):
                    if is_dir:
                        found.extend(p for p in walk(path, excluder) if isinstance(p, str))
                    elif entry.is_file() and (not suffixed or entry.name.endswith(SUFFIXES)):
                        found.append(path)
                    continue
                if is_dir and (depth is None or sub.count("/") + 1 < depth):
                    subfolders.append((path, sub))
            except OSError:
                continue
        stack.extend(reversed(subfolders))
    return found


def expand(args: Sequence[str], excluder: Excluder, force_exclude: bool = False) -> list[Target]:
    """The files named by ``args`` (files, folders, globs, ``-``), in order, each once."""
    out: list[Target] = []
    seen: set[str] = set()

    def add(target: Target) -> None:
        key = os.path.normpath(target.path)
        if target.error is None and target.notice is None and target.path != STDIN:
            if key in seen:
                return
            seen.add(key)
        out.append(target)

    for arg in args:
        if arg == STDIN:
            add(Target(STDIN))
            continue
        if os.path.isdir(arg):
            if force_exclude and excluder.excluded_with_parents(arg):
                continue
            before = len(out)
            for item in walk(arg, excluder):
                add(item if isinstance(item, Target) else Target(item, explicit=False))
            if len(out) == before:
                kinds = ", ".join(f"*{s}" for s in SUFFIXES)
                add(Target(arg, notice=f"no files to lint in this folder ({kinds})"))
            continue
        if not os.path.lexists(arg) and _MAGIC.search(arg):
            if len(arg) > MAX_PATTERN_CHARS:
                add(Target(arg, error=f"a pattern of {len(arg):,} characters is longer than "
                                      f"moe-lint's bound of {MAX_PATTERN_CHARS:,} "
                                      "(bounds.MAX_PATTERN_CHARS)"))  # fmt: skip
                continue
            matches = _glob(arg, excluder)
            if not matches:
                add(Target(arg, error="no file matches this pattern"))
            for path in matches:
                add(Target(path, explicit=False))
            continue
        if force_exclude and excluder.excluded_with_parents(arg):
            continue
        add(Target(arg))
    return out


def read_stdin(stream: BinaryIO, name: str) -> Document:
    """Read one config from ``stream`` (at most ``bounds.MAX_BYTES``, like a file) and parse it
    as the file ``name``; bad input raises InputError."""
    try:
        raw = stream.read(MAX_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot read stdin: {exc.strerror or exc}") from None
    text, had_bom = decode(raw, name)
    return parse_text(text, name, had_bom)
