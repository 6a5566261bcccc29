"""Normalization reproduces what Bridge / Megatron-Core do before they check a config."""

from __future__ import annotations

import pytest

from moe_lint.load import parse_text
from moe_lint.normalize import NotBridgeConfig, normalize
from moe_lint.overrides import parse_override


def norm(text: str, *overrides: str):  # type: ignore[no-untyped-def]
    return normalize(parse_text(text), [parse_override(o) for o in overrides])


def test_selective_without_modules_defaults_to_core_attn() -> None:
    cfg = norm("model:\n  recompute_granularity: selective\n")
    assert cfg.values["model.recompute_modules"] == ["core_attn"]
    assert not cfg.explicit("model.recompute_modules")


def test_sequence_parallel_forced_off_at_tp1() -> None:
    cfg = norm("model:\n  sequence_parallel: true\n")
    assert cfg.values["model.sequence_parallel"] is False
    assert "finalize" in cfg.notes["model.sequence_parallel"]


@pytest.mark.parametrize(
    ("model", "impl", "modules"),
    [
        ("enable_cuda_graph: true", "local", []),
        ("external_cuda_graph: true\n  cuda_graph_scope: [attn]", "transformer_engine", ["attn"]),
        ("cuda_graph_impl: transformer_engine\n  cuda_graph_scope: full", "transformer_engine", []),
        ("cuda_graph_scope: full_iteration", "full_iteration", []),
        (
            "cuda_graph_impl: transformer_engine\n  cuda_graph_modules: attn,moe_router",
            "transformer_engine",
            ["attn", "moe_router"],
        ),
    ],
)
def test_deprecated_cuda_graph_flags(model: str, impl: str, modules: list[str]) -> None:
    cfg = norm(f"model:\n  {model}\n")
    assert cfg.values["model.cuda_graph_impl"] == impl
    assert cfg.values["model.cuda_graph_modules"] == modules


def test_mixed_precision_recipe_overwrites_model_fields() -> None:
    cfg = norm("model:\n  fp8: null\n  bf16: false\nmixed_precision: bf16_with_mxfp8_mixed\n")
    assert cfg.values["model.fp8_recipe"] == "mxfp8"
    assert cfg.values["model.bf16"] is True
    assert cfg.precision_overwritten["model.bf16"] == (False, True)


def test_unknown_mixed_precision_recipe_is_a_type_problem() -> None:
    cfg = norm("mixed_precision: bf16_fp9\n")
    assert [p.path for p in cfg.type_problems] == ["mixed_precision"]


def test_comm_overlap_resets_model_ep_overlap() -> None:
    cfg = norm(
        "model:\n  overlap_moe_expert_parallel_comm: true\n"
        "comm_overlap:\n  tp_comm_overlap: false\n"
    )
    assert cfg.values["model.overlap_moe_expert_parallel_comm"] is False


def test_wrapped_and_full_dump_forms() -> None:
    wrapped = norm("ConfigContainer:\n  model:\n    context_parallel_size: 4\nperf_matrix: {}\n")
    assert wrapped.form == "wrapped" and wrapped.values["model.context_parallel_size"] == 4
    dump = norm(
        "_target_: megatron.bridge.training.config.ConfigContainer\nmodel:\n  _target_: x\n"
    )
    assert dump.form == "full-dump"


def test_not_a_bridge_config() -> None:
    with pytest.raises(NotBridgeConfig):
        norm("title: card\nsummary: x\nverification_index: {}\nmodel: {hf_id: y}\n")


def test_overrides_win_and_are_recorded() -> None:
    cfg = norm(
        "model:\n  context_parallel_size: 4\n",
        "model.context_parallel_size=16",
        "+env_vars.NCCL_DEBUG=INFO",
        "~model.sequence_parallel",
    )
    assert cfg.values["model.context_parallel_size"] == 16
    assert cfg.origin["model.context_parallel_size"] == "override"
    assert cfg.raw["env_vars"] == {"NCCL_DEBUG": "INFO"}


def test_wrong_types_are_dropped_and_reported() -> None:
    cfg = norm(
        "model:\n  context_parallel_size: eight\n  tensor_model_parallel_size: 0\n"
        "  sequence_parallel: maybe\n"
    )
    bad = {p.path for p in cfg.type_problems}
    assert bad == {
        "model.context_parallel_size",
        "model.tensor_model_parallel_size",
        "model.sequence_parallel",
    }
    assert "model.context_parallel_size" in cfg.unknown


def test_interpolations_are_unknown() -> None:
    cfg = norm("model:\n  tensor_model_parallel_size: ${TP}\n")
    assert cfg.interpolations == ["model.tensor_model_parallel_size"]
    assert "model.tensor_model_parallel_size" in cfg.unknown


def test_model_preset_fills_architecture_but_file_wins() -> None:
    from moe_lint.settings import preset_fields

    doc = parse_text("model:\n  num_layers: 4\n")
    cfg = normalize(doc, [], preset_fields("deepseek-v3"), "deepseek-v3")
    assert cfg.values["model.num_layers"] == 4
    assert cfg.values["model.num_moe_experts"] == 256
    assert cfg.origin["model.num_moe_experts"] == "preset"
    assert cfg.values["model.multi_latent_attention"] is True
