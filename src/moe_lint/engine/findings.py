"""The finding record every stage after the rules works with, and its JSON form."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from moe_lint.records import NamedTuple, field, record

SEVERITIES = ("info", "warning", "error")
SEVERITY_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}
APPLICABILITIES = ("safe", "unsafe", "display-only")
#: Codes split out of an older code (one code, one problem: issue 11). A suppression comment or
#: a baseline entry of the older code still covers them, as it did before the split.
SPLIT_FROM: dict[str, tuple[str, ...]] = {"PP002": ("PP016", "PP017")}
#: Each rule's documentation page, for JSON (``url``) and SARIF (``helpUri``); the pages are
#: generated into docs/rules/ from the rule packs (``python tools/rule_docs.py``).
DOCS_URL = "https://github.com/moe-lint/moe-lint/blob/main/docs/rules/{code}.md"


def docs_url(code: str) -> str:
    """The documentation page of rule ``code``."""
    return DOCS_URL.format(code=code)


def split_parents(code: str) -> list[str]:
    """The older codes ``code`` was split out of (usually none)."""
    return [parent for parent, split in SPLIT_FROM.items() if code in split]


def split_sources(source: str) -> list[str]:
    """The ';'-separated sources of a rule, ignoring ';' inside parentheses or brackets."""
    parts: list[str] = []
    depth = start = 0
    for i, char in enumerate(source):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == ";" and depth == 0:
            parts.append(source[start:i].strip())
            start = i + 1
    parts.append(source[start:].strip())
    return [part for part in parts if part]


@lru_cache(maxsize=1024)
def primary_source(source: str) -> str:
    """The first of several ';'-separated sources (an error rule's primary raise site).

    Cached: every finding's message names it, and a rule has one source (20,000 findings of
    one rule scanned the same 200 characters 20,000 times)."""
    parts = split_sources(source)
    return parts[0] if parts else source.strip()


class Edit(NamedTuple):
    """Replace ``text[start:end]`` (character indices) with ``content``."""

    start: int
    end: int
    content: str
    start_line: int
    start_column: int
    end_line: int
    end_column: int

    def to_json(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "location": {"line": self.start_line, "column": self.start_column},
            "end_location": {"line": self.end_line, "column": self.end_column},
        }


class Argument(NamedTuple):
    """Where a finding about a command-line override sits: the argument and its text."""

    #: 1-based position among the command-line arguments after the program name (the shell's
    #: ``$N``); None when the override did not come from a command line (the library API).
    position: int | None
    text: str

    @property
    def where(self) -> str:
        """``command line argument 3`` (``override`` when no position is known)."""
        return "override" if self.position is None else f"command line argument {self.position}"

    @property
    def label(self) -> str:
        """``command line argument 3 (model.contxt_parallel_size=16)``."""
        return f"{self.where} ({self.text})"

    def to_json(self) -> dict[str, Any]:
        return {"index": self.position, "text": self.text}


@record
class Finding:
    """One problem found in one file, located and explained."""

    code: str
    name: str
    severity: str
    message: str
    path: str
    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    derivation: str | None = None
    fix: str | None = None
    applicability: str | None = None
    edits: list[Edit] = field(default_factory=list)
    #: The rule's source check (Megatron/Bridge file::function), shown in text output.
    source: str | None = None
    #: Set for a finding about a command-line override: it has no line in the file
    #: (``line``/``column`` are 0) and is located at the argument instead.
    argument: Argument | None = None

    @property
    def full_message(self) -> str:
        """The message naming the Megatron/Bridge check it anticipates, for machine formats;
        a finding about an override starts with the argument it is about."""
        text = (
            self.message if not self.source else f"{self.message} [{primary_source(self.source)}]"
        )
        return f"{self.argument.label}: {text}" if self.argument else text

    def position(self) -> tuple[int, int]:
        """(line, column) for formats that need one: a command-line finding is given the
        file-level position 1:1 (as ruff does for file-level diagnostics)."""
        return (self.line, self.column) if self.argument is None else (1, 1)

    def sort_key(self) -> tuple[str, int, int, int, str, str]:
        """File order; a file's command-line findings first, in argument order."""
        index = self.argument.position or 0 if self.argument else 0
        return (self.file, self.line, index, self.column, self.code, self.path)

    def to_json(self) -> dict[str, Any]:
        """The stable, documented JSON record (README "JSON output")."""
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity,
            "message": self.full_message,
            "path": self.path,
            "file": self.file,
            "line": self.line if self.argument is None else None,
            "column": self.column if self.argument is None else None,
            "end_line": self.end_line if self.argument is None else None,
            "end_column": self.end_column if self.argument is None else None,
            "argument": self.argument.to_json() if self.argument else None,
            "derivation": self.derivation,
            "fix": self.fix,
            "applicability": self.applicability,
            "edits": [e.to_json() for e in self.edits],
            "url": docs_url(self.code),
        }


def fold_implied(findings: list[Finding], implied_by: dict[str, tuple[str, ...]]) -> list[Finding]:
    """One cause, one finding: a finding whose rule is ``implied_by`` a code also reported for
    this input (PAR002's indivisible expert grid when PAR001 already says the world does not
    tile) is folded into that root finding, whose derivation then names it."""
    codes = {f.code: f for f in findings}
    kept: list[Finding] = []
    for finding in findings:
        root = next((codes[c] for c in implied_by.get(finding.code, ()) if c in codes), None)
        if root is None:
            kept.append(finding)
            continue
        note = f"also {finding.code}: {finding.message}"
        root.derivation = f"{root.derivation}; {note}" if root.derivation else note
    return kept


#: The code every format gives a file that could not be linted (README "Input errors"): it is
#: not a rule, cannot be selected or ignored, and always means exit code 2.
INPUT_ERROR_CODE = "E000"
INPUT_ERROR_NAME = "input-error"
_POSITION = re.compile(r"line (\d+)(?:, column (\d+))?: ")


@record(frozen=True)
class InputProblem:
    """A file that could not be linted (``FileResult.error``): malformed YAML, a duplicate key,
    a value of the wrong type, an unreadable or hostile file."""

    file: str
    message: str
    line: int | None = None
    column: int | None = None

    @classmethod
    def parse(cls, file: str, error: str) -> InputProblem:
        """Split the ``line N, column M: `` prefix the loader puts on located errors."""
        match = _POSITION.match(error)
        if match is None:
            return cls(file, error)
        column = int(match.group(2)) if match.group(2) else None
        return cls(file, error[match.end() :] or error, int(match.group(1)), column)

    @property
    def where(self) -> str:
        """``file:line:col`` as far as it is known."""
        parts = [self.file, *(str(n) for n in (self.line, self.column) if n is not None)]
        return ":".join(parts)

    def to_json(self) -> dict[str, Any]:
        """The JSON record: a finding-shaped entry with code ``E000`` (README "Input errors")."""
        return {
            "code": INPUT_ERROR_CODE,
            "name": INPUT_ERROR_NAME,
            "severity": "error",
            "message": self.message,
            "path": "",
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "end_line": self.line,
            "end_column": self.column,
            "argument": None,
            "derivation": None,
            "fix": None,
            "applicability": None,
            "edits": [],
            "url": None,
        }
