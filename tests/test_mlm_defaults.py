"""What Megatron-LM makes of its parsed arguments (config/mlm_defaults.py, docs/mlm-defaults.md),
the run mode of inference inputs, NeMo 2 tests and --use-checkpoint-args, on Megatron-LM's own
functional tests and example scripts (tests/data/megatron-lm/SOURCE.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from moe_lint.config.fields import UNKNOWN
from moe_lint.config.load import load_file, parse_text
from moe_lint.config.mlm_args import run_mode_of
from moe_lint.config.normalize import Config, normalize
from moe_lint.config.settings import Settings
from moe_lint.engine.catalogue import Catalogue, load_catalogue, load_pack
from moe_lint.errors import RulePackError
from moe_lint.linting import lint_path, lint_text

CI = Path(__file__).parent / "data" / "megatron-lm" / "ci"
EXAMPLES = Path(__file__).parent / "data" / "megatron-lm" / "examples"


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_catalogue(plugins=False)


def _cfg(case: str) -> Config:
    return normalize(load_file(str(CI / case / "model_config.yaml")))


def _codes(path: Path, catalogue: Catalogue, gpus: str = "8") -> list[str]:
    result = lint_path(str(path), catalogue, Settings(), [], {"gpus": gpus})
    assert result.error is None and result.notice is None, result.error or result.notice
    return [f.code for f in result.findings]


# --------------------------------------------------------------------------- derived values


def test_without_gqa_every_head_has_its_own_kv(catalogue: Catalogue) -> None:
    """No --group-query-attention: core_transformer_config_from_args passes None and
    __post_init__ makes it the head count (it read 1: a false ATT015 "1 KV heads")."""
    case = "gpt/gpt3_mcore_te_tp1_pp2_cp4_a2a_p2p_nondeterministic"
    cfg = _cfg(case)
    assert cfg.value("model.num_attention_heads") == 8
    assert cfg.value("model.num_query_groups") == 8
    assert "no --group-query-attention" in cfg.notes["model.num_query_groups"]
    codes = _codes(CI / case / "model_config.yaml", catalogue)
    assert "ATT015" not in codes and "ATT003" not in codes


def test_with_gqa_the_flag_counts() -> None:
    cfg = _cfg("moe/gpt_dynamic_inference_tp2_pp2_ep2_gptoss_20b_swa")
    assert cfg.value("model.num_query_groups") == 8  # --num-query-groups 8
    assert cfg.value("model.num_attention_heads") == 64


def test_sizes_validate_args_derives() -> None:
    cfg = _cfg("gpt/gpt3_mcore_te_tp1_pp2_cp4_a2a_p2p_nondeterministic")
    # --hidden-size 512 --num-attention-heads 8, no --ffn-hidden-size / --kv-channels, no --swiglu
    assert cfg.value("model.hidden_size") == 512
    assert cfg.value("model.ffn_hidden_size") == 4 * 512
    assert cfg.value("model.kv_channels") == 512 // 8
    assert cfg.value("model.add_qkv_bias") is True  # add_bias_linear (no --disable-bias-linear)
    assert cfg.value("model.bias_activation_fusion") is True
    assert cfg.value("ddp.grad_reduce_in_fp32") is True  # --bf16


def test_quick_geglu_is_a_gated_quick_gelu() -> None:
    cfg = _cfg("moe/gpt_dynamic_inference_tp2_pp2_ep2_gptoss_20b_swa")
    assert cfg.value("model.activation_func").endswith("quick_gelu")
    assert cfg.value("model.gated_linear_unit") is True
    # --disable-bias-linear: no bias, so the bias-GeLU fusion is off.
    assert cfg.value("model.bias_activation_fusion") is False


def test_grad_reduce_in_bf16_and_squared_relu() -> None:
    cfg = _cfg("nemotron/nemotron3_5_lightning_no_load_optim_tp1_pp1_cp1_ep4_dgx_gb200_1N4G")
    assert cfg.value("ddp.grad_reduce_in_fp32") is False  # --bf16 --grad-reduce-in-bf16
    assert cfg.value("model.activation_func").endswith("squared_relu")
    assert cfg.value("model.is_hybrid_model") is True


def test_virtual_pipeline_from_layers_per_stage_and_layouts() -> None:
    # 12 layers / PP 4 / --num-layers-per-virtual-pipeline-stage 1 = 3 virtual stages.
    cfg = _cfg("gpt/gpt3_mcore_te_tp1_pp4_vp1_tunable_overlap_1node")
    assert cfg.value("model.virtual_pipeline_model_parallel_size") == 3
    assert cfg.value("model.overlap_p2p_comm") is True
    assert cfg.value("model.batch_p2p_comm") is False
    # "Et*7|t*7mL" has 2 stages = PP 2: one virtual stage, which validate_args makes None;
    # without interleaving the p2p overlap is off and p2p is batched.
    cfg = _cfg("mixtral/deepseekv3_proxy_flex_tp2pp2emp16etp1cp1_gb_200_release")
    assert cfg.value("model.virtual_pipeline_model_parallel_size") is None
    assert cfg.value("model.overlap_p2p_comm") is False
    assert cfg.value("model.batch_p2p_comm") is True
    # "Et*3|(tt|)*6mL" has 8 stages over PP 2.
    cfg = _cfg("moe/gpt3_moe_mcore_te_tp2_pp2_ep4_etp1_fine_grained_offloading")
    assert cfg.value("model.virtual_pipeline_model_parallel_size") == 4


def test_global_batch_without_the_flag_is_mbs_times_dp() -> None:
    from moe_lint.linting import prepare

    doc = load_file(
        str(CI / "moe/gpt_dynamic_inference_tp2_pp2_ep2_gptoss_20b_swa/model_config.yaml")
    )
    _, facts, _ = prepare(doc, Settings(), [], {"gpus": "8"})
    # --micro-batch-size 1, DP = 8 / (TP 2 · PP 2) = 2.
    assert facts.require("gbs") == 2
    assert "validate_args" in facts.values["gbs"].derivation


def test_use_checkpoint_args_leaves_what_the_checkpoint_sets_unknown() -> None:
    """load_args_from_checkpoint forces --swiglu, --num-experts, --moe-router-topk, ... from the
    checkpoint and fills --num-layers only when it is not given; TP stays the command line's
    without --use-mp-args-from-checkpoint-args."""
    cfg = _cfg("moe/gpt_dynamic_inference_tp4_etp1_pp1_ep8_16B_logitsmatch_zmq")
    assert cfg.value("checkpoint.use_checkpoint_args") is True
    for dotted in ("model.gated_linear_unit", "model.num_moe_experts", "model.moe_router_topk",
                   "model.num_query_groups", "model.position_embedding_type"):  # fmt: skip
        assert cfg.value(dotted) is UNKNOWN, dotted
        assert not cfg.explicit(dotted)
    assert cfg.value("model.num_layers") == 27
    assert cfg.value("model.tensor_model_parallel_size") == 4
    # Megatron-Core 0.14 also forced the dispatcher type; later releases do not.
    assert cfg.value("model.moe_token_dispatcher_type") == "alltoall"
    old = normalize(
        load_file(
            str(
                CI
                / "moe/gpt_dynamic_inference_tp4_etp1_pp1_ep8_16B_logitsmatch_zmq/model_config.yaml"
            )
        ),
        versions={"megatron-core": __import__("packaging.version").version.Version("0.14.0")},
    )
    assert old.value("model.moe_token_dispatcher_type") is UNKNOWN


def test_an_unresolved_size_makes_its_derivations_unknown() -> None:
    text = (
        "MODEL_ARGS:\n  --hidden-size: ${HIDDEN}\n  --num-attention-heads: 8\n  --num-layers: 2\n"
    )
    cfg = normalize(parse_text(text, "model_config.yaml"))
    assert cfg.value("model.hidden_size") is UNKNOWN
    assert cfg.value("model.ffn_hidden_size") is UNKNOWN
    assert cfg.value("model.kv_channels") is UNKNOWN
    assert cfg.value("model.num_query_groups") == 8


def test_swiglu_ffn_and_recompute_activations() -> None:
    text = (
        "MODEL_ARGS:\n  --hidden-size: 4096\n  --num-attention-heads: 32\n  --num-layers: 2\n"
        "  --swiglu: true\n  --recompute-activations: true\n  --recompute-granularity: full\n"
    )
    cfg = normalize(parse_text(text, "model_config.yaml"))
    assert cfg.value("model.ffn_hidden_size") == int((4 * 4096 * 2 / 3) / 64) * 64 == 10880
    assert cfg.value("model.activation_func") == "torch.nn.functional.silu"
    assert cfg.value("model.recompute_granularity") == "selective"


# --------------------------------------------------------------------------- run modes


def test_inference_tests_are_inference_and_rl_trains() -> None:
    modes = {p.parent.name: load_file(str(p)).run_mode for p in CI.rglob("model_config.yaml")}
    declared = {
        p.parent.name: ("inference" if "\nMODE: inference" in p.read_text() else "training")
        for p in CI.rglob("model_config.yaml")
    }
    assert sum(m == "inference" for m in modes.values()) == 59
    assert {k: v for k, v in modes.items() if declared[k] != v} == {}
    rl = CI / "moe" / "gpt_grpo_tp8tp4_pp1_ep8ep2_dp8_throughputtest" / "model_config.yaml"
    assert "MODE: rl" in rl.read_text() and load_file(str(rl)).run_mode == "training"


def test_inference_gets_no_training_only_findings(catalogue: Catalogue) -> None:
    """MoE + TP 2 without SP raises only `if self.training` (MoELayer.forward): no MOE003 on
    GPT-OSS inference. The same file as a training run gets it."""
    path = CI / "moe" / "gpt_dynamic_inference_tp2_pp2_ep2_gptoss_20b_swa" / "model_config.yaml"
    assert "MOE003" not in _codes(path, catalogue)
    text = path.read_text().replace("MODE: inference", "MODE: pretraining")
    result = lint_text(text, catalogue, Settings(), [], {"gpus": "8"}, path=str(path))
    assert "MOE003" in [f.code for f in result.findings]
    # EDP = 1 expert optimizer state (PAR005) needs an optimizer: not on an inference run.
    path = (
        CI
        / "moe"
        / "gpt_dynamic_inference_tp4_etp1_pp1_ep8_16B_logitsmatch_zmq"
        / "model_config.yaml"
    )
    assert "PAR005" not in _codes(path, catalogue)


def test_inference_entry_scripts() -> None:
    assert load_file(str(EXAMPLES / "mamba" / "run_text_gen_server_8b.sh")).run_mode == "inference"
    assert load_file(str(EXAMPLES / "post_training/modelopt/generate.sh")).run_mode == "inference"
    assert (
        load_file(str(EXAMPLES / "inference" / "run_offline_inference.sh")).run_mode == "inference"
    )
    trains = EXAMPLES / "mixtral" / "train_mixtral_8x7b_distributed.sh"
    assert load_file(str(trains)).run_mode == "training"
    assert run_mode_of("examples/inference/advanced/gpt_dynamic_inference.py") == "inference"
    assert run_mode_of("examples.inference.offline_inference") == "inference"
    assert run_mode_of("train_rl.py") == "training"
    assert run_mode_of("pretrain_gpt.py") == "training"


_PACK = """\
pack: extra
rules:
  - code: XTR001
    name: tp-is-two
    severity: warning
    summary: test rule
    path: model.tensor_model_parallel_size
    when: tp == 2
    message: TP is two
    source: test
    {modes}
    docs:
      what: w
      why: y
      example: "model: {{tensor_model_parallel_size: 2}}"
      use_instead: "model: {{tensor_model_parallel_size: 1}}"
"""


def test_the_modes_field(tmp_path: Path) -> None:
    """``modes`` is validated at load and honoured like ``applies_to``."""
    shipped = load_catalogue(plugins=False)
    training = {r.code for r in shipped.rules if r.modes == ("training",)}
    assert {
        "MOE003",
        "MEM001",
        "MEM002",
        "PAR005",
        "OPT002",
        "OPT003",
        "FP019",
        "MLM008",
    } <= training
    # validate_args and __post_init__ asserts, process groups and the forward run at inference.
    assert not {"ATT001", "ATT015", "MLM002", "MLM005", "BAT001", "PAR001", "MOE011"} & training
    for bad in ("modes: [training, eval]", "modes: []", "modes: training"):
        path = tmp_path / "bad.yaml"
        path.write_text(_PACK.format(modes=bad))
        with pytest.raises(RulePackError, match="'modes'"):
            load_pack(path, {})
    path = tmp_path / "extra.yaml"
    path.write_text(_PACK.format(modes="modes: [training]"))
    catalogue = load_catalogue([path], plugins=False)
    args = "MODEL_ARGS:\n  --tensor-model-parallel-size: 2\n"
    for mode, fired in (("pretraining", True), ("inference", False)):
        result = lint_text(f"MODE: {mode}\n{args}", catalogue, Settings(select=["XTR001"]))
        assert bool(result.findings) is fired, mode


# --------------------------------------------------------------------------- NeMo 2 tests


def test_nemo_tests_are_skipped_not_linted_as_defaults(catalogue: Catalogue) -> None:
    files = sorted((CI / "gpt-nemo").rglob("model_config.yaml"))
    assert len(files) == 6
    for path in files:
        doc = load_file(str(path))
        assert doc.skip is not None and "NeMo 2" in doc.skip, path
        result = lint_path(str(path), catalogue, Settings(), [], {"gpus": "8"})
        assert result.notice is not None and not result.findings  # was a false ATT022


# --------------------------------------------------------------------------- MLM rules


def test_mlm_rules_run_under_use_checkpoint_args(catalogue: Catalogue) -> None:
    """validate_args checks what load_args_from_checkpoint leaves: a given --seq-length and
    --max-position-embeddings stay the command line's (it fills them only when unset)."""
    path = (
        CI
        / "moe"
        / "gpt_dynamic_inference_tp4_etp1_pp1_ep8_16B_logitsmatch_zmq"
        / "model_config.yaml"
    )
    assert "MLM006" not in _codes(path, catalogue)
    text = path.read_text().replace(
        "--max-position-embeddings: 4096", "--max-position-embeddings: 2048"
    )
    result = lint_text(text, catalogue, Settings(select=["MLM006"]), [], {"gpus": "8"})
    assert [f.message for f in result.findings] == [
        "max_position_embeddings (2048) must be greater than or equal to seq_length (4096). "
        "(--max-position-embeddings 2048 < the sequence length 4096)"
    ]


def test_mlm003_reads_the_virtual_stages_validate_args_derives(catalogue: Catalogue) -> None:
    """12 layers / PP 4 with --num-layers-per-virtual-pipeline-stage 1: 3 virtual stages, so
    the CI-green run with --overlap-param-gather-with-optimizer-step passes; 3 layers per
    virtual stage would be one, which validate_args makes None and then asserts on."""
    case = "gpt3_mcore_te_tp1_pp4_vp1_dist_optimizer_overlap_grad_reduce_param_gather"
    path = CI / "gpt" / f"{case}_overlap_optimizer" / "model_config.yaml"
    assert "MLM003" not in _codes(path, catalogue)
    text = path.read_text().replace(
        "--num-layers-per-virtual-pipeline-stage: 1", "--num-layers-per-virtual-pipeline-stage: 3"
    )
    result = lint_text(text, catalogue, Settings(select=["MLM003"]), [], {"gpus": "8"})
    assert [f.message.split(" (")[0] for f in result.findings] == [
        "--overlap-param-gather-with-optimizer-step only supported with interleaved pipeline "
        "parallelism"
    ]


def test_the_checkpoint_decides_the_activation() -> None:
    cfg = _cfg("moe/gpt_dynamic_inference_tp4_etp1_pp1_ep8_16B_logitsmatch_zmq")  # --swiglu, forced
    assert cfg.value("model.activation_func") is UNKNOWN
    assert cfg.value("model.bias_activation_fusion") is UNKNOWN
