"""Where a config entry sits in its text: a position and a span (key and value).

Shared by the YAML loader (config/load.py) and the Megatron-LM reader (config/mlm_args.py).
"""

from __future__ import annotations

from moe_lint.records import NamedTuple


class Pos:
    """A 1-based line/column plus the 0-based character index into the decoded text.

    A plain class (not a NamedTuple, whose ``index`` method the field would shadow).
    """

    __slots__ = ("column", "index", "line")

    def __init__(self, line: int, column: int, index: int) -> None:
        self.line = line
        self.column = column
        self.index = index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pos) and (self.line, self.column, self.index) == (
            other.line, other.column, other.index)  # fmt: skip

    def __hash__(self) -> int:
        return hash((self.line, self.column, self.index))

    def __repr__(self) -> str:
        return f"Pos(line={self.line}, column={self.column}, index={self.index})"


class Span(NamedTuple):
    """Where one config entry sits: its key (absent for list items) and its value."""

    key_start: Pos | None
    key_end: Pos | None
    value_start: Pos
    value_end: Pos
    #: True when the value is a plain or quoted scalar whose text can be replaced in place.
    scalar: bool
    #: YAML scalar style ('' plain, "'" or '"' quoted, '|' / '>' block) for faithful rewrites.
    style: str | None = None
    #: For mappings and sequences: True when written in flow style ({...} / [...]).
    flow: bool = False
