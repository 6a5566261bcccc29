"""Megatron Bridge launch scripts (config/bridge_launch.py): read as Bridge runs them, the recipe
(data/bridge_recipes.json) with the script's Hydra overrides and the launcher's world, on
Bridge's own scripts (tests/data/bridge-launch/SOURCE.md)."""

from __future__ import annotations

import functools
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import load_tool
from moe_lint.config import bridge_recipes
from moe_lint.config.load import Document, load_file, parse_text
from moe_lint.config.normalize import normalize
from moe_lint.config.settings import Settings
from moe_lint.engine.catalogue import load_catalogue
from moe_lint.linting import FileResult, lint_path, lint_text

DATA = Path(__file__).parent / "data" / "bridge-launch"
LONG_CONTEXT = DATA / "examples" / "training_features" / "long_context"


@functools.cache
def _lint(path: Path) -> FileResult:
    return lint_path(str(path), load_catalogue(), Settings(), [], {})


def _keys(doc: Document) -> list[str]:
    return [".".join(map(str, o.path)) for o in doc.launch.overrides]


def _word(doc: Document, line: int, column: int) -> str:
    return doc.text.splitlines()[line - 1][column - 1 :].split()[0]


# --- the recipe table ---------------------------------------------------------------------


def test_recipe_table_names_its_source_and_each_recipe_function() -> None:
    source = bridge_recipes.source()
    assert source["package"] == "megatron-bridge 0.6.2"
    assert len(source["wheel_sha256"]) == 64
    assert source["tag"] == "v0.6.0"
    assert source["tag_commit"] == "51885cf132b2814188b6855c25a8588254274c2a"
    recipe = bridge_recipes.lookup("qwen3_600m_sft_128k_config")
    assert recipe is not None and recipe.kind == "library"
    # The alias recipes/qwen/qwen3.py exports runs the h100 function.
    assert recipe.function == (
        "src/megatron/bridge/recipes/qwen/h100/qwen3.py::qwen3_600m_sft_8gpu_h100_bf16_128k_config"
    )
    v = recipe.values
    assert v["model.context_parallel_size"] == 8 and v["model.cp_comm_type"] == "a2a"
    assert v["model.seq_length"] == v["dataset.seq_length"] == 131072
    assert v["train.global_batch_size"] == 2 and v["train.micro_batch_size"] == 1  # _sft_common
    assert v["model.calculate_per_token_loss"] is True
    assert recipe.mixed_precision == "bf16_mixed" and recipe.model == {"hf": "Qwen/Qwen3-0.6B"}


def test_benchmark_recipes_win_over_library_names() -> None:
    # recipe_runner.py::load_recipe: an exported benchmark name is the perf_recipes function.
    recipe = bridge_recipes.lookup("qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config")
    assert recipe is not None and recipe.kind == "benchmark"
    assert recipe.function.startswith("src/megatron/bridge/perf_recipes/qwen/h100/")
    assert recipe.benchmark == {
        "task": "pretrain",
        "num_gpus": 16,
        "hardware": "h100",
        "precision": "bf16",
    }
    assert bridge_recipes.lookup("not_a_recipe_config") is None


def test_what_the_static_reading_cannot_decide_is_unknown_not_guessed() -> None:
    # perf_recipes/qwen/common.py branches on the GPU the run finds (the flex dispatcher
    # backend), and _sft_common's checkpoint directory is os.path.join(os.getcwd(), ...).
    bench = bridge_recipes.lookup("qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config")
    assert bench is not None
    assert bench.unknown["model.moe_flex_dispatcher_backend"] == "set in an undecided if"
    assert "model.moe_flex_dispatcher_backend" not in bench.values
    sft = bridge_recipes.lookup("qwen3_600m_sft_128k_config")
    assert sft is not None and "checkpoint.save" in sft.unknown
    raising = bridge_recipes.unreadable("qwen3_next_80b_a3b_peft_config")
    assert raising is not None and "NotImplementedError" in raising


# --- reading Bridge's own scripts -----------------------------------------------------------


def test_long_context_example_is_its_recipe_with_its_overrides_and_torchrun_world() -> None:
    doc = load_file(str(LONG_CONTEXT / "qwen3_600m_sft_128k.sh"))
    assert doc.form == "bridge-launch" and doc.skip is None
    assert doc.launch.recipe == "qwen3_600m_sft_128k_config"
    # uv run python -m torch.distributed.run --nproc_per_node=8 (nnodes: torchrun's 1)
    assert doc.launcher == {"gpus-per-node": "8", "nodes": "1"}
    assert _keys(doc) == [
        "checkpoint.pretrained_checkpoint",
        "train.train_iters",
        "train.global_batch_size",
        "train.micro_batch_size",
        "validation.eval_iters",
        "validation.eval_interval",
        "scheduler.lr_warmup_iters",
        "checkpoint.save",
        "checkpoint.load",
        "logger.log_interval",
        "logger.wandb_project",
        "logger.wandb_exp_name",
    ]
    by_key = {".".join(o.path): o for o in doc.launch.overrides}
    assert by_key["train.global_batch_size"].value == 2
    assert by_key["checkpoint.pretrained_checkpoint"].value == "/workspace/models/Qwen3-0.6B"
    # Each override points at its word, the recipe's values at --recipe.
    span = by_key["train.global_batch_size"].span
    word = _word(doc, span.key_start.line, span.key_start.column)
    assert word == "train.global_batch_size=$GLOBAL_BATCH_SIZE"  # GLOBAL_BATCH_SIZE=2
    recipe = doc.spans[("model", "context_parallel_size")]
    assert _word(doc, recipe.key_start.line, recipe.key_start.column) == "--recipe"
    cfg = normalize(doc, doc.launch.overrides)
    assert cfg.value("model.context_parallel_size") == 8
    assert cfg.value("model.seq_length") == 131072
    assert cfg.value("train.global_batch_size") == 2


def test_long_context_example_gets_the_findings_its_recipe_and_overrides_deserve() -> None:
    result = _lint(LONG_CONTEXT / "qwen3_600m_sft_128k.sh")
    assert result.error is None and result.notice is None
    # Before: read as a Megatron-LM script with no flags, "All checks passed". Now: CP = 8 on
    # the 8 GPUs torchrun starts leaves DP = 1 (PAR004), and 16K tokens per CP shard (CP002);
    # nothing the recipe and its overrides do stops the job (no error).
    assert sorted(f.code for f in result.findings) == ["CP002", "PAR004"]
    for finding in result.findings:
        assert (finding.line, finding.column) == (38, 5)  # --recipe ${MODEL_NAME}_sft_128k_config
    assert "world = 8 GPUs" in (
        next(f for f in result.findings if f.code == "PAR004").derivation or ""
    )


def test_yarn_example_builds_an_sft_dataset_with_no_host_attention_mask_warning() -> None:
    # The recipe's GPTSFTDatasetConfig (its _target_) makes no dense mask on the host (RT001
    # is for pretraining datasets).
    result = _lint(LONG_CONTEXT / "qwen3_600m_sft_yarn_128k.sh")
    assert sorted(f.code for f in result.findings) == ["CP002", "PAR004"]


def test_command_built_in_a_variable_and_run_by_bash_c_under_srun() -> None:
    doc = load_file(str(DATA / "examples" / "models" / "glm" / "glm_45v" / "slurm_sft.sh"))
    assert doc.launch.recipe == "glm_45v_sft_config"
    # #SBATCH --nodes=64 --ntasks-per-node=8, srun ... bash -c "$CMD" (no torchrun)
    assert doc.launcher == {"gpus-per-node": "8", "nodes": "64"}
    assert "model.tensor_model_parallel_size" in _keys(doc)


def test_values_computed_at_run_time_are_unknown_not_the_recipes() -> None:
    # for CONFIG in "${PARALLELISM_CONFIGS[@]}"; do IFS=',' read -r TP PP EP CP SP <<< ...
    path = DATA / "examples" / "models" / "gpt_oss" / "slurm_pretrain.sh"
    doc = load_file(str(path))
    assert doc.launch.recipe == "gpt_oss_20b_pretrain_config"
    assert "model.tensor_model_parallel_size" in doc.launch.unread
    assert doc.launcher["model"] == "gpt-oss-20b"
    cfg = normalize(doc, doc.launch.overrides)
    for key in (
        "tensor_model_parallel_size",
        "pipeline_model_parallel_size",
        "expert_model_parallel_size",
        "context_parallel_size",
    ):
        assert cfg.value(f"model.{key}") is not None
        assert f"model.{key}" in cfg.unknown
    assert cfg.value("train.global_batch_size") == 128


def test_overrides_in_an_if_are_applied_as_bash_decides_it() -> None:
    # RECOMPUTE_METHOD=${RECOMPUTE_METHOD:-uniform}; if [ -n "$RECOMPUTE_METHOD" ]: always
    # taken. if [ -z "${RECOMPUTE_MODULES+x}" ]; then RECOMPUTE_MODULES=""; fi, then
    # if [ -n "$RECOMPUTE_MODULES" ]: not taken on the run as written (no such variable set).
    path = DATA / "examples" / "models" / "nemotron" / "nemotron_3" / "ultra" / "slurm_sft.sh"
    doc = load_file(str(path))
    assert "model.recompute_method" in _keys(doc)
    assert "model.recompute_modules" not in _keys(doc)
    assert "model.recompute_modules" not in doc.launch.unread
    assert _lint(path).error is None  # was: SCH002 on model.recompute_modules=''


def test_overrides_in_an_if_that_may_not_run_are_not_applied(tmp_path: Path) -> None:
    """An arm the script's own values cannot decide (``$1``): its overrides are not applied,
    and one set differently by the arms is named as such."""
    path = tmp_path / "launch.sh"
    path.write_text(
        "#!/bin/bash\n"
        'O="train.train_iters=10"\n'
        'if [ "$1" = big ]; then O="$O model.tensor_model_parallel_size=8"; fi\n'
        'case "$2" in a) R="model.recompute_granularity=full";;\n'
        '  *) R="model.recompute_granularity=selective";; esac\n'
        "torchrun --nproc_per_node 8 scripts/training/run_recipe.py "
        "--recipe qwen3_30b_a3b_pretrain_config $O $R\n"
    )
    doc = load_file(str(path))
    assert doc.launch is not None and doc.launch.recipe == "qwen3_30b_a3b_pretrain_config"
    keys = _keys(doc)
    assert "train.train_iters" in keys
    assert "model.tensor_model_parallel_size" not in keys
    assert "model.recompute_granularity" not in keys
    assert doc.launch.notes == [
        "'$O' is set differently by if/case arms the script cannot decide: not read",
        "'$R' is set differently by if/case arms the script cannot decide: not read",
    ]


def test_performance_launcher_names_the_flat_recipe_and_its_world() -> None:
    # README.md's example, as bash reads it: "-g gb300 \ " escapes a blank, so the line ends
    # there and "-c fp8_mx -hf ..." is another command: the compute dtype is bf16.
    doc = load_file(str(DATA / "scripts" / "performance" / "README.md-L63.sh"))
    assert doc.launch.recipe == "deepseek_v3_pretrain_256gpu_gb300_bf16_config"
    assert doc.launcher == {"gpus-per-node": "4", "nodes": "64", "model": "deepseek-v3"}


def test_performance_launcher_options_win_over_its_hydra_overrides() -> None:
    text = (
        "python scripts/performance/setup_experiment.py -m qwen -mr qwen3_30b_a3b -ng 16 "
        "-g h100 -c bf16 -tp 2 model.tensor_model_parallel_size=4 --cuda_graph_impl local\n"
    )
    doc = parse_text(text, "perf.sh")
    assert doc.launch.recipe == "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config"
    assert doc.launcher["gpus"] == "16"
    cfg = normalize(doc, doc.launch.overrides)
    # set_user_overrides runs after the Hydra overrides: -tp 2 (and SP with it) wins.
    assert cfg.value("model.tensor_model_parallel_size") == 2
    assert cfg.value("model.sequence_parallel") is True
    # its CUDA-graph helper is not restated: the fields it sets are unknown
    assert "model.cuda_graph_impl" in cfg.unknown
    # and the LLM dataset is replaced by a mock one after everything
    assert "dataset.seq_length" in cfg.unknown


#: scripts/training/setup_experiment.py's own usage example (its argparse epilog at v0.6.0).
SETUP_EXAMPLE = """./scripts/training/train.sh --nodes 2 --gpus-per-node 8 \\
    --account ACCOUNT --partition PARTITION --container-image IMAGE \\
    --recipe qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config --mode pretrain
"""


def test_setup_experiment_world_and_a_benchmark_recipe_weak_scaled_to_it() -> None:
    doc = parse_text(SETUP_EXAMPLE, "train-example.sh")
    assert doc.launch.recipe == "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config"
    assert doc.launcher == {"gpus-per-node": "8", "nodes": "2", "model": "qwen3-30b-a3b"}
    cfg = normalize(doc, doc.launch.overrides)
    # 16 GPUs as the recipe is written for: DP 16 -> 16, the recipe's GBS 1024 stays.
    assert cfg.value("train.global_batch_size") == 1024
    doubled = parse_text(SETUP_EXAMPLE.replace("--nodes 2", "--nodes 4"), "train-example.sh")
    cfg = normalize(doubled, doubled.launch.overrides)
    # run_recipe.py::_apply_benchmark_weak_scaling: DP 16 -> 32 keeps 64 samples per rank.
    assert cfg.value("train.global_batch_size") == 2048
    assert "_apply_benchmark_weak_scaling" in cfg.notes["train.global_batch_size"]
    # An explicit GBS is left alone.
    fixed = parse_text(
        SETUP_EXAMPLE.replace("--mode pretrain", "--mode pretrain -gb 512").replace(
            "--nodes 2", "--nodes 4"
        ),
        "train-example.sh",
    )
    assert normalize(fixed, fixed.launch.overrides).value("train.global_batch_size") == 512


def test_several_training_commands_the_first_is_linted_and_noted() -> None:
    doc = load_file(str(DATA / "examples" / "models" / "qwen" / "qwen3_vl" / "peft.sh"))
    assert any("training commands in the script" in note for note in doc.launch.notes)


SKIPPED = {
    "examples/models/gpt_oss/conversion.sh": "checkpoint conversion",
    "examples/models/gpt_oss/inference.sh": "inference run",
    "examples/models/gpt_oss/pack_data_job.sh": "data preparation",
    "scripts/conversion/convert.sh": "checkpoint conversion",
    "examples/models/exaone/exaone45/conversion.sh": "checkpoint conversion",
    "scripts/training/train.sh": "come from its own command line",
    "scripts/training/launch_with_sbatch.sh": "'--step': 'Unknown option'",
    "examples/models/stepfun/step37/slurm_pretrain.sh": "not a recipe of megatron-bridge 0.6.2",
    "scripts/performance/rubin_launch_interactive.sh": "not a recipe of megatron-bridge 0.6.2",
    "examples/models/qwen/qwen35_vl/slurm_peft.sh": "chosen by an if/case branch",
    "examples/models/deepseek_v4/slurm_pretrain.sh": "trains DeepSeek-V4",
}


@pytest.mark.parametrize("name", sorted(SKIPPED))
def test_scripts_that_do_not_train_or_cannot_be_read_are_skipped_with_a_notice(name: str) -> None:
    result = _lint(DATA / name)
    assert result.error is None and not result.findings
    assert result.notice is not None and SKIPPED[name] in result.notice


def test_no_bridge_script_is_linted_as_a_megatron_lm_script() -> None:
    for path in sorted(DATA.rglob("*.sh")):
        doc = load_file(str(path))
        assert doc.form == "bridge-launch" or doc.skip is not None, path


@pytest.mark.slow
def test_no_bridge_script_gets_an_error_it_does_not_deserve() -> None:
    """Every error on Bridge's own scripts, with why it is true. qwen35_vl/slurm_sft_fsdp.sh
    runs the 2-GPU recipe qwen35_vl_35b_a3b_fsdp_sft_config (GBS 32, MBS 4) on its #SBATCH
    --nodes=2 x --ntasks-per-node=8 = 16 ranks: DP 16, and Megatron-Core asserts
    32 % (4 * 16) == 0 (num_microbatches_calculator.py::ConstantNumMicroBatchesCalculator)."""
    errors = []
    for path in sorted(DATA.rglob("*.sh")):
        result = _lint(path)
        assert result.error is None, (path, result.error)
        errors += [
            (str(path.relative_to(DATA)), f.code) for f in result.findings if f.severity == "error"
        ]
    assert errors == [("examples/models/qwen/qwen35_vl/slurm_sft_fsdp.sh", "BAT002")]


# --- overrides and what run_recipe.py does after them -------------------------------------

SCRIPT = """#!/bin/bash
TP=2
torchrun --nproc_per_node=8 scripts/training/run_recipe.py \\
    --recipe qwen3_30b_a3b_pretrain_config \\
    model.tensor_model_parallel_size=$TP \\
    model.contxt_parallel_size=2 \\
    dataset.seq_length=8192 \\
    train.global_batch_size=7
"""


def test_findings_point_at_the_override_word() -> None:
    result = lint_text(SCRIPT, load_catalogue(), path="launch.sh")
    by_code = {f.code: f for f in result.findings}
    assert (by_code["OVR001"].line, by_code["OVR001"].column) == (6, 5)  # the typo'd key
    assert by_code["OVR001"].argument is None  # in the file, not on moe-lint's command line
    assert (by_code["BAT001"].line, by_code["BAT001"].column) == (8, 5)
    assert "model.context_parallel_size=2" in (by_code["OVR001"].fix or "")


def test_the_model_takes_the_dataset_sequence_length_after_the_overrides() -> None:
    doc = parse_text(SCRIPT, "launch.sh")
    cfg = normalize(doc, doc.launch.overrides)
    # recipe_runner.py::sync_model_dataset_sequence_length
    assert cfg.value("model.seq_length") == 8192
    assert "sync_model_dataset_sequence_length" in cfg.notes["model.seq_length"]
    assert cfg.value("model.tensor_model_parallel_size") == 2


def test_common_options_are_overrides_before_the_trailing_ones() -> None:
    text = (
        "python scripts/training/run_recipe.py --recipe qwen3_30b_a3b_pretrain_config "
        "-tp 4 --lr 1e-4 model.tensor_model_parallel_size=2\n"
    )
    doc = parse_text(text, "x.sh")
    assert _keys(doc) == ["optimizer.lr", "model.tensor_model_parallel_size"]
    cfg = normalize(doc, doc.launch.overrides)
    assert cfg.value("model.tensor_model_parallel_size") == 2  # the trailing override wins


def test_a_fix_is_refused_in_a_launch_script() -> None:
    from moe_lint.engine.spans import LAUNCH_REFUSAL, set_value_edit

    doc = parse_text(SCRIPT, "launch.sh")
    assert set_value_edit(doc, ("model", "sequence_parallel"), True) is None
    assert doc.fix_refusals[("model", "sequence_parallel")] == LAUNCH_REFUSAL


def test_yaml_input_does_not_import_the_launch_reader() -> None:
    code = (
        "import sys\n"
        "from moe_lint.config.load import parse_text\n"
        "parse_text('model:\\n  tensor_model_parallel_size: 2\\n', 'x.yaml')\n"
        "print('moe_lint.config.bridge_launch' in sys.modules,"
        " 'moe_lint.config.bridge_recipes' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_megatron_lm_scripts_still_go_to_the_megatron_lm_reader() -> None:
    path = (
        Path(__file__).parent
        / "data"
        / "megatron-lm"
        / "mixtral__train_mixtral_8x7b_distributed.sh"
    )
    assert load_file(str(path)).form == "megatron-lm"


# --- the generator ----------------------------------------------------------------------------

RECIPE_MODULE = """
from megatron.bridge.training.config import ConfigContainer, TrainingConfig


def _pretrain_common() -> ConfigContainer:
    return ConfigContainer(train=TrainingConfig(global_batch_size=64, micro_batch_size=2),
                           mixed_precision="bf16_mixed")


def tiny_pretrain_8gpu_h100_bf16_config() -> ConfigContainer:
    cfg = _pretrain_common()
    cfg.model = AutoBridge.from_hf_pretrained("Qwen/Qwen3-30B-A3B").to_megatron_provider()
    cfg.model.tensor_model_parallel_size = 2
    if torch.cuda.get_device_properties(0).major >= 10:
        cfg.model.moe_token_dispatcher_type = "flex"
    for layer in range(3):
        cfg.model.recompute_num_layers = layer
    cfg.model.seq_length = some_helper()
    return cfg
"""


def test_generator_reads_literals_and_leaves_the_undecidable_unknown(tmp_path: Path) -> None:
    gen = load_tool("gen_bridge_recipes")
    wheel = tmp_path / "megatron_bridge-0.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("megatron/bridge/package_info.py", "MAJOR = 0\nMINOR = 0\nPATCH = 0\n")
        archive.writestr(
            "megatron/bridge/training/config.py",
            "class ConfigContainer:\n    pass\n\n\nclass TrainingConfig:\n    pass\n",
        )
        archive.writestr(
            "megatron/bridge/recipes/__init__.py", "from megatron.bridge.recipes.tiny import *\n"
        )
        archive.writestr(
            "megatron/bridge/recipes/tiny/__init__.py",
            "from .tiny import tiny_pretrain_8gpu_h100_bf16_config as "
            "tiny_pretrain_config\n__all__ = ['tiny_pretrain_config']\n",
        )
        archive.writestr("megatron/bridge/recipes/tiny/tiny.py", RECIPE_MODULE)
    data = gen.build(wheel, None)
    function, kind = data["recipes"]["tiny_pretrain_config"]
    assert (
        function == "src/megatron/bridge/recipes/tiny/tiny.py::tiny_pretrain_8gpu_h100_bf16_config"
    )
    assert kind == "library"
    read = data["functions"][function]
    bits = int(read["values"], 16)
    values = {p: v for i, (p, v) in enumerate(data["pairs"]) if bits >> i & 1}
    assert values["train.global_batch_size"] == 64 and values["train.micro_batch_size"] == 2
    assert values["model.tensor_model_parallel_size"] == 2
    assert values["train._target_"] == "megatron.bridge.training.config.TrainingConfig"
    assert read["model"] == {"hf": "Qwen/Qwen3-30B-A3B"}
    assert read["mixed_precision"] == "bf16_mixed"
    unknown = set(read["unknown"])
    # the if on the GPU, the loop, and a call the reading cannot follow
    assert {
        "model.moe_token_dispatcher_type",
        "model.recompute_num_layers",
        "model.seq_length",
    } <= unknown
    assert not unknown & set(values)
