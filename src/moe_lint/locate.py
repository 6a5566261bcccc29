"""Turn config paths into source spans, and path-level fixes into text edits.

Rules never see line numbers: they name a config path and the engine resolves it here. A path
the file does not contain (a default, a preset value) is anchored at its nearest written
ancestor, or at the top of the file.
"""

from __future__ import annotations

import re
from typing import Any

from moe_lint.findings import Edit
from moe_lint.load import ConfigPath, Document, Pos, Span

_PLAIN_SAFE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-+/]*$")
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


def find_span(doc: Document, path: ConfigPath) -> tuple[Span | None, ConfigPath]:
    """The span of ``path`` or of its nearest ancestor present in the document."""
    probe = path
    while probe:
        span = doc.spans.get(probe)
        if span is not None:
            return span, probe
        probe = probe[:-1]
    return None, ()


def location(doc: Document, path: ConfigPath) -> tuple[int, int, int, int]:
    """(line, column, end_line, end_column), 1-based, for a finding at ``path``."""
    span, _ = find_span(doc, path)
    if span is None:
        return 1, 1, 1, 1
    start = span.key_start or span.value_start
    end = span.value_end if span.scalar else (span.key_end or span.value_start)
    if end.line < start.line or (end.line == start.line and end.column < start.column):
        end = start
    return start.line, start.column, end.line, end.column


def render_scalar(value: Any, style: str | None = None) -> str:
    """A YAML rendering of ``value`` that reads back as the same value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(render_scalar(v) for v in value) + "]"
    text = str(value)
    if style == "'":
        return "'" + text.replace("'", "''") + "'"
    if style == '"' or not _PLAIN_SAFE.match(text) or text.lower() in _YAML_WORDS:
        import json

        return json.dumps(text)
    return text


def _newline(text: str) -> str:
    """The file's own line ending, so an inserted line matches its neighbours."""
    return "\r\n" if "\r\n" in text else "\n"


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _pos_of(text: str, index: int) -> Pos:
    line = text.count("\n", 0, index) + 1
    return Pos(line, index - _line_start(text, index) + 1, index)


def _edit(text: str, start: int, end: int, content: str) -> Edit:
    a, b = _pos_of(text, start), _pos_of(text, end)
    return Edit(start, end, content, a.line, a.column, b.line, b.column)


def set_value_edit(doc: Document, path: ConfigPath, value: Any) -> Edit | None:
    """An edit that sets ``path`` to ``value``; None when no faithful text edit exists."""
    text = doc.text
    span = doc.spans.get(path)
    if span is not None:
        if not span.scalar:
            if isinstance(value, list) and span.flow:
                return _edit(
                    text, span.value_start.index, span.value_end.index, render_scalar(value)
                )
            return _replace_target_node(doc, path, span, value)
        return _edit(
            text, span.value_start.index, span.value_end.index, render_scalar(value, span.style)
        )
    if not path or isinstance(path[-1], int):
        return None
    parent_path, key = path[:-1], path[-1]
    if not parent_path:
        return None
    parent = doc.spans.get(parent_path)
    if parent is None:
        if len(parent_path) == 1:  # whole section missing: append it at the end of the file
            eol = _newline(text)
            sep = "" if text.endswith("\n") or not text else eol
            content = f"{sep}{parent_path[0]}:{eol}  {key}: {render_scalar(value)}{eol}"
            return _edit(text, len(text), len(text), content)
        return None
    # Only block mappings (or an empty "section:") can take a new line; flow style and a
    # section set to a scalar cannot be edited faithfully.
    empty_block = parent.scalar and parent.value_start.index == parent.value_end.index
    if parent.key_start is None or parent.flow or (parent.scalar and not empty_block):
        return None
    parent_key = parent.key_start
    siblings = [
        (s, s.key_start)
        for p, s in doc.spans.items()
        if len(p) == len(path) and p[:-1] == parent_path and s.key_start is not None
    ]
    if siblings:
        indent = siblings[0][1].column - 1
        last = max((s for s, _ in siblings), key=lambda s: s.value_end.index)
        insert_at = last.value_end.index
        # A block value ends at the start of the next line; a scalar or flow value ends
        # mid-line, possibly before a comment: insert after the end of that line.
        if text[insert_at - 1 : insert_at] != "\n":
            newline = text.find("\n", insert_at)
            insert_at = len(text) if newline < 0 else newline + 1
    else:
        indent = (parent_key.column - 1) + 2
        newline = text.find("\n", parent_key.index)
        insert_at = len(text) if newline < 0 else newline + 1
    eol = _newline(text)
    prefix = "" if insert_at == 0 or text[insert_at - 1] == "\n" else eol
    content = f"{prefix}{' ' * indent}{key}: {render_scalar(value)}{eol}"
    return _edit(text, insert_at, insert_at, content)


def _replace_target_node(doc: Document, path: ConfigPath, span: Any, value: Any) -> Edit | None:
    """Rewrite a block ``{_target_: ...}`` node (a Bridge dump's dtype/enum form) as a scalar.

    Only such nodes: they stand for one value, which the normalized config already reads as a
    scalar. Everything from the colon after the key to the end of the node's last line is
    replaced, so comment lines after the node stay.
    """
    if span.flow or span.key_end is None or isinstance(value, list | dict):
        return None
    node: Any = doc.data
    for part in path:
        children_of: dict[Any, Any] = (
            node
            if isinstance(node, dict)
            else dict(enumerate(node))
            if isinstance(node, list)
            else {}
        )
        if part not in children_of:
            return None
        node = children_of[part]
    if not isinstance(node, dict) or "_target_" not in node:
        return None
    text = doc.text
    depth = len(path)
    children = [
        doc.spans[p] for p in list(doc.spans.keys()) if len(p) > depth and p[:depth] == path
    ]
    if not children:
        return None
    end = max(s.value_end.index for s in children)
    if text[end - 1 : end] == "\n":
        end -= 1
    else:
        newline = text.find("\n", end)
        end = len(text) if newline < 0 else newline
    if text[end - 1 : end] == "\r":
        end -= 1
    start = text.find(":", span.key_end.index, span.value_start.index)
    if start < 0:
        return None
    return _edit(text, start, end, ": " + render_scalar(value))


def replace_item_edit(doc: Document, path: ConfigPath, new_text: str) -> Edit | None:
    """Replace one scalar (e.g. a list item) keeping its quoting style."""
    span = doc.spans.get(path)
    if span is None or not span.scalar:
        return None
    return _edit(
        doc.text, span.value_start.index, span.value_end.index, render_scalar(new_text, span.style)
    )


def remove_item_edit(doc: Document, path: ConfigPath) -> Edit | None:
    """Remove one scalar list item (and its separator, or its whole line in a block list).

    None when that is not faithful: the only item, a non-scalar item, or a block item whose
    line also holds a comment.
    """
    if not path or not isinstance(path[-1], int):
        return None
    parent, index = doc.spans.get(path[:-1]), path[-1]
    item = doc.spans.get(path)
    if parent is None or item is None or not item.scalar:
        return None
    text = doc.text
    if doc.spans.get((*path[:-1], 1)) is None:
        return None  # the only item: an empty list is not what the file meant either
    if parent.flow:
        after = doc.spans.get((*path[:-1], index + 1))
        before = doc.spans.get((*path[:-1], index - 1)) if index > 0 else None
        if after is not None:
            return _edit(text, item.value_start.index, after.value_start.index, "")
        if before is not None:
            return _edit(text, before.value_end.index, item.value_end.index, "")
        return _edit(text, item.value_start.index, item.value_end.index, "")
    start = _line_start(text, item.value_start.index)
    if text[start : item.value_start.index].strip() != "-":
        return None
    newline = text.find("\n", item.value_end.index)
    end = len(text) if newline < 0 else newline + 1
    if text[item.value_end.index : end].strip():
        return None  # a comment (or more) on the item's line: keep the line, no faithful edit
    return _edit(text, start, end, "")
