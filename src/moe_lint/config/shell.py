"""A bounded, non-executing reader of bash launch scripts (used by config/mlm_args.py).

Nothing is executed. The script is read the way bash would run it, as far as that needs no
execution: comments, line continuations, quoting, assignments (plain, ``export``/``local``/
``declare``, ``+=``, arrays ``NAME=( ... )``), ``$VAR`` / ``${VAR}`` / ``${VAR:-default}`` /
``"${ARR[@]}"``, ``$(( ))`` integer arithmetic, heredocs (skipped), and control flow:

* ``if``/``elif``/``else``, ``case`` arms, ``&&``/``||`` lists run the branch their condition
  picks when the condition is decidable from the script's own values (``[ "$X" = y ]``,
  ``[[ ... ]]``, ``test``, ``-z``/``-n``, string, pattern and integer comparisons, ``true``,
  ``false``). Otherwise every branch is read from the same state and a variable the branches
  leave different is *unknown* afterwards (a word no finding may depend on); a branch that runs
  ``exit`` does not reach what follows, so it adds nothing.
* ``for x in a b c`` over known words is unrolled; a loop whose count is unknown (``while``,
  ``for`` over ``$@`` or a command's output) leaves every variable its body may assign unknown.
* functions run where they are called (bounded depth); subshells and pipelines keep their
  assignments to themselves.

What cannot be known stays *unresolved*, character by character: ``$1``, ``$(...)``, backticks,
a variable the script never sets (a ``${X:-default}`` takes its default), a sourced file. A
word holding unresolved characters matches anything; a value the branches set differently
also remembers the ``--flags`` each branch could put there (``_PStr.maybe``), so the flags'
config paths can be called unknown rather than left at their defaults.

Re-reading loop and function bodies is bounded by a multiple of the script's length
(``REREAD_FACTOR``) and charged to the expansion budget (``MAX_EXPANDED_TOTAL``): past that, a
loop or call is not re-read and what it assigns is unknown, so the reader stays linear in its
input. Every copy is charged there: joins, word splitting (``B=($A)``), array copies
(``"${A[@]}"``), at WORD_COST a word; a script that needs more than bounds.MAX_SHELL_STEPS
steps, or ``${`` nested deeper than MAX_NESTING, is refused. A word's source indexes are a
``range`` while written as one run of the source, else a 4-byte C array (_PStr.idx).
"""

from __future__ import annotations

import ast
import bisect
import itertools
import operator
import os
import re
from array import array
from collections.abc import Iterator, Sequence
from typing import Any, TypeAlias

from moe_lint.bounds import (
    MAX_BYTES,
    MAX_EXPANDED,
    MAX_PATTERN_CHARS,
    MAX_SHELL_STEPS,
    bounded_str,
)
from moe_lint.errors import InputError
from moe_lint.records import NamedTuple, field, record

#: Characters one variable's value and one expanded command may grow to (an expansion
#: doubling itself line after line stops here): bounds.MAX_BYTES.
MAX_EXPANSION = MAX_BYTES
#: Characters all expansions of one script may build together, re-read loop and function
#: bodies included (a variable that grows line by line copies itself each time: this keeps
#: the work linear in a bound, not quadratic): bounds.MAX_EXPANDED. A MODEL_ARGS file's
#: values (aliases too) are charged to it as well.
MAX_EXPANDED_TOTAL = MAX_EXPANDED
#: What one word copy costs the budget, in characters: a word split off a value, an array
#: element copied, an argument of a MODEL_ARGS file (a word object is ~200 bytes).
WORD_COST = 128
#: Spent: [characters, reader steps] of the input being read (reset_budget starts anew).
_SPENT = [0, 0]
#: Words on one command line after expansion (real launch commands have a few hundred).
MAX_WORDS = 100_000
#: Iterations of one ``for`` loop that are unrolled (more: its count is treated as unknown).
MAX_UNROLL = 64
#: Function calls inside function calls that are followed (deeper: the call is not re-read).
MAX_CALL_DEPTH = 8
#: Nesting of compound commands (``if`` in ``for`` in ``{ }`` ...).
MAX_NESTING = 200
#: Loop and function bodies are read again (unrolled, called) up to this many times the
#: script's length in all (plus REREAD_SLACK characters): the reader stays linear.
REREAD_FACTOR = 8
REREAD_SLACK = 10_000
#: ``--flag`` words one unknown value remembers; a value that could hold more is ``hidden``.
MAX_MAYBE = 500
#: The source index of a character whose value is not known.
UNKNOWN_AT = -2


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


#: A variable that is not set.
MISSING: Any = _Missing()


# --- positioned strings -------------------------------------------------------------------

#: Source indexes of a word's characters: a ``range`` while they are written one after the
#: other in the source (a piece of it: no memory a character), else a C array of 4-byte
#: ints. A list kept an int object a character: 440 MB for an 8 MB value.
Idx: TypeAlias = "range | array[int]"


def _span(start: int, end: int) -> range:
    """The indexes ``start:end`` (characters written there as they are)."""
    return range(start, end)


def _same_idx(n: int, value: int) -> array[int]:
    return array("i", [value]) * n


def _naturals(r: range) -> array[int]:
    """A range of indexes as an array: a slice of one array of 0, 1, 2, ... (grown to the
    largest index asked, at most the text's length, once), a copy at C speed."""
    if r.stop > len(_NATURALS):
        _NATURALS.extend(range(len(_NATURALS), max(r.stop, 2 * len(_NATURALS))))
    return _NATURALS[r.start : r.stop] if r.step == 1 else array("i", r)


_NATURALS = array("i", range(4096))
_UNKNOWN_BYTES = array("i", [UNKNOWN_AT]).tobytes()


def _has_unknown(idx: Idx) -> bool:
    """``UNKNOWN_AT in idx`` at C speed (a search of the array's bytes, at item boundaries)."""
    if isinstance(idx, range):
        return False
    if len(idx) < 32:
        return UNKNOWN_AT in idx
    data = idx.tobytes()
    size = idx.itemsize
    k = data.find(_UNKNOWN_BYTES)
    while k >= 0 and k % size:
        k = data.find(_UNKNOWN_BYTES, k + 1)
    return k >= 0


def _unknown_runs(idx: array[int]) -> Iterator[tuple[int, int]]:
    """(start, end) item positions of each run of UNKNOWN_AT in ``idx``, at C speed in time
    and memory: each run is found with ``bytes.find`` and measured by doubling comparisons.
    (A ``(?:pattern)+`` regex over the bytes kept a backtracking mark per repetition: 300 MB
    for one 4 MB unknown word, fuzz --target scripts seed 53 case 2051.)"""
    data, size, pat = idx.tobytes(), idx.itemsize, _UNKNOWN_BYTES
    k = data.find(pat)
    while k >= 0:
        if k % size:  # not at an item boundary (cannot happen for -1, -2, >= 0)
            k = data.find(pat, k + 1)
            continue
        end, step = k + size, 1
        while step:
            if data.startswith(pat * step, end):
                end += size * step
                step *= 2
            else:
                step //= 2
        yield k // size, end // size
        k = data.find(pat, end)


def _as_idx(idx: Any) -> Idx:
    if isinstance(idx, range):
        return idx if idx.step == 1 and (not idx or idx.start >= 0) else array("i", idx)
    return idx if isinstance(idx, array) else array("i", idx)


def _as_array(idx: Idx) -> array[int]:
    return _naturals(idx) if isinstance(idx, range) else idx


def _idx_add(a: Idx, b: Idx) -> Idx:
    if isinstance(a, range) and isinstance(b, range) and (not a or not b or a.stop == b.start):
        return range(a.start, b.stop) if a and b else a if a else b
    return _as_array(a) + _as_array(b)


class _PStr:
    """Text with, for each character, its index in the source (-1: not written there,
    UNKNOWN_AT: a character whose value is not known). ``maybe``: for a value the branches of
    an undecided ``if`` set differently, the ``--flag`` words one of them would put here;
    ``hidden``: its unknown characters may stand for words nobody wrote down (``$1``,
    ``$(...)``), not only for ``maybe``'s."""

    __slots__ = ("at", "hidden", "idx", "maybe", "text", "unresolved")

    def __init__(self, text: str = "", idx: Sequence[int] | Idx | None = None,
                 unresolved: bool = False, maybe: tuple[_PStr, ...] = (), hidden: bool = True,
                 at: int = -1) -> None:  # fmt: skip
        self.text = text
        #: Where an unknown piece was written (its ``$``), for notes.
        self.at = at
        if idx is None:
            self.idx: Idx = _same_idx(len(text), UNKNOWN_AT if unresolved else -1)
            self.unresolved = unresolved and bool(text)
        else:
            self.idx = _as_idx(idx)
            self.unresolved = _has_unknown(self.idx)
        self.maybe = maybe if self.unresolved else ()
        self.hidden = hidden and self.unresolved

    @classmethod
    def _made(cls, text: str, idx: Idx, unresolved: bool, at: int) -> _PStr:
        out = cls.__new__(cls)
        out.text, out.idx, out.unresolved, out.at = text, idx, unresolved, at
        out.maybe, out.hidden = (), False
        return out

    def __add__(self, other: _PStr) -> _PStr:
        size = len(self.text) + len(other.text)
        if size > MAX_EXPANSION:
            raise InputError(
                f"variable expansion exceeds {MAX_EXPANSION:,} characters (bounds.MAX_BYTES)"
            )
        charge(size)
        unresolved = self.unresolved or other.unresolved
        out = _PStr._made(self.text + other.text, _idx_add(self.idx, other.idx), unresolved,
                          self.at if self.at >= 0 else other.at)  # fmt: skip
        if not unresolved:
            return out
        if self.maybe and other.maybe:
            out.maybe = _cap(self.maybe + other.maybe)
        else:
            out.maybe = self.maybe or other.maybe
        out.hidden = self.hidden or other.hidden or len(out.maybe) > MAX_MAYBE
        return out

    def cut(self, start: int, end: int | None = None) -> _PStr:
        """The characters ``start:end`` (their unknown characters keep their ``maybe``)."""
        idx = self.idx[start:end]
        out = _PStr._made(self.text[start:end], idx,
                          self.unresolved and _has_unknown(idx), self.at)  # fmt: skip
        if out.unresolved:
            out.maybe, out.hidden = self.maybe, self.hidden
        return out

    def split(self) -> list[_PStr]:
        """Whitespace-separated words; a character of unknown value never splits. Each word
        is charged to the expansion budget (WORD_COST and its characters)."""
        mask = self.text
        if self.unresolved:  # unknown characters are word characters
            pieces: list[str] = []
            last = 0
            for a, b in _unknown_runs(_as_array(self.idx)):
                pieces.append(mask[last:a])
                pieces.append("x" * (b - a))
                last = b
            pieces.append(mask[last:])
            mask = "".join(pieces)
        out: list[_PStr] = []
        for word in _WORD.finditer(mask):
            charge(WORD_COST + word.end() - word.start())
            out.append(self.cut(word.start(), word.end()))
        return out

    def literal(self) -> bool:
        """Written as one contiguous run of source characters (a plain literal token)."""
        idx = self.idx
        if not idx or idx[0] < 0:
            return False
        if isinstance(idx, range):
            return True
        return idx[-1] == idx[0] + len(idx) - 1 and (
            len(idx) < 3 or idx == _naturals(range(idx[0], idx[-1] + 1))
        )

    def resolved_text(self) -> str | None:
        return None if self.unresolved else self.text

    def __repr__(self) -> str:
        return f"_PStr({self.text!r}{', unresolved' if self.unresolved else ''})"


_WORD = re.compile(r"\S+")


def concat(items: list[_PStr], sep: str = "") -> _PStr:
    """``items`` joined by ``sep`` in one copy (``a + b + c ...`` copies the growing value
    again at each ``+``: quadratic), charged to the expansion budget."""
    if not items:
        return _PStr()
    if len(items) == 1:
        return items[0]
    idxs = [x.idx for x in items if x.idx]
    spans = [i for i in idxs if isinstance(i, range)]
    joined: Idx = array("i")
    if (
        not sep
        and len(spans) == len(idxs)
        and all(a.stop == b.start for a, b in itertools.pairwise(spans))
    ):  # written one after the other: still a range
        joined = range(spans[0].start, spans[-1].stop) if spans else range(0)
    sep_idx = _same_idx(len(sep), -1)
    size = sum(len(x.text) for x in items) + len(sep) * (len(items) - 1)
    if size > MAX_EXPANSION:
        raise InputError(
            f"variable expansion exceeds {MAX_EXPANSION:,} characters (bounds.MAX_BYTES)"
        )
    charge(size + WORD_COST)
    if isinstance(joined, array):
        for k, x in enumerate(items):
            if k and sep:
                joined.extend(sep_idx)
            joined.extend(_as_array(x.idx))
    unresolved = any(x.unresolved for x in items)
    at = next((x.at for x in items if x.at >= 0), -1)
    out = _PStr._made(sep.join(x.text for x in items), joined, unresolved, at)
    if unresolved:
        maybes = [x.maybe for x in items if x.maybe]
        out.maybe = (maybes[0] if len(maybes) == 1 else
                     _cap(tuple(f for m in maybes for f in m)))  # fmt: skip
        out.hidden = any(x.hidden for x in items) or len(out.maybe) > MAX_MAYBE
    return out


def _joined(items: list[_PStr]) -> _PStr:
    """Array elements joined with spaces (``"${A[*]}"``)."""
    return concat(items, " ")


def _cap(items: tuple[_PStr, ...]) -> tuple[_PStr, ...]:
    """``maybe`` flags, each once, at most MAX_MAYBE + 1 (one more: too many to list, and a
    value with more is ``hidden``)."""
    seen: dict[tuple[str, int], _PStr] = {}
    for item in items:
        seen.setdefault((item.text, item.idx[0] if item.idx else -1), item)
        if len(seen) > MAX_MAYBE:
            break
    return tuple(seen.values())


def charge(size: int) -> None:
    """Count ``size`` characters against the script's expansion budget."""
    _SPENT[0] += size
    if _SPENT[0] > MAX_EXPANDED_TOTAL:
        raise InputError(
            f"variable expansions build more than {MAX_EXPANDED_TOTAL:,} characters in all "
            "(bounds.MAX_EXPANDED)"
        )


def charge_words(count: int) -> None:
    """Count ``count`` word copies (an array copied, a list built) against the budget."""
    charge(WORD_COST * count)


def unknown_value(name: str, maybe: tuple[_PStr, ...] = (), hidden: bool = True,
                  at: int = -1) -> _PStr:  # fmt: skip
    """The value of ``name`` when it is not known (``maybe``: flags it could hold)."""
    maybe = maybe[: MAX_MAYBE + 1]
    return _PStr("$" + name, unresolved=True, maybe=maybe,
                 hidden=hidden or len(maybe) > MAX_MAYBE, at=at)  # fmt: skip


def flag_words(value: Any) -> tuple[_PStr, ...]:
    """The ``--flag`` words (name part) a value could put on a command line, ``maybe`` too."""
    if value is MISSING or value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    out: list[_PStr] = []
    for item in items:
        out.extend(item.maybe)
        for word in item.split():
            text = word.text
            if text.startswith("--") and len(text) > 2:
                cut = text.find("=")
                name = word if cut < 0 else word.cut(0, cut)
                if not name.unresolved:
                    out.append(name)
    return tuple(out)


@record
class _Word:
    """One shell word: its pieces (a piece from an unquoted expansion is split later; a piece
    written or expanded unquoted is a glob pattern in ``case`` and ``[[ == ]]``)."""

    parts: list[tuple[_PStr, bool]] = field(default_factory=list)  # (text, split it?)
    globs: list[bool] = field(default_factory=list)
    array: list[_PStr] | None = None  # "${ARR[@]}": whole elements
    start: int = 0
    #: Quotes were written: an empty result is still one (empty) word, unless it is all
    #: an empty "${ARR[@]}".
    quoted: bool = False
    empty_array: bool = False

    def add(self, text: _PStr, split: bool, glob: bool = False) -> None:
        if self.array is not None:  # "${A[@]}x": the elements joined, then the rest
            self.parts.append((_joined(self.array), True))
            self.globs.append(True)
            self.array = None
        self.parts.append((text, split))
        self.globs.append(split or glob)


class _Command(NamedTuple):
    words: list[_PStr]
    assignments: list[tuple[str, str, list[_PStr] | _PStr, int]]  # name, op, value, index
    #: Recorded in a branch whose condition is not known (it may not run).
    conditional: bool = False


class _Branch(NamedTuple):
    """What one branch left: the variables it changed (name -> value or MISSING), and
    whether it ended the script."""

    after: dict[str, Any]
    exited: bool


@record
class _Frame:
    """A loop or function being run: ``base`` is how many undecided branches it runs in;
    ``escaped`` is set when ``break``/``continue``/``return`` runs in an undecided branch of
    it (what follows it then runs on some paths only)."""

    kind: str
    base: int
    escaped: bool = False


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]\n]*\])?(\+?=)")
_KEYWORD = re.compile(
    r"(if|then|elif|else|fi|case|esac|for|select|while|until|do|done|function|in|time|"
    r"\{|\}|!|\[\[)(?=[\s;&|()<>]|$)"
)
_FUNCDEF = re.compile(r"([A-Za-z_][\w.:-]*)[ \t]*\([ \t]*\)")
_BRACKETS = {"(": re.compile(r"[()]"), "{": re.compile(r"[{}]")}
_BRACE_ARRAY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\[([@*])\]")
_BRACE_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(:?[-=+?])?")
_PLAIN = re.compile(r"[^$\"'`\\]+")
#: A run of characters with no meaning to the word reader (unquoted, in double quotes).
_UNQUOTED_RUN = re.compile(r"[^ \t\r\n;&|<>()\\'\"$`]*")
_QUOTED_RUN = re.compile(r'[^"\\$`]*')
_FD = re.compile(r"\d+-?|-")
_REDIRECT = re.compile(r"\d*(<<<|<<-|<<|&>>|&>|>>|>&|<&|<>|>\||>|<)")
#: Words that only prefix the command they run.
_PREFIXES = {"time", "exec", "nohup", "command", "builtin", "!"}
#: Declaration builtins: their ``NAME=value`` words are assignments.
_DECLARE = {"export", "local", "declare", "readonly", "typeset"}
#: Builtins that run nothing and succeed.
_SUCCEED = {"true", ":", "echo", "printf", "cd", "pushd", "popd", "set", "shopt", "shift",
            "ulimit", "umask", "trap", "wait", "hash", "alias", "unalias", "type",
            "pwd"}  # fmt: skip
_FILE_TESTS = set("abcdefghkprsuwxGLNOS")
_INT_OPS = {"-eq", "-ne", "-lt", "-le", "-gt", "-ge"}
_BINARY = {"=", "==", "!=", "<", ">", "-a", "-o", "-nt", "-ot", "-ef"}
_COMPARE = {"-eq": operator.eq, "-ne": operator.ne, "-lt": operator.lt, "-le": operator.le,
            "-gt": operator.gt, "-ge": operator.ge}  # fmt: skip


class ShellReader:
    """A bounded, non-executing reader of one bash script: ``run()`` reads it; ``commands``
    are the simple commands it would run (every branch of an undecided ``if``), ``vars`` the
    variables at the end, ``exported`` the names it exports."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.vars: dict[str, _PStr | list[_PStr]] = {}
        self.notes: list[str] = []
        self.commands: list[_Command] = []
        self.steps = 0
        #: Names the script exports (``export NAME=...``): the run's environment.
        self.exported: list[str] = []
        #: Source ranges of ``${X:-default}`` defaults taken (start, end, name).
        self.defaults_at: list[tuple[int, int, str]] = []
        self.functions: dict[str, tuple[int, int, frozenset[str]]] = {}
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        #: Bracket pairs found by _matching: opening character -> {open index: close index}.
        self._pairs: dict[str, dict[int, int]] = {}
        self._braces = 0
        self._heredocs: list[str] = []
        #: The body of the current command's ``<<`` heredoc (for ``read -d ''``), or None.
        self._heredoc_body: _PStr | None = None
        self._logs: list[list[tuple[str, Any]]] = []
        self._collect: list[set[str]] = []
        self._frames: list[_Frame] = []
        self._locals: list[dict[str, Any]] = []
        self._dead = 0
        self._exited = False
        self._skip: str | None = None
        self._depth = 0
        self._calls = 0
        self._reread = 0
        self._undecided = 0
        #: A file the reader does not see was sourced: an unset variable may be set.
        self._sourced = False
        self.status: bool | None = True
        #: The last ``exit`` ran with an error status (a guard: see _taken).
        self._guard_exit = False
        self._guard_at = 0

    # -- entry -----------------------------------------------------------------------------

    def run(self) -> None:
        try:
            while self.i < len(self.text):
                stop = self._list(set())
                if stop is not None:  # a keyword or ")" with nothing open: step over it
                    self.i += len(stop)
        except RecursionError:
            raise InputError("shell nesting too deep to read") from None

    def note(self, what: str) -> None:
        if not self.dead() and len(self.notes) < 50 and what not in self.notes:
            self.notes.append(what)

    def dead(self) -> bool:
        """Is the code being read now never run (a branch not taken, after ``exit``)?"""
        return bool(self._dead or self._exited or self._skip)

    def line(self, index: int) -> int:
        return bisect.bisect_right(self._line_starts, index)

    # -- lexing ----------------------------------------------------------------------------

    def _peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.text[j] if j < len(self.text) else ""

    def _tick(self) -> None:
        self.steps += 1
        _SPENT[1] += 1
        if _SPENT[1] > MAX_SHELL_STEPS:
            raise InputError(
                f"reading the shell script takes more than {MAX_SHELL_STEPS:,} steps "
                "(bounds.MAX_SHELL_STEPS)"
            )
        if self.steps > 4 * (len(self.text) + self._reread) + 1000:
            raise InputError("the shell text cannot be taken apart (reader made no progress)")

    def _skip_blank(self) -> None:
        text = self.text
        while self.i < len(text):
            ch = text[self.i]
            if ch in " \t\r":
                self.i += 1
            elif ch == "\\" and self._peek(1) == "\n":
                self.i += 2
            elif ch == "\\" and self._peek(1) == "\r" and self._peek(2) == "\n":
                self.i += 3
            else:
                return

    def _skip_comment(self) -> None:
        end = self.text.find("\n", self.i)
        self.i = len(self.text) if end < 0 else end

    def _newline(self) -> None:
        self.i += 1
        self._heredoc_body = None
        for tag in self._heredocs:
            self._skip_heredoc(tag)
        self._heredocs.clear()

    def _separators(self, semicolons: bool = True) -> None:
        """Blanks, newlines, comments and (``semicolons``) lone ``;`` and ``&``."""
        text = self.text
        while self.i < len(text):
            self._tick()
            self._skip_blank()
            ch = self._peek()
            if ch == "\n":
                self._newline()
            elif ch == "#":
                self._skip_comment()
            elif semicolons and ch in ";&" and self._peek(1) not in ("&;" if ch == ";" else "&>"):
                self.i += 1
            else:
                return

    def _keyword(self) -> str | None:
        m = _KEYWORD.match(self.text, self.i)
        return m.group(1) if m else None

    def _expect(self, keyword: str) -> None:
        self._separators()
        if self._keyword() == keyword:
            self.i += len(keyword)
        elif self.i < len(self.text):
            self.note(f"line {self.line(self.i)}: expected '{keyword}'")

    def _heredoc_text(self, tag: str, quoted: bool, tabs: bool) -> _PStr:
        """The body of a heredoc whose ``<<`` is on the current line, with its positions:
        as written when the tag is quoted; unknown when unquoted and it expands something."""
        text = self.text
        end = text.find("\n", self.i)
        start = len(text) if end < 0 else end + 1
        at = start
        lines: list[_PStr] = []
        while at < len(text):
            stop = text.find("\n", at)
            stop = len(text) if stop < 0 else stop
            line_at = at
            if tabs:
                while line_at < stop and text[line_at] == "\t":
                    line_at += 1
            if text[line_at:stop].strip() == tag:
                break
            charge(stop - line_at + 1)
            upto = min(stop + 1, len(text))
            lines.append(_PStr(text[line_at:upto], _span(line_at, upto)))
            at = stop + 1
        out = concat(lines)
        if not quoted and re.search(r"[$`\\]", out.text):
            return unknown_value("heredoc", at=start)
        return out

    def _skip_heredoc(self, tag: str) -> None:
        while self.i < len(self.text):
            end = self.text.find("\n", self.i)
            line = self.text[self.i : len(self.text) if end < 0 else end]
            self.i = len(self.text) if end < 0 else end + 1
            if line.strip() == tag:
                return

    def _array(self) -> list[_PStr]:
        items: list[_PStr] = []
        while self.i < len(self.text):
            self._tick()
            self._skip_blank()
            ch = self._peek()
            if ch == ")":
                self.i += 1
                return items
            if ch == "\n":
                self.i += 1
                continue
            if ch == "#":
                self._skip_comment()
                continue
            before = self.i
            word = self._word()
            if not word.parts and word.array is None and not word.quoted:
                self.i += 1 if self.i == before else 0
                continue
            items.extend(self.expand(word))
            if len(items) > MAX_WORDS:
                raise InputError(f"array of more than {MAX_WORDS:,} words")
        return items

    def _word(self) -> _Word:
        word = _Word(start=self.i)
        text = self.text
        brace = False  # an unquoted {a,b} / {1..3}: bash's brace expansion, not read
        while self.i < len(text):
            ch = text[self.i]
            if ch in " \t\r\n;&|<>()":
                break
            if ch == "#" and self.i == word.start:
                break
            if ch == "\\":
                nxt = self._peek(1)
                if nxt == "\n":
                    self.i += 2
                    break
                if nxt:
                    word.add(_PStr(nxt, [self.i + 1]), False)
                self.i += 2
            elif ch == "'":
                end = text.find("'", self.i + 1)
                if end < 0:
                    raise InputError(f"line {self.line(self.i)}: unterminated single quote")
                word.add(_PStr(text[self.i + 1 : end], _span(self.i + 1, end)), False)
                word.quoted = True
                self.i = end + 1
            elif ch == '"':
                self._double_quoted(word)
            elif ch == "$":
                self._dollar(word, quoted=False)
            elif ch == "`":
                self._backtick(word)
            else:
                j = _UNQUOTED_RUN.match(text, self.i).end()  # type: ignore[union-attr]
                run = text[self.i : j]
                if self.i == word.start and run.startswith("~"):
                    end = run.find("/") if "/" in run else len(run)
                    self.note(f"line {self.line(self.i)}: ~ (the home directory) is unknown")
                    word.add(_PStr(run[:end], unresolved=True), False)
                    word.add(_PStr(run[end:], _span(self.i + end, j)), False, glob=True)
                else:
                    word.add(_PStr(run, _span(self.i, j)), False, glob=True)
                brace = brace or re.search(r"\{[^{}]*(,|\.\.)[^{}]*\}", run) is not None
                self.i = j
        if brace:
            self.note(f"line {self.line(word.start)}: a brace expansion {{...}} is not expanded")
            return _Word([(_PStr(text[word.start : self.i], unresolved=True, at=word.start),
                           False)], [False],
                         None, word.start)  # fmt: skip
        return word

    def _backtick(self, word: _Word) -> None:
        """A backtick command is never run: its text stays unresolved (and is noted)."""
        text = self.text
        end = text.find("`", self.i + 1)
        end = len(text) - 1 if end < 0 else end
        self.note(f"line {self.line(self.i)}: a backtick command is not run")
        word.add(_PStr(text[self.i : end + 1], unresolved=True, at=self.i), False)
        self.i = end + 1

    def _double_quoted(self, word: _Word) -> None:
        text = self.text
        start = self.i
        word.quoted = True
        self.i += 1
        while self.i < len(text):
            ch = text[self.i]
            if ch == '"':
                self.i += 1
                return
            if ch == "\\" and self._peek(1) in '"\\$`\n':
                if self._peek(1) != "\n":
                    word.add(_PStr(self._peek(1), [self.i + 1]), False)
                self.i += 2
            elif ch == "$":
                self._dollar(word, quoted=True)
            elif ch == "`":
                self._backtick(word)
            else:
                j = _QUOTED_RUN.match(text, self.i).end()  # type: ignore[union-attr]
                if j == self.i:
                    j += 1
                word.add(_PStr(text[self.i : j], _span(self.i, j)), False)
                self.i = j
        raise InputError(f"line {self.line(start)}: unterminated double quote")

    def _matching(self, start: int, open_: str, close: str) -> int:
        """Index of the bracket closing the one at ``start`` (nesting counted). Each scan
        remembers the pairs it closes, so nested ``${A:-${B:-...}}`` is scanned once, not
        once a level."""
        known = self._pairs.setdefault(open_, {})
        if start in known:
            return known[start]
        stack: list[int] = []
        pattern = _BRACKETS[open_]
        j = start
        text = self.text
        while True:
            m = pattern.search(text, j)
            if m is None:
                raise InputError(f"line {self.line(start)}: unterminated {open_}")
            j = m.start()
            if text[j] == open_:
                if j in known and stack:  # a pair closed before: jump over it
                    j = known[j] + 1
                    continue
                stack.append(j)
            else:
                if stack:
                    known[stack.pop()] = j
                    if not stack:
                        return j
            j += 1

    def _dollar(self, word: _Word, quoted: bool) -> None:
        text, i = self.text, self.i
        nxt = self._peek(1)
        if text.startswith("$((", i):
            end = self._matching(i + 1, "(", ")")
            inner = text[i + 3 : end - 1]
            self.i = end + 1
            word.add(self._arith(inner, i), False)
            return
        if nxt == "(":
            end = self._matching(i + 1, "(", ")")
            self.note(f"line {self.line(i)}: a command substitution $(...) is not run")
            word.add(_PStr(text[i : end + 1], unresolved=True, at=i), False)
            self.i = end + 1
            return
        if nxt == "{":
            end = self._matching(i + 1, "{", "}")
            self.i = end + 1
            self._braces += 1
            if self._braces > MAX_NESTING:
                raise InputError(f"shell nesting deeper than {MAX_NESTING} levels")
            try:
                self._brace(word, end, i, quoted)
            finally:
                self._braces -= 1
            return
        m = _NAME.match(text, i + 1)
        if m:
            self.i = m.end()
            word.add(self._lookup(m.group(), i), not quoted)
            return
        if nxt and (nxt.isdigit() or nxt in "@*#?$!-"):
            self.i += 2
            self.note(f"line {self.line(i)}: ${nxt} (a script argument or shell state) is unknown")
            word.add(_PStr("$" + nxt, unresolved=True, at=i), False)
            return
        word.add(_PStr("$", [i]), False)
        self.i += 1

    def _brace(self, word: _Word, end: int, at: int, quoted: bool) -> None:
        """``${...}`` written from ``at`` to ``end`` (its ``}``); matched in place: a copy of
        its body at each nesting level was quadratic."""
        text = self.text
        m = _BRACE_ARRAY.fullmatch(text, at + 2, end)
        if m:
            value = self.vars.get(m.group(1))
            items = value if isinstance(value, list) else ([value] if value is not None else [])
            if value is None:
                self.note(f"line {self.line(at)}: ${{{m.group(1)}[@]}} is not set in the script")
            if (quoted and m.group(2) == "@") or not quoted:
                word.empty_array = word.empty_array or (quoted and not items)
                if quoted:
                    charge_words(len(items))
                word.array = list(items) if quoted else [w for it in items for w in it.split()]
                if word.parts or len(items) == 0:
                    word.array = None
                    word.add(_joined(list(items)), not quoted)
            else:
                word.add(_joined(list(items)), False)
            return
        m = _BRACE_NAME.match(text, at + 2, end)
        if not m or (m.group(2) is None and m.end() != end):
            body = text[at + 2 : min(end, at + 2 + 41)]
            self.note(f"line {self.line(at)}: ${{{bounded_str(body, 40)}}} is not expanded")
            word.add(_PStr(text[at : end + 1], unresolved=True, at=at), False)
            return
        name = m.group(1)
        op = m.group(2)[-1] if m.group(2) else None
        colon = op is not None and len(m.group(2)) == 2
        current = self.vars.get(name)
        offset = m.end()
        value = current if isinstance(current, _PStr) else current[0] if current else _PStr()
        known_empty = current is not None and not value.unresolved and value.text == ""
        unset = current is None or (colon and known_empty)
        if current is None and self._sourced and op in ("-", "=", "+"):
            self.note(f"line {self.line(at)}: ${name} may be set by the sourced file")
            word.add(unknown_value(name, at=at), False)
            return
        if op in ("-", "="):
            if unset:  # the default (a variable the script does not set: a shell default)
                default = self._expand_text(offset, end)
                if not self.dead():
                    self.defaults_at.append((offset, end, name))
                if op == "=":
                    self._set(name, default)
                word.add(default, not quoted)
                return
        elif op == "+":
            if value.unresolved:
                word.add(unknown_value(name, at=at), False)
            elif not unset:
                word.add(self._expand_text(offset, end), not quoted)
            return
        word.add(self._lookup(name, at), not quoted)

    def _expand_text(self, offset: int, end: int) -> _PStr:
        """Expand a default's text (``${X:-"$Y/a"}``, the source from ``offset`` to ``end``):
        quotes removed, ``$`` expanded (not in single quotes)."""
        saved = self.i
        self.i = offset
        word = _Word(start=offset)
        while self.i < end:
            ch = self.text[self.i]
            if ch == "$":
                self._dollar(word, quoted=True)
            elif ch == '"':
                self._double_quoted(word)
            elif ch == "'":
                close = self.text.find(ch, self.i + 1)
                close = end if close < 0 or close > end else close
                word.add(_PStr(self.text[self.i + 1 : close], _span(self.i + 1, close)),
                         False)  # fmt: skip
                self.i = close + 1
            elif ch == "`":
                self._backtick(word)
            elif ch == "\\" and self.i + 1 < end:
                word.add(_PStr(self.text[self.i + 1], [self.i + 1]), False)
                self.i += 2
            else:  # a run of plain characters at once
                m = _PLAIN.match(self.text, self.i, end)
                stop = m.end() if m and m.end() > self.i else self.i + 1
                word.add(_PStr(self.text[self.i : stop], _span(self.i, stop)), False)
                self.i = stop
        self.i = saved
        return self.join(word)

    def _lookup(self, name: str, at: int) -> _PStr:
        value = self.vars.get(name)
        if isinstance(value, list):
            return value[0] if value else _PStr()
        if value is not None:
            return value
        self.note(f"line {self.line(at)}: ${name} is not set in the script")
        return unknown_value(name, at=at)

    def _arith(self, inner: str, at: int) -> _PStr:
        """``$(( ))`` on integers only (variables of the script expanded first)."""
        expanded = self._expand_text(at + 3, at + 3 + len(inner))
        value = self._arith_value(expanded) if not expanded.unresolved else None
        if value is None:
            self.note(f"line {self.line(at)}: $(( {bounded_str(inner, 40)} )) is not computed")
            return _PStr(f"$(({inner}))", unresolved=True, at=at)
        return _PStr(str(value))

    def _arith_value(self, expanded: _PStr) -> int | None:
        """An arithmetic expression's value: names are the script's variables (one it does
        not set may come from the environment: unknown)."""
        if expanded.unresolved:
            return None
        unknown = False

        def sub(m: re.Match[str]) -> str:
            nonlocal unknown
            v = self.vars.get(m.group())
            if isinstance(v, _PStr) and not v.unresolved:
                return "(" + (v.text.strip() or "0") + ")"
            unknown = True
            return "0"

        text = re.sub(r"[A-Za-z_][A-Za-z0-9_]*", sub, expanded.text.replace("$", ""))
        return None if unknown else safe_int(text)

    def join(self, word: _Word) -> _PStr:
        parts = [part for part, _ in word.parts]
        if word.array is not None:
            parts.insert(0, _joined(word.array))
        return concat(parts)

    def expand(self, word: _Word) -> list[_PStr]:
        """The words a shell word becomes (unquoted expansions split on whitespace)."""
        if word.array is not None and not word.parts:
            charge_words(len(word.array))
            return list(word.array)
        out: list[_PStr] = []
        current: _PStr | None = None
        for part, split in word.parts:
            if not split:
                current = part if current is None else current + part
                continue
            pieces = part.split()
            if not pieces:
                continue
            lead = part.text[:1].isspace() and part.idx[0] != UNKNOWN_AT
            trail = part.text[-1:].isspace() and part.idx[-1] != UNKNOWN_AT
            for k, piece in enumerate(pieces):
                if k == 0 and current is not None and not lead:
                    current = current + piece
                else:
                    if current is not None:
                        out.append(current)
                    current = piece
            if trail and current is not None:
                out.append(current)
                current = None
        if current is not None:
            out.append(current)
        if not out and word.quoted and not (word.empty_array and not any(p.text for p, _ in
                                                                         word.parts)):  # fmt: skip
            out.append(_PStr())
        return out

    # -- state: variables, branches, budgets -----------------------------------------------

    def _set(self, name: str, value: Any) -> None:
        """Set (MISSING: unset) a variable, remembering the old value for undo."""
        for names in self._collect:
            names.add(name)
        if self.dead():
            return
        if self._logs:
            self._logs[-1].append((name, self.vars.get(name, MISSING)))
        if value is MISSING:
            self.vars.pop(name, None)
        else:
            self.vars[name] = value

    def _fork(self) -> tuple[bool, str | None]:
        self._logs.append([])
        saved = (self._exited, self._skip)
        return saved

    def _unfork(self, saved: tuple[bool, str | None]) -> _Branch:
        """End a branch: what it changed, and the state before it back."""
        log = self._logs.pop()
        names = dict.fromkeys(n for n, _ in log)
        after = {n: self.vars.get(n, MISSING) for n in names}
        branch = _Branch(after, self._exited)
        for name, old in reversed(log):
            if old is MISSING:
                self.vars.pop(name, None)
            else:
                self.vars[name] = old
        self._exited, self._skip = saved
        return branch

    def _commit(self, saved: tuple[bool, str | None]) -> None:
        """End a log whose changes stay (a command that turned out not to be a pipeline)."""
        log = self._logs.pop()
        if self._logs:
            self._logs[-1].extend(log)

    def _join(self, branches: list[_Branch], base_too: bool, at: int) -> None:
        """The state after branches of which one ran (``base_too``: or none of them)."""
        alive = [b for b in branches if not b.exited]
        if base_too:
            alive.append(_Branch({}, False))
        if not alive:
            self._exited = True
            return
        names = dict.fromkeys(n for b in alive for n in b.after)
        for name in names:
            base = self.vars.get(name, MISSING)
            values = [b.after.get(name, base) for b in alive]
            merged = self._merge(name, values, at)
            if merged is not base:
                self._set(name, merged)

    def _merge(self, name: str, values: list[Any], at: int) -> Any:
        """One value for several branches' values: the value itself when they agree, else an
        unknown value that keeps what they share at both ends and the flags any of them has."""
        first = values[0]
        if all(_same(first, v) for v in values[1:]):
            return first
        self.note(f"line {self.line(at)}: ${name} is set differently in the branches")

        def whole() -> _PStr:  # nothing shared: an unknown value with every branch's flags
            maybe = _cap(tuple(f for v in values for f in flag_words(v)))
            return unknown_value(name, maybe, any(_hidden(v) for v in values))

        if any(v is MISSING for v in values) and not all(
            isinstance(v, list) or v is MISSING for v in values
        ):
            return whole()
        if all(isinstance(v, list) or v is MISSING for v in values):
            lists = [v if isinstance(v, list) else [] for v in values]
            charge(sum(len(x) for x in lists))
            ref, others = lists[0], lists[1:]
            n = min(len(x) for x in lists)
            # The same objects (a branch appended to the list it started from): compared by
            # identity at C speed; else element by element.
            head = n if all(o[:n] == ref[:n] for o in others) else 0
            while head < n and all(o[head] is ref[head] or _same(ref[head], o[head])
                                   for o in others):  # fmt: skip
                head += 1
            tail = 0
            while tail < n - head and all(o[-1 - tail] is ref[-1 - tail]
                                          or _same(ref[-1 - tail], o[-1 - tail])
                                          for o in others):  # fmt: skip
                tail += 1
            rests = [x[head : len(x) - tail] for x in lists]
            maybe = _cap(tuple(f for m in rests for f in flag_words(m)))
            hidden = any(_hidden(m) for m in rests)
            ends = lists[0][len(lists[0]) - tail :] if tail else []
            return [*lists[0][:head], unknown_value(name, maybe, hidden), *ends]
        if not all(isinstance(v, _PStr) for v in values):
            return whole()
        texts = [v.text for v in values]
        charge(sum(len(t) for t in texts))
        head = _common_head(values)
        tail = _common_tail(values, head)
        middles = [v.cut(head, len(v.text) - tail) for v in values]
        hidden = any(m.hidden for m in middles)
        maybe = _cap(tuple(f for m in middles for f in flag_words(m)))
        marker = unknown_value(name, maybe, hidden)
        # The unknown part is a word of its own unless some branch continues a shared word.
        if (
            head
            and not first.text[head - 1].isspace()
            and not any(m.text[:1] and not m.text[0].isspace() for m in middles)
        ):
            marker = _PStr(" ") + marker
        if (
            tail
            and not first.text[-tail].isspace()
            and not any(m.text[-1:] and not m.text[-1].isspace() for m in middles)
        ):
            marker = marker + _PStr(" ")
        out = first.cut(0, head) + marker
        return out + first.cut(len(first.text) - tail) if tail else out

    def _havoc(self, names: set[str] | frozenset[str], at: int, why: str) -> None:
        """Every variable in ``names`` becomes unknown (keeping the flags it held)."""
        for name in sorted(names):
            current = self.vars.get(name, MISSING)
            self._set(name, unknown_value(name, _cap(flag_words(current))))
        if names:
            self.note(f"line {self.line(at)}: {why}: {', '.join(sorted(names)[:8])} unknown")

    def _afford(self, size: int) -> bool:
        """May a region of ``size`` characters be read again? All re-reading together stays
        within REREAD_FACTOR times the script (and half the expansion budget)."""
        if self._reread + size > REREAD_FACTOR * len(self.text) + REREAD_SLACK or \
                _SPENT[0] + size > MAX_EXPANDED_TOTAL // 2:  # fmt: skip
            return False
        charge(size)
        self._reread += size
        return True

    # -- the grammar: lists, and-or lists, pipelines, commands -------------------------------

    def _list(self, stops: set[str]) -> str | None:
        """Run commands up to one of ``stops`` (a keyword, ``)``, ``;;``): returns it, not
        consumed, or None at the end of the text. ``self.status``: the last command's."""
        self.status = True
        while True:
            self._separators()
            if self.i >= len(self.text):
                return None
            kw = self._keyword()
            if kw is not None and kw in stops:
                return kw
            for stop in (";;&", ";;", ";&", ")"):
                if self.text.startswith(stop, self.i):
                    if stop in stops:
                        return stop
                    self.i += len(stop)  # stray: step over it
                    break
            else:
                self.status = self._and_or()

    def _and_or(self) -> bool | None:
        status = self._pipeline()
        while True:
            self._skip_blank()
            op = self.text[self.i : self.i + 2]
            if op not in ("&&", "||"):
                return status
            self.i += 2
            self._separators(semicolons=False)
            if self.dead():
                self._pipeline()
                continue
            runs = status if op == "&&" else (None if status is None else not status)
            if runs is None:
                at = self.i
                saved = self._fork()
                self._undecided += 1
                self._pipeline()
                self._undecided -= 1
                self._join([self._unfork(saved)], True, at)
                status = None
            elif runs:
                status = self._taken(self._pipeline)
            else:
                self._dead += 1
                self._pipeline()
                self._dead -= 1

    def _pipeline(self) -> bool | None:
        negate = False
        self._skip_blank()
        while self._keyword() in ("!", "time"):
            negate = negate or self._keyword() == "!"
            self.i += len(self._keyword() or "")
            self._skip_blank()
        saved = self._fork()
        status = self._command()
        self._skip_blank()
        if self._peek() == "|" and self._peek(1) != "|":
            while self._peek() == "|" and self._peek(1) != "|":
                self.i += 2 if self._peek(1) == "&" else 1
                self._separators(semicolons=False)
                self._command()
                self._skip_blank()
            self._unfork(saved)  # every part of a pipeline runs in a subshell
            status = None
        else:
            self._commit(saved)
        if negate and status is not None:
            status = not status
        return status

    def _command(self) -> bool | None:
        self._tick()
        self._depth += 1
        if self._depth > MAX_NESTING:
            raise InputError(f"shell nesting deeper than {MAX_NESTING} levels")
        try:
            status = self._command_inner()
        finally:
            self._depth -= 1
        return status

    def _command_inner(self) -> bool | None:
        self._skip_blank()
        kw = self._keyword()
        text = self.text
        if kw == "if":
            self.i += 2
            return self._if()
        if kw == "case":
            self.i += 4
            return self._case()
        if kw in ("while", "until"):
            self.i += len(kw)
            return self._while(kw)
        if kw in ("for", "select"):
            self.i += len(kw)
            return self._for(kw)
        if kw == "{":
            self.i += 1
            status = self._list_status({"}"})
            self._expect("}")
            self._redirections()
            return status
        if kw == "[[":
            self.i += 2
            return self._conditional()
        if kw == "function":
            self.i += len(kw)
            self._skip_blank()
            m = _FUNCDEF.match(text, self.i) or re.compile(r"[A-Za-z_][\w.:-]*").match(text, self.i)
            if m is None:
                return None
            self.i = m.end()
            return self._define(m.group(1) if m.groups() else m.group())
        if text.startswith("((", self.i):
            end = text.find("))", self.i)
            end = len(text) - 2 if end < 0 else end
            inner = text[self.i + 2 : end]
            start = self.i
            self.i = end + 2
            if self.dead():
                return None
            value = self._arith_value(self._expand_text(start + 2, start + 2 + len(inner)))
            return None if value is None else value != 0
        if self._peek() == "(":
            self.i += 1
            saved = self._fork()
            self._list_status({")"})
            if self._peek() == ")":
                self.i += 1
            self._unfork(saved)  # a subshell keeps its assignments (and its exit) to itself
            self._redirections()
            return None
        if kw in ("then", "do", "done", "fi", "esac", "elif", "else", "}", "in"):
            self.note(f"line {self.line(self.i)}: unexpected '{kw}'")
            self.i += len(kw)
            return None
        m = _FUNCDEF.match(text, self.i)
        if m and (m.end() >= len(text) or text[m.end()] != "("):
            self.i = m.end()
            return self._define(m.group(1))
        words, assignments = self._simple()
        return self._execute(words, assignments)

    def _list_status(self, stops: set[str]) -> bool | None:
        self._list(stops)
        return self.status

    def _redirections(self) -> None:
        while True:
            self._skip_blank()
            if not self._redirect():
                return

    def _redirect(self) -> bool:
        """A redirection at ``self.i`` (its target read and dropped; a heredoc's body is
        skipped at the next newline): True when one was there."""
        m = _REDIRECT.match(self.text, self.i)
        if m is None or (m.group(1) in ("<", ">") and self.text.startswith("(", m.end())):
            return False  # none, or <(...) / >(...): a process substitution (a word)
        op = m.group(1)
        self.i = m.end()
        self._skip_blank()
        if op in ("<<", "<<-"):
            delimiter = self._word()
            written = self.text[delimiter.start : self.i]
            tag = "".join(p.text for p, _ in delimiter.parts).strip("'\"")
            self._heredocs.append(tag)
            self._heredoc_body = self._heredoc_text(
                tag, quoted=any(q in written for q in "'\"\\"), tabs=op == "<<-"
            )
            return True
        if op in (">&", "<&") and re.match(r"\d+-?|-", self.text[self.i : self.i + 3]):
            digits = _FD.match(self.text, self.i)
            self.i = digits.end() if digits else self.i
            return True
        self._word()
        return True

    def _simple(self) -> tuple[list[_Word], list[tuple[str, str, Any, int]]]:
        """Read one simple command up to (not including) a newline or an operator."""
        words: list[_Word] = []
        assignments: list[tuple[str, str, Any, int]] = []
        declaring = False
        text = self.text
        while True:
            self._tick()
            self._skip_blank()
            ch = self._peek()
            if ch == "" or ch == "\n" or ch in ";&|)":
                if ch == "&" and self._peek(1) == ">":
                    self._redirect()
                    continue
                break
            if ch == "#":
                self._skip_comment()
                break
            if ch in "<>" and self._peek(1) == "(":  # <(...) / >(...)
                end = self._matching(self.i + 1, "(", ")")
                self.note(f"line {self.line(self.i)}: a process substitution is not run")
                w = _Word(start=self.i)
                w.add(_PStr(text[self.i : end + 1], unresolved=True, at=self.i), False)
                words.append(w)
                self.i = end + 1
                continue
            if self._redirect():
                continue
            if ch == "(":
                break  # not part of a simple command (a subshell follows)
            if not words or declaring:
                m = _ASSIGN.match(text, self.i)
                if m:
                    start = self.i
                    self.i = m.end()
                    name = m.group(1) + (m.group(2) or "")
                    if self._peek() == "(":
                        self.i += 1
                        assignments.append((name, m.group(3), self._array(), start))
                    else:
                        assignments.append((name, m.group(3), self.join(self._word()), start))
                    continue
            before = self.i
            word = self._word()
            if word.parts or word.array is not None or word.quoted:
                if not words and len(word.parts) == 1 and word.parts[0][0].text in _DECLARE:
                    declaring = True
                words.append(word)
                if len(words) > MAX_WORDS:
                    raise InputError(f"a command of more than {MAX_WORDS:,} words")
            if self.i == before:
                self.i += 1  # a character no rule consumed: move on
        return words, assignments

    # -- compound commands -----------------------------------------------------------------

    def _branch(self, decision: bool | None, reached: bool | None, chain: list[_Branch],
                stops: set[str]) -> tuple[str | None, bool | None]:  # fmt: skip
        """Read one branch of an if/case chain. Returns the stop it ended at and whether a
        later branch may still be reached (True, None: maybe, False)."""
        if reached is False or decision is False or self.dead():
            self._dead += 1
            stop = self._list(stops)
            self._dead -= 1
            return stop, reached
        if decision is True and reached is True and not chain:
            ended: list[str | None] = [None]

            def read() -> None:
                ended[0] = self._list(stops)

            self._taken(read)
            return ended[0], False
        saved = self._fork()
        self._undecided += 1
        stop = self._list(stops)
        self._undecided -= 1
        chain.append(self._unfork(saved))
        return stop, (False if decision is True else None)

    def _taken(self, read: Any) -> Any:
        """Read code a decided condition runs. When it ends in an error exit (``[ -z "$IMAGE"
        ] && exit 1`` with IMAGE still empty in a template), the script as written stops
        there, but the run a user launches is the one past the guard: the guard's changes
        are dropped, reading goes on, and a note says so."""
        saved = self._fork()
        self._guard_exit = False
        result = read()
        if self._exited and self._guard_exit:
            self._unfork(saved)
            self._guard_exit = False
            self.note(f"line {self.line(self._guard_at)}: the script exits here as written; "
                      "read as if the check before it passed")  # fmt: skip
            return None
        self._commit(saved)
        return result

    def _if(self) -> bool | None:
        start = self.i
        chain: list[_Branch] = []
        reached: bool | None = True
        dead = self.dead()
        stop: str | None = "elif"
        while stop == "elif":
            if dead or reached is False:
                self._dead += 1
                self._list({"then"})
                self._dead -= 1
                cond: bool | None = False
            else:
                cond = self._list_status({"then"})
            self._expect("then")
            stop, reached = self._branch(cond, reached, chain, {"elif", "else", "fi"})
            if stop == "elif":
                self.i += 4
        if stop == "else":
            self.i += 4
            stop, reached = self._branch(True, reached, chain, {"fi"})
        self._expect("fi")
        if chain:
            self._join(chain, reached is not False, start)
        self._redirections()
        return None if chain else self.status

    def _case(self) -> bool | None:
        start = self.i
        self._skip_blank()
        subject = self.join(self._word())
        self._separators()
        if self._keyword() == "in":
            self.i += 2
        chain: list[_Branch] = []
        reached: bool | None = True
        fall = False  # the arm before ended with ;& or ;;&: this one may run whatever it says
        while True:
            self._separators()
            if self.i >= len(self.text) or self._keyword() == "esac":
                break
            if self._peek() == "(":
                self.i += 1
            patterns: list[_Word] = []
            while self.i < len(self.text):
                self._tick()
                self._skip_blank()
                before = self.i
                patterns.append(self._word())
                self._skip_blank()
                if self._peek() == "|":
                    self.i += 1
                    continue
                if self._peek() == ")":
                    self.i += 1
                    break
                if self.i == before:
                    self.i += 1
            decision = None
            if not (self.dead() or reached is False or fall):
                decision = _case_match(subject, patterns)
            stop, reached = self._branch(decision, reached, chain, {";;", ";&", ";;&", "esac"})
            fall = stop in (";&", ";;&")
            if stop in (";;", ";&", ";;&"):
                if fall and reached is False:
                    reached = None  # falls through to the next arm: it may run too
                self.i += len(stop)
            elif stop is None:
                break
        self._expect("esac")
        if chain:
            self._join(chain, reached is not False, start)
        self._redirections()
        return None

    def _conditional(self) -> bool | None:
        """``[[ ... ]]``: its words are not split; ``&&``, ``||``, ``!``, ``( )`` are its own."""
        tokens: list[Any] = []
        text = self.text
        while self.i < len(text):
            self._tick()
            self._skip_blank()
            if self._peek() == "\n":
                self._newline()
                continue
            if text.startswith("]]", self.i):
                self.i += 2
                break
            op = next((o for o in ("&&", "||", "(", ")", "<", ">") if text.startswith(o, self.i)),
                      None)  # fmt: skip
            if op is not None:
                tokens.append(op)
                self.i += len(op)
                continue
            before = self.i
            word = self._word()
            tokens.append(word)
            if self.i == before:
                self.i += 1
        self._redirections()
        if self.dead():
            return None
        return _Cond(self, tokens).run()

    def _while(self, kind: str) -> bool | None:
        at = self.i
        if self.dead():
            self._dead += 1
            self._list({"do"})
            self._expect("do")
            self._list({"done"})
            self._dead -= 1
        else:
            names: set[str] = set()
            self._collect.append(names)
            cond = self._list_status({"do"})
            self._collect.pop()
            self._expect("do")
            runs = cond if kind == "while" else (None if cond is None else not cond)
            if runs is False:
                self._dead += 1
                self._list({"done"})
                self._dead -= 1
            else:  # its condition may change as it runs: the count is unknown
                self._undecided_loop(self.i, names, at)
        self._expect("done")
        self._redirections()
        return None

    def _for(self, kind: str) -> bool | None:
        at = self.i
        self._skip_blank()
        text = self.text
        var: str | None = None
        items: list[_PStr] | None = None
        if text.startswith("((", self.i):
            end = text.find("))", self.i)
            self.i = len(text) if end < 0 else end + 2
        else:
            m = _NAME.match(text, self.i)
            if m:
                var = m.group()
                self.i = m.end()
                for names in self._collect:
                    names.add(var)
            self._skip_blank()
            if self._keyword() == "in":
                self.i += 2
                items = []
                while True:
                    self._tick()
                    self._skip_blank()
                    ch = self._peek()
                    if ch in ("", "\n", ";") or ch in "&|)":
                        break
                    before = self.i
                    items.extend(self.expand(self._word()))
                    if self.i == before:
                        self.i += 1
        self._expect("do")
        body = self.i
        if self.dead():
            self._dead += 1
            self._list({"done"})
            self._dead -= 1
        elif kind == "for" and items is not None and not any(w.unresolved for w in items) \
                and len(items) <= MAX_UNROLL and var is not None:  # fmt: skip
            self._unrolled_loop(body, var, items, at)
        else:
            self._undecided_loop(body, {var} if var else set(), at)
        self._expect("done")
        self._redirections()
        return None

    def _unrolled_loop(self, body: int, var: str, items: list[_PStr], at: int) -> None:
        names: set[str] = {var}
        self._collect.append(names)
        frame = _Frame("loop", self._undecided)
        self._frames.append(frame)
        end = None
        try:
            if not items:
                self._dead += 1
                self._list({"done"})
                self._dead -= 1
            for k, item in enumerate(items):
                if k and (end is None or not self._afford(end - body)):
                    frame.escaped = True  # the rest is not re-read: what it sets is unknown
                    break
                self.i = body
                self._set(var, item)
                self._list({"done"})
                end = self.i
                if self._skip == "continue":
                    self._skip = None
                if self._skip == "break" or self._exited:
                    if self._skip == "break":
                        self._skip = None
                    break
        finally:
            self._frames.pop()
            self._collect.pop()
        if end is not None:
            self.i = end
        else:
            self._dead += 1
            self._list({"done"})
            self._dead -= 1
        if frame.escaped:
            self._havoc(names, at, "a loop is not followed to its end")

    def _undecided_loop(self, body: int, names: set[str], at: int) -> None:
        """A loop run an unknown number of times: read its body once without running it (the
        names it may assign), then once more from a state where those are unknown."""
        self._collect.append(names)
        self._dead += 1
        self.i = body
        self._list({"done"})
        self._dead -= 1
        self._collect.pop()
        end = self.i
        if self.dead():
            return
        if not self._afford(end - body):
            self._havoc(names, at, "a loop runs an unknown number of times")
            return
        saved = self._fork()
        self._havoc(names, at, "a loop runs an unknown number of times")
        frame = _Frame("loop", self._undecided)
        self._frames.append(frame)
        self.i = body
        self._undecided += 1
        self._list({"done"})
        self._undecided -= 1
        self._frames.pop()
        self._skip = None
        self._join([self._unfork(saved)], True, at)
        self.i = end

    def _define(self, name: str) -> bool | None:
        """``name() { ... }``: read its body without running it; it runs where called."""
        self._separators()
        start = self.i
        names: set[str] = set()
        self._collect.append(names)
        self._dead += 1
        self._command()
        self._dead -= 1
        self._collect.pop()
        if not self.dead():
            self.functions[name] = (start, self.i, frozenset(names))
        return True

    def _call(self, name: str, at: int) -> bool | None:
        start, end, names = self.functions[name]
        if self._calls >= MAX_CALL_DEPTH or not self._afford(end - start):
            self._havoc(set(names), at, f"function {name} is not followed")
            return None
        saved_i = self.i
        frame = _Frame("function", self._undecided)
        self._frames.append(frame)
        self._locals.append({})
        self._calls += 1
        try:
            self.i = start
            self._command()
        finally:
            self._calls -= 1
            self._frames.pop()
            self.i = saved_i
        if self._skip == "return":
            self._skip = None
        for local, old in self._locals.pop().items():
            self._set(local, old)
        if frame.escaped:
            self._havoc(set(names), at, f"function {name} returns from an undecided branch")
        return None

    def _escape(self, kind: str) -> None:
        """``break``/``continue``/``return``: the rest of the loop body / function is skipped."""
        wanted = "function" if kind == "return" else "loop"
        frame = next((f for f in reversed(self._frames) if f.kind == wanted), None)
        if frame is None:
            return
        if self._undecided > frame.base:
            frame.escaped = True
        self._skip = kind

    # -- running a simple command --------------------------------------------------------

    def _execute(self, words: list[_Word], assignments: list[tuple[str, str, Any, int]]) -> \
            bool | None:  # fmt: skip
        for name, _, _, _ in assignments:
            for names in self._collect:
                names.add(name.split("[")[0])
        if self.dead():
            if self._collect and words and words[0].parts:
                first = words[0].parts[0][0].text
                if first in self.functions:
                    for names in self._collect:
                        names.update(self.functions[first][2])
                self._collect_builtin(words)
            return None
        expanded: list[_PStr] = []
        for word in words:
            expanded.extend(self.expand(word))
            if len(expanded) > MAX_WORDS:
                raise InputError(f"a command of more than {MAX_WORDS:,} words")
        while expanded and expanded[0].text in _PREFIXES and not expanded[0].unresolved:
            expanded.pop(0)
        if not expanded:
            for name, op, value, _ in assignments:
                self._assign(name, op, value)
            return True
        at = words[0].start if words else self.i
        head = expanded[0].text if not expanded[0].unresolved else ""
        args = expanded[1:]
        if head in self.functions:  # a function hides the builtin of its name
            return self._call(head, at)
        if head in _DECLARE:
            self._declare(head, args, assignments)
            return True
        status = self._builtin(head, args, at)
        if status is not NotImplemented:
            return status  # type: ignore[no-any-return]
        self.commands.append(_Command(expanded, assignments, self._undecided > 0))
        return None

    def _collect_builtin(self, words: list[_Word]) -> None:
        """Names a dead ``read``/``unset``/``mapfile`` would set (for a loop's havoc)."""
        texts = [self.join(w).text for w in words]
        if texts and texts[0] in ("read", "mapfile", "readarray", "unset", "printf"):
            for t in texts[1:]:
                if _NAME.fullmatch(t):
                    for names in self._collect:
                        names.add(t)

    def _declare(self, head: str, args: list[_PStr], assignments: list[Any]) -> None:
        options = "".join(a.text[1:] for a in args if a.text.startswith("-"))
        export = head == "export" or "x" in options
        in_function = head == "local" or (head in ("declare", "typeset") and self._locals
                                          and "g" not in options)  # fmt: skip
        for name, op, value, _ in assignments:
            base = name.split("[")[0]
            if in_function and self._locals and base not in self._locals[-1]:
                self._locals[-1][base] = self.vars.get(base, MISSING)
            self._assign(name, op, value)
            if export:
                self._export(base)
        for arg in args:
            if arg.text.startswith("-") or arg.unresolved:
                continue
            m = _ASSIGN.match(arg.text)
            if m:  # export "NAME=value" written as one quoted word
                cut = m.end()
                if in_function and self._locals and m.group(1) not in self._locals[-1]:
                    self._locals[-1][m.group(1)] = self.vars.get(m.group(1), MISSING)
                self._assign(m.group(1), m.group(3), arg.cut(cut))
                if export:
                    self._export(m.group(1))
            elif _NAME.fullmatch(arg.text):
                if in_function and self._locals and arg.text not in self._locals[-1]:
                    self._locals[-1][arg.text] = self.vars.get(arg.text, MISSING)
                    self._set(arg.text, MISSING)
                if export:
                    self._export(arg.text)

    def _export(self, name: str) -> None:
        if name not in self.exported and len(self.exported) < 1000:
            self.exported.append(name)

    def _builtin(self, head: str, args: list[_PStr], at: int) -> Any:
        """A builtin's status (NotImplemented: not a builtin the reader models)."""
        if head == "exit":
            # ``exit 1`` (or an unknown status): a guard that stops a run whose settings are
            # not filled in yet; the run moe-lint lints is the one that gets past it.
            code = args[0].text if args else "0"
            self._guard_exit = not (code.isdigit() and int(code) == 0)
            self._guard_at = at
            self._exited = True
            return None
        if head in ("return", "break", "continue"):
            self._escape(head)
            return None
        if head in ("[", "test"):
            if head == "[":
                if not args or args[-1].text != "]":
                    return False
                args = args[:-1]
            return test_status(args)
        if head == "false":
            return False
        if head in ("source", "."):
            # A file the reader does not see may set any variable: what the script set
            # before is unknown, and so is every ${X:-default} after (X may be set there).
            self._havoc(set(self.vars), at, "the sourced file is not read")
            self._sourced = True
            return None
        if head == "unset":
            function = any(a.text == "-f" for a in args)
            for a in args:
                if not a.text.startswith("-") and not a.unresolved:
                    if function:
                        self.functions.pop(a.text, None)
                    else:
                        self._set(a.text, MISSING)
            return True
        if head in ("read", "mapfile", "readarray"):
            targets = [a.text for a in args if _NAME.fullmatch(a.text) and not a.unresolved]
            body = self._heredoc_body
            texts = [a.text for a in args]
            if (
                head == "read"
                and body is not None
                and len(targets) == 1
                and "-d" in texts[:-1]
                and texts[texts.index("-d") + 1] == ""
            ):
                # read -r -d '' VAR <<'EOF': the whole body, its blank ends trimmed (IFS)
                lead = len(body.text) - len(body.text.lstrip(" \t\n"))
                trail = len(body.text.rstrip(" \t\n"))
                self._set(targets[0], body.cut(lead, max(trail, lead)))
                return False  # it reads to the end of input without finding the NUL
            for name in targets or (["REPLY"] if head == "read" else ["MAPFILE"]):
                self._set(name, unknown_value(name))
            return None
        if head == "printf" and len(args) > 1 and args[0].text == "-v":
            self._set(args[1].text, unknown_value(args[1].text))
            return True
        if head == "eval":
            self.note(f"line {self.line(at)}: eval is not run")
            for a in args:  # what it may assign is unknown
                for m in re.finditer(r"(?:^|[\s;])([A-Za-z_]\w*)\+?=", a.text):
                    self._set(m.group(1), unknown_value(m.group(1)))
            return None
        if head in _SUCCEED:
            return True
        return NotImplemented

    def _assign(self, name: str, op: str, value: _PStr | list[_PStr]) -> None:
        index = None
        if "[" in name:
            name, index = name.split("[", 1)
            index = index.rstrip("]")
        old = self.vars.get(name)
        if index is not None:  # A[i]=v: an element (the array becomes unknown unless simple)
            base = old if isinstance(old, list) else ([old] if old is not None else [])
            item = value if isinstance(value, _PStr) else _joined(value)
            if index.isdigit() and int(index) <= len(base) and not item.unresolved:
                charge_words(len(base))
                new = list(base)
                if int(index) == len(new):
                    new.append(item)
                else:
                    new[int(index)] = item if op == "=" else new[int(index)] + item
                self._set(name, new)
            else:
                self._set(name, unknown_value(name, flag_words(base) + flag_words(item)))
            return
        if op == "+=" and old is not None:
            if isinstance(value, list):
                base = old if isinstance(old, list) else [old]
                charge_words(len(base) + len(value))
                value = base + value
            elif isinstance(old, list):
                charge_words(len(old))
                value = [*old[:-1], old[-1] + value] if old else [value]
            else:
                value = old + value
        if isinstance(value, list) and len(value) > MAX_WORDS:
            raise InputError(f"array {name} of more than {MAX_WORDS:,} words")
        self._set(name, value)


# --- conditions -------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if a is MISSING or b is MISSING:
        return False
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, _PStr) and isinstance(b, _PStr):
        return a.text == b.text and not a.unresolved and not b.unresolved
    return False


def _hidden(value: Any) -> bool:
    items = value if isinstance(value, list) else [value]
    return any(isinstance(v, _PStr) and v.hidden for v in items)


def _first_unknown(idx: Idx) -> int:
    try:
        return idx.index(UNKNOWN_AT)
    except ValueError:
        return len(idx)


def _boundary(text: str, k: int) -> bool:
    """Is position ``k`` between two words (or at an end) of ``text``?"""
    return k in (0, len(text)) or text[k].isspace() or text[k - 1].isspace()


def _common_head(values: list[_PStr]) -> int:
    """Characters all values share at the start (known ones), ending between words in
    every value."""
    texts = [v.text for v in values]
    k = len(os.path.commonprefix(texts))  # noqa: RUF071 (characters, not path parts)
    k = min([k, *(_first_unknown(v.idx) for v in values)])
    while k > 0 and not all(_boundary(t, k) for t in texts):
        k -= 1
    return k


def _common_tail(values: list[_PStr], head: int) -> int:
    """Characters all values share at the end, after ``head``, starting between words."""
    texts = [v.text for v in values]
    n = min(len(t) for t in texts) - head
    k = min(n, len(os.path.commonprefix([t[::-1] for t in texts])))  # noqa: RUF071
    k = min([k, *(_first_unknown(v.idx[::-1]) for v in values)])
    while k > 0 and not all(_boundary(t, len(t) - k) for t in texts):
        k -= 1
    return k


def _glob_regex(word: _Word) -> re.Pattern[str] | None:
    """A ``case`` / ``[[ == ]]`` pattern as a regex (None: a part of it is unknown, or it
    is longer than bounds.MAX_PATTERN_CHARS: compiling a regex costs microseconds a
    character, and real patterns are a few words)."""
    out = []
    if (
        sum(len(p.text) for p, _ in word.parts) + sum(len(x.text) for x in word.array or ())
        > MAX_PATTERN_CHARS
    ):
        return None
    if word.array is not None:
        word = _Word([(_joined(word.array), False), *word.parts],
                     [False, *word.globs], None, word.start)  # fmt: skip
    for (part, _), glob in zip(word.parts, word.globs, strict=True):
        if part.unresolved:
            return None
        if not glob:
            out.append(re.escape(part.text))
            continue
        text, k = part.text, 0
        while k < len(text):
            c = text[k]
            if c == "*":
                out.append(".*")
            elif c == "?":
                out.append(".")
            elif c == "[":
                close = text.find("]", k + 2)
                if close < 0:
                    out.append(re.escape(c))
                else:
                    body = text[k + 1 : close]
                    if body.startswith("!"):
                        body = "^" + body[1:]
                    if "[" in body or "\\" in body:
                        return None  # character classes ([:alpha:]) are not read
                    out.append("[" + body + "]")
                    k = close
            else:
                out.append(re.escape(c))
            k += 1
    try:
        return re.compile("".join(out), re.S)
    except re.error:
        return None


def _case_match(subject: _PStr, patterns: list[_Word]) -> bool | None:
    if subject.unresolved:
        return None
    unknown = False
    for pattern in patterns:
        regex = _glob_regex(pattern)
        if regex is None:
            unknown = True
        elif regex.fullmatch(subject.text):
            return None if unknown else True
    return None if unknown else False


def _int(text: str) -> int | None:
    text = text.strip()
    return int(text) if re.fullmatch(r"[-+]?\d{1,18}", text) else None


def test_status(args: list[_PStr]) -> bool | None:
    """``test`` / ``[ ]`` on expanded words, by POSIX's rules for 0-4 arguments (more: ``-a``,
    ``-o``, ``!``, ``( )`` by precedence). None when it needs an unknown word or the file
    system."""
    if any(a.unresolved for a in args):
        return None
    words = [a.text for a in args]
    return _test_words(words)


def _test_words(w: list[str]) -> bool | None:
    n = len(w)
    if n == 0:
        return False
    if n == 1:
        return w[0] != ""
    if n == 2:
        if w[0] == "!":
            return w[1] == ""
        return _unary(w[0], w[1])
    if n == 3:
        if w[1] in _BINARY or w[1] in _INT_OPS:
            return _binary(w[0], w[1], w[2], strict=True)
        if w[0] == "!":
            return _not(_test_words(w[1:]))
        if w[0] == "(" and w[2] == ")":
            return w[1] != ""
        return None
    if n == 4:
        if w[0] == "!":
            return _not(_test_words(w[1:]))
        if w[0] == "(" and w[3] == ")":
            return _test_words(w[1:3])
    return _TestParser(w).parse()


def _not(v: bool | None) -> bool | None:
    return None if v is None else not v


def _unary(op: str, arg: str) -> bool | None:
    if op == "-z":
        return arg == ""
    if op == "-n":
        return arg != ""
    if len(op) == 2 and op[0] == "-" and op[1] in _FILE_TESTS | {"t", "o", "v", "R"}:
        return None  # the file system, the terminal, shell options
    return None


def _binary(a: str, op: str, b: str, strict: bool) -> bool | None:
    if op in ("=", "=="):
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b
    if op == ">":
        return a > b
    if op in _INT_OPS:
        x, y = _int(a), _int(b)
        if x is None or y is None:
            return False if strict else None  # "integer expression expected": status 2
        return bool(_COMPARE[op](x, y))
    if op == "-a":
        return a != "" and b != ""
    if op == "-o":
        return a != "" or b != ""
    return None


class _TestParser:
    """``test`` with more than four arguments: -o < -a < ! < primaries."""

    def __init__(self, words: list[str]) -> None:
        self.w = words
        self.k = 0

    def parse(self) -> bool | None:
        value = self._or()
        return value if self.k == len(self.w) else None

    def _peek(self) -> str | None:
        return self.w[self.k] if self.k < len(self.w) else None

    def _or(self) -> bool | None:
        value = self._and()
        while self._peek() == "-o":
            self.k += 1
            value = _or3(value, self._and())
        return value

    def _and(self) -> bool | None:
        value = self._not()
        while self._peek() == "-a":
            self.k += 1
            value = _and3(value, self._not())
        return value

    def _not(self) -> bool | None:
        if self._peek() == "!":
            self.k += 1
            return _not(self._not())
        return self._primary()

    def _primary(self) -> bool | None:
        w = self.w
        if self._peek() == "(":
            self.k += 1
            value = self._or()
            if self._peek() == ")":
                self.k += 1
            return value
        if self.k + 2 < len(w) and (w[self.k + 1] in ("=", "==", "!=", "<", ">")
                                    or w[self.k + 1] in _INT_OPS):  # fmt: skip
            value = _binary(w[self.k], w[self.k + 1], w[self.k + 2], strict=True)
            self.k += 3
            return value
        if self.k + 1 < len(w) and w[self.k].startswith("-") and len(w[self.k]) == 2:
            value = _unary(w[self.k], w[self.k + 1])
            self.k += 2
            return value
        if self.k < len(w):
            self.k += 1
            return w[self.k - 1] != ""
        return None


def _and3(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or3(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


class _Cond:
    """``[[ ... ]]``: ``||`` < ``&&`` < ``!`` < ``( )`` and primaries; ``==``/``!=`` match a
    pattern, ``-eq`` and kin compare integers (an empty or unset operand is 0)."""

    def __init__(self, reader: ShellReader, tokens: list[Any]) -> None:
        self.r = reader
        self.t = tokens
        self.k = 0

    def run(self) -> bool | None:
        value = self._or()
        return value if self.k == len(self.t) else None

    def _peek(self) -> Any:
        return self.t[self.k] if self.k < len(self.t) else None

    def _text(self, tok: Any) -> str | None:
        """A word's text (None: unknown); an operator token's own text."""
        if isinstance(tok, str):
            return tok
        value = self.r.join(tok)
        return None if value.unresolved else value.text

    def _is(self, tok: Any, *texts: str) -> bool:
        return (isinstance(tok, str) and tok in texts) or (
            isinstance(tok, _Word) and len(tok.parts) == 1 and tok.parts[0][0].text in texts
            and tok.globs == [True]
        )  # fmt: skip

    def _or(self) -> bool | None:
        value = self._and()
        while self._peek() == "||":
            self.k += 1
            value = _or3(value, self._and())
        return value

    def _and(self) -> bool | None:
        value = self._not()
        while self._peek() == "&&":
            self.k += 1
            value = _and3(value, self._not())
        return value

    def _not(self) -> bool | None:
        if self._is(self._peek(), "!"):
            self.k += 1
            return _not(self._not())
        return self._primary()

    def _primary(self) -> bool | None:
        t = self.t
        if self._peek() == "(":
            self.k += 1
            value = self._or()
            if self._peek() == ")":
                self.k += 1
            return value
        if self.k + 2 < len(t) and self._binop(t[self.k + 1]):
            left, op, right = t[self.k], t[self.k + 1], t[self.k + 2]
            self.k += 3
            return self._compare(left, self._text(op) or "", right)
        tok = self._peek()
        text = self._text(tok) if tok is not None else None
        if (text is not None and len(text) == 2 and text.startswith("-")
                and self.k + 1 < len(t)):  # fmt: skip
            operand = t[self.k + 1]
            self.k += 2
            if text == "-v":
                name = self._text(operand)
                return True if name in self.r.vars else None
            arg = self._text(operand)
            return None if arg is None else _unary(text, arg)
        self.k += 1
        return None if text is None else text != ""

    def _binop(self, tok: Any) -> bool:
        if tok in ("<", ">"):
            return True
        return isinstance(tok, _Word) and self._text(tok) in (
            "==", "=", "!=", "=~", *_INT_OPS, "-nt", "-ot", "-ef"
        )  # fmt: skip

    def _compare(self, left: Any, op: str, right: Any) -> bool | None:
        a = self._text(left)
        if op in ("==", "=", "!="):
            regex = _glob_regex(right) if isinstance(right, _Word) else None
            if a is None or regex is None:
                return None
            hit = regex.fullmatch(a) is not None
            return hit if op != "!=" else not hit
        if op in _INT_OPS:
            x, y = self._arith(left), self._arith(right)
            return None if x is None or y is None else _binary(str(x), op, str(y), strict=True)
        b = self._text(right)
        if a is None or b is None or op in ("=~", "-nt", "-ot", "-ef"):
            return None
        return _binary(a, op, b, strict=False)

    def _arith(self, tok: Any) -> int | None:
        text = self._text(tok)
        if text is None:
            return None
        if text.strip() == "":
            return 0
        value = _int(text)
        if value is not None:
            return value
        if _NAME.fullmatch(text):  # a variable name: its value (unset: 0)
            v = self.r.vars.get(text)
            if v is None:
                return None  # may be set in the environment
            if isinstance(v, _PStr) and not v.unresolved:
                return _int(v.text) if v.text.strip() else 0
        return None


def safe_int(expr: str) -> int | None:
    """An integer expression of + - * / % and parentheses, or None."""
    if len(expr) > 200 or not re.fullmatch(r"[\d\s+\-*/%()]*", expr) or not expr.strip():
        return None
    try:
        tree = ast.parse(expr.replace("/", "//"), mode="eval")
    except SyntaxError:
        return None

    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            if node.value > 1 << 62:
                raise ValueError
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Add):
                r = a + b
            elif isinstance(node.op, ast.Sub):
                r = a - b
            elif isinstance(node.op, ast.Mult):
                r = a * b
            elif isinstance(node.op, ast.FloorDiv | ast.Mod) and b:
                r = a // b if isinstance(node.op, ast.FloorDiv) else a % b
            else:
                raise ValueError
            if abs(r) > 1 << 62:
                raise ValueError
            return r
        raise ValueError

    try:
        return ev(tree)
    except (ValueError, RecursionError):
        return None


def reset_budget() -> None:
    """Start a new input's expansion and step budgets."""
    _SPENT[0] = _SPENT[1] = 0
