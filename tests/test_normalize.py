"""Normalization reproduces what Bridge / Megatron-Core do before they check a config."""

from __future__ import annotations

import pytest
from packaging.version import Version

from moe_lint.config.load import parse_text
from moe_lint.config.normalize import NotBridgeConfig, normalize
from moe_lint.config.overrides import parse_override


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
        # Bridge >= 0.6 clears the modules while the written cuda_graph_impl is none.
        ("external_cuda_graph: true\n  cuda_graph_scope: [attn]", "transformer_engine", []),
        (
            "cuda_graph_impl: transformer_engine\n  cuda_graph_scope: [attn]",
            "transformer_engine",
            ["attn"],
        ),
        ("cuda_graph_impl: transformer_engine\n  cuda_graph_scope: full", "transformer_engine", []),
        # cuda_graph_impl none: Bridge >= 0.6 clears the scope before Megatron-Core could turn
        # the deprecated full_iteration into cuda_graph_impl full_iteration.
        ("cuda_graph_scope: full_iteration", "none", []),
        ("cuda_graph_impl: local\n  cuda_graph_scope: full_iteration", "full_iteration", []),
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
    from moe_lint.config.settings import preset_fields

    doc = parse_text("model:\n  num_layers: 4\n")
    cfg = normalize(doc, [], preset_fields("deepseek-v3"), "deepseek-v3")
    assert cfg.values["model.num_layers"] == 4
    assert cfg.values["model.num_moe_experts"] == 256
    assert cfg.origin["model.num_moe_experts"] == "preset"
    assert cfg.values["model.multi_latent_attention"] is True


# --------------------------------------------------------------------------------------------
# Bridge dump encodings (ConfigContainer.to_yaml; docs/domain/05 §2)
# --------------------------------------------------------------------------------------------

DUMP = "_target_: megatron.bridge.training.config.ConfigContainer\n"


def test_torch_dtype_node_becomes_its_name() -> None:
    doc = parse_text(
        DUMP + "model:\n  num_moe_experts: 8\n"
        "  moe_router_dtype:\n    _call_: false\n    _target_: torch.float32\n"
        "  params_dtype: {_target_: torch.bfloat16, _call_: false}\n"
    )
    cfg = normalize(doc)
    assert cfg.type_problems == []
    assert cfg.values["model.moe_router_dtype"] == "torch.float32"
    assert cfg.origin["model.moe_router_dtype"] == "file"
    assert cfg.get("model.params_dtype") == "torch.bfloat16"
    # The document keeps what the file says (spans and fixes work on it).
    assert doc.data["model"]["moe_router_dtype"] == {"_call_": False, "_target_": "torch.float32"}


def test_function_node_becomes_its_qualified_name() -> None:
    cfg = norm(
        "model:\n  activation_func:\n    _call_: false\n"
        "    _target_: megatron.core.fusions.fused_bias_geglu.quick_gelu\n"
    )
    assert cfg.get("model.activation_func") == "megatron.core.fusions.fused_bias_geglu.quick_gelu"


def test_enum_node_becomes_the_member_name() -> None:
    cfg = norm(
        "model:\n  attention_backend:\n    _args_: [5]\n    _call_: true\n    _name_: auto\n"
        "    _target_: megatron.core.transformer.enums.AttnBackend\n"
        "train:\n  exit_signal:\n    _args_: [15]\n    _call_: true\n    _name_: SIGTERM\n"
        "    _target_: signal.Signals\n"
    )
    assert cfg.get("model.attention_backend") == "auto"
    assert cfg.get("train.exit_signal") == "SIGTERM"


def test_attn_backend_member_comes_from_its_value() -> None:
    # from_yaml calls AttnBackend(*_args_); a hand-edited _name_ does not change the member.
    cfg = norm(
        "model:\n  attention_backend:\n    _args_: [1]\n    _call_: true\n    _name_: auto\n"
        "    _target_: megatron.core.transformer.enums.AttnBackend\n"
    )
    assert cfg.get("model.attention_backend") == "flash"


def test_enum_members_inside_lists() -> None:
    cfg = norm(
        "model:\n  cuda_graph_impl: transformer_engine\n  cuda_graph_scope:\n"
        "  - {_target_: megatron.core.transformer.enums.CudaGraphScope, _call_: true,"
        " _args_: [1], _name_: attn}\n  - moe_router\n"
    )
    assert cfg.values["model.cuda_graph_modules"] == ["attn", "moe_router"]


@pytest.mark.parametrize(
    "node",
    [
        # functools.partial: a target plus arguments, not one value
        "{_target_: megatron.core.models.gpt.gpt_layer_specs.get_gpt_decoder_block_spec,"
        " _partial_: true, _args_: [], use_transformer_engine: true}",
        # a dataclass with its fields
        "{_target_: megatron.bridge.data.packing.config.PackedSequenceSpecs,"
        " packed_sequence_size: 4096}",
        # HF configs rebuilt with from_dict
        "{_target_: transformers.GenerationConfig.from_dict, _call_: true,"
        " config_dict: {top_k: 1}}",
        # an object rebuilt without arguments
        "{_target_: some.module.Thing, _call_: true}",
        # _call_: false with extra keys is an InstantiationException in from_yaml, not a value
        "{_target_: torch.float32, _call_: false, extra: 1}",
    ],
)
def test_other_target_nodes_stay_mappings(node: str) -> None:
    cfg = norm(f"model:\n  transformer_layer_spec: {node}\n")
    value = cfg.get("model.transformer_layer_spec")
    assert isinstance(value, dict) and "_target_" in value


def test_untarget_shares_unchanged_trees() -> None:
    from moe_lint.config.normalize import untarget

    tree = {"model": {"a": [1, {"b": 2}], "c": {"_target_": "x.Y", "d": 1}}}
    assert untarget(tree) is tree
    changed = {"model": {"a": 1, "dt": {"_target_": "torch.float16", "_call_": False}}}
    out = untarget(changed)
    assert out == {"model": {"a": 1, "dt": "torch.float16"}}
    assert changed["model"]["dt"] == {"_target_": "torch.float16", "_call_": False}


def test_override_replaces_an_untargeted_value() -> None:
    cfg = norm(
        DUMP + "model:\n  moe_router_dtype: {_target_: torch.float32, _call_: false}\n",
        "model.moe_router_dtype=fp32",
    )
    assert cfg.values["model.moe_router_dtype"] == "fp32"
    assert cfg.origin["model.moe_router_dtype"] == "override"


def test_every_dev_dump_types_cleanly() -> None:
    from conftest import CORPUS
    from moe_lint.config.load import load_file

    dumps = sorted((CORPUS / "bridge-full-dumps").glob("*_dev_config.yaml"))
    assert len(dumps) >= 3
    for path in dumps:
        cfg = normalize(load_file(str(path)))
        assert cfg.type_problems == [], path.name
        assert cfg.values["model.moe_router_dtype"] == "torch.float32", path.name


# --------------------------------------------------------------------------------------------
# cuda_graph_scope -> cuda_graph_modules (MCore 0.19.2 TransformerConfig.__post_init__)
# --------------------------------------------------------------------------------------------


def _graph(model: str, versions: dict[str, Version] | None = None):  # type: ignore[no-untyped-def]
    return normalize(
        parse_text(f"model:\n  cuda_graph_impl: transformer_engine\n{model}"), versions=versions
    )


@pytest.mark.parametrize(
    ("model", "modules"),
    [
        # the full-dump spelling: the default "full" next to the recipe's scope
        (
            "  cuda_graph_modules: full\n  cuda_graph_scope: [attn, moe_router]\n",
            ["attn", "moe_router"],
        ),
        (
            "  cuda_graph_modules: []\n  cuda_graph_scope: [moe_router, moe_preprocess]\n",
            ["moe_router", "moe_preprocess"],
        ),
        ("  cuda_graph_modules: null\n  cuda_graph_scope: attn,mlp\n", ["attn", "mlp"]),
        ("  cuda_graph_scope: [attn]\n", ["attn"]),
        # scope [] still replaces the modules: whole layer
        ("  cuda_graph_modules: full\n  cuda_graph_scope: []\n", []),
        # any other pair is CG007's assert: the modules stay as written
        ("  cuda_graph_modules: [mlp]\n  cuda_graph_scope: [attn]\n", ["mlp"]),
        ("  cuda_graph_modules: [full]\n  cuda_graph_scope: [attn]\n", []),
        ("  cuda_graph_modules: [attn]\n", ["attn"]),
    ],
)
def test_scope_migrates_like_megatron_core(model: str, modules: list[str]) -> None:
    assert _graph(model).values["model.cuda_graph_modules"] == modules


def test_scope_is_canonical_before_mcore_018() -> None:
    old = {"megatron-core": Version("0.17")}
    cfg = _graph("  cuda_graph_modules: [attn]\n  cuda_graph_scope: [mlp]\n", old)
    assert cfg.values["model.cuda_graph_modules"] == ["mlp"]
    assert "ignored" in cfg.notes["model.cuda_graph_modules"]
    # cuda_graph_modules alone is no field there: the scope's default "full" (whole layer) wins
    assert _graph("  cuda_graph_modules: [attn]\n", old).values["model.cuda_graph_modules"] == []
    assert _graph("  cuda_graph_modules: [attn]\n", {"megatron-core": Version("0.18")}).values[
        "model.cuda_graph_modules"
    ] == ["attn"]


def test_legacy_flag_keeps_modules_before_bridge_06() -> None:
    text = "model:\n  external_cuda_graph: true\n  cuda_graph_scope: [attn]\n"
    cfg = normalize(parse_text(text), versions={"bridge": Version("0.5")})
    assert cfg.values["model.cuda_graph_modules"] == ["attn"]
    cleared = normalize(parse_text(text))
    assert cleared.values["model.cuda_graph_modules"] == []
    assert "validate_cuda_graph_configuration" in cleared.notes["model.cuda_graph_scope"]


def test_full_iteration_scope_with_impl_none_before_bridge_06() -> None:
    """Bridge 0.4-0.5 clear the graph modules only after model.finalize(), so Megatron-Core
    still migrates a deprecated full_iteration scope into cuda_graph_impl full_iteration."""
    text = "model:\n  cuda_graph_scope: full_iteration\n"
    cfg = normalize(parse_text(text), versions={"bridge": Version("0.5")})
    assert cfg.values["model.cuda_graph_impl"] == "full_iteration"
    cleared = normalize(parse_text(text))
    assert cleared.values["model.cuda_graph_impl"] == "none"
    assert "validate_cuda_graph_configuration" in cleared.notes["model.cuda_graph_scope"]


def test_unresolved_scope_makes_the_modules_unknown() -> None:
    cfg = _graph("  cuda_graph_scope: ${GRAPH_SCOPE}\n")
    assert "model.cuda_graph_modules" in cfg.unknown
