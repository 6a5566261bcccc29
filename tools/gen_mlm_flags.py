#!/usr/bin/env python3
"""Generate src/moe_lint/data/mlm_flags.json: Megatron-LM's command-line flags and where each
lands in the Bridge-shaped config moe-lint's rules read.

Megatron-LM builds most of its parser from dataclasses (``megatron/training/argument_utils.py::
ArgumentGroupFactory`` over TransformerConfig, TrainingConfig, CheckpointConfig, ...), so the
flag list is not in the text of ``arguments.py``: this tool builds the real parser,
``megatron/training/arguments.py::add_megatron_arguments``, from a released source tree with
torch, Transformer Engine and the other heavy imports replaced by inert stubs (nothing of
Megatron-LM runs but its module bodies and the parser construction). Each action gives the
flag(s), ``dest``, kind (store / store_true / store_false / store_const / append), type, nargs,
choices and default.

The mapping ``dest`` -> config path is by name, the way Megatron-LM itself turns ``args`` into
its config objects (``core_transformer_config_from_args``, ``OptimizerConfig`` and
``DistributedDataParallelConfig`` are filled from the args attributes of the same name): a dest
lands on every validated section of moe-lint's field table (data/fields.json) with a field of
that name, plus the few renames below (``--num-experts`` is TransformerConfig's
``num_moe_experts``; ``--seq-length`` is the model's and the dataset's ``seq_length``). Bridge's
``scripts/translate_mlm_to_bridge.py`` records the same correspondence.

Usage: ``python tools/gen_mlm_flags.py [--source DIR] [--label megatron-core==0.19.2] [--out F]``
with DIR a released tree holding ``megatron/training/arguments.py`` (an unpacked
megatron-core wheel, or ``git archive core_vX.Y.Z`` of Megatron-LM).
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = Path("/work/fw/x/megatron_core-0.19.2")
OUT = ROOT / "src" / "moe_lint" / "data" / "mlm_flags.json"

#: Modules replaced by stubs: everything Megatron-LM imports that is not pure Python here.
_STUBBED = (
    "torch", "transformer_engine", "apex", "einops", "flash_attn", "flash_attn_3", "triton",
    "nvidia", "tensorstore", "zarr", "wandb", "sentencepiece", "tiktoken", "transformers",
    "nvtx", "onelogger", "one_logger", "nvidia_resiliency_ext", "modelopt", "mamba_ssm",
    "causal_conv1d", "emerging_optimizers", "deep_ep", "flashinfer", "multistorageclient",
    "numpy", "megatron.core.extensions",
)  # fmt: skip

#: dest -> config paths where the name differs from the field's (TransformerConfig,
#: GPTDatasetConfig: megatron/training/arguments.py::core_transformer_config_from_args and
#: pretrain_gpt.py::core_gpt_dataset_config_from_args).
RENAMES: dict[str, list[str]] = {
    "num_experts": ["model.num_moe_experts"],
    "seq_length": ["model.seq_length", "dataset.seq_length"],
    "num_virtual_stages_per_pipeline_rank": ["model.virtual_pipeline_model_parallel_size"],
    "fp8": ["model.fp8"],
    # store_true flags whose field is the negation (a leading "!" says so).
    "untie_embeddings_and_output_weights": ["!model.share_embeddings_and_output_weights"],
    "swiglu": ["model.gated_linear_unit"],
    # megatron/training/argument_utils.py::core_transformer_config_from_args renames these.
    "decoder_first_pipeline_num_layers": ["model.num_layers_in_first_pipeline_stage"],
    "decoder_last_pipeline_num_layers": ["model.num_layers_in_last_pipeline_stage"],
    "fp8_param_gather": ["model.fp8_param", "ddp.fp8_param_gather"],
    "fp4_param_gather": ["model.fp4_param"],
    "overlap_p2p_comm": ["model.overlap_p2p_comm", "!model.batch_p2p_comm"],
    "no_persist_layer_norm": ["!model.persist_layer_norm"],
    # megatron/training/training.py::get_megatron_ddp_config fills DistributedDataParallelConfig
    # from these args under other names (core_v0.19.0 and main).
    "accumulate_allreduce_grads_in_fp32": ["ddp.grad_reduce_in_fp32"],
    "ddp_num_buckets": ["ddp.num_buckets"],
    "ddp_bucket_size": ["ddp.bucket_size"],
    "ddp_pad_buckets_for_high_nccl_busbw": ["ddp.pad_buckets_for_high_nccl_busbw"],
    "ddp_reduce_scatter_with_fp32_accumulation": ["ddp.reduce_scatter_with_fp32_accumulation"],
    "ddp_average_in_collective": ["ddp.average_in_collective"],
    # ... and check_for_nan_in_grad, as megatron/training/argument_utils.py (the rerun state
    # machine's kwargs) fills RerunStateMachineConfig.check_for_nan_in_loss.
    "check_for_nan_in_loss_and_grad": [
        "ddp.check_for_nan_in_grad",
        "rerun_state_machine.check_for_nan_in_loss",
    ],
    # pretrain_gpt.py::core_gpt_dataset_config_from_args: GPTDatasetConfig.create_attention_mask.
    "create_attention_mask_in_dataloader": [
        "model.create_attention_mask_in_dataloader",
        "dataset.create_attention_mask",
    ],
}
#: Sections a dest is looked up in (a field of the same name), in order.
SECTIONS = ("model", "train", "optimizer", "ddp", "dataset", "checkpoint", "scheduler", "dist",
            "rng", "logger", "tokenizer", "validation", "comm_overlap", "rerun_state_machine",
            "profiling")  # fmt: skip


class _Meta(type(typing.Protocol)):  # type: ignore[misc]
    """A stub class: any attribute is another stub, calling one returns a stub (a decorator
    returns what it decorates), and it can be a base next to Protocols and ABCs."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _stub(name)

    def __or__(cls, other: Any) -> Any:
        return cls

    def __ror__(cls, other: Any) -> Any:
        return cls

    def __getitem__(cls, item: Any) -> Any:
        return cls

    def __iter__(cls) -> Any:
        return iter(())

    def __bool__(cls) -> bool:
        return False

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return _stub("value")


def _stub(name: str) -> Any:
    return _Meta(name, (), {})


class _StubModule(types.ModuleType):
    __version__ = "99.0"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _stub(name)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if (
            name in _STUBBED
            or name.split(".")[0] in _STUBBED
            or any(name.startswith(s + ".") for s in _STUBBED)
        ):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> Any:
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: Any) -> None:
        return None


def _plain(value: Any) -> Any:
    """A JSON value for a default (a stub or an enum member becomes its name)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else repr(value)


def _kind(action: argparse.Action) -> str:
    return {
        "_StoreAction": "store",
        "_StoreTrueAction": "store_true",
        "_StoreFalseAction": "store_false",
        "_StoreConstAction": "store_const",
        "_AppendAction": "append",
        "BooleanOptionalAction": "boolean_optional",
    }.get(type(action).__name__, type(action).__name__)


def _type_name(action: argparse.Action) -> str | None:
    kind = action.type
    if kind is None:
        return None
    name = getattr(kind, "__name__", None)
    return name if name in ("int", "float", "str") else "callable"


def build(source: Path) -> list[argparse.Action]:
    if not hasattr(typing, "override"):
        typing.override = lambda f: f  # type: ignore[attr-defined]  # Python < 3.12
    sys.meta_path.insert(0, _Finder())
    sys.path.insert(0, str(source))
    import warnings

    warnings.simplefilter("ignore")
    from megatron.training.arguments import add_megatron_arguments  # type: ignore[import-not-found]

    parser = add_megatron_arguments(argparse.ArgumentParser(allow_abbrev=False))
    return [a for a in parser._actions if a.option_strings and a.dest != "help"]


def paths_for(dest: str, fields: dict[str, Any]) -> list[str]:
    if dest in RENAMES:
        return RENAMES[dest]
    return [f"{s}.{dest}" for s in SECTIONS if dest in fields["sections"].get(s, {})]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    ap.add_argument("--label", default="megatron-core 0.19.2 (PyPI wheel)")
    ap.add_argument("--out", type=Path, default=OUT)
    ns = ap.parse_args()
    fields = json.loads((ROOT / "src" / "moe_lint" / "data" / "fields.json").read_text())
    flags: dict[str, Any] = {}
    for action in build(ns.source):
        entry: dict[str, Any] = {"dest": action.dest, "kind": _kind(action)}
        if _type_name(action):
            entry["type"] = _type_name(action)
        if action.nargs is not None and entry["kind"] in ("store", "append"):
            entry["nargs"] = action.nargs
        if action.choices is not None:
            entry["choices"] = [_plain(c) for c in action.choices]
        if entry["kind"] == "store_const":
            entry["const"] = _plain(action.const)
        entry["default"] = _plain(action.default)
        paths = paths_for(action.dest, fields)
        if paths:
            entry["paths"] = paths
        for option in action.option_strings:
            if option.startswith("--"):
                flags[option] = entry
    out = {
        "format": 1,
        "source": f"{ns.label}: megatron/training/arguments.py::add_megatron_arguments",
        "generator": "tools/gen_mlm_flags.py",
        "flags": dict(sorted(flags.items())),
    }
    ns.out.write_text(json.dumps(out, indent=0, sort_keys=False) + "\n", encoding="utf-8")
    mapped = sum(1 for e in flags.values() if "paths" in e)
    print(f"{len(flags)} flags, {mapped} mapped to config paths -> {ns.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
