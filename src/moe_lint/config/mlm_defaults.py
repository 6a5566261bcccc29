"""What Megatron-LM makes of its parsed arguments before its config objects see them.

An argparse default is often not the value a Megatron-LM run gets: ``validate_args`` derives
arguments from other arguments, ``core_transformer_config_from_args`` renames, drops and adds
some, and the config classes' ``__post_init__`` fill the ones left None. docs/mlm-defaults.md
lists every such flag moe-lint audited (the flag, its argparse default, the value the run
gets, and where, read at Megatron-LM core_v0.19.0 and main = 0.20 dev); this module applies
them to Megatron-LM input, each with a note naming its source:

- the virtual pipeline size, ``MlmArgs.virtual_pipeline_size`` (config/mlm_releases.py), which
  config/mlm_args.py::build maps onto ``model.virtual_pipeline_model_parallel_size`` and MLM003
  reads;
- :func:`apply`, everything else, on the normalized config
  (normalize._megatron_lm_defaults, after the argparse defaults and any override) in the order
  Megatron-LM runs it. A derivation whose input the file does not tell (an unexpanded
  ``$VAR``, a value a checkpoint supplies) makes its output unknown, never a guess.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from moe_lint.config.fields import UNKNOWN
from moe_lint.config.mlm_args import flag_table
from moe_lint.config.mlm_releases import UNSET, MlmArgs, release_for, releases
from moe_lint.config.versions import effective_version, stated_below

if TYPE_CHECKING:
    from moe_lint.config.load import Document
    from moe_lint.config.normalize import Config

VALIDATE = "megatron/training/arguments.py::validate_args"
FROM_ARGS = "megatron/training/argument_utils.py::core_transformer_config_from_args"
POST_INIT = "megatron/core/transformer/transformer_config.py::TransformerConfig.__post_init__"
#: The activation functions core_transformer_config_from_args passes, written as Bridge's
#: ``to_yaml`` names them (normalize.untarget reads a dump's ``{_target_: ...}`` the same way).
SILU = "torch.nn.functional.silu"
SQUARED_RELU = "megatron.core.activations.squared_relu"
QUICK_GELU = "megatron.core.fusions.fused_bias_geglu.quick_gelu"


# --------------------------------------------------------------------------- the rest


def left_unset(cfg: Config, dotted: str) -> bool:
    """A Megatron-LM argument no flag sets whose argparse default is None: None for
    Megatron-LM (which then derives it), where Config.value reads a size the table leaves to a
    recipe as unknown (normalize._megatron_lm_defaults). A value derived here (origin
    "normalized", an unknown one too: what the checkpoint sets) is not left unset."""
    doc = cfg.doc
    return (
        cfg.form == "megatron-lm"
        and doc.mlm_defaults.get(dotted, UNKNOWN) is None
        and dotted not in doc.mlm_unknown
        and not cfg.explicit(dotted)
        and cfg.origin.get(dotted) != "normalized"
    )


class _Run:
    """One Megatron-LM config being derived: its values, its arguments, and the release."""

    def __init__(self, cfg: Config, doc: Document) -> None:
        self.cfg = cfg
        self.doc = doc
        version = effective_version(cfg.versions, "megatron-core")
        self.release = release_for(version) or releases()[0]
        self.args = MlmArgs(self.release, doc.mlm_flags or [])

    def since(self, release: str) -> bool:
        return Version(self.release) >= Version(release)

    def val(self, dotted: str) -> Any:
        """The config value: None for an argument left at a None default (see
        :func:`left_unset`), UNKNOWN when the file does not tell it."""
        return None if left_unset(self.cfg, dotted) else self.cfg.value(dotted)

    def arg(self, dest: str) -> Any:
        """A Megatron-LM argument no config path carries (UNKNOWN when not told)."""
        value = self.args[dest]
        return UNKNOWN if value is UNSET else value

    def put(self, dotted: str, value: Any, note: str) -> None:
        """What the run gets for ``dotted``, with where it comes from."""
        cfg = self.cfg
        if value is UNKNOWN:
            if dotted not in cfg.unknown:
                cfg.values.pop(dotted, None)
                cfg.unknown.add(dotted)
                cfg.origin[dotted] = "normalized"
                cfg.notes[dotted] = note
            return
        if cfg.value(dotted) is value or (
            type(cfg.value(dotted)) is type(value) and cfg.value(dotted) == value
        ):
            return
        cfg.values[dotted] = value
        cfg.origin[dotted] = "normalized"
        cfg.notes[dotted] = note
        cfg.unknown.discard(dotted)


def _on(value: Any) -> Any:
    """True / False for a switch, UNKNOWN when not told."""
    return value if value is UNKNOWN else bool(value)


def _from_checkpoint(run: _Run) -> None:
    """``--use-checkpoint-args``: what load_args_from_checkpoint takes from the checkpoint
    (parse_and_validate_args runs it before validate_args) is not the command line's to tell
    (mlm_releases.FROM_CHECKPOINT, for the stated release)."""
    dests = run.args.from_checkpoint
    if not dests:
        return
    note = (
        "--use-checkpoint-args: the checkpoint's value "
        "(megatron/training/checkpointing.py::load_args_from_checkpoint)"
    )
    paths = (
        ["model.virtual_pipeline_model_parallel_size"]
        if ("virtual_pipeline_model_parallel_size" in dests)
        else []
    )
    for entry in flag_table()["flags"].values():
        if entry["dest"] in dests:
            paths.extend(p.lstrip("!") for p in entry.get("paths", ()))
    for dotted in paths:
        run.put(dotted, UNKNOWN, note)


def _pipeline_p2p(run: _Run) -> None:
    """Without interleaving validate_args turns the p2p overlap and the aligned param gather
    off; core_transformer_config_from_args passes batch_p2p_comm = not overlap_p2p_comm."""
    vpp = run.val("model.virtual_pipeline_model_parallel_size")
    for dotted in (
        "model.overlap_p2p_comm",
        "ddp.align_param_gather",
        "comm_overlap.align_param_gather",
    ):
        if vpp is UNKNOWN and run.val(dotted) is True:
            run.put(dotted, UNKNOWN, "it depends on the virtual pipeline size, which is not known")
        elif vpp is None:
            run.put(dotted, False, f"off without an interleaved pipeline ({VALIDATE})")
    overlap = run.val("model.overlap_p2p_comm")
    batch = UNKNOWN if overlap is UNKNOWN else not overlap
    run.put("model.batch_p2p_comm", batch, f"batch_p2p_comm = not overlap_p2p_comm ({FROM_ARGS})")


def _recompute(run: _Run) -> None:
    if run.arg("recompute_activations") is True:
        run.put(
            "model.recompute_granularity",
            "selective",
            f"--recompute-activations -> recompute_granularity selective ({VALIDATE})",
        )


def _cuda_graph_scope(run: _Run) -> None:
    """``--cuda-graph-scope`` (deprecated, dest cuda_graph_scope_deprecated, core_v0.18.0 on)
    becomes cuda_graph_modules when no --cuda-graph-modules is given (both: validate_args
    asserts)."""
    scope = run.arg("cuda_graph_scope_deprecated")
    if scope in (None, UNKNOWN) or not run.since("0.18.0"):
        return
    if run.val("model.cuda_graph_modules") in ([], None):
        run.put(
            "model.cuda_graph_modules",
            str(scope).split(),
            f"--cuda-graph-scope (deprecated) -> cuda_graph_modules ({VALIDATE})",
        )


_PATTERN_FLAGS = frozenset({"--hybrid-layer-pattern", "--hybrid-override-pattern"})


def _hybrid_pattern(run: _Run) -> None:
    """--hybrid-override-pattern is --hybrid-layer-pattern; the pattern decides num_layers and
    the MTP depth, and its MLA / DSA symbols turn those on (validate_args, core_v0.17.0 on;
    is_hybrid_model and the dsa variant: core_transformer_config_from_args)."""
    if not run.since("0.17.0"):
        return
    pattern = run.val("model.hybrid_layer_pattern")
    if pattern is None:
        pattern = run.val("model.hybrid_override_pattern")
        if pattern is None:
            return
        run.put(
            "model.hybrid_layer_pattern",
            pattern,
            f"--hybrid-override-pattern (deprecated) -> hybrid_layer_pattern ({VALIDATE})",
        )
    derived = (
        "model.num_layers",
        "model.mtp_num_layers",
        "model.multi_latent_attention",
        "model.experimental_attention_variant",
        "model.is_hybrid_model",
    )
    if not isinstance(pattern, str):
        if pattern is UNKNOWN and not any(
            f.name in _PATTERN_FLAGS for f in run.doc.mlm_flags or []
        ):
            # Unknown only because the file (a conf file another command sources) does not
            # say: what it states of its own model (--num-layers 48) is what it says.
            return
        for dotted in derived:
            run.put(dotted, UNKNOWN, "the hybrid layer pattern decides it and is not known")
        return
    parts = pattern.split("/")
    main = parts[0]
    run.put(
        "model.is_hybrid_model", True, f"a hybrid layer pattern -> is_hybrid_model ({FROM_ARGS})"
    )
    run.put(
        "model.num_layers",
        len(main.replace("|", "")),
        f"hybrid_layer_pattern {main!r} has {len(main.replace('|', ''))} layers; validate_args "
        "ignores --num-layers",
    )
    depths = len(parts) - 1
    if depths > 0 and parts[1]:
        run.put(
            "model.mtp_num_layers",
            depths,
            f"hybrid_layer_pattern has {depths} MTP depth(s) after '/' ({VALIDATE})",
        )
    if "+" in pattern or "D" in pattern:
        run.put(
            "model.multi_latent_attention",
            True,
            f"an MLA (+) or DSA (D) layer in hybrid_layer_pattern -> MLA ({VALIDATE})",
        )
    if "D" in pattern:
        run.put(
            "model.experimental_attention_variant",
            "dsa",
            f"a DSA (D) layer in hybrid_layer_pattern -> dsa ({FROM_ARGS})",
        )


def _torch_fsdp2(run: _Run) -> None:
    """With --use-torch-fsdp2, validate_args turns --fp8-param-gather off on TE >= 2.0."""
    if run.val("dist.use_torch_fsdp2") is not True or run.val("model.fp8_param") is not True:
        return
    if stated_below(run.cfg.versions, "transformer-engine", "2.0.0"):
        return
    for dotted in ("model.fp8_param", "ddp.fp8_param_gather"):
        run.put(
            dotted,
            False,
            f"--use-torch-fsdp2 with TE >= 2.0 turns fp8_param_gather off ({VALIDATE})",
        )


def _megatron_fsdp(run: _Run) -> None:
    """Megatron-FSDP (v1; main's --megatron-fsdp-version 2 is no release's flag) needs the
    distributed optimizer, and validate_args switches it on (core_v0.18.0 on)."""
    if run.val("ddp.use_megatron_fsdp") is True and run.since("0.18.0"):
        for dotted in ("optimizer.use_distributed_optimizer", "ddp.use_distributed_optimizer"):
            run.put(dotted, True, f"--use-megatron-fsdp -> the distributed optimizer ({VALIDATE})")


def _precision(run: _Run) -> None:
    """bf16 reduces gradients in fp32 unless --grad-reduce-in-bf16 (or non-fp32 main grads);
    fp16 with dynamic loss scaling turns the NaN checks off (validate_args)."""
    bf16, fp16 = run.val("model.bf16"), run.val("model.fp16")
    if bf16 is True:
        low = run.arg("grad_reduce_in_bf16")
        acc = run.val("ddp.grad_reduce_in_fp32")
        main = run.val("optimizer.main_grads_dtype")
        if low is UNKNOWN or acc is UNKNOWN:
            run.put("ddp.grad_reduce_in_fp32", UNKNOWN, "bf16 gradient reduction is not known")
        elif low is True:
            run.put(
                "ddp.grad_reduce_in_fp32",
                False,
                f"--bf16 with --grad-reduce-in-bf16 -> bf16 gradient reduction ({VALIDATE})",
            )
        elif acc is not True and main in ("fp32", "float32", "torch.float32"):
            run.put(
                "ddp.grad_reduce_in_fp32",
                True,
                f"--bf16 -> gradients accumulated and reduced in fp32 ({VALIDATE})",
            )
    fake = run.since("0.16.0") and run.arg("fake_process_group") is True
    if fake or (fp16 is True and run.val("optimizer.loss_scale") is None):
        for dotted in ("ddp.check_for_nan_in_grad", "rerun_state_machine.check_for_nan_in_loss"):
            run.put(
                dotted,
                False,
                f"{'--fake-process-group' if fake else '--fp16 with dynamic loss scaling'} turns "
                f"the NaN check off ({VALIDATE})",
            )


def _sizes(run: _Run) -> None:
    """--encoder-num-layers / --encoder-seq-length stand for --num-layers / --seq-length;
    ffn_hidden_size defaults to 4·h (int(4·h·2/3 / 64)·64 with --swiglu) and kv_channels to
    h / heads (validate_args)."""
    for dest, paths in (
        ("encoder_num_layers", ("model.num_layers",)),
        ("encoder_seq_length", ("model.seq_length", "dataset.seq_length")),
    ):
        given = run.arg(dest)
        if given is None:
            continue
        for dotted in paths:
            if run.val(dotted) is None:
                run.put(dotted, given, f"--{dest.replace('_', '-')} stands for it ({VALIDATE})")
    hidden, heads = run.val("model.hidden_size"), run.val("model.num_attention_heads")
    sized = isinstance(hidden, int) and not isinstance(hidden, bool) and hidden > 0
    if run.val("model.ffn_hidden_size") is None:
        swiglu = run.arg("swiglu")
        if not sized or swiglu is UNKNOWN:
            run.put("model.ffn_hidden_size", UNKNOWN, "ffn_hidden_size derives from hidden_size")
        elif swiglu:
            ffn = int((4 * hidden * 2 / 3) / 64) * 64
            run.put(
                "model.ffn_hidden_size",
                ffn,
                f"ffn_hidden_size unset with --swiglu -> int(4·{hidden}·2/3 / 64)·64 = {ffn} "
                f"({VALIDATE})",
            )
        else:
            run.put(
                "model.ffn_hidden_size",
                4 * hidden,
                f"ffn_hidden_size unset -> 4·hidden_size = {4 * hidden} ({VALIDATE})",
            )
    if run.val("model.kv_channels") is None:
        if sized and isinstance(heads, int) and heads > 0 and hidden % heads == 0:
            run.put(
                "model.kv_channels",
                hidden // heads,
                f"kv_channels unset -> hidden_size / heads = {hidden} / {heads} = "
                f"{hidden // heads} ({VALIDATE})",
            )
        elif not (sized and isinstance(heads, int)):
            run.put("model.kv_channels", UNKNOWN, "kv_channels derives from hidden_size / heads")


def _linear_bias(run: _Run) -> None:
    """add_bias_linear keeps add_qkv_bias on, and no linear bias turns the bias-GeLU fusion
    off (validate_args); the activation's bias fusion is then --no-bias-swiglu-fusion's with
    --swiglu, else --no-bias-gelu-fusion's (core_transformer_config_from_args)."""
    bias = run.val("model.add_bias_linear")
    if bias is True:
        run.put("model.add_qkv_bias", True, f"add_bias_linear keeps add_qkv_bias on ({VALIDATE})")
    swiglu = run.arg("swiglu")
    if swiglu is True:
        fusion = _on(run.arg("bias_swiglu_fusion"))
        why = "--swiglu: bias_activation_fusion = bias_swiglu_fusion"
    else:
        gelu = _on(run.arg("bias_gelu_fusion"))
        fusion = UNKNOWN if UNKNOWN in (gelu, bias, swiglu) else (gelu and bias is True)
        why = "bias_activation_fusion = bias_gelu_fusion (off without add_bias_linear)"
    run.put("model.bias_activation_fusion", fusion, f"{why} ({FROM_ARGS})")


def _activation(run: _Run) -> None:
    """--swiglu (silu, gated), --squared-relu, --quick-geglu (quick_gelu, gated): the
    activation core_transformer_config_from_args passes (unknown while --swiglu or
    --squared-relu is: a checkpoint's with --use-checkpoint-args)."""
    if UNKNOWN in (run.arg("swiglu"), run.arg("squared_relu")):
        run.put("model.activation_func", UNKNOWN, "the activation flags are not known")
        if run.arg("quick_geglu") is True:
            run.put("model.gated_linear_unit", True, f"--quick-geglu -> gated ({FROM_ARGS})")
        return
    if run.arg("swiglu") is True:
        run.put("model.activation_func", SILU, f"--swiglu -> F.silu, gated ({FROM_ARGS})")
    if run.arg("squared_relu") is True:
        run.put(
            "model.activation_func", SQUARED_RELU, f"--squared-relu -> squared_relu ({FROM_ARGS})"
        )
    elif run.arg("quick_geglu") is True:
        note = f"--quick-geglu -> quick_gelu, gated ({FROM_ARGS})"
        run.put("model.activation_func", QUICK_GELU, note)
        run.put("model.gated_linear_unit", True, note)


def _position_embedding(run: _Run) -> None:
    """--use-rotary-position-embeddings (legacy) means rope; RoPE fusion is off for any other
    position embedding (validate_args)."""
    if run.arg("use_rotary_position_embeddings") is True:
        run.put(
            "model.position_embedding_type",
            "rope",
            f"--use-rotary-position-embeddings -> rope ({VALIDATE})",
        )
    kind = run.val("model.position_embedding_type")
    if kind is UNKNOWN and run.val("model.apply_rope_fusion") is True:
        run.put("model.apply_rope_fusion", UNKNOWN, "the position embedding type is not known")
    elif kind != "rope" and run.val("model.apply_rope_fusion") is True:
        run.put(
            "model.apply_rope_fusion",
            False,
            f"apply_rope_fusion is off for position_embedding_type {kind} ({VALIDATE})",
        )


def _experts(run: _Run) -> None:
    """--num-experts 0 is no MoE; an MoE without --moe-ffn-hidden-size uses ffn_hidden_size
    (validate_args; TransformerConfig.__post_init__ does the same)."""
    experts = run.val("model.num_moe_experts")
    if experts == 0 and not isinstance(experts, bool):
        run.put("model.num_moe_experts", None, f"--num-experts 0 -> no experts ({VALIDATE})")
        return
    if experts in (None, UNKNOWN) or run.val("model.moe_ffn_hidden_size") is not None:
        return
    ffn = run.val("model.ffn_hidden_size")
    run.put(
        "model.moe_ffn_hidden_size",
        ffn,
        f"moe_ffn_hidden_size unset -> ffn_hidden_size = {ffn} ({VALIDATE})"
        if ffn is not UNKNOWN
        else "moe_ffn_hidden_size is ffn_hidden_size, which is not known",
    )


def _qk_scaling(run: _Run) -> None:
    if run.val("model.apply_query_key_layer_scaling") is True:
        run.put(
            "model.attention_softmax_in_fp32",
            True,
            f"apply_query_key_layer_scaling -> attention_softmax_in_fp32 ({VALIDATE})",
        )


_DIST_OPT = ("optimizer.use_distributed_optimizer", "ddp.use_distributed_optimizer")


def _optimizers(run: _Run) -> None:
    """An optimizer other than sgd/adam takes the layer-wise distributed optimizer instead of
    the distributed one (dist_muon is muon with it; core_v0.18.0 on); --freeze-all-layers
    turns the distributed optimizer and the param-gather overlap off (core_v0.19.0 on)."""
    name = run.val("optimizer.optimizer")
    dist = run.val("optimizer.use_distributed_optimizer")
    layerwise = "optimizer.use_layer_wise_distributed_optimizer"
    if run.since("0.18.0") and name is UNKNOWN:
        for dotted in (*_DIST_OPT, layerwise):
            run.put(dotted, UNKNOWN, "the optimizer is not known")
    elif run.since("0.18.0") and name not in ("sgd", "adam"):
        if name == "dist_muon":
            run.put("optimizer.optimizer", "muon", f"dist_muon -> muon, layer-wise ({VALIDATE})")
            run.put(layerwise, True, f"dist_muon -> the layer-wise optimizer ({VALIDATE})")
        if dist is True:
            note = f"optimizer {name}: the layer-wise distributed optimizer instead ({VALIDATE})"
            run.put(layerwise, True, note)
            for dotted in _DIST_OPT:
                run.put(dotted, False, note)
    if run.since("0.19.0") and run.arg("freeze_all_layers") is True:
        note = f"--freeze-all-layers turns it off ({VALIDATE})"
        for dotted in (
            *_DIST_OPT,
            "optimizer.overlap_param_gather",
            "ddp.overlap_param_gather",
            "comm_overlap.overlap_param_gather",
        ):
            run.put(dotted, False, note)


def _offloading(run: _Run) -> None:
    layers = run.val("model.cpu_offloading_num_layers")
    if run.since("0.16.0") and isinstance(layers, int) and layers > 0:
        run.put(
            "model.cpu_offloading",
            True,
            f"--cpu-offloading-num-layers {layers} -> cpu_offloading ({VALIDATE})",
        )


def _cuda_graph_rng(run: _Run) -> None:
    """CUDA graphs with Transformer Engine (as the layers or the graph implementation) turn
    --te-rng-tracker on (validate_args)."""
    impl = run.val("model.cuda_graph_impl")
    if impl == "none" and run.val("model.enable_cuda_graph") is True:
        impl = "local"
    elif impl == "none" and run.val("model.external_cuda_graph") is True:
        impl = "transformer_engine"
    if impl in ("none", None, UNKNOWN) or run.val("rng.te_rng_tracker") is True:
        return
    layers = run.val("model.transformer_impl")
    if "transformer_engine" in (layers, impl):
        run.put(
            "rng.te_rng_tracker",
            True,
            f"CUDA graphs with Transformer Engine -> te_rng_tracker ({VALIDATE})",
        )


def _attention_mask(run: _Run) -> None:
    if run.since("0.19.0") and run.arg("dataloader_inter_document_masking") is True:
        run.put(
            "dataset.create_attention_mask",
            False,
            f"--dataloader-inter-document-masking -> no dataloader mask ({VALIDATE})",
        )


def _query_groups(run: _Run) -> None:
    """Without --group-query-attention core_transformer_config_from_args passes
    num_query_groups=None (config/mlm_args.py records it), and __post_init__ makes it the head
    count: every head has its own K/V."""
    groups, heads = run.val("model.num_query_groups"), run.val("model.num_attention_heads")
    if groups is not None or run.arg("group_query_attention") is not False:
        return  # given (or, with --group-query-attention, not known)
    if isinstance(heads, int) and not isinstance(heads, bool):
        run.put(
            "model.num_query_groups",
            heads,
            f"no --group-query-attention: num_query_groups = num_attention_heads = {heads} "
            f"({FROM_ARGS}; {POST_INIT})",
        )
    else:
        run.put("model.num_query_groups", UNKNOWN, "num_query_groups is the (unknown) head count")


#: In the order validate_args, core_transformer_config_from_args and __post_init__ run them.
_STEPS: tuple[Callable[[_Run], None], ...] = (
    _from_checkpoint,
    _recompute,
    _cuda_graph_scope,
    _hybrid_pattern,
    _pipeline_p2p,
    _torch_fsdp2,
    _megatron_fsdp,
    _precision,
    _sizes,
    _linear_bias,
    _position_embedding,
    _experts,
    _qk_scaling,
    _optimizers,
    _offloading,
    _cuda_graph_rng,
    _attention_mask,
    _activation,
    _query_groups,
)


def apply(cfg: Config, doc: Document) -> None:
    """Apply to ``cfg`` what Megatron-LM derives from its arguments (docs/mlm-defaults.md)."""
    run = _Run(cfg, doc)
    for step in _STEPS:
        step(run)
