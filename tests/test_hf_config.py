"""HF config.json as the model (config/hf_config.py): each bundled family maps as Bridge's model
bridges import it, to the same fields and parameter counts as moe-lint's preset; the
``--model PATH`` / model directory / beside-the-file / directive / pyproject forms; bad input is one
usage line with exit code 2; ``moe-lint models`` lists the presets.

The config.json files are real (tests/data/hf-configs/README.md: the copies models.yaml cites);
``bridge-tests/`` holds the fixtures Bridge's own unit tests feed its bridges, for the families with
no released file here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO
from conftest import run_main as run
from moe_lint.analysis.params import Arch, count_params
from moe_lint.config import hf_config
from moe_lint.config.settings import model_presets, preset_fields
from moe_lint.errors import UsageError

HF = REPO / "tests" / "data" / "hf-configs"
EXAMPLE = REPO / "examples" / "dsv3_128k_h100.yaml"
DSV3 = HF / "deepseek-ai--DeepSeek-V3.json"

#: config.json -> the preset it is the release of.
RELEASED = {
    "deepseek-ai--DeepSeek-V3.json": "deepseek-v3",
    "moonshotai--Kimi-K2-Instruct.json": "kimi-k2",
    "Qwen--Qwen3-30B-A3B.json": "qwen3-30b-a3b",
    "Qwen--Qwen3-235B-A22B.json": "qwen3-235b-a22b",
    "openai--gpt-oss-120b.json": "gpt-oss-120b",
    "openai--gpt-oss-20b.json": "gpt-oss-20b",
    "mistralai--Mixtral-8x7B-v0.1.json": "mixtral-8x7b",
    "mistralai--Mixtral-8x22B-v0.1.json": "mixtral-8x22b",
    "meta-llama--Llama-4-Scout-17B-16E-Instruct.json": "llama-4-scout-17b-16e",
    "meta-llama--Llama-4-Maverick-17B-128E-Instruct.json": "llama-4-maverick-17b-128e",
    "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json": "nemotron-3-nano-30b-a3b",
    "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json": "nemotron-3-super-120b-a12b",
    "nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16.json": "nemotron-3-ultra",
    "nvidia--NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4.json": "nemotron-3.5-lightning",
    "zai-org--GLM-5.1.json": "glm-5",
    "zai-org--GLM-5.2.json": "glm-5.2",
    "Qwen--Qwen3-Next-80B-A3B-Thinking.json": "qwen3-next-80b-a3b",
    "bridge-tests/Qwen3-Next-80B-A3B.json": "qwen3-next-80b-a3b",
    "bridge-tests/OLMoE-1B-7B.json": "olmoe-1b-7b",
    "bridge-tests/GLM-4.5.json": "glm-4.5",
    "bridge-tests/GLM-4.5-Air.json": "glm-4.5-air",
}

#: Fields where the mapped config.json and the preset differ, each with why. The test checks
#: that every listed field really differs (so the list cannot go stale) and that the parameter
#: counts agree anyway.
_NEMOTRON_MTP = "preset: the Bridge recipes' 2 MTP depths; HF num_nextn_predict_layers 1 (one repeated block either way)"  # noqa: E501
_BOOKKEEPING = "per-kind layer index lists the mapping derives from the pattern; the preset lists them for Nano only"  # noqa: E501
_NO_GROUPS = "HF n_group 1 / topk_group 1 map to 1 (Bridge CONFIG_MAPPING); the preset leaves them unset: one group either way"  # noqa: E501
_INDICES = ("attention_layer_indices", "mamba_layer_indices", "moe_layer_indices")
DIFFERENCES: dict[str, dict[str, str]] = {
    "nemotron-3-super-120b-a12b": {
        "mtp_num_layers": _NEMOTRON_MTP,
        "moe_router_num_groups": _NO_GROUPS,
        "moe_router_group_topk": _NO_GROUPS,
        **dict.fromkeys(_INDICES, _BOOKKEEPING),
    },
    "nemotron-3-ultra": {
        "mtp_num_layers": _NEMOTRON_MTP,
        "moe_router_num_groups": _NO_GROUPS,
        "moe_router_group_topk": _NO_GROUPS,
        "layernorm_epsilon": "preset: not sourced; HF layer_norm_epsilon 1e-5",
        "mamba_chunk_size": "preset: not sourced; HF chunk_size 128",
        **dict.fromkeys(_INDICES, _BOOKKEEPING),
    },
    "nemotron-3.5-lightning": {
        "mtp_num_layers": _NEMOTRON_MTP,
        **dict.fromkeys(_INDICES, _BOOKKEEPING),
    },
    "glm-5.2": {
        "rotary_base": "HF rope_parameters.rope_theta 8e6; the preset's 1e6 is from a Bridge dump",
        "kv_channels": "HF head_dim 192; the preset's 64 is from a Bridge dump (unused by MLA)",
    },
    "qwen3-next-80b-a3b": {
        "mtp_num_layers": "the checkpoint ships one MTP module that no config field names",
    },
    "glm-4.5": {
        "mtp_num_layers": "Bridge's test fixture has no num_nextn_predict_layers (the release: 1)",
        "layernorm_epsilon": "preset: not sourced reliably; the fixture says 1e-6",
    },
    "glm-4.5-air": {
        "mtp_num_layers": "Bridge's test fixture has no num_nextn_predict_layers (the release: 1)",
        "layernorm_epsilon": "preset: not sourced reliably; the fixture says 1e-6",
        "moe_router_topk_scaling_factor": "Bridge's fixture says 2.5; the release config 1.0",
    },
}
_META = ("display_name", "hf_architecture", "hf_model_type", "bridge")


def _mapped(name: str) -> dict[str, Any]:
    entry = hf_config.load(str(HF / name))
    return {k: v for k, v in entry.items() if k not in _META}


@pytest.mark.parametrize(("name", "preset"), RELEASED.items(), ids=list(RELEASED.values()))
def test_config_json_maps_to_the_preset(name: str, preset: str) -> None:
    mapped, fields = _mapped(name), preset_fields(preset)
    known = DIFFERENCES.get(preset, {})
    differ = {
        k for k in set(mapped) | set(fields) if mapped.get(k, "<unset>") != fields.get(k, "<unset>")
    }
    assert differ == set(known), {k: (mapped.get(k), fields.get(k)) for k in differ ^ set(known)}
    # What the lint builds from either: the same model (memory, FLOPs and layout rules read this).
    ours, theirs = count_params(Arch.from_mapping(mapped)), count_params(Arch.from_mapping(fields))
    assert (ours.total, ours.active) == (theirs.total, theirs.active)
    if "mtp_num_layers" not in known or preset.startswith("nemotron"):  # one repeated MTP block
        assert ours.total_with_mtp == theirs.total_with_mtp


def test_every_bundled_family_has_a_mapping() -> None:
    """Each preset's HF architecture is one hf_config maps (DeepSeek-V2 and Moonlight have no
    config.json here; their architectures are still mapped)."""
    archs = {str(e["hf_architecture"]).split()[0] for e in model_presets().values()}
    assert archs <= set(hf_config.ARCHITECTURES), archs - set(hf_config.ARCHITECTURES)
    tested = {json.loads((HF / n).read_text())["architectures"][0] for n in RELEASED}
    assert archs - tested == {"DeepseekV2ForCausalLM"}


def test_deepseek_v2_branch() -> None:
    """DeepSeekV2Bridge: vocab divisor 3200, the config's own scoring function, no expert bias
    (the V3 file relabelled shows only the V2 bridge's differences)."""
    data = json.loads(DSV3.read_text())
    v2 = hf_config.model_entry({**data, "architectures": ["DeepseekV2ForCausalLM"]}, "v2")
    v3 = hf_config.model_entry(data, "v3")
    assert v2["make_vocab_size_divisible_by"] == 3200 and v3["make_vocab_size_divisible_by"] == 1280
    assert v2["moe_router_enable_expert_bias"] is False and v3["moe_router_enable_expert_bias"]
    assert v2["moe_router_score_function"] == data["scoring_func"]
    assert v2["bridge"].startswith("DeepSeekV2Bridge")


def test_nemotron_layers_block_type_form(tmp_path: Path) -> None:
    """Newer Nemotron-H configs store layers_block_type, not hybrid_override_pattern (transformers'
    NemotronHConfig derives the pattern from it): the same model either way."""
    nano = json.loads((HF / "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json").read_text())
    chars = {"M": "mamba", "E": "moe", "*": "attention", "-": "mlp"}
    listed = {k: v for k, v in nano.items() if k != "hybrid_override_pattern"}
    listed["layers_block_type"] = [chars[c] for c in nano["hybrid_override_pattern"]]
    assert hf_config.model_entry(listed, "x") == {
        **hf_config.model_entry(nano, "x"),
        "display_name": "NemotronHForCausalLM from x",
    }


def _lint(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[Any], str]:
    code, out, err = run(capsys, *args, "--format", "json")
    return code, (json.loads(out) if out.strip() else []), err


def _strip_directive(text: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if "moe-lint:" not in ln) + "\n"


def _same_findings(a: list[Any], b: list[Any]) -> bool:
    def key(f: Any) -> tuple[str, str, int]:
        return (f["code"], f["message"].replace("preset ", ""), f["line"])

    return sorted(map(key, a)) == sorted(map(key, b))


def test_path_dir_and_preset_give_the_same_findings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cfg = tmp_path / "dsv3.yaml"
    cfg.write_text(_strip_directive(EXAMPLE.read_text()))
    cluster = ("--gpus", "256", "--gpu", "h100")
    code_p, preset, _ = _lint(capsys, str(cfg), *cluster, "--model", "deepseek-v3")
    model_dir = tmp_path / "DeepSeek-V3"
    model_dir.mkdir()
    shutil.copy(DSV3, model_dir / "config.json")
    code_f, by_file, _ = _lint(capsys, str(cfg), *cluster, "--model", str(DSV3))
    code_d, by_dir, _ = _lint(capsys, str(cfg), *cluster, "--model", str(model_dir))
    _, none, _ = _lint(capsys, str(cfg), *cluster)
    assert preset and code_p == code_f == code_d
    assert _same_findings(preset, by_file) and _same_findings(preset, by_dir)
    assert not _same_findings(preset, none)  # the model matters: no model, other findings


def test_config_json_beside_the_file_and_precedence(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """No model anywhere: the config.json beside the file. An explicit model (CLI, directive,
    pyproject) wins over it; a config.json that is not an HF config is left alone."""
    cfg = tmp_path / "dsv3.yaml"
    cfg.write_text(_strip_directive(EXAMPLE.read_text()))
    cluster = ("--gpus", "256", "--gpu", "h100")
    _, preset, _ = _lint(capsys, str(cfg), *cluster, "--model", "deepseek-v3")
    _, none, _ = _lint(capsys, str(cfg), *cluster)
    shutil.copy(DSV3, tmp_path / "config.json")
    _, beside, _ = _lint(capsys, str(cfg), *cluster)
    assert _same_findings(beside, preset)
    qwen = ("--model", "qwen3-30b-a3b")
    _, cli_wins, _ = _lint(capsys, str(cfg), *cluster, *qwen)
    (tmp_path / "config.json").write_text('{"architectures": ["GPT2LMHeadModel"]}')
    _, cli_over_bad, _ = _lint(capsys, str(cfg), *cluster, *qwen)
    assert _same_findings(cli_wins, cli_over_bad) and not _same_findings(cli_wins, beside)
    code, _, err = run(capsys, str(cfg), *cluster)  # unsupported HF arch beside: usage error
    assert code == 2 and "'GPT2LMHeadModel' is not supported" in err
    (tmp_path / "config.json").write_text('{"tool": "something else"}')
    _, other_tool, _ = _lint(capsys, str(cfg), *cluster)
    assert _same_findings(other_tool, none)


def test_directive_and_pyproject_paths_are_relative_to_their_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = ("--gpus", "256", "--gpu", "h100")
    text = _strip_directive(EXAMPLE.read_text())
    (tmp_path / "models" / "dsv3").mkdir(parents=True)
    shutil.copy(DSV3, tmp_path / "models" / "dsv3" / "config.json")
    (tmp_path / "runs").mkdir()
    directive = tmp_path / "runs" / "a.yaml"
    directive.write_text(text + "# moe-lint: model=../models/dsv3\n")
    plain = tmp_path / "runs" / "b.yaml"
    plain.write_text(text)
    _, preset, _ = _lint(capsys, str(plain), *cluster, "--model", "deepseek-v3")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the directive's path is read from the YAML file's folder
    _, by_directive, _ = _lint(capsys, str(directive), *cluster)
    assert _same_findings(by_directive, preset)
    (tmp_path / "pyproject.toml").write_text('[tool.moe-lint]\nmodel = "models/dsv3/config.json"\n')
    _, by_pyproject, _ = _lint(capsys, str(plain), *cluster)
    assert _same_findings(by_pyproject, preset)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "not an HF config.json"),
        ('{"model_type": "deepseek_v3"}', 'no "architectures" list'),
        ('{"architectures": ["GPT2LMHeadModel"]}', "supported: DeepseekV2ForCausalLM"),
        ('{"architectures": ["MixtralForCausalLM"], "hidden_size": 4096}', "has no"),
        (
            '{"architectures": ["Qwen3MoeForCausalLM"], "num_hidden_layers": 4, '
            '"hidden_size": "big", "num_attention_heads": 4, "vocab_size": 8}',
            "model.hidden_size",
        ),
    ],
)
def test_bad_config_json_is_one_usage_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, message: str
) -> None:
    bad = tmp_path / "config.json"
    bad.write_text(text)
    code, out, err = run(capsys, str(EXAMPLE), "--model", str(bad))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("moe-lint: error: ") and message in err, err


def test_missing_path_and_empty_dir_are_usage_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, str(EXAMPLE), "--model", str(tmp_path / "none" / "config.json"))
    assert code == 2 and "no model preset or HF config.json" in err
    code, _, err = run(capsys, str(EXAMPLE), "--model", str(tmp_path))
    assert code == 2 and "has no config.json" in err
    code, _, err = run(capsys, str(EXAMPLE), "--model", "deepseek-v9")
    assert code == 2 and "unknown model preset 'deepseek-v9'" in err


def test_unknown_architecture_error_is_raised_by_the_mapper() -> None:
    with pytest.raises(UsageError, match="pass --model NAME for a preset"):
        hf_config.model_entry({"architectures": ["GPT2LMHeadModel"]}, "x")


def test_models_lists_presets(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "models", "--format", "json")
    rows = json.loads(out)
    presets = model_presets()
    assert code == 0 and [r["name"] for r in rows] == list(presets)
    dsv3 = next(r for r in rows if r["name"] == "deepseek-v3")
    assert dsv3["hf_id"] == "deepseek-ai/DeepSeek-V3"
    assert dsv3["hf_architecture"] == "DeepseekV3ForCausalLM"
    assert dsv3["total_params"] == count_params(Arch.from_preset("deepseek-v3")).total
    assert abs(dsv3["total_params"] / dsv3["published_params"]["total"] - 1) < 0.01
    assert dsv3["sources"] == presets["deepseek-v3"]["sources"]
    assert all(isinstance(s, str) for r in rows for s in r["sources"])  # no YAML-parsed dicts
    code, text, _ = run(capsys, "models")
    lines = text.splitlines()
    # A table (issue 26: it printed Python dict reprs): a header, one row per preset, a note.
    assert code == 0 and lines[0].split()[:3] == ["preset", "model", "HF"]
    assert len(lines) == len(presets) + 2 and "{" not in text
    assert lines[1].split() == [
        "deepseek-v3", "DeepSeek-V3", "DeepseekV3ForCausalLM", "61", "256", "top-8", "671.0B",
        "37.6B",
    ]  # fmt: skip
    code, text, _ = run(capsys, "models", "--sources")
    assert code == 0 and any("deepseek_v3_bridge.py" in ln for ln in text.splitlines())
    code, text, _ = run(capsys, "models", "--format", "markdown")
    table = text.splitlines()
    assert table[0].startswith("| preset |") and len(table) == len(presets) + 2


def test_models_shows_what_a_config_json_maps_to(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "models", str(DSV3), "--format", "json")
    got = json.loads(out)
    assert code == 0 and got["fields"] == preset_fields("deepseek-v3")
    code, out, _ = run(capsys, "models", str(DSV3))
    assert code == 0 and "model.num_moe_experts = 256" in out
    assert run(capsys, "models", str(HF / "missing.json"))[0] == 2


def test_llama4_text_config_and_causal_lm_form() -> None:
    """Llama4ForConditionalGeneration reads its text_config; a Llama4ForCausalLM config carries
    the same fields at the top level: one model."""
    scout = json.loads((HF / "meta-llama--Llama-4-Scout-17B-16E-Instruct.json").read_text())
    flat = {**scout["text_config"], "architectures": ["Llama4ForCausalLM"]}
    strip = {"display_name", "hf_architecture", "hf_model_type"}
    nested, causal = hf_config.model_entry(scout, "x"), hf_config.model_entry(flat, "x")
    assert {k: v for k, v in nested.items() if k not in strip} == {
        k: v for k, v in causal.items() if k not in strip
    }


def test_a_preset_name_wins_over_a_folder_of_that_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--model deepseek-ai/DeepSeek-V3` is the preset even beside a clone of that name (its
    config.json is not read); `./deepseek-ai/DeepSeek-V3` is the path."""
    clone = tmp_path / "deepseek-ai" / "DeepSeek-V3"
    clone.mkdir(parents=True)
    (clone / "config.json").write_text('{"architectures": ["GPT2LMHeadModel"]}')
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "models", "deepseek-ai/DeepSeek-V3", "--format", "json")
    assert code == 0 and json.loads(out)["model"] == "deepseek-v3"
    code, _, err = run(capsys, "models", "./deepseek-ai/DeepSeek-V3")
    assert code == 2 and "'GPT2LMHeadModel' is not supported" in err


#: config.json of an architecture with no preset -> (total, active) parameters as the model card
#: states them, and the relative tolerance the comparison allows. Cards round to the figure
#: shown; the counts here are the language model's (a VL release's vision tower is not counted)
#: without MTP layers. MiniMax-M2's "10B active" leaves out its two 0.61B vocabulary matrices
#: (11.0B with them), Kimi-K2.5's "1T" is Kimi-K2's 1.03T language model.
MODEL_CARDS: dict[str, tuple[float, float, float]] = {
    "meta-llama--Meta-Llama-3.1-8B.json": (8.03e9, 8.03e9, 0.01),
    "meta-llama--Meta-Llama-3.1-70B.json": (70.6e9, 70.6e9, 0.01),
    "Qwen--Qwen3-8B.json": (8.2e9, 8.2e9, 0.01),
    "Qwen--Qwen3-32B.json": (32.8e9, 32.8e9, 0.01),
    "Qwen--Qwen3.5-27B.json": (27e9, 27e9, 0.02),
    "Qwen--Qwen3.5-35B-A3B.json": (35e9, 3e9, 0.16),  # card rounds 3.45B active to "A3B"
    "Qwen--Qwen3.5-397B-A17B.json": (397e9, 17e9, 0.03),
    "moonshotai--Kimi-K2.5.json": (1.04e12, 32e9, 0.03),  # card: "1T total, 32B activated"
    "MiniMaxAI--MiniMax-M2.7.json": (230e9, 10e9, 0.11),  # 10.0B active without embeddings
    "google--gemma-4-26B-A4B.json": (25.2e9, 3.8e9, 0.02),
    # The MiMo-7B card states only the name's "7B"; the language model counts 7.62B (7.83B
    # with its one MTP layer), so this checks the scale, not a stated figure.
    "XiaomiMiMo--MiMo-7B-Base.json": (7e9, 7e9, 0.1),
    # Gemma-3 (Bridge's test configs): the size names; the 4B / 27B names include a 0.4B vision
    # tower that the language model's count leaves out (3.88B, 27.0B). The Gemma 3 report's
    # per-size table was not read here.
    "bridge-tests/Gemma-3-1B.json": (1e9, 1e9, 0.01),
    "bridge-tests/Gemma-3-4B.json": (4e9, 4e9, 0.05),
    "bridge-tests/Gemma-3-27B.json": (27e9, 27e9, 0.01),
    # GLM-4.7-Flash's card: "a 30B-A3B MoE model"; 3.90B active with its two untied
    # vocabulary matrices, 3.26B without (test_glm47_flash_maps_as_deepseek_v3_mla).
    "zai-org--GLM-4.7-Flash.json": (30e9, 3.9e9, 0.01),
    # Gemma (Bridge's test configs of gemma-2b / gemma-7b): the Gemma report's (arXiv
    # 2403.08295, Table 2) embedding + non-embedding figures, 0.524B + 1.981B and 0.786B +
    # 7.751B, recalled, not read from a stored copy here; the "7b" name undercounts its tied
    # 256k vocabulary.
    "bridge-tests/Gemma-2B.json": (2.51e9, 2.51e9, 0.01),
    "bridge-tests/Gemma-7B.json": (8.54e9, 8.54e9, 0.01),
    # Mistral-7B (Bridge's test config: the v0.3 shape, 32768 vocab, rope_theta 1e6): only the
    # name's "7B" is checked (the count is 7.25B).
    "bridge-tests/Mistral-7B.json": (7e9, 7e9, 0.05),
}


@pytest.mark.parametrize("name", MODEL_CARDS, ids=[n.removesuffix(".json") for n in MODEL_CARDS])
def test_config_json_counts_match_the_model_card(name: str) -> None:
    total, active, tol = MODEL_CARDS[name]
    entry = hf_config.load(str(HF / name))
    assert entry["bridge"] and entry["hf_architecture"] in hf_config.ARCHITECTURES
    got = count_params(Arch.from_mapping(_mapped(name)))
    assert abs(got.total / total - 1) < tol, got.total
    assert abs(got.active / active - 1) < tol, got.active


def test_minimax_m2_active_without_embeddings_is_the_cards_10b() -> None:
    """MiniMax-M2's card counts 10B active: the count less the untied embedding and output."""
    mapped = _mapped("MiniMaxAI--MiniMax-M2.7.json")
    got = count_params(Arch.from_mapping(mapped))
    vocab = 2 * mapped["vocab_size"] * mapped["hidden_size"]
    assert round((got.active - vocab) / 1e9) == 10
    assert mapped["rotary_percent"] == 0.5 and mapped["moe_router_enable_expert_bias"]
    assert "moe_ffn_hidden_size" not in mapped and mapped["ffn_hidden_size"] == 1536


def test_vl_releases_map_their_language_model() -> None:
    """Qwen3.5 / Kimi-K2.5 / Gemma-4 releases are VL configs: the bridge reads text_config
    (Qwen3.5 takes tie_word_embeddings from the top level; Kimi-K2.5's text model is Kimi-K2's)."""
    qwen = _mapped("Qwen--Qwen3.5-397B-A17B.json")
    assert qwen["position_embedding_type"] == "mrope" and qwen["rotary_percent"] == 0.25
    assert qwen["linear_attention_pattern"] == "([1,1,1,0]*15)" and qwen["mtp_num_layers"] == 1
    assert qwen["share_embeddings_and_output_weights"] is False
    dense = _mapped("Qwen--Qwen3.5-27B.json")
    assert "num_moe_experts" not in dense and dense["experimental_attention_variant"] == (
        "gated_delta_net"
    )
    kimi, k2 = _mapped("moonshotai--Kimi-K2.5.json"), _mapped("moonshotai--Kimi-K2-Instruct.json")
    arch = {"num_layers", "hidden_size", "num_moe_experts", "moe_ffn_hidden_size", "q_lora_rank"}
    assert {k: kimi[k] for k in arch} == {k: k2[k] for k in arch}
    gemma = _mapped("google--gemma-4-26B-A4B.json")
    assert gemma["interleaved_attn_pattern"] == [5, 1] and gemma["window_size"] == 1024
    assert gemma["moe_shared_expert_intermediate_size"] == 2112 and gemma["num_moe_experts"] == 128
    assert "rotary_base" not in gemma  # Bridge's (sliding, full) pair


def test_dense_gemma4_and_deepseek_v32_are_refused_with_the_reason() -> None:
    v32 = json.loads((HF / "deepseek-ai--DeepSeek-V3.2.json").read_text())
    with pytest.raises(UsageError, match=r"no Megatron Bridge bridge imports DeepSeek-V3\.2"):
        hf_config.model_entry(v32, "x")
    gemma = json.loads((HF / "google--gemma-4-26B-A4B.json").read_text())
    gemma["text_config"] = {**gemma["text_config"], "enable_moe_block": False}
    with pytest.raises(UsageError, match=r"dense Gemma-4"):
        hf_config.model_entry(gemma, "x")
    with pytest.raises(UsageError, match=r"deepseek_v4_bridge\.py.*hyper-connections"):
        hf_config.model_entry({"architectures": ["DeepseekV4ForCausalLM"]}, "x")


def test_models_path_reads_a_new_architecture(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "models", str(HF / "meta-llama--Meta-Llama-3.1-8B.json"))
    assert code == 0 and "model.num_layers = 32" in out


#: Qwen3-VL releases -> the Qwen3 text release (config.json here) whose language model they
#: carry, and where that release's card figures are checked (a preset's published_params in
#: models.yaml, or MODEL_CARDS above).
QWEN3_VL = {
    "Qwen--Qwen3-VL-30B-A3B-Instruct.json": ("Qwen--Qwen3-30B-A3B.json", "qwen3-30b-a3b"),
    "Qwen--Qwen3-VL-235B-A22B-Instruct.json": ("Qwen--Qwen3-235B-A22B.json", "qwen3-235b-a22b"),
    "Qwen--Qwen3-VL-8B-Instruct.json": ("Qwen--Qwen3-8B.json", None),
    "Qwen--Qwen3-VL-32B-Instruct.json": ("Qwen--Qwen3-32B.json", None),
}


@pytest.mark.parametrize("name", QWEN3_VL, ids=[n.removesuffix(".json") for n in QWEN3_VL])
def test_qwen3_vl_maps_its_text_model(name: str) -> None:
    """Qwen3VLBridge / Qwen3VLMoEBridge read text_config (tie_word_embeddings from the top
    level), mrope, q/k layernorm; MoE: no pre-softmax (the text bridge derives it from
    norm_topk_prob), every layer MoE. Each text model has the dims of the Qwen3 text release of
    its size, so it counts what that release counts, within 2 % of that release's card (the
    Qwen3-VL cards give only the size names, e.g. "30B-A3B")."""
    text_name, preset = QWEN3_VL[name]
    vl, text = _mapped(name), _mapped(text_name)
    arch = (
        "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads",
        "num_query_groups", "kv_channels", "num_moe_experts", "moe_router_topk",
        "moe_ffn_hidden_size", "vocab_size", "add_qkv_bias", "add_bias_linear", "qk_layernorm",
        "share_embeddings_and_output_weights", "moe_layer_freq",
    )  # fmt: skip
    assert {k: vl.get(k) for k in arch} == {k: text.get(k) for k in arch}
    assert vl["position_embedding_type"] == "mrope" and vl["rotary_base"] == 5_000_000
    assert "moe_shared_expert_intermediate_size" not in vl
    assert vl.get("moe_router_pre_softmax") is False
    ours, theirs = count_params(Arch.from_mapping(vl)), count_params(Arch.from_mapping(text))
    assert (ours.total, ours.active) == (theirs.total, theirs.active)
    if preset is None:
        total, active, tol = MODEL_CARDS[text_name]
    else:
        card = model_presets()[preset]["published_params"]
        total, active, tol = card["total"], card["active"], 0.02
        assert vl["num_moe_experts"] == 128
    assert abs(ours.total / total - 1) < tol and abs(ours.active / active - 1) < tol


def test_mimo_and_qwen2_map_as_their_bridges() -> None:
    """MimoBridge is Qwen2Bridge (QKV bias always on, no q/k norm) plus MTP depth; the MiMo file
    relabelled Qwen2ForCausalLM shows the Qwen2 bridge's fields (its MTP row is
    CONFIG_MAPPING's, which Qwen2Bridge keeps too)."""
    data = json.loads((HF / "XiaomiMiMo--MiMo-7B-Base.json").read_text())
    mimo = _mapped("XiaomiMiMo--MiMo-7B-Base.json")
    expect = {
        "num_layers": 36, "hidden_size": 4096, "num_attention_heads": 32, "num_query_groups": 8,
        "kv_channels": 128, "ffn_hidden_size": 11008, "vocab_size": 151680,
        "add_qkv_bias": True, "add_bias_linear": False, "qk_layernorm": False,
        "gated_linear_unit": True, "normalization": "RMSNorm", "mtp_num_layers": 1,
        "share_embeddings_and_output_weights": False, "rotary_base": 640000,
    }  # fmt: skip
    assert {k: mimo[k] for k in expect} == expect and "num_moe_experts" not in mimo
    got = count_params(Arch.from_mapping(mimo))
    assert (round(got.total / 1e9, 2), round(got.total_with_mtp / 1e9, 2)) == (7.62, 7.83)
    qwen2 = hf_config.model_entry(
        {**data, "architectures": ["Qwen2ForCausalLM"], "attention_bias": False}, "q2"
    )
    assert qwen2["bridge"].startswith("Qwen2Bridge") and qwen2["add_qkv_bias"] is True
    assert {k: qwen2[k] for k in expect} == expect


def test_every_unmapped_architecture_names_its_bridge_and_reason() -> None:
    """Each refusal cites the Bridge file it would follow and says what stops the mapping (no
    generic 'not mapped yet'); nothing is both mapped and refused."""
    assert not set(hf_config.UNMAPPED) & set(hf_config.ARCHITECTURES)
    for arch, why in hf_config.UNMAPPED.items():
        assert "yet" not in why.split(":")[-1] or "not yet added here" in why, (arch, why)
        if arch != "DeepseekV32ForCausalLM":
            assert ".py::" in why and "does not map it: " in why, (arch, why)
            assert len(why.split("does not map it: ", 1)[1]) > 40, (arch, why)


def test_a_vl_moe_config_lints_as_its_text_release(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The Qwen3-235B example linted with the Qwen3-VL-235B-A22B config.json: the same findings
    as with the Qwen3-235B-A22B preset (the same language model, only its RoPE differs)."""
    cfg = tmp_path / "q.yaml"
    cfg.write_text(_strip_directive((REPO / "examples" / "qwen3_235b_128k_gb200.yaml").read_text()))
    cluster = ("--gpus", "128", "--gpu", "gb200")
    vl = str(HF / "Qwen--Qwen3-VL-235B-A22B-Instruct.json")
    code_p, preset, _ = _lint(capsys, str(cfg), *cluster, "--model", "qwen3-235b-a22b")
    code_v, by_vl, _ = _lint(capsys, str(cfg), *cluster, "--model", vl)
    assert preset and code_p == code_v and _same_findings(preset, by_vl)


def test_gemma3_maps_as_gemma3_model_bridge() -> None:
    """Gemma3ModelBridge on Gemma3ModelProvider's defaults: window_size = sliding_window, the
    provider's 5:1 sliding/full pattern, zero-centred RMSNorm, q/k layernorm, tied embeddings,
    head_dim as kv_channels; its (local, global) rotary pair is left unset."""
    small, large = _mapped("bridge-tests/Gemma-3-1B.json"), _mapped("bridge-tests/Gemma-3-27B.json")
    assert (small["window_size"], large["window_size"]) == (512, 1024)
    assert (small["kv_channels"], large["kv_channels"]) == (256, 128)
    assert (large["num_attention_heads"], large["num_query_groups"]) == (32, 16)
    for got in (small, large):
        assert got["interleaved_attn_pattern"] == [5, 1] and got["window_attn_skip_freq"] == 6
        assert got["layernorm_zero_centered_gamma"] and got["qk_layernorm"]
        assert got["share_embeddings_and_output_weights"] and "rotary_base" not in got
        assert "num_moe_experts" not in got and got["gated_linear_unit"]


def test_glm47_flash_maps_as_deepseek_v3_mla() -> None:
    """GLM47FlashBridge.provider_bridge: DeepSeek-V3's MLA and sigmoid router, one dense layer
    then MoE, one shared expert of moe_intermediate_size, the generic vocabulary padding (not
    DeepSeekV3Bridge's 1280). The card's "A3B" is the active count without embeddings."""
    mapped = _mapped("zai-org--GLM-4.7-Flash.json")
    assert mapped["multi_latent_attention"] and mapped["moe_router_score_function"] == "sigmoid"
    assert mapped["moe_layer_freq"] == "([0]*1+[1]*46)"
    assert mapped["moe_shared_expert_intermediate_size"] == 1536
    assert mapped["make_vocab_size_divisible_by"] == 128
    assert "kv_channels" not in mapped  # head_dim is not read by MLA
    got = count_params(Arch.from_mapping(mapped))
    vocab = 2 * mapped["vocab_size"] * mapped["hidden_size"]
    assert round((got.active - vocab) / 1e9) == 3
    # Without first_k_dense_replace / n_shared_experts the bridge's defaults (1, 1) apply.
    data = json.loads((HF / "zai-org--GLM-4.7-Flash.json").read_text())
    del data["first_k_dense_replace"], data["n_shared_experts"]
    default = hf_config.model_entry(data, "glm")
    assert default["moe_layer_freq"] == mapped["moe_layer_freq"]
    assert default["moe_shared_expert_intermediate_size"] == 1536


def test_gemma_and_mistral_map_as_their_bridges() -> None:
    """GemmaBridge: zero-centred RMSNorm, gated (tanh-GELU) MLP without bias, tied embeddings,
    kv_channels = head_dim (256, not hidden / heads = 192 for 7B). MistralBridge: its own field
    list (no CONFIG_MAPPING), untied, rope_theta from rope_parameters, a window (with a2a CP)
    only when sliding_window is set."""
    gemma = _mapped("bridge-tests/Gemma-7B.json")
    assert gemma["layernorm_zero_centered_gamma"] and gemma["gated_linear_unit"]
    assert gemma["share_embeddings_and_output_weights"] and gemma["kv_channels"] == 256
    assert gemma["add_bias_linear"] is False and gemma["rotary_base"] == 10000
    data = json.loads((HF / "bridge-tests/Gemma-2B.json").read_text())
    untied = hf_config.model_entry({**data, "tie_word_embeddings": False}, "g")
    assert untied["share_embeddings_and_output_weights"] is True  # the bridge always ties
    mistral = _mapped("bridge-tests/Mistral-7B.json")
    assert mistral["rotary_base"] == 1000000 and mistral["num_query_groups"] == 8
    assert mistral["share_embeddings_and_output_weights"] is False
    assert "window_size" not in mistral and "kv_channels" not in mistral
    data = json.loads((HF / "bridge-tests/Mistral-7B.json").read_text())
    windowed = hf_config.model_entry({**data, "sliding_window": 4096, "head_dim": 128}, "m")
    assert windowed["window_size"] == [4095, 0] and windowed["kv_channels"] == 128
    assert windowed["cp_comm_type"] == "a2a"  # the bridge pairs a window with a2a CP
    assert "cp_comm_type" not in mistral
    with pytest.raises(UsageError, match=r"sliding_window = 'x'"):
        hf_config.model_entry({**data, "sliding_window": "x"}, "m")
