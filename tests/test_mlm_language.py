"""Findings on Megatron-LM input speak its language (docs/megatron-lm.md): flags instead of
config paths, ``export`` / ``ENV_VARS:`` instead of Bridge's ``env_vars``, Megatron-LM's raise
site first. Asserted on Megatron-LM's own files (tests/data/megatron-lm/SOURCE.md)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from moe_lint.cli import main
from moe_lint.config.load import load_file
from moe_lint.engine.findings import primary_source
from moe_lint.engine.mlm_language import MODEL_ARGS, SCRIPT, Language, flag_for
from moe_lint.engine.spans import set_value_edit

DATA = Path(__file__).parent / "data" / "megatron-lm"
GPT3_175B = DATA / "examples" / "gpt3" / "train_gpt3_175b_distributed.sh"
BERT_340M = DATA / "examples" / "bert" / "train_bert_340m_distributed.sh"
#: A functional test that sets --apply-query-key-layer-scaling without the variable TE reads.
QK_SCALING = (
    DATA / "ci" / "gpt" / "gpt3_mcore_tp1_pp1_fsdp2_resume_torch_dist_te" / "model_config.yaml"
)
FSDP_SCRIPT = DATA / "examples" / "megatron_fsdp" / "train_llama3_8b_fsdp_h100_fp8.sh"


def _findings(*args: str) -> list[dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main([*args, "--format", "json", "--isolated"])
    found: list[dict[str, Any]] = json.loads(out.getvalue())
    return found


def _one(found: list[dict[str, Any]], code: str) -> dict[str, Any]:
    hits = [f for f in found if f["code"] == code]
    assert len(hits) == 1, [f["code"] for f in found]
    return hits[0]


def test_a_torchrun_script_cites_megatron_lm_first() -> None:
    """PAR001 on NVIDIA's GPT-3 175B example (TP 8 · PP 16 on one 8-GPU node): the job stops in
    validate_args, so that is the primary source, not Bridge's ConfigContainer."""
    par001 = _one(_findings(str(GPT3_175B)), "PAR001")
    assert par001["message"].endswith(
        '[megatron/training/arguments.py::validate_args (Megatron-LM command line, "world size '
        '(...) is not divisible by total_model_size")]'
    )
    # On Bridge YAML the same rule still names Bridge's check first.
    from moe_lint.engine.catalogue import load_catalogue

    rule = load_catalogue(plugins=False).by_code["PAR001"]
    assert primary_source(rule.source).startswith("megatron/bridge/training/config.py")


def test_no_recipe_layout_on_a_command_line() -> None:
    """BERT 340M's example: 24 layers over PP 16. A command line has no recipe to supply a
    layout, so this is not PP015's "valid only if the recipe supplies a layout" but the startup
    assert of validate_args (PP001), and the fix is the flag to write."""
    found = _findings(str(BERT_340M))
    assert "PP015" not in [f["code"] for f in found]
    pp001 = _one(found, "PP001")
    assert pp001["severity"] == "error" and pp001["line"] == 54  # --pipeline-model-parallel-size
    assert pp001["message"].startswith(
        "--num-layers 24 is not divisible by PP = 16 (Megatron-LM's validate_args asserts "
        '"Number of layers should be divisible by the pipeline-model-parallel size" at startup)'
    )
    assert pp001["fix"].startswith('--pipeline-model-parallel-layout "Et|')
    assert (
        "--decoder-first-pipeline-num-layers 5 with --decoder-last-pipeline-num-layers 5"
        in (pp001["fix"])
    )
    assert "model." not in pp001["fix"] and "num_layers" not in pp001["fix"]
    assert pp001["derivation"].startswith("--num-layers 24 (file); PP = 16")


def test_environment_fix_goes_under_env_vars_of_the_test() -> None:
    """A functional test's variables are its ENV_VARS: the fix says to set it there, and --fix
    leaves a variable the file does not write to the user, saying so in the file's terms."""
    att022 = _one(_findings(str(QK_SCALING), "--select", "ATT022"), "ATT022")
    assert att022["message"].startswith(
        "--apply-query-key-layer-scaling is True but NVTE_APPLY_QK_LAYER_SCALING is 0:"
    )
    assert att022["fix"] == "set NVTE_APPLY_QK_LAYER_SCALING: 1 under ENV_VARS:"
    doc = load_file(str(QK_SCALING))
    assert set_value_edit(doc, ("env_vars", "NVTE_APPLY_QK_LAYER_SCALING"), 1) is None
    assert doc.fix_refusals[("env_vars", "NVTE_APPLY_QK_LAYER_SCALING")] == (
        "the file does not set NVTE_APPLY_QK_LAYER_SCALING: write "
        "NVTE_APPLY_QK_LAYER_SCALING: ... under ENV_VARS: by hand"
    )


def test_env_vars_value_is_edited_in_place(tmp_path: Path) -> None:
    """The same test with the variable written (as 0): --fix --unsafe-fixes changes that value
    and nothing else."""
    text = QK_SCALING.read_text(encoding="utf-8")
    assert text.startswith("ENV_VARS:\n")
    written = text.replace("ENV_VARS:\n", "ENV_VARS:\n  NVTE_APPLY_QK_LAYER_SCALING: 0\n", 1)
    path = tmp_path / "model_config.yaml"
    path.write_text(written, encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()):
        main([str(path), "--select", "ATT022", "--fix", "--unsafe-fixes", "--isolated"])
    assert path.read_text(encoding="utf-8") == written.replace(
        "NVTE_APPLY_QK_LAYER_SCALING: 0", "NVTE_APPLY_QK_LAYER_SCALING: 1"
    )


def test_a_script_exports_its_environment(tmp_path: Path) -> None:
    """NVIDIA's Megatron-FSDP example with CUDA_DEVICE_MAX_CONNECTIONS=1 exported where it
    unsets it: Megatron-LM's validate_args assert is quoted, and the fix speaks of the
    script's environment. Exported at the top, the script's own ``unset`` clears it."""
    text = FSDP_SCRIPT.read_text(encoding="utf-8")
    assert text.startswith("#!/bin/bash\n")
    unset = "    unset CUDA_DEVICE_MAX_CONNECTIONS\n"
    line = text[: text.index(unset)].count("\n") + 1
    path = tmp_path / FSDP_SCRIPT.name
    path.write_text(text.replace(unset, "    export CUDA_DEVICE_MAX_CONNECTIONS=1\n"))
    par012 = _one(_findings(str(path), "--gpus", "8"), "PAR012")
    assert (
        "Megatron-LM's validate_args asserts \"FSDP requires CUDA_DEVICE_MAX_CONNECTIONS > 1 or "
        'unset."' in par012["message"]
    )
    assert par012["fix"] == (
        "remove CUDA_DEVICE_MAX_CONNECTIONS from the script's environment (or set it above 1)"
    )
    assert par012["line"] == line  # the export
    doc = load_file(str(path))
    edit = set_value_edit(doc, ("env_vars", "CUDA_DEVICE_MAX_CONNECTIONS"), 32)
    assert edit is not None and doc.text[edit.start : edit.end] == "1" and edit.start_line == line
    path.write_text(text.replace("\n", "\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n", 1))
    codes = [f["code"] for f in _findings(str(path), "--gpus", "8")]
    assert "PAR012" not in codes and "PAR010" in codes  # unset before the launch


def test_a_switch_fix_adds_or_removes_the_flag() -> None:
    """PAR010 on the Megatron-FSDP example (--sequence-parallel at TP 1): remove the flag."""
    par010 = _one(_findings(str(FSDP_SCRIPT), "--gpus", "8"), "PAR010")
    assert par010["message"].startswith("--sequence-parallel has no effect at TP = 1")
    assert par010["fix"] == "remove --sequence-parallel (or raise TP to use it)"
    assert par010["message"].endswith("[megatron/training/arguments.py::validate_args]")


def test_bridge_yaml_keeps_its_paths(tmp_path: Path) -> None:
    path = tmp_path / "override.yaml"
    path.write_text("model:\n  tensor_model_parallel_size: 1\n  sequence_parallel: true\n")
    par010 = _one(_findings(str(path)), "PAR010")
    assert par010["fix"] == "set sequence_parallel false (or raise TP to use it)"
    assert par010["message"].startswith("sequence_parallel: true has no effect at TP = 1")


#: (input kind, a rule's text, what the input is told)
SAID = [
    (
        SCRIPT,
        "set sequence_parallel false (or raise TP)",
        "remove --sequence-parallel (or raise TP)",
    ),
    (
        SCRIPT,
        "set sequence_parallel to true",
        "add --sequence-parallel",
    ),
    (
        SCRIPT,
        "set apply_rope_fusion false",
        "add --no-rope-fusion",
    ),
    (
        SCRIPT,
        "turn moe_shared_expert_overlap off",
        "remove --moe-shared-expert-overlap",
    ),
    (
        SCRIPT,
        "add_bias_linear is on",
        "add_bias_linear (off with --disable-bias-linear) is on",
    ),
    (
        SCRIPT,
        "use context_parallel_size 8",
        "use --context-parallel-size 8",
    ),
    (
        SCRIPT,
        "set model.tensor_model_parallel_size: 4",
        "use --tensor-model-parallel-size 4",
    ),
    (
        MODEL_ARGS,
        "set model.tensor_model_parallel_size: 4",
        "use --tensor-model-parallel-size: 4",
    ),
    (
        SCRIPT,
        "recompute_modules: [layernorm, moe_act]",
        "--recompute-modules layernorm moe_act",
    ),
    (
        MODEL_ARGS,
        "recompute_modules: [layernorm, moe_act]",
        '--recompute-modules: "[layernorm moe_act]"',
    ),
    (
        SCRIPT,
        'pipeline_model_parallel_layout: "Et|tL"',
        '--pipeline-model-parallel-layout "Et|tL"',
    ),
    (
        SCRIPT,
        "set kv_channels to the head dimension",
        "set --kv-channels to the head dimension",
    ),
    (
        SCRIPT,
        'set env_vars.NCCL_GRAPH_REGISTER to "0"',
        'export NCCL_GRAPH_REGISTER="0" in the script',
    ),
    (
        MODEL_ARGS,
        'set env_vars.NCCL_GRAPH_REGISTER to "0"',
        'set NCCL_GRAPH_REGISTER: "0" under ENV_VARS:',
    ),
    (
        SCRIPT,
        "remove X from env_vars",
        "remove X from the script's environment",
    ),
    (
        SCRIPT,
        "set dist.use_decentralized_pg false",
        "set dist.use_decentralized_pg (no Megatron-LM flag) false",
    ),
    (
        SCRIPT,
        'raises "num_layers_in_first_pipeline_stage must be > 0"',
        'raises "num_layers_in_first_pipeline_stage must be > 0"',
    ),
    (
        SCRIPT,
        "see megatron/core/transformer_config.py::x_y",
        "see megatron/core/transformer_config.py::x_y",
    ),
]


@pytest.mark.parametrize(("kind", "text", "said"), SAID)
def test_language_says_settings_as_flags(kind: str, text: str, said: str) -> None:
    assert Language(kind).say(text, fix=True) == said


def test_messages_write_flag_value_whatever_the_file() -> None:
    assert Language(MODEL_ARGS).say("num_layers = 24 (file)") == "--num-layers 24 (file)"
    assert Language(MODEL_ARGS).say("env_vars.X = 1 is set") == "X=1 is set"


def test_sources_order_megatron_lm_first() -> None:
    source = (
        "Bridge models/transformer_config.py::TransformerConfig.finalize; "
        "megatron/core/model_parallel_config.py::ModelParallelConfig.__post_init__; "
        "megatron/training/arguments.py::validate_args"
    )
    assert Language(SCRIPT).sources(source) == (
        "megatron/training/arguments.py::validate_args; "
        "megatron/core/model_parallel_config.py::ModelParallelConfig.__post_init__; "
        "Bridge models/transformer_config.py::TransformerConfig.finalize"
    )


def test_reverse_flag_map() -> None:
    assert flag_for("model.tensor_model_parallel_size") == "--tensor-model-parallel-size"
    assert flag_for("model.num_moe_experts") == "--num-experts"
    assert flag_for("model.num_layers_in_first_pipeline_stage") == (
        "--decoder-first-pipeline-num-layers"
    )
    assert flag_for("dist.use_decentralized_pg") is None
