"""The finding record every stage after the rules works with, and its JSON form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

SEVERITIES = ("info", "warning", "error")
SEVERITY_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}
APPLICABILITIES = ("safe", "unsafe", "display-only")


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


def primary_source(source: str) -> str:
    """The first of several ';'-separated sources (an error rule's primary raise site)."""
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


@dataclass
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

    @property
    def full_message(self) -> str:
        """The message naming the Megatron/Bridge check it anticipates, for machine formats."""
        if not self.source:
            return self.message
        return f"{self.message} [{primary_source(self.source)}]"

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.file, self.line, self.column, self.code, self.path)

    def to_json(self) -> dict[str, Any]:
        """The stable, documented JSON record (README "JSON output")."""
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity,
            "message": self.full_message,
            "path": self.path,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "derivation": self.derivation,
            "fix": self.fix,
            "applicability": self.applicability,
            "edits": [e.to_json() for e in self.edits],
        }
