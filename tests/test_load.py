"""Config paths map to 1-based spans; hostile YAML is refused with one line."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from moe_lint.config.load import decode, format_path, location, parse_path, parse_text
from moe_lint.engine.spans import set_value_edit
from moe_lint.errors import InputError
from moe_lint.output.fix import apply_edits


def test_spans_for_keys_and_list_items() -> None:
    text = "model:\n  recompute_modules: [up_proj, 'norm']\n  cp: {a: 1}\n"
    doc = parse_text(text)
    assert location(doc, ("model", "recompute_modules")) == (2, 3, 2, 20)
    item = doc.spans[("model", "recompute_modules", 1)]
    assert (item.value_start.line, item.value_start.column, item.style) == (2, 32, "'")
    assert location(doc, ("model", "cp", "a"))[:2] == (3, 8)
    # an absent path is anchored at its nearest written ancestor
    assert location(doc, ("model", "missing")) == (1, 1, 1, 6)
    assert location(doc, ("train", "x")) == (1, 1, 1, 1)


def test_crlf_and_unicode_indices() -> None:
    text = "# é\r\nmodel:\r\n  context_parallel_size: 8\r\n"
    doc = parse_text(text)
    span = doc.spans[("model", "context_parallel_size")]
    assert text[span.value_start.index : span.value_end.index] == "8"
    assert span.key_start.line == 3
    edit = set_value_edit(doc, ("model", "context_parallel_size"), 16)
    assert apply_edits(text, [edit]) == text.replace(": 8\r\n", ": 16\r\n")


def test_bom_is_kept_aside() -> None:
    text, bom = decode("\ufeffmodel: {}\n".encode(), "f")
    assert bom and text == "model: {}\n"


def test_insert_missing_key_under_block_parent() -> None:
    text = "model:\n  a: 1   # c\n  b:\n    - x\ntrain: {}\n"
    doc = parse_text(text)
    edit = set_value_edit(doc, ("model", "sequence_parallel"), True)
    assert (
        apply_edits(text, [edit])
        == "model:\n  a: 1   # c\n  b:\n    - x\n  sequence_parallel: true\ntrain: {}\n"
    )
    # inside a flow mapping the entry goes before the closing brace
    edit = set_value_edit(doc, ("train", "x"), 1)
    assert apply_edits(text, [edit]).endswith("train: {x: 1}\n")
    # a missing section is appended
    edit = set_value_edit(doc, ("dataset", "seq_length"), 4096)
    assert apply_edits(text, [edit]).endswith("train: {}\ndataset:\n  seq_length: 4096\n")


def test_merge_keys_and_anchors() -> None:
    doc = parse_text("base: &b {x: 1, y: 2}\nmodel:\n  <<: *b\n  y: 3\n")
    assert doc.data["model"] == {"x": 1, "y": 3}


def test_duplicates_are_recorded() -> None:
    doc = parse_text("model:\n  a: 1\n  a: 2\n")
    assert [p for p, _ in doc.duplicates] == [("model", "a")]
    assert doc.data["model"]["a"] == 2


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("model: !!python/object/apply:os.system ['x']\n", "unsupported YAML tag"),
        ("model: !custom 1\n", "unsupported YAML tag"),
        ("model: [1,\n", "YAML syntax error"),
        ('"train": {a: [1}\n', "YAML syntax error"),
        ("a: &a [*a]\n", "recursive alias"),
        ("a:\n" + "".join("  " * i + "- \n" for i in range(1, 80)), "nesting deeper"),
        ("model: 1\n---\nb: 2\n", "more than one YAML document"),
        ("a: 1\n---\ntrain: {}\n", "line 3: more than one YAML document"),
        ("model: {}\n---\n", "more than one YAML document"),
        ("model: *nope\n", "undefined alias"),
    ],
)
def test_hostile_input(text: str, needle: str) -> None:
    with pytest.raises(InputError, match=needle):
        parse_text(text)


@pytest.mark.parametrize(
    ("text", "skip"),
    [
        ("", "empty file"),
        ("  \n\n", "empty file"),
        ("- 1\n", "top level is a list, not a Megatron Bridge config"),
        ("- model: {}\n", "top level is a list, not a Megatron Bridge config"),
        ("just a string\n", "top level is a scalar, not a Megatron Bridge config"),
        ("a: 1\n---\nb: 2\n", "2 YAML documents, not a Megatron Bridge config"),
        ("---\na: 1\n---\n- x\n---\n", "3 YAML documents, not a Megatron Bridge config"),
        (
            "a: [1,\n",
            "not a Megatron Bridge config (and not valid YAML: line 2, column 1: YAML syntax",
        ),
        (
            "Resources:\n  B: !Ref X\n",
            "not a Megatron Bridge config (line 2: unsupported YAML tag '!Ref')",
        ),
        ("a: *nope\n", "not a Megatron Bridge config (and not valid YAML: "),
    ],
)
def test_not_config_yaml_is_skipped(text: str, skip: str) -> None:
    doc = parse_text(text)
    assert doc.skip is not None and doc.skip.startswith(skip), doc.skip
    assert doc.data == {}


def test_comment_only_and_empty_documents_are_no_keys() -> None:
    for text in ("# only a comment\n", "---\n# c\n", "---\n---\n"):
        doc = parse_text(text)
        assert doc.skip is None and doc.data == {}


def test_deep_text_composes_every_document() -> None:
    """Past SAFE_C_DEPTH the event composer runs (only to refuse: MAX_DEPTH is far lower);
    like the C composer it sees each document and keeps anchors inside their document."""
    from moe_lint.config.load import SAFE_C_DEPTH, _compose_events, compose

    text = "x: [[], []]\n---\ny: &a 1\n---\nz: 2\n"
    assert [n.value[0][0].value for n in _compose_events(text)] == ["x", "y", "z"]
    assert [n.value[0][0].value for n in compose(text)] == ["x", "y", "z"]
    with pytest.raises(InputError, match="undefined alias"):  # anchors stay in their document
        _compose_events("y: &a 1\n---\nz: *a\n")
    with pytest.raises(InputError, match="undefined alias"):
        parse_text("model:\n  a: &a 1\n---\nz: *a\n")
    deep = "model: " + "[" * (SAFE_C_DEPTH + 1) + "]" * (SAFE_C_DEPTH + 1) + "\n"
    # libyaml's flow-level bound ("exceeded maximum nesting depth"), or without the C
    # parser the event composer's MAX_DEPTH ("nesting deeper than 64 levels")
    with pytest.raises(InputError, match="nesting"):
        parse_text(deep + "---\ny: 2\n")
    assert parse_text("x: [[], []]\n---\ny: 2\n").skip == (
        "2 YAML documents, not a Megatron Bridge config"
    )
    with pytest.raises(InputError, match="line 3: more than one YAML document"):
        parse_text("x: 1\n---\nmodel: {}\n---\nz: 2\n")


def test_builder_counts_every_node() -> None:
    """The node count the alias bound (MAX_NODES) is held to: every key and every value,
    strings included (the mapping loop reads those itself), collections and list items."""
    from moe_lint.config.load import _Builder, compose

    builder = _Builder()
    data = builder.build(compose("a: {b: x, c: [1, y]}\nd: &s text\ne: *s\n")[0], (), 0, set())
    assert data == {"a": {"b": "x", "c": [1, "y"]}, "d": "text", "e": "text"}
    # root, a, {…}, b, x, c, […], 1, y, d, text, e, text
    assert builder.visited == 13


def test_string_aliases_are_bounded() -> None:
    """The billion laughs written with mappings of strings (the builder's inlined path)."""
    lines = ["a0: &a0 {" + ", ".join(f"k{j}: xxxxxxxx" for j in range(10)) + "}"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} {{" + ", ".join(f"k{j}: *a{i - 1}" for j in range(10)) + "}")
    with pytest.raises(InputError, match="alias expansion exceeds"):
        parse_text("\n".join(lines) + "\n")


def test_billion_laughs_is_bounded() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    with pytest.raises(InputError, match="alias expansion"):
        parse_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("raw", [b"\x00\x01", b"model: \xff\xfe\n"])
def test_binary_and_bad_utf8(raw: bytes) -> None:
    with pytest.raises(InputError):
        decode(raw, "f")


def test_path_round_trip() -> None:
    for text in ("model.recompute_modules[0]", "a", "a.b.c", "x[3].y"):
        assert format_path(parse_path(text)) == text


#: Plain scalars near the edges of the YAML 1.1 implicit resolvers (the first character picks
#: the candidates: digits, signs, '.', '<', '=', '~', the bool/null letters), and look-alikes.
TRICKY_SCALARS = [
    "", "~", "null", "Null", "NULL", "nULL", "true", "True", "TRUE", "tRUE", "yes", "Yes", "YES",
    "y", "Y", "n", "N", "no", "No", "on", "On", "ON", "off", "Off", "OFF", "false", "False",
    "0", "-0", "+0", "00", "007", "0o17", "0x1F", "0x1g", "0b101", "0b102", "1_000", "1__0",
    "-1_0", "12", "1e3", "1E3", "1.0e+3", "1.0e3", "1.", ".5", "-.5", "+.5", "._", ".",
    "6.8523015e+5", "685.230_15e+03", "190:20:30", "190:20:30.15", "1:60", "-1:2",
    ".inf", ".Inf", ".INF", "-.inf", "+.inf", ".nan", ".NaN", ".NAN", ".nAn",
    "2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5", "2001-1-1",
    "2001-13-40", "<<", "<", "<<<", "=", "==", "-", "+", "1-2", "1e", "e3", "tp", "value",
    "bf16_mixed", "torch.bfloat16", "${oc.env:X}", "1.5B", "8x7b", "yes!", "nulls",
]  # fmt: skip


def _tags(loader: type, text: str) -> list[str]:
    """Every node's tag, in document order."""
    import yaml

    out: list[str] = []

    def walk(node: yaml.Node) -> None:
        out.append(node.tag)
        if isinstance(node, yaml.SequenceNode):
            for item in node.value:
                walk(item)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                walk(key)
                walk(value)

    for document in yaml.compose_all(text, Loader=loader):
        walk(document)
    return out


def test_loader_tags_match_pyyaml_safe_loader() -> None:
    """The loader that remembers plain scalars' tags (load._Loader) tags every node as
    PyYAML's own safe loader does, on a first reading and on a second from what it kept,
    block and flow, plain and quoted (the quoted forms are strings whatever they say)."""
    import json

    import yaml

    from moe_lint.config import load

    def plain(s: str, flow: bool) -> bool:
        """``s`` is read back as one plain scalar of that text (not "-", a list entry)."""
        if not s:
            return False  # written below as "empty:"
        try:
            node = yaml.compose(f"[{s}]" if flow else f"k: {s}", Loader=yaml.SafeLoader)
        except yaml.YAMLError:
            return False
        value = node.value[0] if flow else node.value[0][1]
        return isinstance(value, yaml.ScalarNode) and value.value == s and not value.style

    lines = [f"k{i}: {s}" for i, s in enumerate(TRICKY_SCALARS) if plain(s, flow=False)]
    lines += [f"q{i}: {json.dumps(s)}" for i, s in enumerate(TRICKY_SCALARS)]
    lines.append("flow: [" + ", ".join(s for s in TRICKY_SCALARS if plain(s, flow=True)) + "]")
    lines.append("empty:")  # the empty plain scalar
    text = "\n".join(lines) + "\n"
    expected = _tags(yaml.SafeLoader, text)
    load._PLAIN_TAGS.clear()
    assert _tags(load._Loader, text) == expected
    assert load._PLAIN_TAGS  # the second reading is served from what the first kept
    assert _tags(load._Loader, text) == expected
    every = ("str", "int", "float", "bool", "null", "timestamp", "merge", "value", "seq", "map")
    assert set(expected) == {f"tag:yaml.org,2002:{t}" for t in every}


@given(st.text(alphabet=st.sampled_from("0123456789.-+_:eExXoObBtTrRuUfFaAlLsSyYnN~<=: "),
               max_size=12))  # fmt: skip
def test_remembered_tag_is_pyyaml_s(value: str) -> None:
    """Any plain scalar text: the remembered tag is the one PyYAML's resolver gives it, the
    first time and from memory."""
    import yaml

    from moe_lint.config import load

    reference = yaml.resolver.Resolver().resolve(yaml.ScalarNode, value, (True, False))
    loader = load._Loader("")
    load._PLAIN_TAGS.pop(value, None)
    assert loader.resolve(yaml.ScalarNode, value, (True, False)) == reference
    assert load._PLAIN_TAGS[value] == reference
    assert loader.resolve(yaml.ScalarNode, value, (True, False)) == reference
    quoted = loader.resolve(yaml.ScalarNode, value, (False, True))
    assert quoted == "tag:yaml.org,2002:str"


def test_remembered_tags_are_bounded() -> None:
    """A file of a million distinct scalars does not grow the memory of tags past its bound."""
    import yaml

    from moe_lint.config import load

    loader = load._Loader("")
    for i in range(load._PLAIN_TAGS_MAX + 10):
        assert loader.resolve(yaml.ScalarNode, f"{i}", (True, False)) == "tag:yaml.org,2002:int"
    assert len(load._PLAIN_TAGS) <= load._PLAIN_TAGS_MAX
    long = "1" * (load._PLAIN_TAG_CHARS + 1)  # a long text is resolved, and not kept alive
    assert loader.resolve(yaml.ScalarNode, long, (True, False)) == "tag:yaml.org,2002:int"
    assert long not in load._PLAIN_TAGS


def test_built_values_are_safe_load_s() -> None:
    """The builder's values (strings, nulls and booleans read without the generic scalar
    path, keys by their text) are yaml.safe_load's, for plain, quoted and explicitly tagged
    scalars, in mappings and lists; a boolean tag on a non-boolean is still refused."""
    import json

    import yaml

    from moe_lint.config.load import MAX_DEPTH

    values = [s for s in TRICKY_SCALARS
              if s and s not in ("-", "<<", "=", "2001-13-40") and ":" not in s]  # fmt: skip
    lines = [f"p{i}: {s}" for i, s in enumerate(values)]
    lines += [f"q{i}: {json.dumps(s)}" for i, s in enumerate(values)]
    lines += ["t1: !!bool yes", "t2: !!str 1", "t3: !!null ''", "t4: !!int '7'", "t5: !!str",
              "list: [true, ~, '', x, 1, off, Null]", "empty:", "n: {a: {b: NO}}"]  # fmt: skip
    text = "\n".join(lines) + "\n"
    assert parse_text(text).data == yaml.safe_load(text)
    with pytest.raises(InputError, match="line 1: cannot read scalar"):
        parse_text("a: !!bool maybe\n")

    def nested(levels: int, leaf: str) -> str:
        return "".join("  " * i + f"k{i}:\n" for i in range(levels)) + "  " * levels + leaf + "\n"

    for leaf in ("x: yes", "x: s", "x: ~", "x: 1", "- yes"):  # a scalar at MAX_DEPTH is kept
        assert parse_text(nested(MAX_DEPTH - 1, leaf)).data
        with pytest.raises(InputError, match="nesting deeper"):
            parse_text(nested(MAX_DEPTH, leaf))
