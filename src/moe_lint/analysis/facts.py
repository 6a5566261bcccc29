"""The derived facts: each one declared once, with what it means and what computes it.

This table is the vocabulary of derived quantities. Rule expressions may name exactly these
(``engine.expr.FACT_NAMES``); a finding prints the derivation of the ``shown`` ones its rule
reads (``engine.evaluate``); ``derive`` and ``memory_facts`` compute them; the vocabulary section
of docs/adding-rules.md and the README's list are generated from it (``tools/fact_docs.py``),
and tests/test_facts.py fails when a fact is computed but not declared here, or declared but
never computed. Adding a fact is one entry here plus the code in the function it names.

Read at start-up by the rule catalogue, so it imports nothing and its entries are NamedTuples
(a frozen dataclass costs five times as much to define).
"""

from __future__ import annotations

from moe_lint.records import NamedTuple


class FactSpec(NamedTuple):
    """One derived fact."""

    name: str
    #: What it means, in one line, with its unit.
    doc: str
    #: The function that computes it: ``module.function`` inside ``moe_lint.analysis``.
    computed_by: str
    #: What it is computed from: config fields (``section.field``), command-line or pyproject
    #: settings (``--gpus``) and other facts.
    inputs: tuple[str, ...] = ()
    #: Print its derivation under a finding whose rule reads it (plain sizes are not worth it).
    shown: bool = False
    #: The heading it is listed under in the docs.
    group: str = ""


# Headings of the docs.
_P, _T, _G, _L, _V, _M = (
    "parallel sizes", "batch, sequence and tokens", "GPU and cluster", "pipeline",
    "framework versions", "memory (the memory model runs only when a rule reads one of these)",
)  # fmt: skip
# The functions that compute them.
_D, _C, _K, _PL = (
    "derive.derive", "derive._derive_cluster", "derive._derive_tokens", "derive._derive_pipeline",
)  # fmt: skip
_MEM, _LEV, _EDP, _SEL = (
    "memory_facts._load", "memory_facts._levers", "memory_facts._edp2",
    "memory_facts._Memory.selective",
)  # fmt: skip
_LAYOUT = ("model.pipeline_model_parallel_layout",)
_GPU = ("--gpu", "data/gpus.yaml")
# The memory model reads the config and the size facts (docs/memory-model.md); lint needs a GPU.
_ESTIMATE = "analysis/memory/estimate.py::estimate"
_MODEL = (_ESTIMATE, "gpu_hbm_gib", "--memory")

#: Every fact, in the order the docs list them and a finding prints the shown derivations.
FACTS: tuple[FactSpec, ...] = (
    FactSpec("tp", "tensor-parallel size", _D, ("model.tensor_model_parallel_size",), group=_P),
    FactSpec("pp", "pipeline-parallel size", _D, ("model.pipeline_model_parallel_size",), group=_P),
    FactSpec("cp", "context-parallel size", _D, ("model.context_parallel_size",), group=_P),
    FactSpec("ep", "expert-parallel size", _D, ("model.expert_model_parallel_size",), group=_P),
    FactSpec("etp", "expert tensor-parallel size (defaulted the way Bridge does)", _D,
             ("model.expert_tensor_parallel_size",), group=_P),
    FactSpec("vpp", "virtual pipeline stages per PP rank; None when not set", _D,
             ("model.virtual_pipeline_model_parallel_size",), group=_P),
    FactSpec("sp", "sequence parallelism on (bool)", _D, ("model.sequence_parallel",), group=_P),
    FactSpec("world", "GPUs in the job: --gpus, else min_world (then world_assumed)", _D,
             ("--gpus", "min_world"), shown=True, group=_P),
    FactSpec("world_assumed", "True when no --gpus was given and world is min_world", _D,
             ("--gpus",), group=_P),
    FactSpec("min_world", "smallest feasible GPU count: PP·lcm(TP·CP, ETP·EP)", _D,
             ("pp", "dense_mesh", "expert_mesh"), shown=True, group=_P),
    FactSpec("dense_mesh", "ranks of one dense layer's TP·CP group", _D, ("tp", "cp"), group=_P),
    FactSpec("expert_mesh", "ranks of one expert layer's ETP·EP group", _D, ("etp", "ep"),
             group=_P),
    FactSpec("dp", "data-parallel size: world / (TP·PP·CP)", _D, ("world", "tp", "pp", "cp"),
             shown=True, group=_P),
    FactSpec("edp", "expert data-parallel size: world / (ETP·EP·PP)", _D,
             ("world", "etp", "ep", "pp"), shown=True, group=_P),
    FactSpec("seq", "sequence length in tokens: model.seq_length, else dataset.seq_length", _D,
             ("model.seq_length", "dataset.seq_length"), group=_T),
    FactSpec("dataset_seq", "the dataset's sequence length in tokens", _D,
             ("dataset.seq_length",), group=_T),
    FactSpec("gbs", "global batch size in sequences", _D, ("train.global_batch_size",), group=_T),
    FactSpec("mbs", "micro-batch size in sequences", _D, ("train.micro_batch_size",), group=_T),
    FactSpec("microbatches", "micro-batches per step: GBS / (MBS·DP)", _D, ("gbs", "mbs", "dp"),
             shown=True, group=_T),
    FactSpec("tokens_per_tp_cp_rank",
             "tokens per rank in the TP/SP regions: seq·MBS / (TP·CP) with SP, / CP without", _D,
             ("seq", "mbs", "tp", "cp", "sp"), shown=True, group=_T),
    FactSpec("tokens_per_rank", "tokens each rank hands the MoE dispatcher: seq·MBS / (TP·CP)",
             _K, ("seq", "mbs", "tp", "cp"), shown=True, group=_T),
    FactSpec("dispatch_group", "ranks of one token-dispatch group: ETP·EP", _K, ("etp", "ep"),
             shown=True, group=_T),
    FactSpec("cp_target", "CP size the sequence length calls for: pow2(seq / 4096)", _D,
             ("seq", "cp"), shown=True, group=_T),
    FactSpec("is_moe", "an MoE model: num_moe_experts set, or EP > 1", _D,
             ("model.num_moe_experts", "ep"), group=_T),
    FactSpec("full_dump", "the file is a full config dump (every field written down)", _D,
             ("the file's form",), group=_T),
    FactSpec("megatron_lm", "the input is a Megatron-LM command line (launch script, MODEL_ARGS "
             "file, argument list): no recipe, Megatron-LM's validate_args runs", _D,
             ("the file's form",), group=_T),
    FactSpec("gpu_name", "the GPU type's name", _C, _GPU, group=_G),
    FactSpec("gpu_hbm_gib", "GPU memory in GiB (CUDA's total)", _C, _GPU, group=_G),
    FactSpec("nvlink_domain", "GPUs in one NVLink domain", _C, _GPU, group=_G),
    FactSpec("gpu_cc", "compute capability (float, e.g. 9.0)", _C, _GPU, group=_G),
    FactSpec("gpu_fp8", "FP8 (tensorwise, delayed or blockwise) supported", _C, _GPU, group=_G),
    FactSpec("gpu_fp8_blockwise", "blockwise FP8 supported", _C, _GPU, group=_G),
    FactSpec("gpu_mxfp8", "MXFP8 supported", _C, _GPU, group=_G),
    FactSpec("gpu_nvfp4", "NVFP4 supported", _C, _GPU, group=_G),
    FactSpec("gpus_per_node",
             "GPUs per node: --gpus-per-node, else the GPU type's (8 if it names none)", _C,
             ("--gpus-per-node", *_GPU), group=_G),
    FactSpec("placement",
             "layers, MTP, embedding and head on each PP rank and virtual stage, and the split's "
             "error (analysis/placement.Placement)", _PL,
             ("model.num_layers", "model.mtp_num_layers", "pp", "vpp",
              "model.num_layers_in_first_pipeline_stage",
              "model.num_layers_in_last_pipeline_stage",
              "model.account_for_embedding_in_pipeline_split",
              "model.account_for_loss_in_pipeline_split", *_LAYOUT), group=_L),
    FactSpec("layout_error", "None, or why the pipeline layout string does not parse", _PL,
             _LAYOUT, group=_L),
    FactSpec("layout_stages", "virtual stages in the pipeline layout string", _PL, _LAYOUT,
             group=_L),
    FactSpec("te_version",
             "the stated Transformer Engine version (str); None: the newest release is assumed",
             _D, ("--transformer-engine",), group=_V),
    FactSpec("mem_peak_gib", "central estimate of the worst PP stage's device total, GiB",
             _MEM, _MODEL, shown=True, group=_M),
    FactSpec("mem_lower_gib",
             "lower bound of the worst PP stage's device total (only certain terms: correct "
             "sharding, balanced routing, no allocator overhead or optional buffers), GiB", _MEM,
             _MODEL, shown=True,
             group=_M),
    FactSpec("mem_upper_gib",
             "upper band of the worst PP stage (uncertain terms at their worst plus the "
             "validation set's largest under-prediction), GiB", _MEM, _MODEL, group=_M),
    FactSpec("mem_usable_gib", "usable GPU memory: gpu_hbm_gib less the headroom setting, GiB",
             _MEM, _MODEL, shown=True, group=_M),
    FactSpec("mem_headroom_gib", "mem_usable_gib - mem_peak_gib, GiB", _MEM, _MODEL, group=_M),
    FactSpec("mem_verdict",
             "the one memory verdict (analysis/memory/verdict.py::judge): 'does NOT fit', 'may "
             "not fit' or 'fits', with the quantity it compared and the threshold", _MEM,
             (*_MODEL, "--memory warn-headroom", "--memory error-margin"), shown=True, group=_M),
    FactSpec("mem_stage", "index of the worst PP stage", _MEM, _MODEL, group=_M),
    FactSpec("mem_top_terms", "the worst stage's three largest terms (text)", _MEM, _MODEL,
             group=_M),
    FactSpec("mem_levers", "up to three single changes that lower the peak (text)", _LEV,
             ("analysis/memory/levers.py::levers", "mem_peak_gib"), group=_M),
    FactSpec("edp2_saving_gib", "GiB the worst stage saves at EDP 2 (only when EDP = 1, EP > 1)",
             _EDP, (_ESTIMATE, "mem_peak_gib", "edp", "ep"), shown=True,
             group=_M),
    FactSpec("selective_fits", "selective recompute of the guidance's modules fits (bool)", _SEL,
             (_ESTIMATE, "mem_peak_gib", "model.recompute_granularity"),
             group=_M),
    FactSpec("selective_needs_offload",
             "it fits only with the whole optimizer state offloaded to the host (bool)", _SEL,
             (_ESTIMATE, "mem_peak_gib", "model.recompute_granularity"),
             group=_M),
)  # fmt: skip

BY_NAME: dict[str, FactSpec] = {spec.name: spec for spec in FACTS}
#: The names a rule expression may use for a derived fact.
NAMES: frozenset[str] = frozenset(BY_NAME)
#: Facts whose derivation a finding prints, in registry order.
SHOWN: tuple[str, ...] = tuple(spec.name for spec in FACTS if spec.shown)


def computed_by(where: str) -> tuple[str, ...]:
    """The facts one function (``"memory_facts._load"``) or module (``"memory_facts"``)
    computes, in registry order."""
    return tuple(
        spec.name
        for spec in FACTS
        if spec.computed_by == where or spec.computed_by.startswith(where + ".")
    )
