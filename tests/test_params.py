"""Parameter counts: every preset against models.yaml's param_check and the published figures."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from functools import cache
from pathlib import Path

import pytest
import yaml

from moe_lint.analysis.params import (
    Arch,
    ParamCounts,
    PatternError,
    count_params,
    moe_layer_pattern,
    parse_pattern,
)
from moe_lint.config.settings import model_presets, preset_fields

REPO = Path(__file__).resolve().parent.parent
MODELS = REPO / "src" / "moe_lint" / "data" / "models.yaml"
CHECK_MD = REPO / "tests" / "data" / "models-check.md"
PRESETS = sorted(model_presets())


@cache  # read-only here; one parse of models.yaml, not one per preset
def _param_check() -> dict[str, dict[str, int]]:
    with MODELS.open(encoding="utf-8") as handle:
        data: dict[str, dict[str, dict[str, int]]] = yaml.safe_load(handle)
    return data["param_check"]


@pytest.fixture(scope="module")
def counts() -> dict[str, ParamCounts]:
    return {name: count_params(Arch.from_preset(name)) for name in PRESETS}


# --- exact reproduction of models.yaml param_check ------------------------------------------


@pytest.mark.parametrize("name", PRESETS)
def test_matches_param_check_exactly(name: str, counts: dict[str, ParamCounts]) -> None:
    c, expected = counts[name], _param_check()[name]
    got = {
        "computed_total": c.total,
        "computed_total_with_mtp": c.total_with_mtp,
        "computed_non_embedding_total": c.non_embedding,
        "computed_active": c.active,
        "computed_active_excl_input_embedding": c.active_excl_input_embedding,
        "computed_active_excl_embedding_and_output": c.active_excl_embedding_and_output,
    }
    assert got == {k: expected[k] for k in got}


def _component_table() -> dict[str, list[int]]:
    """Rows of models-check.md's 'Component breakdown (parameters)' table."""
    text = CHECK_MD.read_text(encoding="utf-8")
    section = text.split("## Component breakdown")[1]
    rows: dict[str, list[int]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and cells[0] in PRESETS:
            rows[cells[0]] = [int(c.replace(",", "")) for c in cells[1:]]
    return rows


@pytest.mark.parametrize("name", PRESETS)
def test_component_breakdown_matches_models_check(
    name: str, counts: dict[str, ParamCounts]
) -> None:
    c = counts[name]
    comp = c.components
    got = [
        c.embedding,
        c.output,
        comp["attention"],
        comp["dense_mlp"],
        comp["routed_experts"],
        comp["moe_other"],
        c.mtp,
    ]
    assert got == _component_table()[name]


@pytest.mark.parametrize("name", PRESETS)
def test_dense_and_expert_split_adds_up(name: str, counts: dict[str, ParamCounts]) -> None:
    c = counts[name]
    assert c.dense + c.expert == c.total
    assert sum(lp.total for lp in c.layers) + c.embedding + c.output + c.final_norm == c.total
    for lp in c.layers:
        assert lp.dense.sharded + lp.dense.replicated + lp.routed_experts == lp.total


# --- published figures ------------------------------------------------------------------------

#: Published figure and the convention it uses (models-check.md). ``attr`` is the ParamCounts
#: field comparable with the figure; the label keeps the publisher's precision.
PUBLISHED: dict[str, dict[str, tuple[str, str]]] = {
    "deepseek-v3": {
        "total": ("total", "671B"),
        "active": ("active_excl_input_embedding", "36.7B"),
    },  # README_WEIGHTS
    "deepseek-v2-lite": {
        "total": ("total", "15.7B"),
        "active": ("active_excl_input_embedding", "2.4B"),
    },
    "deepseek-v2": {"total": ("total", "236B"), "active": ("active_excl_input_embedding", "21B")},
    "moonlight-16b-a3b": {"total": ("total", "16B"), "active": ("active", "3B")},
    "kimi-k2": {"total": ("total", "1T"), "active": ("active_excl_input_embedding", "32B")},
    "qwen3-30b-a3b": {
        "total": ("total", "30.5B"),
        "active": ("active", "3.3B"),
        "non_embedding": ("non_embedding", "29.9B"),
    },
    "qwen3-235b-a22b": {
        "total": ("total", "235B"),
        "active": ("active", "22B"),
        "non_embedding": ("non_embedding", "234B"),
    },
    "qwen3-next-80b-a3b": {
        "total": ("total", "80B"),
        "active": ("active_excl_embedding_and_output", "3B"),
        "non_embedding": ("non_embedding", "79B"),
    },
    "gpt-oss-120b": {
        "total": ("total", "116.83B"),
        "active": ("active_excl_input_embedding", "5.13B"),
    },
    "gpt-oss-20b": {
        "total": ("total", "20.91B"),
        "active": ("active_excl_input_embedding", "3.61B"),
    },
    "mixtral-8x7b": {"total": ("total", "46.7B"), "active": ("active", "12.9B")},
    "mixtral-8x22b": {"total": ("total", "141B"), "active": ("active", "39B")},
    "glm-4.5": {"total": ("total", "355B"), "active": ("active_excl_embedding_and_output", "32B")},
    "glm-4.5-air": {
        "total": ("total", "106B"),
        "active": ("active_excl_embedding_and_output", "12B"),
    },
    "llama-4-scout-17b-16e": {"total": ("total", "109B"), "active": ("active", "17B")},
    "llama-4-maverick-17b-128e": {"total": ("total", "400B"), "active": ("active", "17B")},
    "olmoe-1b-7b": {"total": ("total", "6.9B"), "active": ("active", "1.3B")},
    "nemotron-3-nano-30b-a3b": {
        "total": ("total", "31.6B"),
        "active": ("active_excl_input_embedding", "3.2B"),
        "active_incl_embeddings": ("active", "3.6B"),
    },
    "nemotron-3-super-120b-a12b": {
        "total": ("total", "120B"),
        "active": ("active_excl_input_embedding", "12B"),
    },
    # Lightning and GLM-5.2: the Bridge verification cards' exact checkpoint counts (with MTP).
    "nemotron-3.5-lightning": {
        "total": ("total_with_mtp", "32.91326624B"),
        "active": ("active_excl_input_embedding", "3B"),
    },
    "nemotron-3-ultra": {
        "total": ("total", "550B"),
        "active": ("active_excl_input_embedding", "55B"),
    },
    "glm-5": {"total": ("total", "744B"), "active": ("active_excl_embedding_and_output", "40B")},
    "glm-5.2": {
        "total": ("total_with_mtp", "753.32994048B"),
        "active": ("active_excl_embedding_and_output", "40B"),
    },
}

#: Where even the publisher's rounding does not cover the gap; each bound has its reason.
EXCEPTIONS: dict[tuple[str, str], tuple[float, str]] = {
    ("deepseek-v2-lite", "active"): (
        0.025,
        "2.45B without the input embedding; DeepSeek's '2.4B' truncates it (+2.1%)",
    ),
    ("qwen3-30b-a3b", "active"): (
        0.02,
        "3.353B; Qwen's '3.3B' truncates it, as its '30.5B' truncates 30.53B (+1.6%)",
    ),
    ("llama-4-scout-17b-16e", "total"): (
        0.015,
        "Meta's 109B covers the multimodal checkpoint; the vision tower is not modelled",
    ),
    ("glm-5.2", "active"): (
        0.02,
        "40B is the GLM-5 backbone's figure; IndexShare drops 57 indexers (0.53B) (-1.6%)",
    ),
}

_UNITS = {"B": Decimal(10) ** 9, "T": Decimal(10) ** 12}


def _label(text: str) -> tuple[float, float]:
    """'2.4B' -> (2.4e9, half a unit of its last digit relative to the value)."""
    number, unit = Decimal(text[:-1]), _UNITS[text[-1]]
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)
    half_unit = Decimal(5) * Decimal(10) ** (exponent - 1)
    return float(number * unit), float(half_unit / number)


_CASES = [(m, k) for m in PRESETS for k in PUBLISHED[m]]


@pytest.mark.parametrize(("name", "figure"), _CASES)
def test_published_figures(name: str, figure: str, counts: dict[str, ParamCounts]) -> None:
    """Within 1%, or within the rounding of the published label, or a documented exception."""
    attr, label = PUBLISHED[name][figure]
    published, rounding = _label(label)
    computed = float(getattr(counts[name], attr))
    delta = computed / published - 1
    bound, why = EXCEPTIONS.get((name, figure), (max(0.01, rounding), f"label {label}"))
    assert abs(delta) <= bound, f"{name} {figure} ({attr}) {delta:+.2%} vs {label}: {why}"


def test_every_preset_has_published_figures() -> None:
    assert set(PUBLISHED) == set(PRESETS)
    catalogue = model_presets()
    for name in PRESETS:
        total = catalogue[name]["published_params"]["total"]
        assert math.isclose(_label(PUBLISHED[name]["total"][1])[0], total)


#: Exact element counts of the pinned checkpoints in Bridge's model verification cards
#: (examples/model_verification_cards/*/card.yaml @ 067f987). The checkpoints also hold the router
#: expert-bias buffers (E per MoE layer, MTP included), which count_params leaves out; GLM-5's
#: figure is the parameter count Transformers reloads (buffers not included, MTP excluded).
CARDS: dict[str, tuple[int, str, int]] = {
    "nemotron-3-super-120b-a12b": (123_611_033_088, "total_with_mtp", 41 * 512),
    "nemotron-3.5-lightning": (32_913_266_240, "total_with_mtp", 24 * 128),
    "glm-5": (743_911_199_232, "total", 0),
    "glm-5.2": (753_329_940_480, "total_with_mtp", 76 * 256),
}


@pytest.mark.parametrize("name", sorted(CARDS))
def test_bridge_verification_card_counts_exactly(name: str, counts: dict[str, ParamCounts]) -> None:
    elements, attr, bias_buffers = CARDS[name]
    assert getattr(counts[name], attr) + bias_buffers == elements


def test_dsa_index_share_drops_indexers_on_reusing_layers() -> None:
    """GLM-5.2 (topk_freq 4, offset 3): 1-based layers 1-3 and 7, 11, ..., 75 keep an indexer."""
    arch = Arch.from_preset("glm-5.2")
    own = [i + 1 for i, (m, _) in enumerate(arch.layers) if m == "dsa"]
    assert own == [1, 2, 3, *range(7, 79, 4)]
    assert {m for m, _ in Arch.from_preset("glm-5").layers} == {"dsa"}
    per_layer = 2048 * 32 * 128 + 6144 * 128 + 2 * 128 + 6144 * 32
    glm5, glm52 = count_params(Arch.from_preset("glm-5")), count_params(arch)
    assert glm5.total - glm52.total == (78 - len(own)) * per_layer
    assert glm5.mtp == glm52.mtp  # the MTP layer keeps its own indexer


def test_repeated_mtp_layer_counts_one_block() -> None:
    repeated = count_params(Arch.from_preset("nemotron-3.5-lightning"))
    values = {**preset_fields("nemotron-3.5-lightning"), "mtp_use_repeated_layer": False}
    separate = count_params(Arch.from_mapping(values))
    assert repeated.total == separate.total and separate.mtp == 2 * repeated.mtp > 0


# --- building an Arch -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["deepseek-v3", "qwen3-next-80b-a3b", "nemotron-3-nano-30b-a3b", "glm-5.2"]
)
def test_from_mapping_with_dotted_keys_matches_preset(name: str) -> None:
    dotted = {f"model.{k}": v for k, v in preset_fields(name).items()}
    assert (
        count_params(Arch.from_mapping(dotted)).total == count_params(Arch.from_preset(name)).total
    )


def test_hybrid_pattern_layer_kinds() -> None:
    arch = Arch.from_preset("nemotron-3-nano-30b-a3b")
    kinds = [m if m != "none" else f for m, f in arch.layers]
    assert (kinds.count("mamba"), kinds.count("moe"), kinds.count("gqa")) == (23, 23, 6)


def test_qwen3_next_linear_layers_follow_full_attention_indices() -> None:
    arch = Arch.from_preset("qwen3-next-80b-a3b")
    full = [i for i, (m, _) in enumerate(arch.layers) if m == "gqa"]
    assert full == list(range(3, 48, 4))
    values = {
        k: v
        for k, v in preset_fields("qwen3-next-80b-a3b").items()
        if k not in ("full_attention_layer_indices", "linear_attention_pattern")
    }
    assert Arch.from_mapping(values).layers == arch.layers  # linear_attention_freq = 4


def test_missing_dims_raise_key_error() -> None:
    with pytest.raises(KeyError, match="hidden_size"):
        Arch.from_mapping({"model.num_layers": 2})


def test_defaults_are_recorded() -> None:
    arch = Arch.from_mapping(
        {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100}
    )
    assert arch.kv_channels == 16 and arch.num_query_groups == 4 and arch.ffn_hidden_size == 256
    assert any("gated_linear_unit" in a for a in arch.assumed)


def test_vocab_padding_follows_megatron() -> None:
    arch = Arch.from_mapping(
        {
            "num_layers": 1,
            "hidden_size": 8,
            "num_attention_heads": 2,
            "vocab_size": 50257,
            "should_pad_vocab": True,
            "make_vocab_size_divisible_by": 128,
        }
    )
    assert arch.padded_vocab(1) == 50304
    assert arch.padded_vocab(8) == 50176 + 1024  # ceil(50257 / 1024) * 1024
    assert count_params(arch, tp=8).embedding == 51200 * 8
    unpadded = Arch.from_mapping(
        {"num_layers": 1, "hidden_size": 8, "num_attention_heads": 2, "vocab_size": 50257}
    )
    assert unpadded.padded_vocab(8) == 50257


def test_tied_embeddings_count_once() -> None:
    base = {"num_layers": 1, "hidden_size": 8, "num_attention_heads": 2, "vocab_size": 10}
    untied = count_params(Arch.from_mapping(base))
    tied = count_params(Arch.from_mapping({**base, "share_embeddings_and_output_weights": True}))
    assert untied.total - tied.total == 80 and tied.output == 0


# --- moe_layer_freq and pattern strings -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("([0]*3+[1]*2)", [0, 0, 0, 1, 1]),
        ("[1]*3", [1, 1, 1]),
        ("([0,1]*2)", [0, 1, 0, 1]),
        ("( [0] * 1 + [1] * 2 )", [0, 1, 1]),
        ("(['sliding','full']*2)", ["sliding", "full", "sliding", "full"]),
        ("([1,1,1,0]*2)", [1, 1, 1, 0, 1, 1, 1, 0]),
        ("(([0]+[1])*2)", [0, 1, 0, 1]),
    ],
)
def test_parse_pattern(text: str, expected: list[object]) -> None:
    assert parse_pattern(text) == expected


@pytest.mark.parametrize(
    "text", ["__import__('os').system('x')", "[0]*", "([0]*3", "[0]+1", "[1]*3; x", "{0}"]
)
def test_parse_pattern_rejects_anything_else(text: str) -> None:
    with pytest.raises(PatternError):
        parse_pattern(text)


def test_moe_layer_freq_forms() -> None:
    assert moe_layer_pattern(None, 3) == [1, 1, 1]
    assert moe_layer_pattern(1, 3) == [1, 1, 1]
    assert moe_layer_pattern(2, 5) == [1, 0, 1, 0, 1]  # Megatron: i % freq == 0 is MoE
    assert moe_layer_pattern([0, 1], 2) == [0, 1]
    assert moe_layer_pattern("([0]*1+[1]*2)", 3) == [0, 1, 1]
    with pytest.raises(PatternError, match="entries"):
        moe_layer_pattern("[1]*4", 3)
    with pytest.raises(PatternError):
        moe_layer_pattern([0, 2], 2)
    with pytest.raises(PatternError):
        moe_layer_pattern(0, 2)


def test_dense_layer_indices_agree_with_moe_layer_freq() -> None:
    for name, entry in model_presets().items():
        arch = Arch.from_preset(name)
        dense = [i for i, (_, f) in enumerate(arch.layers) if f == "dense"]
        assert dense == list(entry.get("dense_layer_indices") or []), name


def test_models_check_mentions_every_preset() -> None:
    text = CHECK_MD.read_text(encoding="utf-8")
    for name in PRESETS:
        assert re.search(rf"^\| {re.escape(name)} \|", text, re.M), name
