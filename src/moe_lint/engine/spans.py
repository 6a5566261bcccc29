"""Turn config paths into source spans, and path-level fixes into text edits.

Rules never see line numbers: they name a config path and the engine resolves it here. A path
the file does not contain (a default, a preset value) is anchored at its nearest written
ancestor, or at the top of the file.
"""

from __future__ import annotations

import json
import re
from typing import Any

from moe_lint.config.load import ConfigPath, Document, Pos, Span, format_path
from moe_lint.engine.findings import Edit

_PLAIN_SAFE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-+/]*$")
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


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
        return json.dumps(text)
    return text


#: YAML's line breaks (PyYAML's reader and libyaml count all of these as new lines).
_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
_BREAK_CHARS = "\r\n\x85\u2028\u2029"


def _newline(text: str, at: int | None = None) -> str:
    """The line ending to write: the one ending the line before ``at`` when there is one (so an
    inserted line matches its neighbours), else the file's first one ("\n" when it has none)."""
    if at is not None and at > 0 and text[at - 1] in _BREAK_CHARS:
        return "\r\n" if text.endswith("\r\n", 0, at) else text[at - 1]
    first = _BREAK.search(text)
    return first.group() if first is not None else "\n"


def _line_start(text: str, index: int) -> int:
    return max(text.rfind(ch, 0, index) for ch in _BREAK_CHARS) + 1


def _line_end(text: str, index: int) -> int:
    """Index just past the line break that ends the line holding ``index`` (or the text's end)."""
    found = _BREAK.search(text, index)
    return len(text) if found is None else found.end()


def _pos_of(text: str, index: int) -> Pos:
    breaks = sum(text.count(ch, 0, index) for ch in _BREAK_CHARS)
    line = breaks - text.count("\r\n", 0, index) + 1  # a CRLF is one break
    return Pos(line, index - _line_start(text, index) + 1, index)


def _edit(text: str, start: int, end: int, content: str) -> Edit:
    a, b = _pos_of(text, start), _pos_of(text, end)
    return Edit(start, end, content, a.line, a.column, b.line, b.column)


#: A node's properties: an optional tag, then an anchor (``!!int &a 8``, ``&a``).
_ANCHORED = re.compile(r"(?:![^\s]*\s+)?&([^\s,\[\]{}]+)")


def _not_owned(doc: Document, path: ConfigPath) -> str | None:
    """Why ``path``, or a node above it, cannot be edited in place (None when it can).

    An edit changes text, and text reached through an alias (``*a``), that carries an anchor
    (``&a``) or that a merge key (``<<: *a``) brought in is shared: changing it changes every
    use, or drops the anchor its aliases need. The parser gives an alias the anchored node's
    own marks, so an alias shows as a value that starts before its key ends (an aliased list
    item as one outside its list); the loader lists the keys a merge brought in (doc.merged).
    """
    text = doc.text
    for depth in range(1, len(path) + 1):
        probe = path[:depth]
        span = doc.spans.get(probe)
        if span is None:
            break
        parent = doc.spans.get(probe[:-1]) if depth > 1 else None
        dotted = format_path(probe)
        if span.key_end is not None and span.value_start.index < span.key_end.index:
            name = _ANCHORED.match(text, span.value_start.index)
            what = f"*{name.group(1)}" if name else "an alias"
            return f"{dotted} is an alias ({what}): editing it would change every use of its anchor"
        if probe in doc.merged:
            return f"{dotted} comes from a merge key (<<): editing it would change its source"
        start = span.key_start or span.value_start
        if parent is not None and not (
            parent.value_start.index <= start.index <= parent.value_end.index
        ):
            return (
                f"{dotted} comes from a merge key or an alias: editing it would change its source"
            )
        anchor = _ANCHORED.match(text, span.value_start.index)
        if anchor is not None:
            return (
                f"{dotted} carries an anchor (&{anchor.group(1)}): editing it would change "
                "every alias of it"
            )
    return None


#: Why a Bridge launch script (config/bridge_launch.py) gets no edits: its values are the
#: recipe's and the overrides', written as shell words.
LAUNCH_REFUSAL = "a Megatron Bridge launch script: change or add its override by hand"


def _launch(doc: Document, path: ConfigPath) -> bool:
    """True (and the reason recorded) for a Bridge launch script."""
    if doc.form != "bridge-launch":
        return False
    doc.fix_refusals[path] = LAUNCH_REFUSAL
    return True


def _refuse(doc: Document, path: ConfigPath) -> bool:
    """Record why ``path`` cannot be edited (for --fix to report); True when it cannot."""
    why = _not_owned(doc, path)
    if why is not None:
        doc.fix_refusals[path] = why
    return why is not None


def _is_mapping(doc: Document, path: ConfigPath) -> bool:
    """True when the value at ``path`` is a mapping or empty (``section:``)."""
    node: Any = doc.data
    for part in path:
        children = (
            node
            if isinstance(node, dict)
            else dict(enumerate(node))
            if isinstance(node, list)
            else {}
        )
        if part not in children:
            return False
        node = children[part]
    return node is None or isinstance(node, dict)


def set_value_edit(doc: Document, path: ConfigPath, value: Any) -> Edit | None:
    """An edit that sets ``path`` to ``value``; None when no faithful text edit exists.

    A missing key is inserted into its nearest written ancestor mapping (with the missing
    sections between them), at the end of that mapping's last descendant; see
    :func:`_insert_edit`. Nothing is edited through an alias, an anchor or a merge key
    (:func:`_not_owned`): the reason is kept in ``doc.fix_refusals`` for --fix to report.
    """
    if doc.form == "megatron-lm":
        return _mlm_value_edit(doc, path, value)
    if _launch(doc, path):
        return None
    text = doc.text
    span = doc.spans.get(path)
    if span is not None:
        if _refuse(doc, path):
            return None
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
    ancestor = path[:-1]
    while ancestor and doc.spans.get(ancestor) is None:
        ancestor = ancestor[:-1]
    missing = path[len(ancestor) :]
    if any(not isinstance(k, str) for k in missing):
        return None
    if not ancestor:
        return _append_section(doc, missing, value)
    if _refuse(doc, ancestor):
        return None
    return _insert_edit(doc, ancestor, missing, value)


_SHELL_SAFE = re.compile(r"^[A-Za-z0-9_.+\-/:,]+$")


def _mlm_value_edit(doc: Document, path: ConfigPath, value: Any) -> Edit | None:
    """A Megatron-LM script or argument file: only a plain literal written right after its
    ``--flag`` (or in its ``export NAME=value`` / ``ENV_VARS:`` line) is replaced; anything else
    is left to the user (doc.fix_refusals says why, in the input's own words)."""
    if len(path) == 2 and path[0] == "env_vars" and isinstance(path[1], str):
        return _mlm_env_edit(doc, path, value)
    span = doc.spans.get(path)
    flag = doc.text[span.key_start.index : span.key_end.index] if span and span.key_start else ""
    why = None
    if doc.path == "<command line>":
        why = "arguments given on the command line are not a file: change the argument"
    elif span is None or not flag.startswith("--"):
        # Lazy: the Megatron-LM language only for Megatron-LM input.
        from moe_lint.engine.mlm_language import flag_for

        named = flag_for(format_path(path))
        why = (
            f"{named} is not written in the file: add it to the command line by hand"
            if named
            else f"Megatron-LM has no flag for {format_path(path)}"
        )
    elif isinstance(value, bool) or value is None or isinstance(value, list | dict):
        why = f"{flag} is a switch or a list: edit the command line by hand"
    elif not span.scalar:
        why = (f"{flag}'s value is not a plain literal written after it (a variable or an "
               "expansion): edit the script by hand")  # fmt: skip
    elif not _SHELL_SAFE.match(str(value)):
        why = f"{flag}: the new value would need shell quoting: edit the script by hand"
    if why is not None:
        doc.fix_refusals[path] = why
        return None
    assert span is not None
    return _edit(doc.text, span.value_start.index, span.value_end.index, str(value))


def _mlm_env_edit(doc: Document, path: ConfigPath, value: Any) -> Edit | None:
    """An environment variable of Megatron-LM input: its value is replaced only where the file
    writes it as a plain literal on its own line (``NAME: value`` under a functional test's
    ``ENV_VARS:``, ``export NAME=value`` or ``NAME=value`` in a script) and the new value needs
    no quoting; a variable the file does not set is left to the user."""
    name = str(path[1])
    text = doc.text
    span = doc.spans.get(path)
    script = not re.search(r"^ENV_VARS\s*:", text[:200_000], re.M)
    where = f"export {name}=... in the script" if script else f"{name}: ... under ENV_VARS:"
    why = None
    if doc.path == "<command line>":
        why = f"arguments given on the command line are not a file: set {name} in the environment"
    elif span is None:
        why = f"the file does not set {name}: write {where} by hand"
    elif (
        isinstance(value, bool)
        or value is None
        or not _SHELL_SAFE.match(str(value))
        or (not script and str(value).lower() in _YAML_WORDS)
    ):
        why = f"{name}: the new value would need quoting: write {where} by hand"
    else:
        start, end = span.value_start.index, span.value_end.index
        line = text[_line_start(text, start) : start]
        rest = text[end : _line_end(text, end)].strip()
        before = rf"[ \t]*{re.escape(name)}:[ \t]+" if not script else (
            rf"[ \t]*(?:export[ \t]+)?{re.escape(name)}="
        )  # fmt: skip
        written = text[start:end]
        if not (
            re.fullmatch(before, line)
            and _SHELL_SAFE.match(written)
            and (rest == "" or rest.startswith("#") or (script and rest.startswith(";")))
        ):
            why = f"{name} is not written as a plain value on its own line: write {where} by hand"
    if why is not None:
        doc.fix_refusals[path] = why
        return None
    assert span is not None
    return _edit(text, span.value_start.index, span.value_end.index, str(value))


def _append_section(doc: Document, missing: ConfigPath, value: Any) -> Edit | None:
    """A whole missing section (``section.key``), appended at the end of the file."""
    if len(missing) != 2:
        return None
    text = doc.text
    eol = _newline(text, len(text))
    section = f"{missing[0]}:{eol}  {missing[1]}: {render_scalar(value)}"
    return _edit(text, len(text), len(text), _as_lines(text, len(text), section, eol))


def _as_lines(text: str, at: int, block: str, eol: str) -> str:
    """``block`` as whole lines inserted at ``at``; at the end of a file without a final line
    break the break goes before it, so the file still ends without one."""
    if at == len(text) and text and text[-1] not in _BREAK_CHARS:
        return eol + block
    return block + eol


def _insert_edit(
    doc: Document, parent_path: ConfigPath, missing: ConfigPath, value: Any
) -> Edit | None:
    """Insert ``missing`` (keys, the last set to ``value``) into the mapping at ``parent_path``.

    Computed from the parent's block structure, never from where the parser says a block
    ends (libyaml ends a block mapping at the next token, which may be the next section's
    key): a block parent gets new lines at its children's indentation, right after the line
    its last written descendant ends on; a flow parent (``{a: 1}``) gets ``, key: value``
    after its last entry; an empty ``section:`` gets an indented line after its key's line.
    """
    text = doc.text
    parent = doc.spans[parent_path]
    if not _is_mapping(doc, parent_path):
        return None
    depth = len(parent_path)
    # Keys a merge (``<<: *base``) brought in are written elsewhere: only the parent's own
    # keys say where its entries are.
    children = [
        s
        for p, s in doc.spans.items()
        if len(p) == depth + 1
        and p[:depth] == parent_path
        and isinstance(p[-1], str)
        and p not in doc.merged
        and s.key_start is not None
    ]
    if parent.flow:
        if text[parent.value_end.index - 1 : parent.value_end.index] != "}":
            return None
        entry = _flow_entry(missing, value)
        if not children:
            at = parent.value_start.index + 1
            if text[at : parent.value_end.index - 1].strip():
                return None  # only merged keys, or the braces hold more than blanks
            return _edit(text, at, at, entry)
        at = max(_content_end(s) for s in _descendants(doc, parent_path))
        return _edit(text, at, at, ", " + entry)
    if parent.scalar:
        if parent.value_start.index != parent.value_end.index or parent.key_start is None:
            return None  # a section set to a scalar (``model: 1``, ``model: null``)
        indent = parent.key_start.column - 1 + 2
        at = _line_end(text, parent.key_start.index)
    else:
        if not children:
            return None
        columns = {s.key_start.column for s in children if s.key_start is not None}
        if len(columns) != 1:
            return None
        indent = columns.pop() - 1
        end = max(_content_end(s) for s in _descendants(doc, parent_path))
        at = end if end == 0 or text[end - 1] in _BREAK_CHARS else _line_end(text, end)
    eol = _newline(text, at)
    lines = [f"{' ' * (indent + 2 * i)}{key}:" for i, key in enumerate(missing[:-1])]
    lines.append(f"{' ' * (indent + 2 * (len(missing) - 1))}{missing[-1]}: {render_scalar(value)}")
    return _edit(text, at, at, _as_lines(text, at, eol.join(lines), eol))


def _descendants(doc: Document, path: ConfigPath) -> list[Span]:
    depth = len(path)
    return [s for p, s in doc.spans.items() if len(p) > depth and p[:depth] == path]


def _content_end(span: Span) -> int:
    """Where a written entry's text ends: its scalar or flow value's end, else its key's end.

    A block collection's end mark is the next token, wherever that is, so it is not used; its
    descendants' ends cover it. An alias's marks are its anchor's, written before it.
    """
    key_end = span.key_end.index if span.key_end is not None else 0
    if span.scalar or span.flow or span.style in ("|", ">"):
        return max(key_end, span.value_end.index)
    return key_end


def _flow_entry(missing: ConfigPath, value: Any) -> str:
    entry = f"{missing[-1]}: {render_scalar(value)}"
    for key in reversed(missing[:-1]):
        entry = f"{key}: {{{entry}}}"
    return entry


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
    end = max(_content_end(s) for s in children)
    if end == 0 or text[end - 1] not in _BREAK_CHARS:
        end = _line_end(text, end)
    # Keep the line break that ends the node's last line (and the lines after it).
    if text.endswith("\r\n", 0, end):
        end -= 2
    elif end > 0 and text[end - 1] in _BREAK_CHARS:
        end -= 1
    start = text.find(":", span.key_end.index, span.value_start.index)
    if start < 0:
        return None
    return _edit(text, start, end, ": " + render_scalar(value))


def replace_item_edit(doc: Document, path: ConfigPath, new_text: str) -> Edit | None:
    """Replace one scalar (e.g. a list item) keeping its quoting style."""
    if doc.form == "megatron-lm":
        doc.fix_refusals[path] = "a list on a Megatron-LM command line: edit it by hand"
        return None
    if _launch(doc, path):
        return None
    span = doc.spans.get(path)
    if span is None or not span.scalar or _refuse(doc, path):
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
    if doc.form == "megatron-lm":
        doc.fix_refusals[path] = "a list on a Megatron-LM command line: edit it by hand"
        return None
    if _launch(doc, path):
        return None
    parent, index = doc.spans.get(path[:-1]), path[-1]
    item = doc.spans.get(path)
    if parent is None or item is None or not item.scalar or _refuse(doc, path):
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
    end = _line_end(text, item.value_end.index)
    if text[item.value_end.index : end].strip():
        return None  # a comment (or more) on the item's line: keep the line, no faithful edit
    return _edit(text, start, end, "")
