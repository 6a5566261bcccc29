"""Version parsing and gates: PEP 440 order (dev/rc before the release), unset = newest release."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import run_lint
from moe_lint.config import versions
from moe_lint.config.versions import (
    NEWEST_RELEASED,
    below,
    check_spec,
    effective_version,
    parse_version,
    release_key,
    satisfies,
)
from moe_lint.engine.catalogue import Catalogue


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("2.12.0.dev0", "2.12"),
        ("2.6.0dev0", "2.6.0"),  # MCore writes "2.6.0dev0" (is_te_min_version); same as .dev0
        ("0.15.0rc0", "0.15.0"),
        ("0.15.0rc0", "0.15.0rc1"),
        ("2.12.0.dev0", "2.12.0rc0"),
        ("2.11.9", "2.12.0.dev0"),
        ("2.12", "2.12.0+cu13"),  # a local build sorts after its release
        ("2.9", "2.10"),  # numeric, not lexical
        ("0.6.0", "0.6.2"),
    ],
)
def test_pep440_order(older: str, newer: str) -> None:
    assert below(parse_version(older), parse_version(newer))
    assert not below(parse_version(newer), parse_version(older))


@pytest.mark.parametrize(
    ("version", "spec", "expected"),
    [
        # A dev/rc build lies on the older side of a gate at its release.
        ("2.12.0.dev0", "<2.12", True),
        ("2.12.0.dev0", ">=2.12", False),
        ("2.12.0rc1", "<2.12", True),
        ("0.15.0rc0", "<=0.14", False),
        ("0.15.0rc0", ">=0.15", False),
        ("0.15.0", ">=0.15", True),
        ("2.12.0", "<2.12", False),
        ("2.12.1", ">=2.12", True),
        ("0.14", "==0.14.0", True),
        ("0.14.1", "<=0.14", False),
        ("2.9", ">=2.1, <2.10", True),
        ("2.10", ">=2.1, <2.10", False),
        ("0.4.1", "<0.4.2", True),
        ("0.4.2", "<0.4.2", False),
    ],
)
def test_satisfies_stated(version: str, spec: str, expected: bool) -> None:
    assert satisfies(parse_version(version), spec) is expected


@pytest.mark.parametrize(
    ("package", "spec", "expected"),
    [
        ("transformer-engine", "<2.12", False),
        ("transformer-engine", ">=2.10", True),
        ("transformer-engine", "<2.19", True),  # a concrete 2.18, not "the newest anything"
        ("transformer-engine", ">=2.19", False),
        ("bridge", ">=0.6", True),
        ("bridge", "<0.4.2", False),
        ("bridge", "<0.7", True),
        ("megatron-core", "<0.19", False),
        ("megatron-core", ">=0.19", True),
        ("megatron-core", "==0.19.2", True),
        ("megatron-core", "<=0.14", False),
    ],
)
def test_unset_means_newest_release(package: str, spec: str, expected: bool) -> None:
    assert satisfies(None, spec, package) is expected


def test_newest_releases_are_the_documented_ones() -> None:
    assert NEWEST_RELEASED == {
        "megatron-core": "0.19.2",
        "bridge": "0.6.2",
        "transformer-engine": "2.18",
    }
    assert str(effective_version({}, "te")) == "2.18"
    assert str(effective_version({"bridge": parse_version("0.5")}, "megatron-bridge")) == "0.5"


def test_unset_needs_the_package() -> None:
    with pytest.raises(ValueError):
        satisfies(None, "<2.12")


@pytest.mark.parametrize("text", ["", "x", "core_v0.15", "2.6 dev", "v"])
def test_bad_versions(text: str) -> None:
    with pytest.raises(ValueError):
        parse_version(text)


@pytest.mark.parametrize("spec", ["2.6", "~=2.6", "<", "<2.6,", ">=abc"])
def test_bad_specifiers(spec: str) -> None:
    with pytest.raises(ValueError):
        check_spec(spec)


_RT002_SINK = """\
# moe-lint: transformer-engine={te}
model:
  softmax_type: learnable
dataset:
  enable_in_batch_packing: true
"""


@pytest.mark.parametrize(
    ("te", "fires"),
    [("2.11", True), ("2.12.0.dev0", True), ("2.12.0rc0", True), ("2.12", False), ("2.18", False)],
)
def test_dev_build_of_a_gated_release_counts_as_older(
    catalogue: Catalogue, te: str, fires: bool
) -> None:
    """End to end: RT002's sink branch is gated transformer-engine < 2.12 (TE PR #2568)."""
    result = run_lint(catalogue, _RT002_SINK.format(te=te), ["RT002"], None, [])
    assert result.error is None, result.error
    assert bool([f for f in result.findings if f.code == "RT002"]) is fires


def test_bad_stated_version_is_a_usage_error(catalogue: Catalogue) -> None:
    from moe_lint.errors import UsageError

    with pytest.raises(UsageError, match="transformer-engine must be a version"):
        run_lint(catalogue, _RT002_SINK.format(te="two"), ["RT002"], None, [])


_RELEASE_TEXT = st.builds(
    lambda numbers, dev: ".".join(map(str, numbers)) + ("" if dev is None else f".dev{dev}"),
    st.lists(st.integers(0, 12), min_size=1, max_size=4),
    st.none() | st.integers(0, 3),
)


@given(_RELEASE_TEXT, _RELEASE_TEXT)
def test_the_release_key_orders_as_packaging_does(a: str, b: str) -> None:
    """versions.release_key, which spares a run without stated versions the packaging import,
    orders plain releases and their .devN builds exactly as PEP 440 (packaging) does."""
    ka, kb = release_key(a), release_key(b)
    assert ka is not None and kb is not None
    va, vb = parse_version(a), parse_version(b)
    assert (ka < kb, ka == kb, ka > kb) == (va < vb, va == vb, va > vb)


@pytest.mark.parametrize("text", ["2.6.0dev0", "2.12.0rc0", "1!2.0", "2.0.post1", "2.12+cu13",
                                  "2.0.DEV1", "v2.0", "2.0.dev", "", "x"])  # fmt: skip
def test_other_spellings_take_packaging(text: str) -> None:
    assert release_key(text) is None


@given(_RELEASE_TEXT, st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), _RELEASE_TEXT)
def test_an_unstated_version_gates_as_packaging_would(newest: str, op: str, other: str) -> None:
    spec = f"{op}{other}"
    expected = satisfies(parse_version(newest), spec)
    assert versions._release_satisfies(newest, spec) is expected


def test_every_shipped_gate_takes_the_plain_road(catalogue: Catalogue) -> None:
    """With no version stated, no shipped rule's gate needs packaging (the start-up test
    holds that a short file does not import it)."""
    specs = {(package, spec) for rule in catalogue.rules for package, spec in rule.versions}
    assert specs
    for package, spec in specs:
        plain = versions._release_satisfies(NEWEST_RELEASED[package], spec)
        assert plain is satisfies(parse_version(NEWEST_RELEASED[package]), spec), spec
