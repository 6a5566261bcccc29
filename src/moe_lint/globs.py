"""Glob patterns as regular expressions that cannot backtrack catastrophically.

Exclude patterns, quoted command-line globs, ``per-file`` and ``per-file-ignores`` keys come
from the linted repository. Translated naively (``*`` as ``[^/]*``, ``**/`` as
``(?:[^/]+/)*``), a pattern such as ``*a*a*a*a*a*b.yaml`` or ``**/**/**/x`` makes Python's
backtracking matcher try every way to split a long name or a deep path among its stars:
polynomial in the name with the number of stars as the exponent (minutes for one file name).

Here every wildcard but the last of a run is matched *leftmost and atomically*: the fixed text
between two ``*`` is searched lazily inside an atomic group (``(?>[^/]*?FIXED)``), as CPython's
own ``fnmatch.translate`` does, and likewise the fixed folders between two ``**``
(``(?>(?:[^/]+/)*?a/b/)``). Taking the leftmost place for each fixed piece is never worse for
what follows (the rest starts with a wildcard that can absorb anything the piece skipped), so
the answers are the naive translation's, and a match costs at most about
``len(path) * len(pattern)`` steps. ``bounds.MAX_PATTERN_CHARS`` bounds the pattern side.

Two dialects:

- **path** globs (:func:`path_regex`, ``files``): ``/``-separated; ``*``, ``?`` and ``[...]``
  never match ``/``; a ``**`` folder is any number of folders, a trailing ``**`` everything
  below; ``[!...]`` and ``[^...]`` negate (as in gitignore);
- **fnmatch** globs (:func:`fnmatch_regex`, ``per-file`` settings): ``fnmatch.fnmatch``'s
  meaning exactly (``*`` and ``?`` match ``/`` too; ``[^...]`` is not a negation).

In both, a bracket expression is parsed as ``fnmatch`` parses it (a ``]`` first is literal, a
``[`` without its ``]`` is a literal ``[``, an empty range such as ``[z-a]`` matches nothing)
and every character of it is escaped, so no pattern is an invalid or warned-about regex.
"""

from __future__ import annotations

import re
from functools import lru_cache

from moe_lint.bounds import MAX_PATTERN_CHARS, bounded_repr
from moe_lint.errors import UsageError

#: Characters escaped inside a regex character class (``re`` would read them as syntax, or
#: warn about nested sets and set operations).
_CLASS_SPECIAL = frozenset("\\]^-[&~|")
_STAR = object()


def check_pattern(pattern: str, where: str) -> str:
    """``pattern`` if it is within ``bounds.MAX_PATTERN_CHARS``, else a UsageError."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise UsageError(
            f"{where}: pattern {bounded_repr(pattern, 60)} of {len(pattern):,} characters is "
            f"longer than moe-lint's bound of {MAX_PATTERN_CHARS:,} (bounds.MAX_PATTERN_CHARS)"
        )
    return pattern


def _class_char(char: str) -> str:
    return "\\" + char if char in _CLASS_SPECIAL else char


def _bracket(pattern: str, start: int, path: bool) -> tuple[str | None, int]:
    """The regex for the bracket expression opening at ``pattern[start]`` (``[``) and the
    index after it; (None, start + 1) when it has no closing ``]`` (a literal ``[``). In a
    path glob (``path``) ``^`` negates too and the class never matches ``/``."""
    caret_negates = path
    end = start + 1
    if end < len(pattern) and (pattern[end] == "!" or (caret_negates and pattern[end] == "^")):
        end += 1
    if end < len(pattern) and pattern[end] == "]":
        end += 1
    end = pattern.find("]", end)
    if end < 0:
        return None, start + 1
    body = pattern[start + 1 : end]
    negate = bool(body) and (body[0] == "!" or (caret_negates and body[0] == "^"))
    if negate:
        body = body[1:]
    # fnmatch's reading: "a-c" is a range, a "-" first or last is literal; an empty range
    # (z-a) is dropped, and a class left with nothing matches nothing.
    items: list[str] = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            low, high = body[i], body[i + 2]
            if low <= high:
                items.append(f"{_class_char(low)}-{_class_char(high)}")
            i += 3
        else:
            items.append(_class_char(body[i]))
            i += 1
    if not items:
        return ("[^/]" if path else ".") if negate else "(?!)", end + 1
    if negate:
        return f"[^{'/' if path else ''}{''.join(items)}]", end + 1
    return f"{'(?!/)' if path else ''}[{''.join(items)}]", end + 1


def _tokens(part: str, path: bool) -> list[object]:
    """Regex pieces of one glob (``_STAR`` for a run of ``*``)."""
    any_char = "[^/]" if path else "."
    out: list[object] = []
    i = 0
    while i < len(part):
        char = part[i]
        if char == "*":
            if not out or out[-1] is not _STAR:
                out.append(_STAR)
            i += 1
        elif char == "?":
            out.append(any_char)
            i += 1
        elif char == "[":
            regex, i = _bracket(part, i, path)
            out.append(re.escape("[") if regex is None else regex)
        else:
            out.append(re.escape(char))
            i += 1
    return out


def _stars(tokens: list[object], star: str) -> str:
    """Join tokens; each ``*`` before a fixed run becomes a lazy atomic search for it."""
    out: list[str] = []
    i = 0
    while i < len(tokens) and tokens[i] is not _STAR:
        out.append(str(tokens[i]))
        i += 1
    while i < len(tokens):
        i += 1  # the star
        fixed: list[str] = []
        while i < len(tokens) and tokens[i] is not _STAR:
            fixed.append(str(tokens[i]))
            i += 1
        if i == len(tokens):
            out.append(f"{star}*{''.join(fixed)}")
        else:
            out.append(f"(?>{star}*?{''.join(fixed)})")
    return "".join(out)


def _component(part: str) -> str:
    """One folder or file name of a path glob (no ``/`` in it; classes never match ``/``)."""
    return _stars(_tokens(part, path=True), "[^/]")


@lru_cache(maxsize=4096)
def path_regex(pattern: str) -> re.Pattern[str]:
    """A ``/``-separated glob as a regex over ``/``-separated relative paths (``fullmatch``)."""
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    # Consecutive "**" folders mean what one does.
    parts = [p for i, p in enumerate(parts) if not (p == "**" and i and parts[i - 1] == "**")]
    out: list[str] = []
    i = 0
    while i < len(parts) and parts[i] != "**":
        out.append(_component(parts[i]) + ("/" if i < len(parts) - 1 else ""))
        i += 1
    while i < len(parts):
        # parts[i] is "**": the folders up to the next "**" (or the end) follow it.
        if i == len(parts) - 1:
            out.append(".+")  # a trailing "**": everything below
            break
        i += 1
        run: list[str] = []
        while i < len(parts) and parts[i] != "**":
            run.append(_component(parts[i]) + ("/" if i < len(parts) - 1 else ""))
            i += 1
        if i < len(parts):  # another "**" follows: the leftmost place for this run
            out.append(f"(?>(?:[^/]+/)*?{''.join(run)})")
        else:
            out.append(f"(?:[^/]+/)*{''.join(run)}")
    return re.compile("".join(out), re.S)


@lru_cache(maxsize=4096)
def fnmatch_regex(pattern: str) -> re.Pattern[str]:
    """``fnmatch.fnmatch``'s pattern (case-sensitive, as on POSIX) as a ``fullmatch`` regex."""
    return re.compile(_stars(_tokens(pattern, path=False), "."), re.S)


__all__ = ["check_pattern", "fnmatch_regex", "path_regex"]
