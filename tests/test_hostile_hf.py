"""Hostile HF config.json files (issue 22): the model an attacker's pull request ships.

An HF config is read wherever a model can be named (``--model PATH`` or a model folder, the
``model=`` directive, pyproject ``model``, a config.json beside the linted file) and by
``check``, ``estimate``, ``plan`` and ``moe-lint models PATH``. Whatever it holds, each ends with
exit 0, 1 or 2 (never 3), a refusal is one stderr line naming the config.json and the field (the
SCH002 text a YAML file gets for the same model value), within < 2 s CPU and < 300 MB peak RSS.
Every case runs the real CLI in its own process (test_hostile.run_cli measures both).

The cases start from the real config.json files in tests/data/hf-configs/ with one value
changed. Before this suite, the per-layer ones allocated 1-4 GB (a list per layer built before
the layer bound), ``Infinity`` and deep nesting beside the file exited 3, and the values of
``VALUE_CASES`` passed ``check`` silently while ``estimate`` and ``plan`` exited 3.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO
from moe_lint.bounds import MAX_JSON_BYTES
from moe_lint.config import hf_config
from moe_lint.errors import UsageError
from test_hostile import MAX_RSS_MB, MAX_SECONDS, check_refused, run_cli

HF = REPO / "tests" / "data" / "hf-configs"
QWEN = "Qwen--Qwen3-30B-A3B.json"
DSV3 = "deepseek-ai--DeepSeek-V3.json"
NEXT = "bridge-tests/Qwen3-Next-80B-A3B.json"
SCOUT = "meta-llama--Llama-4-Scout-17B-16E-Instruct.json"
NANO = "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json"
GPT_OSS = "openai--gpt-oss-20b.json"
YAML = (
    "model:\n  tensor_model_parallel_size: 1\n  seq_length: 4096\n"
    "train:\n  global_batch_size: 64\n  micro_batch_size: 1\n"
)
CLUSTER = ["--gpus", "8", "--gpu", "h100"]
#: A JSON text json.dumps cannot write, put where the marker string is.
RAW = "@@RAW@@"


def _config(base: str, key: str | None = None, value: Any = None, raw: str | None = None) -> str:
    """The real config ``base`` with ``key`` set to ``value`` (in a Llama-4 text_config when the
    key lives there) and ``raw`` JSON text in place of the RAW marker."""
    data = json.loads((HF / base).read_text())
    if key is not None:
        body = data.get("text_config", data)
        body[key] = value
    text = json.dumps(data, indent=2)
    return text.replace(f'"{RAW}"', raw) if raw is not None else text


def _folder(tmp_path: Path, text: str) -> tuple[Path, Path]:
    """A folder with ``config.json`` (the text) and the YAML file linted beside it."""
    config = tmp_path / "config.json"
    config.write_text(text, encoding="utf-8")
    linted = tmp_path / "train.yaml"
    linted.write_text(YAML, encoding="utf-8")
    return config, linted


def _refused(args: list[str], cwd: Path, config: Path, needle: str) -> str:
    """``moe-lint ARGS``: exit 2, one stderr line naming ``config`` and holding ``needle``, in
    the time and memory bounds."""
    code, out, err, seconds, rss = run_cli(args, cwd)
    lines = err.strip().splitlines()
    assert code == 2, (args, code, out[-500:], err)
    assert len(lines) == 1, (args, err)
    assert str(config) in lines[0] and needle in lines[0], lines[0]
    assert "Traceback" not in out + err
    assert seconds < MAX_SECONDS and rss < MAX_RSS_MB, (args, seconds, rss)
    return lines[0]


def _bounded(args: list[str], cwd: Path) -> int:
    """``moe-lint ARGS`` accepts the config: exit 0 or 1, nothing on stderr, in the bounds."""
    code, out, err, seconds, rss = run_cli(args, cwd)
    assert code in (0, 1), (args, code, err)
    assert err.strip() == "" and "Traceback" not in out
    assert seconds < MAX_SECONDS and rss < MAX_RSS_MB, (args, seconds, rss)
    return code


def _check_model(tmp_path: Path, text: str, needle: str) -> None:
    """``moe-lint FILE --fix --model config.json``: refused as test_hostile refuses bad YAML."""
    config, linted = _folder(tmp_path, text)
    check_refused(
        tmp_path, "hf", "", needle, ["--model", str(config), *CLUSTER],
        setup=lambda _: linted, named=config,
    )  # fmt: skip


# -- per-layer lists: the layer bound comes first -------------------------------------------

LAYER_CASES = [
    # Qwen3-Next built a 1e9-entry layer pattern (3.7 GB) before model.num_layers was bounded
    ("next-layers-1e9", NEXT, "num_hidden_layers", 10**9, None,
     "model.num_layers = 1000000000 (HF num_hidden_layers): more layers than moe-lint's bound "
     "of 10,000 (bounds.MAX_LAYERS) [SCH002]"),
    ("llama4-layers-1e9", SCOUT, "num_hidden_layers", 10**9, None, "bounds.MAX_LAYERS"),
    # JSON 1e8 is a float: a step of layers is a whole number (it built a 1e8-entry unit, 1 GB)
    ("llama4-step-1e8", SCOUT, "interleave_moe_layer_step", RAW, "1e8",
     "interleave_moe_layer_step = 100000000.0: expected an integer from 1"),
    ("llama4-step-0", SCOUT, "interleave_moe_layer_step", 0, None,
     "interleave_moe_layer_step = 0: expected an integer from 1"),
    ("next-interval-0", NEXT, "full_attention_interval", 0, None, "full_attention_interval = 0"),
    # 15,000 entries: over the layer bound, under the JSON value bound (bounds.MAX_NODES)
    ("next-layer-types-15k", NEXT, "layer_types", ["full_attention"] * 15_000, None,
     "layer_types lists 15,000 layers, more than moe-lint's bound of 10,000 (bounds.MAX_LAYERS)"),
    ("gpt-oss-layer-types-15k", GPT_OSS, "layer_types", ["sliding_attention"] * 15_000, None,
     "bounds.MAX_LAYERS"),
    ("nemotron-pattern-20k", NANO, "hybrid_override_pattern", "ME" * 10_000, None,
     "hybrid_override_pattern has 20,000 layers, more than moe-lint's bound"),
    # estimate refused it naming the YAML file ("unknown symbol"); check took it silently
    ("nemotron-pattern-symbol", NANO, "hybrid_override_pattern", "MEMX*", None,
     "hybrid_override_pattern: 'X' is not a valid layer symbol (Megatron-Core "
     "hybrid_layer_allocation.py::_validate_pattern"),
    ("dsv3-dense-1e9", DSV3, "first_k_dense_replace", 10**9, None,
     "first_k_dense_replace = 1000000000 is more than num_hidden_layers = 61"),
    ("dsv3-shared-inf", DSV3, "n_shared_experts", RAW, "Infinity",
     "n_shared_experts = inf: expected an integer from 0"),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "base", "key", "value", "raw", "needle"), LAYER_CASES, ids=[c[0] for c in LAYER_CASES]
)
def test_per_layer_values_are_bounded_first(
    tmp_path: Path, name: str, base: str, key: str, value: Any, raw: str | None, needle: str
) -> None:
    _check_model(tmp_path, _config(base, key, value, raw), needle)


@pytest.mark.slow
def test_a_step_past_the_layers_is_a_dense_model(tmp_path: Path) -> None:
    """interleave_moe_layer_step 1e8 as an integer is a Llama-4 with no MoE layer
    (transformers' Llama4TextConfig: layer i is MoE when (i + 1) % step == 0): linted, cheaply."""
    config, linted = _folder(tmp_path, _config(SCOUT, "interleave_moe_layer_step", 10**8))
    _bounded([str(linted), "--model", str(config), *CLUSTER], tmp_path)
    entry = hf_config.load(str(config))
    assert entry["moe_layer_freq"] == "([0]*48)"


# -- the JSON itself, beside the linted file -------------------------------------------------

JSON_CASES = [
    # both exited 3 (OverflowError, RecursionError) from a config.json beside the file
    ("infinity-layers", _config(DSV3, "num_hidden_layers", RAW, "Infinity"),
     "model.num_layers = inf (HF num_hidden_layers): input should be a finite number [SCH002]"),
    ("infinity-hidden", _config(QWEN, "hidden_size", RAW, "Infinity"),
     "model.hidden_size = inf: input should be a finite number [SCH002]"),
    ("nan-heads", _config(QWEN, "num_attention_heads", RAW, "NaN"), "model.num_attention_heads"),
    ("deep-5000", _config(QWEN, "quantization_config", RAW, "[" * 5000 + "]" * 5000),
     "nesting deeper than 64 levels (bounds.MAX_DEPTH)"),
    ("deep-100", _config(QWEN, "quantization_config", RAW, "[" * 100 + "]" * 100),
     "nesting deeper than 64 levels (under 'quantization_config') (bounds.MAX_DEPTH)"),
    ("long-number", _config(QWEN, "vocab_size", RAW, "9" * 5000),
     "number literal of 5,000 characters exceeds moe-lint's bound of 64 "
     "(bounds.MAX_NUMBER_CHARS)"),
    ("many-values", _config(QWEN, "ignore", RAW, "[" + "0," * 25_000 + "0]"),
     "more than 20,000 JSON values (bounds.MAX_NODES)"),
    ("too-large", _config(QWEN, "notes", "x" * (MAX_JSON_BYTES + 1)),
     "HF config.json is too large (more than 1,048,576 bytes; bounds.MAX_JSON_BYTES)"),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(("name", "text", "needle"), JSON_CASES, ids=[c[0] for c in JSON_CASES])
def test_config_json_beside_the_file(tmp_path: Path, name: str, text: str, needle: str) -> None:
    config, linted = _folder(tmp_path, text)
    check_refused(tmp_path, name, "", needle, CLUSTER, setup=lambda _: linted, named=config)


@pytest.mark.slow
def test_another_tools_config_json_beside_the_file_is_still_left_alone(tmp_path: Path) -> None:
    """Not UTF-8, not JSON, or JSON without architectures / model_type: not a model config."""
    for text in (b"\xff\xfe{", b"{not json", b'{"tool": {"depth": [[[1]]]}}'):
        (tmp_path / "config.json").write_bytes(text)
        (tmp_path / "train.yaml").write_text(YAML)
        _bounded([str(tmp_path / "train.yaml"), *CLUSTER], tmp_path)


# -- values that passed `check` silently while `estimate` and `plan` exited 3 -----------------

#: (config, HF field, value: JSON text, the model field the refusal names and its SCH002 text)
VALUE_CASES = [
    (QWEN, "hidden_size", "1e300", "model.hidden_size = 1e+300: unable to parse input string as "
     "an integer, exceeded maximum size [SCH002]"),
    (QWEN, "hidden_size", "0", "model.hidden_size = 0: input should be greater than or equal to 1"),
    (QWEN, "hidden_size", "4096.5", "model.hidden_size = 4096.5: input should be a valid integer"),
    (QWEN, "hidden_size", '"big"', "model.hidden_size = 'big': input should be a valid integer"),
    (QWEN, "vocab_size", "1e4000", "model.vocab_size = inf: input should be a finite number"),
    (QWEN, "vocab_size", "-1", "model.vocab_size = -1: input should be greater than or equal to 1"),
    (QWEN, "vocab_size", "4294967296", "model.vocab_size = 4294967296: input should be less than"),
    (QWEN, "num_key_value_heads", "0",
     "model.num_query_groups = 0 (HF num_key_value_heads): input should be greater than or "
     "equal to 1 [SCH002]"),
    (QWEN, "num_key_value_heads", "[4]", "model.num_query_groups = [4] (HF num_key_value_heads)"),
    (QWEN, "head_dim", "-1", "model.kv_channels = -1 (HF head_dim): input should be greater"),
    (QWEN, "head_dim", "1e4000", "model.kv_channels = inf (HF head_dim): input should be a finite"),
    (QWEN, "num_attention_heads", "0", "model.num_attention_heads = 0: input should be greater"),
    (QWEN, "num_attention_heads", "-Infinity", "model.num_attention_heads = -inf"),
    (QWEN, "intermediate_size", "0", "model.ffn_hidden_size = 0 (HF intermediate_size)"),
    (QWEN, "moe_intermediate_size", "-768",
     "model.moe_ffn_hidden_size = -768 (HF moe_intermediate_size)"),
    (QWEN, "num_experts", "0", "model.num_moe_experts = 0 (HF num_experts)"),
    (QWEN, "num_experts", "1e300", "model.num_moe_experts = 1e+300 (HF num_experts)"),
    (QWEN, "num_experts_per_tok", "0", "model.moe_router_topk = 0 (HF num_experts_per_tok)"),
    (QWEN, "num_experts_per_tok", "{}", "model.moe_router_topk = {} (HF num_experts_per_tok)"),
    (QWEN, "num_hidden_layers", "0", "model.num_layers = 0 (HF num_hidden_layers)"),
    (DSV3, "kv_lora_rank", "0", "model.kv_lora_rank = 0: input should be greater than or equal "
     "to 1 [SCH002]"),
    (DSV3, "v_head_dim", '"x"', "model.v_head_dim = 'x': input should be a valid integer"),
    (DSV3, "qk_rope_head_dim", "-1", "model.qk_pos_emb_head_dim = -1 (HF qk_rope_head_dim)"),
    (DSV3, "q_lora_rank", "1e4000", "model.q_lora_rank = inf: input should be a finite number"),
    (DSV3, "routed_scaling_factor", "NaN", "model.moe_router_topk_scaling_factor = nan "
     "(HF routed_scaling_factor): expected a finite number"),
    (DSV3, "num_nextn_predict_layers", "-1", "model.mtp_num_layers = -1 (HF "
     "num_nextn_predict_layers): input should be greater than or equal to 0 [SCH002]"),
    (NANO, "mamba_num_heads", "0", "model.mamba_num_heads = 0: input should be greater than or "
     "equal to 1 [SCH002]"),
    (NANO, "ssm_state_size", "2.5", "model.mamba_state_dim = 2.5 (HF ssm_state_size)"),
    (SCOUT, "rope_theta", "Infinity", "model.rotary_base = inf (HF rope_theta): expected a finite"),
]  # fmt: skip
_VALUE_IDS = [f"{Path(b).stem.split('--')[-1]}-{k}={v}"[:60] for b, k, v, _ in VALUE_CASES]


@pytest.mark.slow
@pytest.mark.parametrize(("base", "key", "value", "needle"), VALUE_CASES, ids=_VALUE_IDS)
def test_bad_values_are_refused_by_check(
    tmp_path: Path, base: str, key: str, value: str, needle: str
) -> None:
    _check_model(tmp_path, _config(base, key, RAW, value), needle)


@pytest.mark.parametrize(("base", "key", "value", "needle"), VALUE_CASES, ids=_VALUE_IDS)
def test_bad_values_are_refused_by_the_mapping(
    tmp_path: Path, base: str, key: str, value: str, needle: str
) -> None:
    """The same line from hf_config itself, for every case (what each command calls)."""
    config, _ = _folder(tmp_path, _config(base, key, RAW, value))
    with pytest.raises(UsageError) as caught:
        hf_config.load(str(config))
    assert str(caught.value).startswith(f"{config}: ") and needle in str(caught.value)


#: One case per kind of check, through every command and every way to name the model.
EVERY_COMMAND = [VALUE_CASES[0], VALUE_CASES[4], VALUE_CASES[7], VALUE_CASES[9], VALUE_CASES[20]]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("base", "key", "value", "needle"), EVERY_COMMAND, ids=[_VALUE_IDS[0], _VALUE_IDS[4],
                                                           _VALUE_IDS[7], _VALUE_IDS[9],
                                                           _VALUE_IDS[20]]
)  # fmt: skip
def test_every_command_refuses_with_the_same_line(
    tmp_path: Path, base: str, key: str, value: str, needle: str
) -> None:
    config, linted = _folder(tmp_path, _config(base, key, RAW, value))
    commands = {
        "estimate": ["estimate", str(linted), "--model", str(config), *CLUSTER],
        "plan": ["plan", "--model", str(config), "--gpu", "h100", "--gpus", "8", "--seq", "4096"],
        "plan-dir": ["plan", "--model", str(tmp_path), "--gpu", "h100", "--gpus", "8"],
        "models": ["models", str(config)],
        "models-json": ["models", str(tmp_path), "--format", "json"],
        "beside": ["check", str(linted), *CLUSTER],
    }
    lines = {name: _refused(args, tmp_path, config, needle) for name, args in commands.items()}
    messages = {line.split(f"{config}: ", 1)[1] for line in lines.values()}
    assert len(messages) == 1, lines
    directive = tmp_path / "directive.yaml"
    directive.write_text(YAML + "# moe-lint: model=config.json\n")
    _refused(["check", str(directive), *CLUSTER], tmp_path, config, needle)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.moe-lint]\nmodel = "../config.json"\n')
    (project / "train.yaml").write_text(YAML)
    _refused(["check", str(project / "train.yaml"), *CLUSTER], project, config, needle)


@pytest.mark.slow
def test_flags_are_read_for_truth_as_megatron_core_reads_them(tmp_path: Path) -> None:
    """attention_bias: [1, 2, 3] is a qkv bias (Megatron-Core tests the field for truth); it
    reached the parameter count as an unhashable list, and estimate exited 3."""
    config, linted = _folder(tmp_path, _config(GPT_OSS, "attention_bias", [1, 2, 3]))
    assert hf_config.load(str(config))["add_qkv_bias"] is True
    _bounded(["estimate", str(linted), "--model", str(config), *CLUSTER], tmp_path)


def test_values_yaml_coerces_are_coerced_alike(tmp_path: Path) -> None:
    """pydantic's lax mode takes 2048.0 and "2048" for an integer field in YAML: the same
    from a config.json, so a config that writes them maps to the real model."""
    real = hf_config.load(str(HF / QWEN))
    for value in (2048.0, "2048"):
        config, _ = _folder(tmp_path, _config(QWEN, "hidden_size", value))
        entry = hf_config.load(str(config))
        assert entry["hidden_size"] == 2048 and isinstance(entry["hidden_size"], int)
        assert {k: v for k, v in entry.items() if k != "display_name"} == {
            k: v for k, v in real.items() if k != "display_name"
        }


@pytest.mark.slow
def test_a_hybrid_pattern_counts_its_decoder_layers_as_megatron_core_does(tmp_path: Path) -> None:
    """ "M|E/*" is one Mamba and one MoE layer ("|" splits pipeline stages, "/" starts the MTP
    part: hybrid_layer_allocation.py::get_hybrid_total_layer_count); counted as 5 layers, the
    pipeline split disagreed with the model and estimate refused the YAML file."""
    config, linted = _folder(tmp_path, _config(NANO, "hybrid_override_pattern", "M-|ME/*E"))
    entry = hf_config.load(str(config))
    assert entry["num_layers"] == 4 and entry["mamba_layer_indices"] == [0, 2]
    assert entry["layer_counts"] == {"mamba": 2, "moe": 1, "attention": 0, "mlp": 1}
    _bounded(["estimate", str(linted), "--model", str(config), *CLUSTER], tmp_path)


@pytest.mark.parametrize("bad", [None, ["full_attention"], 3], ids=["null", "list", "int"])
def test_a_layer_type_that_is_no_name_is_unsupported_as_bridge_says(
    tmp_path: Path, bad: Any
) -> None:
    """Bridge's transformers_compat.py::full_attention_interval_from_hf looks each layer type
    up and raises "Unsupported attention layer type" on a miss: a null or a list in Qwen3.5's
    layer_types is one line too, not a KeyError (fuzz --hf seed 51, cases 1685 and 2870)."""
    data = json.loads((HF / "Qwen--Qwen3.5-27B.json").read_text())
    data["text_config"]["layer_types"][5] = bad
    config, _ = _folder(tmp_path, json.dumps(data))
    with pytest.raises(UsageError, match="Unsupported attention layer type"):
        hf_config.load(str(config))
