"""One escaping layer per output format, so config text can never act on what reads the report.

Config keys, values, file names and rule-pack text are echoed in every report. Written raw they
could move a terminal's cursor or retitle it (ANSI/OSC escapes), start a GitHub Actions
workflow command in a CI log (a line starting with ``::``, or ``##[`` anywhere in a line: the
runner's ``ActionCommand.TryParseV2`` and legacy ``TryParse``), make JUnit XML unparsable
(XML 1.0 forbids most C0 characters) or crash a JSON writer (a non-UTF-8 file name decodes to
lone surrogates with ``os.fsdecode``).

- text, concise, stderr (:func:`text`, :func:`line`, :func:`guard_row`): control characters
  become visible escapes (``\\x1b``, ``\\n``); a tab stays. ``##[`` becomes ``##\\x5b`` and a
  line that would start with ``::`` starts with ``\\x3a:``.
- GitHub workflow commands (:func:`github_data`, :func:`github_property`): the text escapes,
  then the runner's own encoding (``%25``, ``%0D``, ``%0A``; in properties also ``%3A``, ``%2C``).
- JSON (:func:`dumps`): lossless for every string Unicode can hold; DEL, C1, line/paragraph
  separators and bidi controls are written as ``\\u`` escapes so the raw stream stays inert, and
  a lone surrogate (an undecodable file-name byte) is written as the text ``\\xff``.
- XML (:func:`xml_text`, :func:`xml_attr`): characters XML 1.0 forbids become visible escapes;
  line breaks and other risky characters are character references.
- URIs (:func:`uri_path`): the file name's bytes, percent-encoded.
- HTML (:func:`html`): the text escapes, then the five markup characters as references, so a
  file name such as ``<script>`` is shown, never run; ``##[`` is broken as in XML.

Backslashes are not doubled: the escapes keep reports readable, they are not a reversible
encoding (JSON and XML are, for every name that is valid Unicode).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from functools import cache
from typing import Any

#: Characters never written raw to a terminal or log: C0 except tab, DEL, C1, the Unicode line
#: and paragraph separators, bidi controls ("Trojan Source") and lone surrogates.
_UNSAFE = (
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff]"
)
_NAMED = {"\n": "\\n", "\r": "\\r"}
#: The GitHub runner's legacy command prefix, honoured anywhere in a line.
_LEGACY_COMMAND = "##["


@cache
def _pattern(chars: str) -> re.Pattern[str]:
    """Compiled on first use: a clean run of a pre-commit hook pays for none it does not use."""
    return re.compile(chars)


def _visible(char: str) -> str:
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's surrogateescape: the original byte
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def text(value: str) -> str:
    """``value`` with every unsafe character as a visible escape (one line, no control codes)."""
    if value.isprintable():  # the common case, in C: no control, format or surrogate character
        return value
    return _pattern(_UNSAFE).sub(lambda m: _visible(m.group()), value)


def guard(value: str, line_start: bool = True) -> str:
    """Neutralize workflow commands in already escaped text: ``##[`` anywhere and, when the
    text starts a line, a leading ``::``."""
    if _LEGACY_COMMAND in value:
        value = value.replace(_LEGACY_COMMAND, "##\\x5b")
    if not line_start:
        return value
    stripped = value.lstrip()
    if stripped.startswith("::"):
        at = len(value) - len(stripped)
        value = value[:at] + "\\x3a" + value[at + 1 :]
    return value


def line(value: str) -> str:
    """One output line built from untrusted parts: :func:`text`, then :func:`guard`."""
    return guard(text(value))


def block(value: str) -> str:
    """Multi-line text (rule docs): each line escaped and guarded, the line breaks kept."""
    return "\n".join(line(part) for part in value.split("\n"))


def guard_row(parts: list[str]) -> list[str]:
    """:func:`guard` across the pieces of one output line (each already :func:`text`-escaped):
    a ``##[`` or a leading ``::`` may be split over two pieces, say a key and the ``[0]`` after
    it. The offending character is escaped in the piece that holds it."""
    joined = "".join(parts)
    marks: list[tuple[int, str]] = []
    start = 0
    while (at := joined.find(_LEGACY_COMMAND, start)) >= 0:
        marks.append((at + 2, "\\x5b"))
        start = at + len(_LEGACY_COMMAND)
    stripped = joined.lstrip()
    if stripped.startswith("::"):
        marks.append((len(joined) - len(stripped), "\\x3a"))
    if not marks:
        return parts
    out = list(parts)
    for index, replacement in sorted(marks, reverse=True):
        offset = 0
        for i, part in enumerate(parts):
            if offset <= index < offset + len(part):
                local = index - offset
                out[i] = out[i][:local] + replacement + out[i][local + 1 :]
                break
            offset += len(part)
    return out


def github_data(value: str) -> str:
    """A workflow command's message: visible escapes, then the runner's data encoding."""
    escaped = guard(text(value), line_start=False)
    return escaped.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_property(value: str) -> str:
    """A workflow command's property value (``file=``, ``title=``)."""
    return github_data(value).replace(":", "%3A").replace(",", "%2C")


#: Characters JSON writes raw (with ensure_ascii=False) that a terminal or log would act on;
#: lone surrogates cannot be encoded as UTF-8 at all.
_JSON_UNSAFE = "[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
_SURROGATE = "[\ud800-\udfff]"


def _json_surrogate(match: re.Match[str]) -> str:
    return _visible(match.group()).replace("\\", "\\\\")  # the text \xff inside a JSON string


def dumps(data: Any, indent: int | None = None) -> str:
    """``json.dumps`` that always yields valid UTF-8 JSON whose raw bytes are inert in a log.

    Outside strings JSON has no ``#``, DEL, C1 or surrogate characters, so rewriting them in
    the serialized text only ever touches string contents."""
    # Lazy: json (~3 ms) only for the formats that write it, not for a text report.
    import json

    out = json.dumps(data, indent=indent, ensure_ascii=False)
    if not out.isascii():
        out = _pattern(_SURROGATE).sub(_json_surrogate, out)
        out = _pattern(_JSON_UNSAFE).sub(lambda m: f"\\u{ord(m.group()):04x}", out)
    return out.replace(_LEGACY_COMMAND, "#\\u0023[")


def dumps_list(items: Iterable[Any], indent: int, level: int = 0) -> Iterator[str]:
    """``dumps(list(items), indent)`` in pieces, one item at a time, for a list nested
    ``level`` deep: a report of many findings is written without holding them all. JSON text
    has no raw line break (strings escape theirs), so indenting an item's lines nests it."""
    pad = "\n" + " " * (indent * (level + 1))
    opening = "["
    for item in items:
        yield opening + pad + dumps(item, indent).replace("\n", pad)
        opening = ","
    yield "[]" if opening == "[" else "\n" + " " * (indent * level) + "]"


#: XML 1.0 ``Char``: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF].
_XML_ILLEGAL = "[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]"
#: Legal, but written as character references so the raw stream has no line break from the
#: data and nothing a terminal acts on.
_XML_REFERENCE = "[\t\n\r\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"


def _xml(value: str, extra: dict[str, str]) -> str:
    value = _pattern(_XML_ILLEGAL).sub(lambda m: _visible(m.group()), value)
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for char, entity in extra.items():
        value = value.replace(char, entity)
    value = _pattern(_XML_REFERENCE).sub(lambda m: f"&#{ord(m.group())};", value)
    return value.replace(_LEGACY_COMMAND, "#&#35;[")


def xml_text(value: str) -> str:
    """Element content: XML-legal, escaped, with no raw line break or control character."""
    return _xml(value, {})


def xml_attr(value: str) -> str:
    """A double-quoted attribute value, quotes included."""
    return '"' + _xml(value, {'"': "&quot;"}) + '"'


#: HTML's markup characters as references (text and double- or single-quoted attributes alike).
_HTML_REFERENCE = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}


def html(value: str) -> str:
    """HTML element content or a quoted attribute value: no control, bidi or undecodable
    character (:func:`text`'s visible escapes), no markup from the data, no workflow command
    when the page goes to a CI log on stdout."""
    value = text(value)
    if any(char in value for char in _HTML_REFERENCE):
        value = _pattern("[&<>\"']").sub(lambda m: _HTML_REFERENCE[m.group()], value)
    return value.replace(_LEGACY_COMMAND, "#&#35;[")


#: RFC 3986 ``pchar`` characters besides unreserved ones, kept as they are in a path.
_URI_SAFE = "/!$&'()*+,;=:@"


def uri_path(value: str) -> str:
    """A relative path as a URI reference: its bytes (as ``os.fsencode`` gives them),
    percent-encoded where RFC 3986 does not allow them (spaces, ``%``, ``#``, non-ASCII)."""
    # Lazy: urllib.parse (~5 ms with ipaddress) only for the formats that write URIs (SARIF).
    from urllib.parse import quote

    return quote(os.fsencode(value), safe=_URI_SAFE)


def markdown(value: str) -> str:
    """A Markdown table cell: one line, no HTML, links, images or emphasis from the data."""
    value = line(value).replace("\\", "\\\\")
    return _pattern(r"([`*_\[\]<>|!~&])").sub(r"\\\1", value)
