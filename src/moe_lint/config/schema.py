"""Typed view of the Bridge fields that moe-lint's rules read, with the framework's defaults.

Only fields a rule or derivation reads are typed here; the unknown-key rule checks every key
against the per-release config classes (``data/bridge_classes.json``, ``bridge_classes.py``).

Two kinds of default exist:

* a framework default (``Field(default=...)``): the value Megatron-Core / Bridge uses when
  nothing sets it (``tensor_model_parallel_size = 1``);
* ``RECIPE``: fields a Bridge recipe always sets (architecture, sequence length, batch sizes,
  grouped GEMM). An override file that omits them inherits the recipe's value, which a static
  tool cannot see, so they stay *unknown* and rules that need them are skipped rather than
  guessing a default that would produce false alarms.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from moe_lint.bounds import MAX_COUNT, MAX_SIZE

#: Marker placed in ``json_schema_extra`` for recipe-provided fields.
RECIPE_MARK: dict[str, Any] = {"recipe": True}


def recipe() -> Any:
    """A field whose value comes from the recipe unless the file sets it."""
    return Field(default=None, json_schema_extra=RECIPE_MARK)


#: Sanity bounds: a parallel size or a count past these is a typo or a hostile input, and the
#: arithmetic moe-lint shows would be meaningless (Megatron would fail on it anyway).
#: MAX_SIZE and MAX_COUNT live in bounds.py, moe-lint's one table of bounds.

_SIZE = Field(default=1, ge=1, le=MAX_SIZE)


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow", validate_default=False, frozen=False)


class ModelSection(_Section):
    # parallelism
    tensor_model_parallel_size: int = _SIZE
    pipeline_model_parallel_size: int = _SIZE
    context_parallel_size: int = _SIZE
    expert_model_parallel_size: int = _SIZE
    expert_tensor_parallel_size: int | None = Field(default=None, ge=1, le=MAX_SIZE)
    virtual_pipeline_model_parallel_size: int | None = Field(default=None, ge=1, le=MAX_SIZE)
    sequence_parallel: bool | None = Field(default=None, json_schema_extra=RECIPE_MARK)
    cp_comm_type: str | list[str] | None = None
    hierarchical_context_parallel_sizes: list[int] | None = None
    pipeline_model_parallel_layout: str | list[Any] | None = None
    num_layers_in_first_pipeline_stage: int | None = Field(default=None, ge=0, le=MAX_COUNT)
    num_layers_in_last_pipeline_stage: int | None = Field(default=None, ge=0, le=MAX_COUNT)
    account_for_embedding_in_pipeline_split: bool = False
    account_for_loss_in_pipeline_split: bool = False
    # architecture (recipe-provided)
    seq_length: int | None = Field(default=None, ge=1, le=MAX_COUNT, json_schema_extra=RECIPE_MARK)
    num_layers: int | None = Field(default=None, ge=1, le=MAX_COUNT, json_schema_extra=RECIPE_MARK)
    hidden_size: int | None = Field(default=None, ge=1, le=MAX_COUNT, json_schema_extra=RECIPE_MARK)
    ffn_hidden_size: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, json_schema_extra=RECIPE_MARK
    )
    num_attention_heads: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, json_schema_extra=RECIPE_MARK
    )
    num_query_groups: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, json_schema_extra=RECIPE_MARK
    )
    kv_channels: int | None = Field(default=None, ge=1, le=MAX_COUNT, json_schema_extra=RECIPE_MARK)
    vocab_size: int | None = Field(default=None, ge=1, le=MAX_COUNT, json_schema_extra=RECIPE_MARK)
    multi_latent_attention: bool | None = Field(default=None, json_schema_extra=RECIPE_MARK)
    mtp_num_layers: int | None = Field(
        default=None, ge=0, le=MAX_COUNT, json_schema_extra=RECIPE_MARK
    )
    # MoE
    num_moe_experts: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, json_schema_extra=RECIPE_MARK
    )
    moe_router_topk: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, json_schema_extra=RECIPE_MARK
    )
    moe_ffn_hidden_size: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, json_schema_extra=RECIPE_MARK
    )
    moe_layer_freq: int | list[int] | str | None = Field(
        default=None, json_schema_extra=RECIPE_MARK
    )
    moe_grouped_gemm: bool | None = Field(default=None, json_schema_extra=RECIPE_MARK)
    moe_token_dispatcher_type: Literal["allgather", "alltoall", "flex", "alltoall_seq"] | None = (
        Field(default=None, json_schema_extra=RECIPE_MARK)
    )
    moe_flex_dispatcher_backend: str | None = "deepep"
    moe_enable_deepep: bool = False
    moe_expert_capacity_factor: float | None = None
    moe_pad_expert_input_to_capacity: bool = False
    moe_router_dtype: str | None = None
    moe_shared_expert_overlap: bool = False
    # recompute
    recompute_granularity: Literal["full", "selective"] | None = None
    recompute_method: Literal["uniform", "block"] | None = None
    recompute_num_layers: int | None = Field(default=None, ge=0, le=MAX_COUNT)
    recompute_modules: list[str] | None = None
    moe_layer_recompute: bool = False
    distribute_saved_activations: bool = False
    # CUDA graphs
    cuda_graph_impl: Literal["none", "local", "transformer_engine", "full_iteration"] = "none"
    cuda_graph_modules: list[str] | str | None = None
    cuda_graph_scope: list[str] | str | None = None
    enable_cuda_graph: bool = False
    external_cuda_graph: bool = False
    use_te_rng_tracker: bool = False
    variable_seq_lengths: bool = False
    # overlap
    overlap_moe_expert_parallel_comm: bool = False
    delay_wgrad_compute: bool = False
    # precision (overwritten by a mixed_precision recipe)
    bf16: bool = False
    fp16: bool = False
    fp8: str | None = None
    fp8_recipe: str | None = None
    fp4: str | None = None
    # loss
    calculate_per_token_loss: bool = False


class TrainSection(_Section):
    global_batch_size: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, json_schema_extra=RECIPE_MARK
    )
    micro_batch_size: int | None = Field(
        default=None, ge=1, le=MAX_COUNT, json_schema_extra=RECIPE_MARK
    )
    decrease_batch_size_if_needed: bool = False
    train_iters: int | None = Field(default=None, ge=0, le=MAX_COUNT)


class DatasetSection(_Section):
    seq_length: int | None = Field(default=None, ge=1, le=MAX_COUNT, json_schema_extra=RECIPE_MARK)
    sequence_length: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    dataset_kwargs: dict[str, Any] | None = None
    dataloader_type: str | None = None
    enable_offline_packing: bool | None = None
    offline_packing_specs: dict[str, Any] | None = None
    create_attention_mask: bool | None = None


class OptimizerSection(_Section):
    optimizer_cpu_offload: bool = False
    optimizer_offload_fraction: float = Field(default=0.0, ge=0.0, le=1.0)
    use_distributed_optimizer: bool = False
    use_precision_aware_optimizer: bool = False


class DdpSection(_Section):
    use_distributed_optimizer: bool = False
    average_in_collective: bool = False


class RerunSection(_Section):
    check_for_nan_in_loss: bool = True


class RngSection(_Section):
    te_rng_tracker: bool = False


class CommOverlapSection(_Section):
    tp_comm_overlap: bool | None = None
    overlap_moe_expert_parallel_comm: bool | None = None
    delay_wgrad_compute: bool | None = None


class MixedPrecisionSection(_Section):
    bf16: bool | None = None
    fp16: bool | None = None
    fp8: str | None = None
    fp8_recipe: str | None = None
    fp4: str | None = None


#: Section name -> typed model. Sections not listed are only checked for unknown keys.
SECTIONS: dict[str, type[_Section]] = {
    "model": ModelSection,
    "train": TrainSection,
    "dataset": DatasetSection,
    "optimizer": OptimizerSection,
    "ddp": DdpSection,
    "rerun_state_machine": RerunSection,
    "rng": RngSection,
    "comm_overlap": CommOverlapSection,
    "mixed_precision": MixedPrecisionSection,
}


def is_recipe_field(section: str, name: str) -> bool:
    """True when ``section.name`` is provided by the recipe unless the file sets it."""
    model = SECTIONS.get(section)
    if model is None or name not in model.model_fields:
        return False
    extra = model.model_fields[name].json_schema_extra
    return isinstance(extra, dict) and bool(extra.get("recipe"))


def typed_fields(section: str) -> dict[str, Any]:
    """Field name -> default for one typed section (empty for untyped sections)."""
    model = SECTIONS.get(section)
    if model is None:
        return {}
    return {name: info.default for name, info in model.model_fields.items()}
