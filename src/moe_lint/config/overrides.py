"""Hydra command-line overrides, as Megatron Bridge applies them after the config file.

Bridge (``training/utils/omegaconf_utils.py::parse_hydra_overrides``) turns the recipe's
ConfigContainer into an OmegaConf dict, merges the YAML file into it, sets struct mode and
applies the overrides with hydra-core's ``ConfigLoaderImpl._apply_overrides_to_config``; any
failure stops the job (``OverridesError``). In struct mode:

* ``a.b=v`` needs ``a.b`` to exist (a field of the recipe's config, or a key the file added);
* ``+a.b=v`` adds a key and fails when one already holds a non-null value (a list or dict
  value merges instead);
* ``++a.b=v`` adds or sets;
* ``~a.b`` / ``~a.b=v`` deletes, and fails when the key is missing or null (or, with ``=v``,
  holds another value). The key is then absent from the dict, so Bridge's ``_apply_overrides``
  leaves the field at the recipe's value.

Bridge then copies the dict onto the dataclasses and skips keys they lack ("Key '...' in
overrides not found in config object ... Skipping."), so a ``+``/``++`` key the dataclass does not
have changes nothing.

Values follow Hydra's override grammar (hydra-core ``hydra/grammar/OverrideLexer.g4`` and
``OverrideParser.g4``; conversion as in ``core/override_parser/overrides_visitor.py``), not
YAML's: ``1e-3`` is a float, ``'a b'`` a quoted string, ``[a, b]`` a list. Sweeps
(``a=1,2``), functions (``glob(...)``, ``range(...)``, casts), interpolations (``${...}``) and
dict values are refused with one line (exit code 2) rather than guessed at.
"""

from __future__ import annotations

import re
from functools import cache
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from moe_lint.bounds import (
    MAX_DEPTH,
    MAX_OVERRIDE_CHARS,
    MAX_OVERRIDES,
    MAX_SUGGESTIONS,
    bounded_repr,
    number_too_long,
)
from moe_lint.config import fields
from moe_lint.config.known_keys import KeyWalk
from moe_lint.config.suggest import HOME_SECTIONS, closest, home_order
from moe_lint.errors import InputError
from moe_lint.records import NamedTuple, field, record

if TYPE_CHECKING:
    from moe_lint.config.load import ConfigPath

# --- Hydra's value lexer (VALUE_MODE of OverrideLexer.g4) --------------------------------

_INT_U = r"(?:0|[1-9](?:_?[0-9])*)"
_DIGITS = r"[0-9](?:_?[0-9])*"
_POINT = rf"(?:{_INT_U}\.(?:{_DIGITS})?|\.{_DIGITS})"
_FLOAT_FORMS = (
    rf"[+-]?{_POINT}",
    rf"[+-]?(?:{_POINT}|{_INT_U})[eE][+-]?{_DIGITS}",
    r"[+-]?(?:[Ii][Nn][Ff]|[Nn][Aa][Nn])",
)
_WS = r"[ \t]*"
#: (token type, regexes), in the lexer's order: ANTLR takes the longest match and, on a tie,
#: the rule defined first. Compiled on the first override lexed (:func:`_tokens`), not at
#: import: every run imports this module, few pass an override (~4 ms of regex compiling).
_TOKEN_PATTERNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("POPEN", (rf"{_WS}\({_WS}",)),
    ("COMMA", (rf"{_WS},{_WS}",)),
    ("PCLOSE", (rf"{_WS}\)",)),
    ("BRACKET_OPEN", (rf"\[{_WS}",)),
    ("BRACKET_CLOSE", (rf"{_WS}\]",)),
    ("BRACE_OPEN", (rf"\{{{_WS}",)),
    ("BRACE_CLOSE", (rf"{_WS}\}}",)),
    ("COLON", (rf"{_WS}:{_WS}",)),
    ("EQUAL", (rf"{_WS}={_WS}",)),
    ("FLOAT", _FLOAT_FORMS),
    ("INT", (rf"[+-]?{_INT_U}",)),
    ("BOOL", (r"[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]",)),
    ("NULL", (r"[Nn][Uu][Ll][Ll]",)),
    ("UNQUOTED_CHAR", (r"[/\-\\+.$%*@?|]",)),
    ("ID", (r"[a-zA-Z_][a-zA-Z0-9_\-]*",)),
    ("ESC", (r"(?:\\\\|\\\(|\\\)|\\\[|\\\]|\\\{|\\\}|\\:|\\=|\\,|\\ |\\\t)+",)),
    ("WS", (r"[ \t]+",)),
    ("INTERPOLATION", (r"\$\{[^}]+\}",)),
)


@cache
def _tokens() -> tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]:
    return tuple((name, tuple(map(re.compile, forms))) for name, forms in _TOKEN_PATTERNS)


_PRIMITIVE_PARTS = frozenset(
    {"ID", "NULL", "INT", "FLOAT", "BOOL", "INTERPOLATION", "UNQUOTED_CHAR", "COLON", "ESC", "WS"}
)


class _Token(NamedTuple):
    kind: str
    text: str


class _Quoted(NamedTuple):
    """A quoted string (Hydra's QuotedString); a plain ``str`` once the value is built."""

    text: str


class _Unsupported(Exception):
    """Valid Hydra syntax that moe-lint does not evaluate (sweeps, functions, dicts...)."""


def _quoted_end(text: str, start: int) -> int | None:
    """End of the quoted value opening at ``start``: the first matching quote preceded by an
    even number of backslashes (QUOTED_VALUE is non-greedy)."""
    quote = text[start]
    i = start + 1
    while i < len(text):
        if text[i] == quote:
            slashes = 0
            while i - 1 - slashes > start and text[i - 1 - slashes] == "\\":
                slashes += 1
            if slashes % 2 == 0:
                return i + 1
        i += 1
    return None


def _lex(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        best: tuple[int, str] | None = None
        if text[pos] in "'\"":
            end = _quoted_end(text, pos)
            if end is not None:
                best = (end, "QUOTED_VALUE")
        for name, patterns in _tokens():
            for pattern in patterns:
                match = pattern.match(text, pos)
                if match and match.end() > pos and (best is None or match.end() > best[0]):
                    best = (match.end(), name)
        if best is None:
            raise InputError(f"token recognition error at: {text[pos]!r}")
        tokens.append(_Token(best[1], text[pos : best[0]]))
        pos = best[0]
    return tokens


def _unescape_quoted(text: str) -> str:
    """hydra ``HydraOverrideVisitor._unescape_quoted_string``: only backslashes before a quote
    are escapes."""
    quote = text[0]
    body = text[1:]
    pattern = re.compile(r"(\\)+" + re.escape(quote))
    out: list[str] = []
    match = pattern.search(body)
    if match is None:
        return body[:-1]
    while match is not None:
        start, stop = match.span()
        out.append(body[:start])
        out.append(body[start + 1 : stop : 2])
        body = body[stop:]
        match = pattern.search(body)
    if len(body) > 1:
        out.append(body[:-1])
    return "".join(out)


class _ValueParser:
    """Recursive descent over OverrideParser.g4's ``value`` rule."""

    def __init__(self, tokens: list[_Token], depth: int = MAX_DEPTH) -> None:
        self.tokens = tokens
        self.pos = 0
        #: Nested lists left (bounds.MAX_DEPTH, less the key's own depth).
        self.depth = depth

    def peek(self) -> str | None:
        return self.tokens[self.pos].kind if self.pos < len(self.tokens) else None

    def take(self, kind: str) -> _Token:
        if self.peek() != kind:
            found = self.tokens[self.pos].text if self.pos < len(self.tokens) else "<EOF>"
            raise InputError(
                f"expected {kind.lower().replace('_', ' ')}, found {bounded_repr(found, 60)}"
            )
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def value(self) -> Any:
        first = self.element()
        if self.peek() == "COMMA":
            raise _Unsupported("a Hydra choice sweep (a=1,2)")
        if self.peek() is not None:
            raise InputError(f"unexpected {bounded_repr(self.tokens[self.pos].text, 60)}")
        return first

    def element(self) -> Any:
        kind = self.peek()
        if kind == "BRACKET_OPEN":
            return self.list_()
        if kind == "BRACE_OPEN":
            raise _Unsupported("a dict value ({a: 1}); set each key as its own override")
        following = self.tokens[self.pos + 1].kind if self.pos + 1 < len(self.tokens) else None
        if kind == "ID" and following == "POPEN":
            name = self.tokens[self.pos].text
            raise _Unsupported(f"a Hydra function call ({name}(...))")
        if kind == "QUOTED_VALUE":
            token = self.take("QUOTED_VALUE")
            return _Quoted(_unescape_quoted(token.text))
        return self.primitive()

    def list_(self) -> list[Any]:
        self.depth -= 1
        if self.depth < 0:
            raise InputError(f"nesting deeper than {MAX_DEPTH} levels (bounds.MAX_DEPTH)")
        self.take("BRACKET_OPEN")
        items: list[Any] = []
        if self.peek() == "BRACKET_CLOSE":
            self.pos += 1
            return items
        items.append(self.element())
        while self.peek() == "COMMA":
            self.pos += 1
            items.append(self.element())
        self.take("BRACKET_CLOSE")
        self.depth += 1
        return items

    def primitive(self) -> Any:
        start = self.pos
        while self.peek() in _PRIMITIVE_PARTS:
            self.pos += 1
        parts = self.tokens[start : self.pos]
        if not parts:
            found = self.tokens[self.pos].text if self.pos < len(self.tokens) else "<EOF>"
            raise InputError(f"expected a value, found {bounded_repr(found, 60)}")
        if any(t.kind == "INTERPOLATION" for t in parts):
            raise _Unsupported("an interpolation (${...}), resolved only at launch")
        # HydraOverrideVisitor._createPrimitive: leading/trailing whitespace is dropped.
        if parts[0].kind == "WS":
            if len(parts) == 1:
                raise InputError("a primitive that is all whitespace")
            parts = parts[1:]
        if parts[-1].kind == "WS":
            parts = parts[:-1]
        if len(parts) > 1:
            return "".join(t.text[1::2] if t.kind == "ESC" else t.text for t in parts)
        token = parts[0]
        if token.kind in ("INT", "FLOAT"):
            too_long = number_too_long(token.text)
            if too_long:
                raise InputError(too_long)
        if token.kind == "INT":
            return int(token.text.replace("_", ""))
        if token.kind == "FLOAT":
            return float(token.text.replace("_", ""))
        if token.kind == "NULL":
            return None
        if token.kind == "BOOL":
            return token.text.lower() == "true"
        if token.kind == "ESC":
            return token.text[1::2]
        return token.text


def _plain(value: Any) -> Any:
    """Hydra's ``Override.value()``: quoted strings become plain strings."""
    if isinstance(value, _Quoted):
        return value.text
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def parse_value(raw: str, where: str, depth: int = MAX_DEPTH) -> Any:
    """The Python value Hydra gives the text after ``=`` (``where`` names it in errors;
    lists nest at most ``depth`` levels)."""
    # EQUAL is '=' WS? in the key mode, so whitespace right after '=' belongs to it.
    raw = raw.lstrip(" \t")
    if raw == "":
        return ""
    if "${" in raw:
        raise InputError(
            f"{where}: an interpolation (${{...}}) is resolved only at launch; moe-lint needs "
            "the value itself"
        )
    try:
        tokens = _lex(raw)
        return _plain(_ValueParser(tokens, depth).value())
    except _Unsupported as exc:
        raise InputError(f"{where}: {exc} is not supported; write one plain value") from None
    except InputError as exc:
        raise InputError(f"{where}: not a valid Hydra override value ({exc})") from None


# --- One override argument --------------------------------------------------------------

#: DEFAULT_MODE keys: ID / KEY_SPECIAL, or a DOT_PATH of them (and of list indices).
_SEGMENT = r"[A-Za-z_$][A-Za-z0-9_$\-]*"
_KEY = re.compile(rf"{_SEGMENT}(?:\.(?:{_SEGMENT}|\d+))*")
_LOOSE_HEAD = re.compile(r"[\w$\-./@]+")


class Override(NamedTuple):
    """One parsed override argument."""

    text: str
    #: "", "+", "++" or "~".
    prefix: str
    path: ConfigPath
    #: The Hydra value (None for a bare ``~key``).
    value: Any
    delete: bool
    #: ``~key=value``: the deletion checks the current value first.
    has_value: bool = False
    #: 1-based position among the command-line arguments (after the program name), when the
    #: override came from a command line; findings name it.
    argument: int | None = None
    #: Where a launch script writes it (config/bridge_launch.py): findings point there.
    span: Any = None

    @property
    def key(self) -> str:
        return ".".join(str(p) for p in self.path)

    @property
    def raw_value(self) -> str:
        """The text after the first '=' (empty for a bare ``~key``)."""
        return self.text.partition("=")[2]


def looks_like_override(arg: str) -> bool:
    """True for ``key.path=value`` / ``+key=value`` / ``~key`` arguments (not file names)."""
    if arg.startswith(("+", "~")):
        return True
    head, sep, _ = arg.partition("=")
    return bool(sep) and bool(_LOOSE_HEAD.fullmatch(head)) and not head.endswith("/")


def check_count(overrides: Any) -> None:
    """At most ``bounds.MAX_OVERRIDES`` overrides in one call (each costs a lookup and, when
    unknown, a search; Hydra command lines hold tens)."""
    if len(overrides) > MAX_OVERRIDES:
        raise InputError(
            f"{len(overrides):,} overrides, more than moe-lint's bound of {MAX_OVERRIDES:,} "
            "(bounds.MAX_OVERRIDES)"
        )


def parse_override(arg: str, argument: int | None = None) -> Override:
    """Parse one override; raise :class:`InputError` with one line on what moe-lint cannot use.

    An override is input like a config file: at most ``bounds.MAX_OVERRIDE_CHARS`` characters,
    its key and list value together at most ``bounds.MAX_DEPTH`` levels deep."""
    shown = bounded_repr(arg)  # messages echo the argument, bounded (bounds.MAX_REPR_CHARS)
    if len(arg) > MAX_OVERRIDE_CHARS:
        raise InputError(
            f"override {bounded_repr(arg, 60)}: {len(arg):,} characters, more than moe-lint's "
            f"bound of {MAX_OVERRIDE_CHARS:,} (bounds.MAX_OVERRIDE_CHARS)"
        )
    if arg.startswith("++"):
        prefix = "++"
    elif arg.startswith(("+", "~")):
        prefix = arg[0]
    else:
        prefix = ""
    body = arg[len(prefix) :]
    key, sep, raw = body.partition("=")
    if "/" in key or "@" in key:
        raise InputError(
            f"override {shown}: Hydra config-group/package overrides do not apply to Bridge "
            "configs (Bridge raises 'looks like a config group override')"
        )
    if not _KEY.fullmatch(key):
        raise InputError(f"bad override {shown}: expected key.path=value, +key=value or ~key")
    parts = key.split(".")
    if len(parts) > MAX_DEPTH:
        raise InputError(
            f"override {shown}: a key {len(parts):,} levels deep; moe-lint's bound is "
            f"{MAX_DEPTH} (bounds.MAX_DEPTH)"
        )
    if any(p.isdigit() for p in parts):
        raise InputError(
            f"override {shown}: list-index keys are not supported; set the whole list (key=[a,b])"
        )
    path: ConfigPath = tuple(parts)
    if prefix == "~":
        if not sep:
            return Override(arg, prefix, path, None, True, False, argument)
        value = parse_value(raw, f"override {shown}", MAX_DEPTH - len(parts))
        return Override(arg, prefix, path, value, True, True, argument)
    if not sep:
        raise InputError(f"bad override {shown}: missing '=value'")
    return Override(
        arg,
        prefix,
        path,
        parse_value(raw, f"override {shown}", MAX_DEPTH - len(parts)),
        False,
        False,
        argument,
    )


# --- What Hydra's struct mode and Bridge make of them -----------------------------------

#: Problem kinds, one rule each (rules/overrides.yaml).
UNKNOWN_KEY = "unknown-key"
APPEND_EXISTING = "append-existing"
DELETE_MISSING = "delete-missing"
DELETE_MISMATCH = "delete-mismatch"
KEY_SKIPPED = "key-skipped"


class OverrideProblem(NamedTuple):
    """An override Hydra rejects (the job stops) or Bridge skips."""

    kind: str
    override: Override
    #: Index of the override in the list (its position when no command-line index is known).
    position: int
    hint: str = ""
    #: The value the key holds (append-existing, delete-mismatch), or the first name Bridge's
    #: dataclass lacks (key-skipped).
    current: Any = None
    #: Where that value comes from: "the file", "an earlier override" or "the recipe".
    origin: str = ""
    #: Why the key is missing (unknown-key).
    reason: str = ""


@record
class Applied:
    """The outcome of applying overrides to one file."""

    problems: list[OverrideProblem] = field(default_factory=list)
    #: Overrides that changed the tree (Hydra-rejected ones are applied as meant, except an
    #: unknown key, which is left out).
    applied: list[Override] = field(default_factory=list)
    #: Dotted paths removed by ``~``: Bridge leaves those fields at the recipe's value.
    deleted: set[str] = field(default_factory=set)


def _lookup(data: dict[str, Any], parts: ConfigPath) -> tuple[Any, bool]:
    """(value, True) when ``parts`` is in the tree, else (None, False); a path through a
    scalar counts as absent."""
    node: Any = data
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            return None, False
        node = node[part]
    return node, True


def _through_scalar(data: dict[str, Any], parts: ConfigPath) -> bool:
    """True when a proper prefix of ``parts`` holds a non-mapping value in the tree."""
    node: Any = data
    for part in parts[:-1]:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
        if node is not None and not isinstance(node, dict):
            return True
    return False


class FieldOracle:
    """Which keys are in the dict Bridge builds from the recipe, from the same per-class,
    per-release class table SCH001 uses (:mod:`known_keys`, :mod:`bridge_classes`).

    A section's class is its ``_target_`` when the file names a known one; otherwise the recipe
    decides, so a key is missing only when no class the section can hold has it (``--model``
    narrows ``model`` to the preset's providers). ``extra-fields`` count as known.
    """

    def __init__(self, settings: Any = None, preset: str | None = None) -> None:
        shim: Any = SimpleNamespace(settings=settings, config=SimpleNamespace(preset=preset))
        self.walk = KeyWalk(shim)
        self.view = self.walk.view
        #: A stated release outside the class table: moe-lint cannot tell which fields exist.
        self.blind = bool(
            [c for c in (self.walk.bridge, self.walk.mcore) if c.outside]
            and not self.walk.installed
        )

    def top(self) -> list[str]:
        return sorted(self.view.names(self.view.container()) or ())

    def classes(self, parts: ConfigPath, data: dict[str, Any]) -> list[str] | None:
        """The classes the section at ``parts`` can hold (None: not a config-class section)."""
        view = self.view
        classes: list[str] | None = None
        holder = view.container()
        for depth, part in enumerate(parts):
            name = str(part)
            node, _ = _lookup(data, parts[: depth + 1])
            target = node.get("_target_") if isinstance(node, dict) else None
            if depth == 0:
                if view.admits_mapping(holder, name):
                    return None
                nxt = self.walk.section_classes(view, name)
            else:
                assert classes is not None
                if any(view.admits_mapping(c, name) for c in classes):
                    return None
                nxt = view.expand(r for c in classes for r in view.nested(c, name))
            if isinstance(target, str):
                if not view.knows(target):
                    return None
                nxt = [target]
            if not nxt:
                return None
            classes = nxt
        return classes

    def status(self, parts: ConfigPath, data: dict[str, Any]) -> tuple[bool | None, int]:
        """(verdict, index of the first unknown name) for the dotted key ``parts``.

        True: a field; False: not one (``parts[index]`` is the first name no class has);
        None: cannot say (a plain dict such as ``env_vars``, a class or release moe-lint does
        not know).
        """
        if self.blind:
            return None, -1
        names = [str(p) for p in parts]
        for depth in range(1, len(names) + 1):
            if self.walk._extra(".".join(names[:depth])):
                return None, -1
        if names[0] not in self.top():
            return False, 0
        for depth in range(1, len(names)):
            classes = self.classes(parts[:depth], data)
            if classes is None:
                return None, -1
            if names[depth] not in self.view.union(classes):
                return False, depth
        return True, -1

    def always(self, parts: ConfigPath, data: dict[str, Any]) -> bool:
        """True when every class the section can hold has the field (so the recipe's dict
        holds the key, whichever class the recipe builds)."""
        if len(parts) < 2 or self.blind:
            return False
        classes = self.classes(parts[:-1], data)
        name = str(parts[-1])
        return bool(classes) and all(name in (self.view.names(c) or ()) for c in classes or ())

    def fields(self, parts: ConfigPath, data: dict[str, Any]) -> list[str]:
        """Every field name the section at ``parts`` can have (for did-you-mean)."""
        classes = self.classes(parts, data) if parts else [self.view.container()]
        return sorted(self.view.union(classes)) if classes else []


def _never_null(parts: ConfigPath) -> bool:
    """A typed field whose type admits no null: every recipe gives it a value."""
    if len(parts) != 2:
        return False
    typed = fields.validated(str(parts[0])).get(str(parts[1]))
    return typed is not None and "null" not in typed["types"]


def _suggest_key(parts: ConfigPath, data: dict[str, Any], oracle: FieldOracle) -> str | None:
    """The known key the user most likely meant (difflib over the section's fields; across all
    sections for a key given without one)."""
    top = oracle.top()
    names = [str(p) for p in parts]

    def home(candidates: list[str]) -> str:
        return min(candidates, key=home_order)

    def fields_of(section: ConfigPath) -> list[str]:
        found = set(oracle.fields(section, data))
        node, present = _lookup(data, section)
        if present and isinstance(node, dict):
            found |= {str(k) for k in node if k != "_target_"}
        return sorted(found)

    leaf = names[-1]
    if len(names) == 1:
        holders = [s for s in top if leaf in fields_of((s,))]
        if holders:
            return f"{home(holders)}.{leaf}"
        everything = {s: fields_of((s,)) for s in HOME_SECTIONS if s in top}
        guess = closest(leaf, sorted({f for fs in everything.values() for f in fs}))
        if guess:
            return f"{home([s for s, fs in everything.items() if guess in fs])}.{guess}"
        return closest(leaf, top)
    section: ConfigPath = tuple(names[:-1])
    if names[0] not in top and not _lookup(data, section[:1])[1]:
        first = closest(names[0], top)
        if first is None:
            return None
        section = (first, *names[1:-1])
    guess = closest(leaf, fields_of(section))
    dotted = ".".join(str(p) for p in section)
    if guess:
        return f"{dotted}.{guess}"
    if len(section) == 1:
        holders = [s for s in top if s != dotted and leaf in fields_of((s,))]
        if holders:
            return f"{home(holders)}.{leaf}"
    return None


def _hint(ov: Override, data: dict[str, Any], oracle: FieldOracle) -> str:
    guess = _suggest_key(ov.path, data, oracle)
    if guess is None:
        return "no known field is close; check the name and its section"
    rest = f"={ov.raw_value}" if "=" in ov.text else ""
    return f"did you mean {ov.prefix}{guess}{rest}?"


def _set(data: dict[str, Any], parts: ConfigPath, value: Any) -> None:
    node = data
    for part in parts[:-1]:
        nxt = node.get(str(part))
        if not isinstance(nxt, dict):
            nxt = {}
            node[str(part)] = nxt
        node = nxt
    node[str(parts[-1])] = value


def _delete(data: dict[str, Any], parts: ConfigPath) -> None:
    node: Any = data
    for part in parts[:-1]:
        node = node.get(str(part)) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(str(parts[-1]), None)


def apply_overrides(
    data: dict[str, Any], overrides: list[Override], oracle: FieldOracle | None = None
) -> Applied:
    """Apply overrides in order onto ``data`` (the tree below the ConfigContainer root, in
    place) the way Hydra's struct mode and Bridge would, recording what they reject or skip."""
    oracle = oracle or FieldOracle()
    out = Applied()
    # "did you mean" searches left (bounds.MAX_SUGGESTIONS): each is a difflib pass
    hints_left = [MAX_SUGGESTIONS]

    def hint(ov: Override) -> str:
        hints_left[0] -= 1
        if hints_left[0] < 0:
            return "check the name and its section"
        return _hint(ov, data, oracle)

    touched: set[str] = set()  # keys an earlier override set
    gone: set[str] = set()  # keys an earlier override deleted (absent from Hydra's dict now)
    for position, ov in enumerate(overrides):
        parts = ov.path
        dotted = ov.key
        current, present = _lookup(data, parts)
        deleted_before = any(dotted == g or dotted.startswith(g + ".") for g in gone)
        is_field, first_unknown = (
            (None, -1) if _through_scalar(data, parts) else oracle.status(parts, data)
        )
        # Does Hydra's dict hold the key? True / False / None (a recipe-only key moe-lint
        # cannot see into, e.g. below env_vars).
        # An earlier override that replaced a parent (`model=4`) took the recipe's keys with it.
        replaced = any(dotted.startswith(t + ".") for t in touched)
        exists = True if present else False if deleted_before or replaced else is_field
        origin = "an earlier override" if dotted in touched else "the file"

        def problem(
            kind: str,
            hint: str = "",
            now: Any = None,
            source: str = origin,
            _ov: Override = ov,
            _at: int = position,
            reason: str = "",
        ) -> None:
            out.problems.append(OverrideProblem(kind, _ov, _at, hint, now, source, reason))

        def why_missing(_ov: Override = ov, _deleted: bool = deleted_before) -> str:
            if _deleted:
                return "an earlier ~ override deleted it; re-add it with +" + _ov.text.lstrip("+~")
            return hint(_ov)

        if ov.delete:
            if present and current is None:
                problem(DELETE_MISSING, "the key holds null, which Hydra treats as absent")
                continue
            if exists is False:
                problem(DELETE_MISSING, why_missing())
                continue
            # Hydra compares only a non-null value (`~key=null` deletes like `~key`).
            if ov.value is not None and present and ov.value != current:
                problem(DELETE_MISMATCH, now=current)
            _delete(data, parts)
            touched.discard(dotted)
            gone.add(dotted)
            out.deleted = {d for d in out.deleted if not d.startswith(dotted + ".")}
            if is_field is not False:
                out.deleted.add(dotted)
            out.applied.append(ov)
            continue
        if ov.prefix == "" and exists is False:
            if deleted_before:
                reason = "was deleted by an earlier ~ override"
            elif replaced:
                reason = "went with the parent an earlier override replaced"
            else:
                reason = "is not a field of the config and not in the file"
            problem(UNKNOWN_KEY, why_missing(), reason=reason)
            continue
        if ov.prefix == "+" and not isinstance(ov.value, list):
            if present and current is not None:
                problem(APPEND_EXISTING, now=current)
            elif exists and not present and _never_null(parts) and oracle.always(parts, data):
                problem(APPEND_EXISTING, source="the recipe")
        if is_field is False:
            problem(KEY_SKIPPED, hint(ov), now=str(parts[first_unknown]))
        _set(data, parts, ov.value)
        touched.add(dotted)
        gone = {g for g in gone if g != dotted and not g.startswith(dotted + ".")}
        out.deleted = {d for d in out.deleted if d != dotted and not d.startswith(dotted + ".")}
        out.applied.append(ov)
    return out
