"""Config paths map to 1-based spans; hostile YAML is refused with one line."""

from __future__ import annotations

import pytest

from moe_lint.errors import InputError
from moe_lint.fix import apply_edits
from moe_lint.load import decode, format_path, parse_path, parse_text
from moe_lint.locate import location, set_value_edit


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
    # inside a flow mapping there is no faithful text edit
    assert set_value_edit(doc, ("train", "x"), 1) is None
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
        ("a: !!python/object/apply:os.system ['x']\n", "unsupported YAML tag"),
        ("a: !custom 1\n", "unsupported YAML tag"),
        ("a: [1,\n", "YAML syntax error"),
        ("- 1\n", "top level is a list"),
        ("just a string\n", "top level is a scalar"),
        ("", "empty file"),
        ("a: &a [*a]\n", "recursive alias"),
        ("a:\n" + "".join("  " * i + "- \n" for i in range(1, 80)), "nesting deeper"),
        ("a: 1\n---\nb: 2\n", "more than one YAML document"),
        ("a: *nope\n", "undefined alias"),
    ],
)
def test_hostile_input(text: str, needle: str) -> None:
    with pytest.raises(InputError, match=needle):
        parse_text(text)


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
