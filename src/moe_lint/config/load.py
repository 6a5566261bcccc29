"""Stage 1 of the data path: bytes -> YAML values + a map from config path to source span.

PyYAML's ``compose`` (the libyaml C parser when present) gives every node a start/end mark with
line, column and character index. We construct plain Python values from those nodes ourselves so
that (a) only the YAML core schema is accepted (``!!python/...`` and unknown tags are input
errors, never executed), (b) alias expansion and nesting depth are bounded, and (c) every key,
value and list item gets a span that rules and fixes can address by config path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, ClassVar

from moe_lint.bounds import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_LINES,
    MAX_NODES,
    MAX_REPR_CHARS,
    bounded_repr,
    bounded_str,
    number_too_long,
)
from moe_lint.config.forms import NotBridgeConfig, detect_root, looks_like_script
from moe_lint.config.positions import Pos as Pos
from moe_lint.config.positions import Span as Span
from moe_lint.config.pyyaml import yaml
from moe_lint.config.regular_file import read_file as read_file
from moe_lint.errors import InputError
from moe_lint.records import field, record


class UnsupportedTag(InputError):
    """A ``!tag`` outside the YAML core schema (``!!python/...``, ``!Ref``, ``!include``)."""


# MAX_BYTES (Bridge configs are tens of kilobytes), MAX_NODES (alias expansion: the
# billion-laughs guard) and MAX_DEPTH (nesting) live with moe-lint's other bounds in bounds.py.

_BaseLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: The tag of each plain scalar seen so far (:class:`_Loader`), emptied when it reaches
#: _PLAIN_TAGS_MAX: a run over thousands of dumps meets about a thousand distinct ones. Only
#: texts up to _PLAIN_TAG_CHARS are kept, so what stays alive after a file is a few hundred
#: kilobytes at most, whatever the file held.
_PLAIN_TAGS: dict[str, str] = {}
_PLAIN_TAGS_MAX = 4096
_PLAIN_TAG_CHARS = 64


class _Loader(_BaseLoader):  # type: ignore[misc]
    """The safe loader (libyaml's where present), with the implicit tags of plain scalars
    remembered.

    Why: the C composer calls the pure-Python ``Resolver.resolve`` for every scalar (one
    regex match after another on its text) and ``descend_resolver``/``ascend_resolver`` for
    every node: a third of ``yaml.compose``'s time on a Bridge dump, whose ~1,700 scalars
    are mostly the same few hundred keys and values as the previous file's. A plain
    scalar's tag depends on its text alone while no path resolver is registered, so it is
    looked up by text; the class keeps its own copy of the safe loader's implicit resolvers
    and no path resolvers, so a resolver added to ``yaml.SafeLoader`` elsewhere in the
    process cannot make a remembered tag stale, and the descend/ascend bookkeeping, which
    only path resolvers read, is skipped.
    """

    yaml_implicit_resolvers: ClassVar[dict[Any, list[Any]]] = {
        k: list(v) for k, v in _BaseLoader.yaml_implicit_resolvers.items()
    }
    yaml_path_resolvers: ClassVar[dict[Any, Any]] = {}

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and implicit[0] and len(value) <= _PLAIN_TAG_CHARS:
            tag = _PLAIN_TAGS.get(value)
            if tag is None:
                tag = super().resolve(kind, value, implicit)
                if len(_PLAIN_TAGS) >= _PLAIN_TAGS_MAX:
                    _PLAIN_TAGS.clear()
                _PLAIN_TAGS[value] = tag
            return tag
        return super().resolve(kind, value, implicit)

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        """Nothing to track: the class has no path resolvers."""

    def ascend_resolver(self) -> None:
        """Nothing to track: the class has no path resolvers."""


PathKey = str | int
ConfigPath = tuple[PathKey, ...]


@record
class Document:
    """A parsed config file: values, spans, raw text and duplicate keys seen while loading."""

    path: str
    text: str
    data: dict[str, Any]
    spans: SpanMap
    had_bom: bool = False
    duplicates: list[tuple[ConfigPath, Span]] = field(default_factory=list)
    #: Why this YAML is not a Bridge config (empty, several documents, a top-level list...):
    #: linting skips it with this notice (normalize raises NotBridgeConfig with it).
    skip: str | None = None
    #: Config path -> why a fix there has no faithful text edit (an alias, an anchor, a
    #: merge key), recorded by moe_lint.engine.spans for --fix to report.
    fix_refusals: dict[ConfigPath, str] = field(default_factory=dict)
    #: Paths whose key only a merge key (``<<``) brought in: written in the merged mapping.
    merged: set[ConfigPath] = field(default_factory=set)
    #: The input's form when it is not Bridge YAML: "megatron-lm" for a launch script, a
    #: MODEL_ARGS file or an argument list (moe_lint.config.mlm_args); None for YAML.
    form: str | None = None
    #: Megatron-LM input only: its flags (mlm_args.MlmFlag) in order, Megatron-LM's defaults
    #: for the mapped paths no flag sets, paths whose value is unresolved ($VAR, $(...)),
    #: the words the reader could not expand that may hold flags (``$EXTRA_ARGS``; an unknown
    #: value of a known flag is not one), and the launcher's world (nodes, gpus-per-node).
    mlm_flags: list[Any] | None = None
    mlm_defaults: dict[str, Any] = field(default_factory=dict)
    mlm_unknown: set[str] = field(default_factory=set)
    mlm_notes: list[str] = field(default_factory=list)
    launcher: dict[str, str] = field(default_factory=dict)
    #: A Megatron Bridge launch script (form "bridge-launch"): config/bridge_launch.Launch, its
    #: recipe's overrides and what run_recipe.py does after them; ``data`` is the recipe's.
    launch: Any = None
    #: Where the launcher's world came from (mlm_args: flags, lines, shell defaults).
    launcher_source: str = ""
    #: What the run does: "training", or "inference" for a Megatron-LM inference entry script
    #: or a functional test with ``MODE: inference`` (config/mlm_args.py). Rules limited by
    #: ``modes`` (engine/catalogue.py) run only in theirs.
    run_mode: str = "training"

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()


def format_path(path: ConfigPath) -> str:
    """Render ``("model", "recompute_modules", 0)`` as ``model.recompute_modules[0]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def parse_path(text: str) -> ConfigPath:
    """Inverse of :func:`format_path`."""
    parts: list[PathKey] = []
    for name, index in _PATH_TOKEN.findall(text):
        parts.append(int(index) if index else name)
    return tuple(parts)


def _pos(mark: Any) -> Pos:
    return Pos(mark.line + 1, mark.column + 1, mark.index)


def decode(raw: bytes, path: str) -> tuple[str, bool]:
    """Decode UTF-8 (optionally with BOM); reject binary data with one clear line."""
    if len(raw) > MAX_BYTES:
        raise InputError(f"file is too large ({len(raw):,} bytes; limit {MAX_BYTES:,})")
    if b"\x00" in raw:
        raise InputError("binary data (NUL byte) is not a YAML config")
    had_bom = raw.startswith(b"\xef\xbb\xbf")
    try:
        text = raw[3:].decode("utf-8") if had_bom else raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"invalid UTF-8 at byte {exc.start}") from None
    return text, had_bom


_SCALAR_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:timestamp",
    "tag:yaml.org,2002:binary",
}
_MAP_TAGS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:omap"}
_SEQ_TAGS = {"tag:yaml.org,2002:seq"}
_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_NULL_TAG = "tag:yaml.org,2002:null"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_NUMBER_TAGS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}


class SpanMap(dict[ConfigPath, Any]):
    """Config path -> Span, built from the parser's nodes on first access.

    Most files need a handful of spans (one per finding); turning every node's marks into
    Span objects up front cost more than the rules.
    """

    def __getitem__(self, path: ConfigPath) -> Span:
        value = super().__getitem__(path)
        if not isinstance(value, Span):  # still the (key node, value node) pair
            value = _span(*value)
            super().__setitem__(path, value)
        return value

    def get(self, path: ConfigPath, default: Any = None) -> Any:
        return self[path] if path in self else default  # noqa: SIM401 - dict.get skips __getitem__

    def values(self) -> Any:
        return [self[p] for p in self]

    def items(self) -> Any:
        return [(p, self[p]) for p in self]


def _scalar(constructor: Any, node: Any) -> Any:
    """The Python value of a scalar node; the common tags without the generic constructor."""
    tag, value = node.tag, node.value
    if tag == "tag:yaml.org,2002:str":
        return value
    digits = value.lstrip("-+")
    if (tag == "tag:yaml.org,2002:int" and digits.isdigit() and "_" not in value
            and (not digits.startswith("0") or digits == "0")):  # fmt: skip
        return int(value)
    if tag == "tag:yaml.org,2002:null":
        return None
    if tag == "tag:yaml.org,2002:bool":
        return constructor.bool_values[value.lower()]
    return constructor.construct_object(node, deep=True)


class _Builder:
    """Walks the composed node graph into values and spans, with hostile-input bounds."""

    def __init__(self) -> None:
        self.spans: SpanMap = SpanMap()
        self.duplicates: list[tuple[ConfigPath, Span]] = []
        self.merged: set[ConfigPath] = set()
        self.visited = 0
        self.constructor = yaml.constructor.SafeConstructor()

    def _tick(self, node: Any) -> None:
        self.visited += 1
        if self.visited > MAX_NODES:
            raise InputError(
                f"line {node.start_mark.line + 1}: alias expansion exceeds {MAX_NODES:,} nodes "
                "(YAML bomb?)"
            )

    def scalar(self, node: Any) -> Any:
        """A scalar's value; a number literal is bounded before any conversion (``int()``
        of a long decimal, base-60 or hex literal is quadratic, then Python refuses it)."""
        if node.tag in _NUMBER_TAGS:
            too_long = number_too_long(node.value)
            if too_long:
                raise InputError(f"line {node.start_mark.line + 1}: {too_long}")
        try:
            return _scalar(self.constructor, node)
        except (yaml.YAMLError, ValueError, OverflowError, KeyError, TypeError) as exc:
            raise InputError(
                f"line {node.start_mark.line + 1}: cannot read scalar: {_first_line(exc)}"
            ) from None

    def leaf(self, node: Any, depth: int) -> Any:
        """A scalar node's value at ``depth``, counted and bounded as :meth:`build` does every
        node. Strings, nulls and booleans, most of a dump's ~1,700 scalars, are read here
        without :meth:`scalar`'s number bounds and error handling, which they do not need."""
        self._tick(node)
        if depth > MAX_DEPTH:
            raise _too_deep(node)
        tag = node.tag
        if tag == _STR_TAG:
            return node.value
        if tag == _NULL_TAG:
            return None
        if tag == _BOOL_TAG:
            found = self.constructor.bool_values.get(node.value.lower())
            if found is not None:
                return found
        elif tag not in _SCALAR_TAGS:
            raise UnsupportedTag(
                f"line {node.start_mark.line + 1}: unsupported YAML tag {bounded_repr(tag)}"
            )
        return self.scalar(node)

    def build(self, node: Any, path: ConfigPath, depth: int, active: set[int]) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return self.leaf(node, depth)
        self._tick(node)
        if depth > MAX_DEPTH:
            raise _too_deep(node)
        if id(node) in active:
            raise InputError(f"line {node.start_mark.line + 1}: recursive alias")
        active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                if node.tag not in _SEQ_TAGS:
                    raise UnsupportedTag(
                        f"line {node.start_mark.line + 1}: unsupported YAML tag "
                        f"{bounded_repr(node.tag)}"
                    )
                items = []
                for i, item in enumerate(node.value):
                    self._record((*path, i), None, item)
                    items.append(self.build(item, (*path, i), depth + 1, active))
                return items
            if isinstance(node, yaml.MappingNode):
                if node.tag not in _MAP_TAGS:
                    raise UnsupportedTag(
                        f"line {node.start_mark.line + 1}: unsupported YAML tag "
                        f"{bounded_repr(node.tag)}"
                    )
                return self._mapping(node, path, depth, active)
        finally:
            active.discard(id(node))
        raise InputError(f"line {node.start_mark.line + 1}: unsupported YAML node")

    def _mapping(self, node: Any, path: ConfigPath, depth: int, active: set[int]) -> dict[Any, Any]:
        """A mapping's values, its entries' spans recorded. The loop is most of a dump's build
        (about 900 entries, most of them a plain key and a string value), so what
        :meth:`_tick`, :meth:`_record` and :meth:`leaf` do for such an entry is written out
        here: the same counts, bounds and values, without three calls an entry."""
        out: dict[Any, Any] = {}
        merged: dict[Any, Any] = {}
        written: dict[ConfigPath, tuple[Any, Any]] = {}  # for a merge after them
        spans = self.spans
        scalar_node = yaml.ScalarNode
        leaf_too_deep = depth + 1 > MAX_DEPTH
        for key_node, value_node in node.value:
            self.visited += 1
            if self.visited > MAX_NODES:
                self._tick(key_node)  # raises, naming the node's line
            if key_node.tag == _MERGE_TAG:
                sources = (
                    value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                )
                # Built last to first, so the spans left are those of the first source that
                # has a key, as its value is (the earlier source wins).
                values = [self.build(s, path, depth + 1, active) for s in reversed(sources)]
                for source, value in zip(sources, reversed(values), strict=True):
                    if not isinstance(value, dict):
                        raise InputError(
                            f"line {source.start_mark.line + 1}: merge key '<<' needs a mapping"
                        )
                    for k, v in value.items():
                        merged.setdefault(k, v)
                continue
            if key_node.tag == _STR_TAG and type(key_node) is yaml.ScalarNode:
                skey = key_node.value  # nearly every key, as self.scalar() would read it
            else:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag not in _SCALAR_TAGS:
                    raise InputError(
                        f"line {key_node.start_mark.line + 1}: mapping keys must be plain scalars"
                    )
                key = self.scalar(key_node)
                if not isinstance(key, str | int | float | bool) and key is not None:
                    raise InputError(
                        f"line {key_node.start_mark.line + 1}: unsupported mapping key"
                    )
                skey = key if isinstance(key, str) else str(key)
            child = (*path, skey)
            if skey in out:
                self.duplicates.append((child, _span(key_node, value_node)))
            spans[child] = written[child] = (key_node, value_node)  # what _record stores
            if type(value_node) is scalar_node and value_node.tag == _STR_TAG:
                # leaf() of the commonest value, a string: counted and bounded as it counts.
                self.visited += 1
                if self.visited > MAX_NODES:
                    self._tick(value_node)
                if leaf_too_deep:
                    raise _too_deep(value_node)
                out[skey] = value_node.value
            elif isinstance(value_node, scalar_node):  # most values: no build() call
                out[skey] = self.leaf(value_node, depth + 1)
            else:
                out[skey] = self.build(value_node, child, depth + 1, active)
        if merged:
            # A key written in this mapping wins over a merged one, and so does its span; a
            # key only a merge brought in is written elsewhere (engine.spans edits neither).
            for child, nodes in written.items():
                self._record(child, *nodes)
            for k in merged:
                if k not in out:
                    self.merged.add((*path, k))
        for k, v in merged.items():
            out.setdefault(k, v)
        return out

    def _record(self, path: ConfigPath, key_node: Any, value_node: Any) -> None:
        self.spans[path] = (key_node, value_node)


def _too_deep(node: Any) -> InputError:
    return InputError(f"line {node.start_mark.line + 1}: nesting deeper than {MAX_DEPTH} levels")


def _span(key_node: Any, value_node: Any) -> Span:
    scalar = isinstance(value_node, yaml.ScalarNode)
    style = value_node.style if scalar else None
    flow = bool(getattr(value_node, "flow_style", False)) if not scalar else False
    return Span(
        key_start=_pos(key_node.start_mark) if key_node is not None else None,
        key_end=_pos(key_node.end_mark) if key_node is not None else None,
        value_start=_pos(value_node.start_mark),
        value_end=_pos(value_node.end_mark),
        scalar=scalar and style in (None, "", "'", '"'),
        style=style or "",
        flow=flow,
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return bounded_str(text[0], MAX_REPR_CHARS) if text else type(exc).__name__


def _yaml_error_message(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or _first_line(exc)
    if mark is not None:
        return f"line {mark.line + 1}, column {mark.column + 1}: YAML syntax error: {problem}"
    return f"YAML syntax error: {problem}"


#: Nesting the C composer handles safely (20,000 levels were seen to work, 30,000 crash).
SAFE_C_DEPTH = 5_000


def compose(text: str) -> list[Any]:
    """The YAML node graph of each document, without letting pathological nesting crash.

    ``yaml.compose`` recurses in C and segfaults on ~30,000 nested brackets. Texts that
    provably cannot nest that deep (every real config) use it directly, several times faster;
    the rest are composed from the parser's events with an explicit stack that stops at
    MAX_DEPTH. A long text's events are counted first (:func:`_scan`).
    """
    if _scan(text) <= SAFE_C_DEPTH:
        return list(yaml.compose_all(text, Loader=_Loader))
    return _compose_events(text)


#: Texts this short are not scanned: YAML gives at most about one node a character (``{?,?}``
#: and ``?`` lines do; most forms take two or more), so they hold about half MAX_NODES, and a
#: nesting level takes two characters, so they nest at most SAFE_C_DEPTH deep.
_UNCOUNTED_CHARS = min(MAX_NODES // 2, 2 * SAFE_C_DEPTH)


def _scan(text: str) -> int:
    """The nesting depth of ``text`` (an upper bound for a short text, and for one with few
    indicator characters: :func:`_indicator_bound`), refusing a text of more than
    ``bounds.MAX_NODES`` nodes before anything is composed.

    The composer builds every node of the document before the builder counts them: 700,000
    entries of one flow mapping took 570 MB and 6 s first. The parser's events cost about a
    microsecond each; the count stops at the bound, and the depth it measures replaced a
    line-by-line estimate that cost seconds on a million comment lines.
    """
    if len(text) <= _UNCOUNTED_CHARS:
        return len(text) // 2
    made = _indicator_bound(text)
    if made * _NODES_PER_INDICATOR <= MAX_NODES:
        return made  # every real config: the event count below was a quarter of its load
    count = depth = deepest = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, _NODE_EVENTS):
            count += 1
            if count > MAX_NODES:
                mark = event.start_mark
                raise InputError(
                    f"line {mark.line + 1 if mark else '?'}: more than {MAX_NODES:,} YAML nodes "
                    "(bounds.MAX_NODES)"
                )
            if isinstance(event, _OPEN_EVENTS):
                depth += 1
                deepest = max(deepest, depth)
        elif isinstance(event, _CLOSE_EVENTS):
            depth -= 1
    return deepest


#: The most nodes one indicator character of :func:`_indicator_bound` makes: a ``:`` its
#: mapping, key and value (``{`` and ``?`` likewise), a ``-`` its sequence and item (``[``
#: likewise), a ``,`` the next flow entry's key and value, a document marker its root.
_NODES_PER_INDICATOR = 4


def _indicator_bound(text: str) -> int:
    """An upper bound on the nesting depth of ``text``, and on its YAML nodes divided by
    ``_NODES_PER_INDICATOR``, from the characters YAML cannot make a node without.

    Past a document's root, every node is a collection or an entry of one, and each is made
    at an indicator: a block mapping and its entry's key and value at the entry's ``:`` (or
    ``?``), a block sequence and its item at ``-``, a flow collection at ``[`` or ``{`` (with
    its first entry), each further flow entry at ``,``; another document starts at ``---``
    (three ``-``) or after ``...``. Aliases (``*``) are entries too; counting them as well
    only loosens the bound. Counting characters in C costs about a hundredth of the event
    scan, and for every real config the bound is far below ``MAX_NODES`` (a 900-line Bridge
    dump has about a thousand indicators), so the scan runs only for texts that could hold
    more nodes than the bound allows, whose nodes it then counts exactly.
    """
    return sum(map(text.count, ":?-,[{*")) + text.count("...") + 1


_NODE_EVENTS = (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent, yaml.AliasEvent)
_OPEN_EVENTS = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSE_EVENTS = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


def _compose_events(text: str) -> list[Any]:
    """Compose from the event stream with an explicit stack (bounded depth)."""
    resolver: Any = yaml.resolver.Resolver()
    anchors: dict[str, Any] = {}
    stack: list[list[Any]] = []  # [node, pending mapping key]
    roots: list[Any] = []

    def attach(node: Any) -> None:
        if not stack:
            roots.append(node)
            return
        parent = stack[-1]
        if isinstance(parent[0], yaml.SequenceNode):
            parent[0].value.append(node)
        elif parent[1] is None:
            parent[1] = node
        else:
            parent[0].value.append((parent[1], node))
            parent[1] = None

    events: Iterable[Any] = yaml.parse(text, Loader=_Loader)
    node: Any
    for event in events:
        e: Any = event  # the stubs' Mark | None unions do not narrow by event type
        if isinstance(event, yaml.DocumentStartEvent):
            anchors = {}  # anchors do not cross documents
        elif isinstance(event, yaml.AliasEvent):
            if e.anchor not in anchors:
                raise InputError(f"line {e.start_mark.line + 1}: undefined alias *{e.anchor}")
            attach(anchors[e.anchor])
        elif isinstance(event, yaml.ScalarEvent):
            tag = e.tag
            if tag is None or tag == "!":
                tag = resolver.resolve(yaml.ScalarNode, e.value, e.implicit)
            node = yaml.ScalarNode(tag, e.value, e.start_mark, e.end_mark, style=e.style)
            if e.anchor:
                anchors[e.anchor] = node
            attach(node)
        elif isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
            kind = (
                yaml.SequenceNode
                if isinstance(event, yaml.SequenceStartEvent)
                else yaml.MappingNode
            )
            tag = e.tag
            if tag is None or tag == "!":
                tag = resolver.resolve(kind, None, e.implicit)
            node = kind(tag, [], e.start_mark, None, flow_style=e.flow_style)
            if e.anchor:
                anchors[e.anchor] = node
            attach(node)
            stack.append([node, None])
            if len(stack) > MAX_DEPTH:
                raise InputError(
                    f"line {e.start_mark.line + 1}: nesting deeper than {MAX_DEPTH} levels"
                )
        elif isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
            node = stack.pop()[0]
            node.end_mark = e.end_mark
    return roots


#: Top-level keys written at column 0 (``model:``, ``"train":``), for malformed YAML.
_TOP_KEY = re.compile(r"""^(["']?)([A-Za-z_][\w.-]*)\1[ \t]*:(?:[ \t]|$)""", re.M)


def _looks_like_config(keys: dict[str, Any]) -> bool:
    """True when top-level keys name a Bridge config, by the test forms.detect_root uses."""
    try:
        detect_root(keys)
    except NotBridgeConfig:
        return False
    return True


def _node_keys(node: Any) -> dict[str, Any]:
    """A mapping node's plain top-level keys, with values enough for detect_root."""
    keys: dict[str, Any] = {}
    for key_node, value_node in node.value if isinstance(node, yaml.MappingNode) else ():
        if isinstance(key_node, yaml.ScalarNode):
            if isinstance(value_node, yaml.MappingNode):
                keys[key_node.value] = {}
            elif isinstance(value_node, yaml.ScalarNode):
                keys[key_node.value] = value_node.value
            else:
                keys[key_node.value] = None
    return keys


def _node_is_config(node: Any) -> bool:
    return isinstance(node, yaml.MappingNode) and _looks_like_config(_node_keys(node))


def _text_is_config(text: str) -> bool:
    """For YAML that does not parse: do its column-0 keys name a Bridge config?"""
    return _looks_like_config({m.group(2): {} for m in _TOP_KEY.finditer(text)})


def _is_empty(node: Any) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null") and not node.value


def _skipped(path: str, text: str, had_bom: bool, why: str) -> Document:
    return Document(path=path, text=text, data={}, spans=SpanMap(), had_bom=had_bom, skip=why)


#: What ``str.splitlines`` breaks lines at besides ``\n`` and ``\r`` (``\r\n`` is one break).
_OTHER_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _check_lines(text: str) -> None:
    """Refuse a text of more than ``bounds.MAX_LINES`` lines (as ``str.splitlines`` counts
    them: each stage that reads comments, directives or suppressions loops over the lines)."""
    if len(text) <= MAX_LINES:
        return
    breaks = text.count("\n") + text.count("\r") - text.count("\r\n")
    breaks += sum(text.count(char) for char in _OTHER_BREAKS)
    if breaks > MAX_LINES:
        raise InputError(
            f"more than {MAX_LINES:,} lines ({breaks:,}), moe-lint's bound (bounds.MAX_LINES)"
        )


def parse_text(text: str, path: str = "<string>", had_bom: bool = False) -> Document:
    """Parse decoded text into a :class:`Document`; raise :class:`InputError` on bad input.

    YAML that is plainly not a Bridge config comes back as a Document with ``skip`` set:
    empty files, top-level lists and scalars, and, when it is not a Bridge config by
    detect_root's test on its top-level keys, YAML with several documents, with tags outside
    the core schema, or that does not parse (then the keys written at column 0 are tested).
    A file that passes the test is held to Bridge's loader (OmegaConf.load: one YAML
    document, core tags): anything else is an input error (exit 2).

    Megatron-LM input is told by its content (config/mlm_args.py): a shell launch script (a
    shebang, a ``.sh`` name, ``--flag`` tokens in shell text) or a ``MODEL_ARGS:`` argument
    file.
    """
    _check_lines(text)
    if looks_like_script(text, path):
        # Lazy: the Megatron-LM reader (~25 ms of imports) only for Megatron-LM input, and
        # Bridge's launchers (run_recipe.py --recipe NAME k=v) before Megatron-LM's.
        from moe_lint.config import bridge_launch, mlm_args

        launch = bridge_launch.document(text, path, had_bom)
        if launch is not None:
            return launch_document(launch)
        return mlm_document(mlm_args.parse_script(text, path, had_bom))
    try:
        nodes = compose(text)
    except yaml.YAMLError as exc:
        message = _yaml_error_message(exc)
        # libyaml's own nesting limit (PyYAML 6.0.4 wheels) is a bound like MAX_DEPTH: exit 2.
        if "nesting depth" not in message and not _text_is_config(text):
            return _skipped(
                path, text, had_bom, f"not a Megatron Bridge config (and not valid YAML: {message})"
            )
        raise InputError(message) from None
    except RecursionError:
        raise InputError(f"nesting deeper than {MAX_DEPTH} levels") from None
    documents = [n for n in nodes if not _is_empty(n)]
    if not documents:
        if not text.strip():
            return _skipped(path, text, had_bom, "empty file")
        # Only comments (a commented-out template): valid YAML with nothing to check.
        return Document(path=path, text=text, data={}, spans=SpanMap(), had_bom=had_bom)
    if len(nodes) > 1:
        for node in documents:
            if _node_is_config(node):
                raise InputError(
                    f"line {node.start_mark.line + 1}: more than one YAML document in the file "
                    f"({len(nodes)}); Bridge loads a config file as one document"
                )
        return _skipped(
            path, text, had_bom, f"{len(nodes)} YAML documents, not a Megatron Bridge config"
        )
    node = nodes[0]
    if isinstance(node, yaml.SequenceNode):
        return _skipped(path, text, had_bom, "top level is a list, not a Megatron Bridge config")
    if not isinstance(node, yaml.MappingNode):
        return _skipped(path, text, had_bom, "top level is a scalar, not a Megatron Bridge config")
    if any(isinstance(k, yaml.ScalarNode) and k.value == "MODEL_ARGS" for k, _ in node.value):
        # Lazy: the Megatron-LM reader only for a MODEL_ARGS argument file.
        from moe_lint.config import mlm_args

        if mlm_args.is_nemo_model_args(node):
            return _skipped(path, text, had_bom, mlm_args.SKIP_NEMO)
        return mlm_document(mlm_args.parse_model_args(text, path, node, had_bom))
    builder = _Builder()
    try:
        data = builder.build(node, (), 0, set())
    except UnsupportedTag as exc:
        if not _node_is_config(node):
            return _skipped(path, text, had_bom, f"not a Megatron Bridge config ({exc})")
        raise
    except RecursionError:
        raise InputError(f"nesting deeper than {MAX_DEPTH} levels") from None
    return Document(
        path=path,
        text=text,
        data=data,
        spans=builder.spans,
        had_bom=had_bom,
        duplicates=builder.duplicates,
        merged=builder.merged,
    )


def load_data(text: str) -> Any:
    """The plain values of one YAML document (not a config: a rule pack), under the bounds a
    config's YAML is read with (nodes, nesting, number literals, core-schema tags only).
    Empty text is None; bad YAML raises InputError."""
    try:
        nodes = compose(text)
    except yaml.YAMLError as exc:
        raise InputError(_yaml_error_message(exc)) from None
    except RecursionError:
        raise InputError(f"nesting deeper than {MAX_DEPTH} levels") from None
    documents = [n for n in nodes if not _is_empty(n)]
    if len(nodes) > 1:
        raise InputError(f"more than one YAML document ({len(nodes)})")
    if not documents:
        return None
    try:
        return _Builder().build(documents[0], (), 0, set())
    except RecursionError:
        raise InputError(f"nesting deeper than {MAX_DEPTH} levels") from None


def mlm_document(result: Any) -> Document:
    """The Document of Megatron-LM input read by config/mlm_args.py (an ``MlmResult``)."""
    return Document(
        path=result.path, text=result.text, data=result.data, spans=SpanMap(result.spans),
        had_bom=result.had_bom, skip=result.skip, form=result.form, mlm_flags=result.flags,
        mlm_defaults=result.defaults, mlm_unknown=result.unknown, mlm_notes=result.notes,
        launcher=result.launcher, launcher_source=result.launcher_source, run_mode=result.mode,
    )  # fmt: skip


def launch_document(read: Any) -> Document:
    """The Document of a Megatron Bridge launch script read by config/bridge_launch.py (a
    ``LaunchRead``): the recipe's values, their spans and the launch (overrides, after-steps)."""
    return Document(
        path=read.path, text=read.text, data=read.data, spans=SpanMap(read.spans),
        had_bom=read.had_bom, skip=read.skip, form=read.form, launcher=read.launcher,
        launch=read.launch,
    )  # fmt: skip


def load_file(path: str) -> Document:
    """Read and parse one config file (only a regular file: bounds.read_file)."""
    try:
        raw = read_file(path, MAX_BYTES)
    except InputError as exc:
        if exc.message == "is a directory, not a file":
            raise InputError("is a directory, not a config file") from None
        raise
    text, had_bom = decode(raw, path)
    return parse_text(text, path, had_bom)


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
