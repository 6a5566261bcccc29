"""Megatron-LM input: launch scripts, MODEL_ARGS argument files and argument lists
(moe_lint.config.mlm_args), on real files from Megatron-LM (tests/data/megatron-lm/SOURCE.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from moe_lint.cli import main
from moe_lint.config.load import load_file, parse_text
from moe_lint.config.normalize import normalize
from moe_lint.errors import InputError

DATA = Path(__file__).parent / "data" / "megatron-lm"
FILES = sorted(p for p in DATA.iterdir() if p.suffix in (".sh", ".yaml"))


def _at(doc, path: tuple[str, ...]) -> str:
    """The text of the line a config path points at, from its column on."""
    span = doc.spans[path]
    return doc.text.splitlines()[span.key_start.line - 1][span.key_start.column - 1 :]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_real_file_parses_and_points_at_its_flags(path: Path) -> None:
    doc = load_file(str(path))
    assert doc.form == "megatron-lm" and doc.skip is None
    assert len(doc.mlm_flags) > 10
    for flag in doc.mlm_flags:
        line = doc.text.splitlines()[flag.span.key_start.line - 1]
        assert line[flag.span.key_start.column - 1 :].startswith(flag.name)
    cfg = normalize(doc)
    assert cfg.form == "megatron-lm"
    assert cfg.value("model.num_moe_experts") not in (None, 1)


def test_script_arrays_variables_and_defaults() -> None:
    doc = load_file(str(DATA / "mixtral__train_mixtral_8x7b_distributed.sh"))
    assert _at(doc, ("model", "expert_model_parallel_size")).startswith(
        "--expert-model-parallel-size 8"
    )
    cfg = normalize(doc)
    assert cfg.value("model.num_moe_experts") == 8
    assert cfg.value("model.pipeline_model_parallel_size") == 4
    assert cfg.value("train.global_batch_size") == 256
    assert cfg.value("dataset.seq_length") == cfg.value("model.seq_length") == 4096
    assert cfg.value("model.share_embeddings_and_output_weights") is False  # --untie-...
    assert cfg.value("model.add_bias_linear") is False  # --disable-bias-linear
    # torchrun --nproc_per_node $GPUS_PER_NODE --nnodes ${SLURM_NNODES:-"1"}
    assert doc.launcher == {"gpus-per-node": "8", "nodes": "1"}
    # Megatron-LM's own default where no flag is given: ETP = TP (validate_args), not Bridge's 1.
    assert cfg.value("model.expert_tensor_parallel_size") == 1
    assert cfg.value("model.moe_router_topk") == 2
    # export CUDA_DEVICE_MAX_CONNECTIONS=1 is the run's environment (env_vars).
    assert cfg.raw_get("env_vars.CUDA_DEVICE_MAX_CONNECTIONS") == "1"


def test_model_args_env_vars_are_the_environment() -> None:
    doc = load_file(
        str(DATA / "mixtral__mixtral_8x7b_alltoall_tp2pp4ep4_release.model_config.yaml")
    )
    assert doc.data["env_vars"]["NVTE_ALLOW_NONDETERMINISTIC_ALGO"] == "1"
    assert doc.spans[("env_vars", "NVTE_ALLOW_NONDETERMINISTIC_ALGO")].value_start.line == 8


def _lint(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["--isolated", "--no-cache", "--color", "never", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_world_size_from_the_launcher_gives_the_expert_mesh_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 1 node x 8 GPUs cannot hold PP 4 x EP 8 (NVIDIA's example as written, SLURM_NNODES unset).
    path = DATA / "mixtral__train_mixtral_8x7b_distributed.sh"
    code, out, _ = _lint([str(path), "--format", "concise"], capsys)
    assert code == 1
    line = next(x for x in out.splitlines() if "PAR002" in x)
    assert line.startswith(f"{path}:85:5: PAR002")  # the --expert-model-parallel-size flag
    # The command line wins over the launcher: 32 GPUs fit.
    code, out, _ = _lint([str(path), "--gpus", "32", "--format", "concise"], capsys)
    assert "PAR002" not in out


def test_model_args_file_divisibility_with_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "mixtral__mixtral_8x7b_alltoall_tp2pp4ep4_release.model_config.yaml"
    code, out, _ = _lint([str(path), "--gpus", "12", "--format", "concise"], capsys)
    assert code == 1
    # The whole-mesh finding sits at MODEL_ARGS; the expert grid fails too, one cause, so
    # PAR002 is folded into it (issue 26) and sits at its own flag once PAR001 is ignored.
    assert any(":12:1: PAR001" in x for x in out.splitlines())
    assert "PAR002" not in out
    code, out, _ = _lint([str(path), "--gpus", "12", "--format", "json", "--ignore", "PAR001"],
                         capsys)  # fmt: skip
    par002 = [f for f in json.loads(out) if f["code"] == "PAR002"]
    assert [(f["line"], f["column"]) for f in par002] == [(70, 3)]  # --expert-model-parallel-size
    # global batch 1024 over DP = 32 / (TP 2 * PP 4) = 4 with micro batch 1 is fine at 32 GPUs.
    code, out, _ = _lint([str(path), "--gpus", "32", "--format", "concise"], capsys)
    assert "PAR001" not in out and "BAT" not in out


def test_argument_list_after_dashes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _lint(
        ["--gpus", "8", "--format", "concise", "--", "--tensor-model-parallel-size", "2",
         "--num-layers", "8", "--num-experts", "8", "--micro-batch-size", "1",
         "--global-batch-size", "3", "--expert-model-parallel-size", "4",
         "--sequence-parallel", "--disable-bias-linear"],
        capsys,
    )  # fmt: skip
    assert code == 1
    assert any(x.startswith("<command line>:1:") and "BAT" in x for x in out.splitlines())


def test_layout_flag_is_read() -> None:
    doc = parse_text(
        "#!/bin/bash\nPP=4\ntorchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 "
        "--pipeline-model-parallel-size $PP --pipeline-model-parallel-layout 'Et*3|t*3|tt|tL'\n",
        "x.sh",
    )
    cfg = normalize(doc)
    assert cfg.value("model.pipeline_model_parallel_layout") == "Et*3|t*3|tt|tL"
    assert cfg.value("model.pipeline_model_parallel_size") == 4
    # $PP points at the flag; its value is PP=4 on line 2 (not a literal after the flag).
    assert doc.spans[("model", "pipeline_model_parallel_size")].key_start.line == 3
    assert doc.spans[("model", "pipeline_model_parallel_size")].value_start.line == 2
    assert not doc.spans[("model", "pipeline_model_parallel_size")].scalar


def test_nothing_is_executed_and_unknowns_stay_unknown(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = (
        f"#!/bin/bash\nTP=$(touch {marker}; echo 4)\nEP=`touch {marker}`\n"
        "python pretrain_gpt.py --tensor-model-parallel-size $TP --expert-model-parallel-size "
        "$EP --num-experts ${NUM_EXPERTS:-16} --context-parallel-size $CP\n"
    )
    doc = parse_text(text, "x.sh")
    assert not marker.exists()
    cfg = normalize(doc)
    assert cfg.value("model.num_moe_experts") == 16  # ${VAR:-default}
    assert "model.tensor_model_parallel_size" in cfg.unknown
    assert "model.context_parallel_size" in cfg.unknown
    # Each unknown word is a flag's value: it cannot hide another flag, so nothing else is
    # uncertain (doc.mlm_notes lists only words that may hold flags).
    assert doc.mlm_notes == []
    doc = parse_text(text.replace("$CP\n", "$CP $(extra_args)\n"), "x.sh")
    assert any("$(extra_args)" in n and "may hold flags" in n for n in doc.mlm_notes)


@pytest.mark.parametrize(
    "text",
    [
        "#!/bin/bash\npython pretrain_gpt.py --num-layers 'unterminated\n",
        "#!/bin/bash\nA=x\n" + "A=$A$A\n" * 40 + "python pretrain_gpt.py $A\n",
        "#!/bin/bash\n" + 'A="$A --num-layers 1"\n' * 200_000 + "python pretrain_gpt.py $A\n",
    ],
    ids=["unterminated-quote", "expansion-bomb", "quadratic-growth"],
)
def test_bad_scripts_exit_2_with_one_line(text: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.sh"
    path.write_text(text)
    with pytest.raises(InputError):
        load_file(str(path))
    proc = subprocess.run(
        [sys.executable, "-m", "moe_lint", "--isolated", "--no-cache", str(path)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_a_script_without_a_training_command_is_skipped(capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path) -> None:  # fmt: skip
    path = tmp_path / "prep.sh"
    path.write_text("#!/bin/bash\npython tools/preprocess_data.py --input x --output y\n")
    code, _, _ = _lint([str(path)], capsys)
    assert code == 0
    doc = load_file(str(path))
    assert doc.skip is not None and "not a Megatron-LM launch script" in doc.skip


def test_fix_edits_only_a_literal_after_its_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.sh"
    text = (
        "#!/bin/bash\nTP=2\ntorchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 "
        "--num-experts 8 --expert-model-parallel-size 4 --tensor-model-parallel-size $TP "
        "--sequence-parallel --micro-batch-size 1 --global-batch-size 8\n"
    )
    path.write_text(text)
    _lint([str(path), "--fix"], capsys)
    assert path.read_text() == text or "TP=2" in path.read_text()
    doc = load_file(str(path))
    from moe_lint.engine.spans import set_value_edit

    assert set_value_edit(doc, ("model", "tensor_model_parallel_size"), 4) is None
    assert "not a plain literal" in doc.fix_refusals[("model", "tensor_model_parallel_size")]
    edit = set_value_edit(doc, ("model", "expert_model_parallel_size"), 2)
    assert edit is not None
    assert doc.text[edit.start : edit.end] == "4"
    assert set_value_edit(doc, ("model", "sequence_parallel"), False) is None
    assert set_value_edit(doc, ("model", "context_parallel_size"), 2) is None


def test_bridge_only_rules_do_not_run_on_megatron_lm_input(tmp_path: Path) -> None:
    """CG006 cites Bridge's GPTModelProvider.provide; Megatron-LM's validate_args turns the TE
    RNG tracker on itself for CUDA graphs ("te_rng_tracker is not enabled, enabling it for CUDA
    graphs."), so the rule is `applies_to: [bridge]` and stays silent on a launch script."""
    from moe_lint.engine.catalogue import load_catalogue

    assert "bridge" in load_catalogue(plugins=False).by_code["CG006"].applies_to
    script = tmp_path / "train.sh"
    script.write_text(
        "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 "
        "--hidden-size 1024 --num-attention-heads 16 --seq-length 4096 "
        "--max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 8 "
        "--cuda-graph-impl transformer_engine --bf16\n"
    )
    bridge = tmp_path / "bridge.yaml"
    bridge.write_text(
        "# moe-lint: gpus=8 model=qwen3-30b-a3b\nmodel:\n  cuda_graph_impl: transformer_engine\n"
    )
    from moe_lint.cli import main

    def codes(path: Path) -> set[str]:
        import contextlib
        import io
        import json

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main([str(path), "--format", "json", "--isolated"])
        return {f["code"] for f in json.loads(out.getvalue())}

    assert "CG006" not in codes(script)
    assert "CG006" in codes(bridge)
