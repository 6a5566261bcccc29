"""Reconstruct one config file per MoE row of NVIDIA's published performance tables.

Every MoE row of Megatron Bridge's performance summary (tests/data/published-performance.tsv)
ran on NVIDIA's clusters, so moe-lint must not call any of them out of memory
(tests/test_published_rows.py). This tool writes the config of each row to
tests/data/published-rows/<release>__<model>__<gpu>__<n>gpu__<precision>[__variant].yaml:

- When the row's recipe has a full Bridge dump in tests/data/corpus/bridge-full-dumps/ (the
  row's "HEAD:" recipe function + ``.yaml``), the file is that dump with the values the row
  prints (TP/PP/CP/VP/EP, GBS/MBS, sequence length) written over it and a
  ``# moe-lint: gpus=N gpu=<key>`` directive.
- Otherwise it is an override-style file: ``# moe-lint: gpus=N gpu=<key> model=<preset>`` and
  the settings the recipe source at the release tag states, read statically from the Bridge
  mirror by ``--extract`` (below) and kept in tests/data/published-recipes.yaml.
- Rows with neither are listed with the reason in tests/data/published-rows/SKIPPED.tsv.

Usage::

    python tools/published_rows.py            # rewrite tests/data/published-rows/*
    python tools/published_rows.py --check    # exit 1 when any file is stale
    python tools/published_rows.py --extract --mirror DIR   # re-read the recipe sources (needs
        # a bare git mirror of NVIDIA-NeMo/Megatron-Bridge; not run by tools/regenerate.py)

What ``--extract`` reads (static; nothing is imported or run): for releases 25.11 .. 26.06.01
the WorkloadBaseConfig preset named in the row (scripts/performance/configs/*/
*workload_base_configs.py at the release tag, ``WorkloadBaseConfig(...)`` / ``replace(...)`` /
aliases evaluated), mapped onto config fields as scripts/performance/utils/overrides.py::
set_workload_base_configs does, plus the assignments of the family's
``<model>_pretrain_config_<gpu>`` function (scripts/performance/configs/*/*_llm_pretrain.py) and
of the functions it calls with the config (library recipe, ``set_*_common_configs``); for 26.08
the flat recipe function in src/megatron/bridge/perf_recipes at v0.6.0 and what it calls; for
25.09 the perf_matrix entry of the r0.1.0 YAML. Only ``cfg.<section>.<field> = <literal>``
statements are taken; ``if`` statements are followed only when their test can be decided from
literals (the precision argument, values set earlier), and the skipped ones are counted in each
file's comment.
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _generated import write_or_check  # noqa: E402

from moe_lint.config.mixed_precision import MP_RECIPES  # noqa: E402

TSV = REPO / "tests" / "data" / "published-performance.tsv"
DUMPS = REPO / "tests" / "data" / "corpus" / "bridge-full-dumps"
OUT = REPO / "tests" / "data" / "published-rows"
RECIPES = REPO / "tests" / "data" / "published-recipes.yaml"
SKIPPED = OUT / "SKIPPED.tsv"
COMMAND = "python tools/published_rows.py"
DEFAULT_MIRROR = Path("/work/.mirror/NVIDIA-NeMo+Megatron-Bridge/repo")

#: TSV model name -> (moe-lint preset in src/moe_lint/data/models.yaml, Bridge recipe stem).
MODELS: dict[str, tuple[str, str]] = {
    "DeepSeek-V3": ("deepseek-v3", "deepseek_v3"),
    "DeepSeek-V4-Flash": ("deepseek-v4-flash", "deepseek_v4_flash"),
    "GPT-OSS-120B": ("gpt-oss-120b", "gpt_oss_120b"),
    "Qwen3-30B-A3B": ("qwen3-30b-a3b", "qwen3_30b_a3b"),
    "Qwen3-235B-A22B": ("qwen3-235b-a22b", "qwen3_235b_a22b"),
    "Kimi-K2": ("kimi-k2", "kimi_k2"),
    "Nemotron-3-Nano-30B-A3B": ("nemotron-3-nano-30b-a3b", "nemotron_3_nano"),
    "Nemotron-3-Super-120B-A12B": ("nemotron-3-super-120b-a12b", "nemotron_3_super"),
    "Nemotron-3.5-Lightning": ("nemotron-3.5-lightning", "nemotron_3_5_lightning"),
    "Nemotron-3-Ultra": ("nemotron-3-ultra", "nemotron_3_ultra"),
}

#: TSV gpu -> (short name used in Bridge recipe names, key of src/moe_lint/data/gpus.yaml).
GPUS: dict[str, tuple[str, str]] = {
    "DGX-H100": ("h100", "h100-sxm-80gb"),
    "DGX-B200": ("b200", "b200"),
    "DGX-B300": ("b300", "b300"),
    "DGX-GB200": ("gb200", "gb200-nvl72"),
    "DGX-GB300": ("gb300", "gb300-nvl72"),
}

#: Bridge compute_dtype names (utils/precision.py::get_precision_config, perf_recipes/
#: _common.py::_perf_precision) -> the mixed-precision recipe each returns.
COMPUTE_DTYPES: dict[str, str] = {
    "bf16": "bf16_mixed",
    "fp8_cs": "bf16_with_fp8_current_scaling_mixed",
    "fp8_mx": "bf16_with_mxfp8_mixed",
    "fp8_sc": "bf16_with_fp8_subchannel_scaling_mixed",
    "nvfp4": "bf16_with_nvfp4_mixed",
    "fp8_ss": "bf16_with_fp8_subchannel_scaling_mixed",  # r0.1.0 perf_matrix name
}

#: Sections an override file may carry; the rest of a recipe (logging, checkpointing, data
#: paths, profiling) does not change what a GPU holds.
SECTIONS = (
    "model",
    "train",
    "optimizer",
    "ddp",
    "dist",
    "comm_overlap",
    "mixed_precision",
    "env_vars",
    "dataset",
    "rerun_state_machine",
)
TRAIN_FIELDS = {"global_batch_size", "micro_batch_size"}
DATASET_FIELDS = {"seq_length", "sequence_length"}


# --------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------


@dataclass
class Row:
    line: int
    values: dict[str, str]

    def __getitem__(self, key: str) -> str:
        return self.values[key]

    @property
    def variant(self) -> str:
        match = re.search(r"row_variant=(\w+)", self["other_columns_verbatim"])
        return match.group(1) if match else ""

    @property
    def head_recipe(self) -> str | None:
        match = re.search(r"HEAD: (\w+)", self["recipe_guess"])
        return match.group(1) if match else None

    @property
    def tag_recipe(self) -> str:
        return self["recipe_guess"].split(" ; HEAD:")[0].strip()

    @property
    def compute_dtype(self) -> str:
        """Bridge compute_dtype of the release-tag recipe (the TSV's precision mapping)."""
        guess = self.tag_recipe
        for token, name in (
            ("NVFP4", "nvfp4"),
            ("FP8_MX", "fp8_mx"),
            ("FP8_CS", "fp8_cs"),
            ("FP8_SC", "fp8_sc"),
            ("BF16", "bf16"),
        ):
            if f"_{token}" in guess:
                return name
        match = re.search(r"_(bf16|fp8cs|fp8mx|fp8sc|nvfp4)_config", guess)
        if match:
            return {"fp8cs": "fp8_cs", "fp8mx": "fp8_mx", "fp8sc": "fp8_sc"}.get(
                match.group(1), match.group(1)
            )
        match = re.search(r"perf_matrix\.\w+\.num_gpus_\d+\.(\w+)", guess)
        if match:
            return match.group(1)
        return {
            "MXFP8": "fp8_mx",
            "FP8-MX": "fp8_mx",
            "FP8-CS": "fp8_cs",
            "FP8": "fp8_cs",
            "BF16": "bf16",
            "NVFP4": "nvfp4",
        }.get(self["precision"], "bf16")


def read_rows(path: Path = TSV) -> tuple[list[str], list[Row]]:
    """The TSV's header comment lines and its data rows (with their 1-based line numbers)."""
    header: list[str] = []
    body: list[tuple[int, str]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("#"):
            header.append(line)
        else:
            body.append((number, line))
    names = body[0][1].split("\t")
    rows = []
    for number, line in body[1:]:
        cells = line.split("\t")
        rows.append(
            Row(number, dict(zip(names, cells + [""] * (len(names) - len(cells)), strict=True)))
        )
    return header, rows


def _int_or_none(text: str) -> int | None:
    return int(text) if text.strip().isdigit() else None


def stated(row: Row) -> dict[str, Any]:
    """The config values the row prints (dotted path -> value)."""
    out: dict[str, Any] = {}
    for column, path in (
        ("tp", "model.tensor_model_parallel_size"),
        ("pp", "model.pipeline_model_parallel_size"),
        ("cp", "model.context_parallel_size"),
        ("ep", "model.expert_model_parallel_size"),
        ("gbs", "train.global_batch_size"),
        ("mbs", "train.micro_batch_size"),
    ):
        value = _int_or_none(row[column])
        if value is not None:
            out[path] = value
    vp = row["vp"].strip()
    if vp == "n/a" or (vp == "1" and row["release"] in ("25.09", "25.11")):
        # 25.09/25.11 print VP=1 where no interleaving is used (the TSV header says so).
        out["model.virtual_pipeline_model_parallel_size"] = None
    elif vp.isdigit():
        out["model.virtual_pipeline_model_parallel_size"] = int(vp)
    seq = _int_or_none(row["seq_len"])
    if seq is not None:
        out["model.seq_length"] = seq
        out["dataset.seq_length"] = seq
    return out


def file_stem(row: Row, variant: str) -> str:
    preset, _ = MODELS[row["model"]]
    gpu, _ = GPUS[row["gpu"]]
    precision = row["precision"].lower()
    parts = [row["release"], preset, gpu, f"{row['num_gpus']}gpu", precision]
    if variant:
        parts.append(variant)
    return "__".join(parts)


def stems(rows: list[Row]) -> dict[int, str]:
    """File stem of each row (by line); a variant suffix tells apart rows that share the rest."""
    base = {row.line: file_stem(row, "") for row in rows}
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(base[row.line], []).append(row)
    out: dict[int, str] = {}
    for stem, group in groups.items():
        if len(group) == 1:
            out[group[0].line] = stem
            continue
        for row in group:
            variant = row.variant
            if not variant or sum(r.variant == variant for r in group) > 1:
                others = [r for r in group if r is not row]
                diffs = [
                    f"{c}{row[c]}"
                    for c in ("gbs", "mbs", "seq_len", "tp", "pp", "cp", "vp", "ep")
                    if any(r[c] != row[c] for r in others)
                ]
                variant = "-".join(filter(None, [variant, *diffs])) or f"line{row.line}"
            out[row.line] = file_stem(row, variant)
    return out


# --------------------------------------------------------------------------------------------
# Static reading of the recipe sources (--extract)
# --------------------------------------------------------------------------------------------

_UNSET = object()


class Mirror:
    """Files of the bare Bridge mirror at a commit, parsed once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._text: dict[tuple[str, str], str | None] = {}
        self._tree: dict[tuple[str, str], ast.Module | None] = {}

    def text(self, ref: str, path: str) -> str | None:
        key = (ref, path)
        if key not in self._text:
            proc = subprocess.run(
                ["git", "-C", str(self.path), "show", f"{ref}:{path}"],
                capture_output=True,
                text=True,
                check=False,
            )
            self._text[key] = proc.stdout if proc.returncode == 0 else None
        return self._text[key]

    def tree(self, ref: str, path: str) -> ast.Module | None:
        key = (ref, path)
        if key not in self._tree:
            text = self.text(ref, path)
            self._tree[key] = ast.parse(text) if text is not None else None
        return self._tree[key]

    def ls(self, ref: str, folder: str) -> list[str]:
        proc = subprocess.run(
            ["git", "-C", str(self.path), "ls-tree", "-r", "--name-only", ref, folder],
            capture_output=True,
            text=True,
            check=False,
        )
        return proc.stdout.split()


def _literal(node: ast.AST, names: dict[str, Any]) -> Any:
    """A literal value, a known name, or _UNSET."""
    if isinstance(node, ast.Name):
        return names.get(node.id, _UNSET)
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            item = _literal(value, names)
            if item is _UNSET:
                return _UNSET
            if key is None:  # {**OTHER}
                if not isinstance(item, dict):
                    return _UNSET
                out.update(item)
                continue
            k = _literal(key, names)
            if k is _UNSET or isinstance(k, (list, dict)):
                return _UNSET
            out[k] = item
        return out
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_literal(e, names) for e in node.elts]
        return _UNSET if any(i is _UNSET for i in items) else list(items)
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNSET


def _module_constants(tree: ast.Module) -> dict[str, Any]:
    names: dict[str, Any] = {}
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            value = _literal(stmt.value, names)
            if value is not _UNSET:
                names[stmt.targets[0].id] = value
    return names


def _preset_defaults(mirror: Mirror, ref: str) -> dict[str, Any]:
    tree = mirror.tree(ref, "scripts/performance/utils/utils.py")
    out: dict[str, Any] = {}
    if tree is None:
        return out
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "WorkloadBaseConfig":
            for stmt in node.body:
                if (
                    isinstance(stmt, ast.AnnAssign)
                    and isinstance(stmt.target, ast.Name)
                    and stmt.value is not None
                ):
                    value = _literal(stmt.value, {})
                    if value is not _UNSET:
                        out[stmt.target.id] = value
    return out


def read_presets(mirror: Mirror, ref: str, path: str) -> dict[str, dict[str, Any]]:
    """Every WorkloadBaseConfig preset a workload_base_configs.py module defines."""
    tree = mirror.tree(ref, path)
    if tree is None:
        return {}
    defaults = _preset_defaults(mirror, ref)
    presets: dict[str, dict[str, Any]] = {}
    consts: dict[str, Any] = {}
    for stmt in tree.body:
        if not (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            continue
        name, value = stmt.targets[0].id, stmt.value
        if isinstance(value, ast.Name) and value.id in presets:
            presets[name] = presets[value.id]
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            if value.func.id == "WorkloadBaseConfig":
                base = dict(defaults)
            elif value.func.id == "replace" and value.args and isinstance(value.args[0], ast.Name):
                if value.args[0].id not in presets:
                    continue
                base = dict(presets[value.args[0].id])
            else:
                continue
            for kw in value.keywords:
                item = _literal(kw.value, consts)
                if kw.arg is not None and item is not _UNSET:
                    base[kw.arg] = item
            presets[name] = base
        else:
            item = _literal(value, consts)
            if item is not _UNSET:
                consts[name] = item
    return presets


def preset_fields(preset: dict[str, Any], tag: str) -> dict[str, Any]:
    """Config fields a preset sets: scripts/performance/utils/overrides.py::
    set_workload_base_configs with its _set_*_overrides helpers and _set_common_perf_overrides
    (v0.3.0 .. v0.5.1); at v0.2.0 scripts/performance/utils/helpers.py::set_workload_base_configs,
    which leaves the dispatcher to the model's function and does not set recompute_granularity
    (its set_common_perf_overrides is called by that function and is followed there)."""
    legacy = tag == "v0.2.0"
    out: dict[str, Any] = {}
    for key, path in (
        ("tensor_model_parallel_size", "model.tensor_model_parallel_size"),
        ("pipeline_model_parallel_size", "model.pipeline_model_parallel_size"),
        ("context_parallel_size", "model.context_parallel_size"),
        ("virtual_pipeline_model_parallel_size", "model.virtual_pipeline_model_parallel_size"),
        ("expert_model_parallel_size", "model.expert_model_parallel_size"),
        ("expert_tensor_parallel_size", "model.expert_tensor_parallel_size"),
        ("global_batch_size", "train.global_batch_size"),
        ("micro_batch_size", "train.micro_batch_size"),
    ):
        if key in preset:
            out[path] = preset[key]
    out["model.sequence_parallel"] = bool(preset.get("tensor_model_parallel_size", 1) > 1)
    if preset.get("use_megatron_fsdp"):
        out.update(
            {
                "ddp.use_megatron_fsdp": True,
                "ddp.data_parallel_sharding_strategy": "optim_grads_params",
                "ddp.keep_fp8_transpose_cache": False,
                "ddp.average_in_collective": False,
                "model.init_model_with_meta_device": True,
                "model.gradient_accumulation_fusion": True,
                "optimizer.use_precision_aware_optimizer": False,
            }
        )
    if preset.get("nccl_ub"):
        out.update({"ddp.nccl_ub": True, "ddp.average_in_collective": False})
    impl, scope = preset.get("cuda_graph_impl"), preset.get("cuda_graph_scope")
    if isinstance(scope, str):
        scope = [scope]
    if impl is not None:
        out["model.cuda_graph_impl"] = impl
        out["model.use_te_rng_tracker"] = impl != "none"
    if scope is not None:
        out["model.cuda_graph_scope"] = scope
    if impl == "none":
        out["model.cuda_graph_scope"] = []
    if preset.get("moe_a2a_overlap"):
        out.update(
            {
                "comm_overlap.overlap_moe_expert_parallel_comm": True,
                "comm_overlap.delay_wgrad_compute": True,
                "model.moe_shared_expert_overlap": False,
            }
        )
    if preset.get("cutedsl_fused_grouped_mlp"):
        out.update(
            {"model.use_transformer_engine_op_fuser": True, "model.moe_mlp_glu_interleave_size": 32}
        )
    if preset.get("fp8_dot_product_attention") is not None:
        out["mixed_precision.fp8_dot_product_attention"] = preset["fp8_dot_product_attention"]
    offload = preset.get("cpu_offloading_num_layers")
    if isinstance(offload, int) and offload > 0:
        out.update(
            {
                "model.cpu_offloading": True,
                "model.cpu_offloading_weights": False,
                "model.cpu_offloading_num_layers": offload,
            }
        )
    if preset.get("recompute_num_layers") is not None:
        out.update(
            {
                "model.recompute_granularity": "full",
                "model.recompute_method": "block",
                "model.recompute_num_layers": preset["recompute_num_layers"],
            }
        )
    if preset.get("recompute_modules") is not None:
        out["model.recompute_modules"] = preset["recompute_modules"]
        if not legacy:
            out["model.recompute_granularity"] = "selective"
    if legacy:
        return out
    out.update(
        {
            "ddp.check_for_nan_in_grad": False,
            "ddp.check_for_large_grads": False,
            "rerun_state_machine.check_for_nan_in_loss": False,
            "model.apply_rope_fusion": True,
            "model.cross_entropy_fusion_impl": "te",
        }
    )
    backend = preset.get("moe_flex_dispatcher_backend")
    if backend is not None:
        out.update(
            {
                "model.moe_token_dispatcher_type": "flex",
                "model.moe_flex_dispatcher_backend": backend,
            }
        )
    else:
        out["model.moe_token_dispatcher_type"] = "alltoall"
    if preset.get("pp_layout"):
        out["model.pipeline_model_parallel_layout"] = preset["pp_layout"]
    return out


@dataclass
class Trace:
    """What one interpretation of a recipe function collected."""

    values: dict[str, Any] = field(default_factory=dict)
    skipped_ifs: int = 0
    calls: list[str] = field(default_factory=list)


def _precision_fields(dtype: str, func: str) -> dict[str, Any]:
    """What utils/precision.py::get_precision_config / perf_recipes/_common.py::_perf_precision
    return for a compute dtype."""
    recipe = COMPUTE_DTYPES[dtype]
    mp: dict[str, Any] = {"_recipe": recipe, **MP_RECIPES[recipe]}
    if dtype == "fp8_cs":  # both functions turn the BF16 first/last layers off
        mp["first_last_layers_bf16"] = False
    if func == "_perf_precision":
        mp["grad_reduce_in_fp32"] = False
    return mp


class Interpreter:
    """Follows ``cfg.a.b = <literal>`` through a recipe function and the functions it calls."""

    #: Calls handled natively (their effect is written out by preset_fields/precision).
    NATIVE: ClassVar[set[str]] = {
        "set_workload_base_configs",
        "get_workload_base_config",
        "apply_flex_dispatcher_backend",
    }
    #: Top-level config sections whose ``cfg.<section>.<field>`` assignments are collected.
    sections: ClassVar[tuple[str, ...]] = SECTIONS

    def __init__(self, mirror: Mirror, ref: str, preset: dict[str, Any] | None) -> None:
        self.mirror, self.ref, self.preset = mirror, ref, preset
        self.trace = Trace()
        self.depth = 0
        self.returned: Any = _UNSET
        self._where = ""

    # -- module resolution --
    def _resolve(self, path: str, name: str) -> tuple[str, ast.FunctionDef, ast.Module] | None:
        tree = self.mirror.tree(self.ref, path)
        if tree is None:
            return None
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
                return path, stmt, tree
        for stmt in tree.body:
            if isinstance(stmt, ast.ImportFrom):
                for alias in stmt.names:
                    if (alias.asname or alias.name) != name:
                        continue
                    target = self._module_path(path, stmt.module or "", stmt.level)
                    if target:
                        return self._resolve(target, alias.name)
        return None

    def _module_path(self, here: str, module: str, level: int) -> str | None:
        if level:
            base = Path(here).parent
            for _ in range(level - 1):
                base = base.parent
            stem = str(base / module.replace(".", "/")) if module else str(base)
        elif module.startswith("megatron.bridge"):
            stem = "src/" + module.replace(".", "/")
        elif module.startswith(("utils", "configs")):
            stem = "scripts/performance/" + module.replace(".", "/")
        else:
            return None
        for candidate in (stem + ".py", stem + "/__init__.py"):
            if self.mirror.text(self.ref, candidate) is not None:
                return candidate
        return None

    # -- evaluation --
    def _names(self, tree: ast.Module, local: dict[str, Any]) -> dict[str, Any]:
        names = _module_constants(tree)
        names.update(local)
        return names

    def _path(self, node: ast.AST, aliases: dict[str, str]) -> str | None:
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in aliases:
            full = [p for p in (aliases[node.id], *reversed(parts)) if p]
            return ".".join(full) if full else None
        return None

    def _value(self, node: ast.AST, names: dict[str, Any], aliases: dict[str, str]) -> Any:
        if isinstance(node, ast.Attribute):
            path = self._path(node, aliases)
            if path is not None:
                if path not in self.trace.values and any(
                    k.startswith(path + ".") for k in self.trace.values
                ):
                    return ("section", path)  # a config object that is set (`is not None`)
                return self.trace.values.get(path, _UNSET)
            if (
                isinstance(node.value, ast.Name)
                and node.value.id == "base_cfg"
                and self.preset is not None
            ):
                return self.preset.get(node.attr, _UNSET)
            if isinstance(node.value, ast.Name) and node.value.id == "torch":
                return f"torch.{node.attr}"  # dtypes, as full dumps write them
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("lower", "upper")
            and not node.args
        ):
            inner = self._value(node.func.value, names, aliases)
            if isinstance(inner, str):
                return inner.lower() if node.func.attr == "lower" else inner.upper()
            return _UNSET
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("_perf_precision", "get_precision_config") and node.args:
                dtype = self._value(node.args[0], names, aliases)
                if isinstance(dtype, str) and dtype in COMPUTE_DTYPES:
                    return ("mp", _precision_fields(dtype, node.func.id))
            if node.func.id in MP_RECIPES and not node.args:
                return ("mp", {"_recipe": node.func.id, **MP_RECIPES[node.func.id]})
            if node.func.id.endswith("Config") and node.func.id[:1].isupper():
                # OptimizerConfig(...), DistributedDataParallelConfig(...): the literal kwargs
                kwargs: dict[str, Any] = {}
                for kw in node.keywords:
                    item = self._value(kw.value, names, aliases) if kw.arg else _UNSET
                    if kw.arg and item is not _UNSET:
                        kwargs[kw.arg] = item
                return ("obj", kwargs)
            if not node.func.id[:1].isupper() and node.func.id not in self.NATIVE:
                returned = self._returned(node, names, aliases)
                if returned is not _UNSET:
                    return returned
            if node.func.id == "getattr" and len(node.args) == 3:
                path = self._path(node.args[0], aliases)
                attr = self._value(node.args[1], names, aliases)
                if path is not None and isinstance(attr, str):
                    found = self.trace.values.get(f"{path}.{attr}", _UNSET)
                    return (
                        found if found is not _UNSET else self._value(node.args[2], names, aliases)
                    )
            if node.func.id == "bool" and node.args:
                inner = self._value(node.args[0], names, aliases)
                return _UNSET if inner is _UNSET else bool(inner)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left = self._value(node.left, names, aliases)
            right = self._value(node.comparators[0], names, aliases)
            if left is _UNSET or right is _UNSET:
                return _UNSET
            op = node.ops[0]
            try:
                if isinstance(op, ast.Eq):
                    return left == right
                if isinstance(op, ast.NotEq):
                    return left != right
                if isinstance(op, ast.In):
                    return left in right
                if isinstance(op, ast.NotIn):
                    return left not in right
                if isinstance(op, ast.Is):
                    return left is right
                if isinstance(op, ast.IsNot):
                    return left is not right
                if isinstance(op, ast.Gt):
                    return left > right
                if isinstance(op, ast.Lt):
                    return left < right
            except TypeError:
                return _UNSET
            return _UNSET
        if isinstance(node, ast.BoolOp):
            result: Any = _UNSET
            for v in node.values:
                result = self._value(v, names, aliases)
                if result is _UNSET:
                    return _UNSET
                if bool(result) != isinstance(node.op, ast.And):
                    return result
            return result
        if isinstance(node, ast.IfExp):
            test = self._value(node.test, names, aliases)
            if test is _UNSET:
                return _UNSET
            return self._value(node.body if test else node.orelse, names, aliases)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
            left = self._value(node.left, names, aliases)
            right = self._value(node.right, names, aliases)
            if left is _UNSET or right is _UNSET:
                return _UNSET
            try:
                return left + right if isinstance(node.op, ast.Add) else left * right
            except TypeError:
                return _UNSET
        if isinstance(node, ast.Subscript):
            base = self._value(node.value, names, aliases)
            index = self._value(node.slice, names, aliases)
            try:
                return _UNSET if base is _UNSET or index is _UNSET else base[index]
            except (KeyError, IndexError, TypeError):
                return _UNSET
        if isinstance(node, (ast.Tuple, ast.List)):
            items = [self._value(e, names, aliases) for e in node.elts]
            if any(i is _UNSET for i in items):
                return _UNSET
            return tuple(items) if isinstance(node, ast.Tuple) else list(items)
        if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
            out: dict[Any, Any] = {}
            for key, val in zip(node.keys, node.values, strict=True):
                k = self._value(key, names, aliases) if key is not None else _UNSET
                v = self._value(val, names, aliases)
                if k is _UNSET or v is _UNSET:
                    return _UNSET
                try:
                    out[k] = v
                except TypeError:
                    return _UNSET
            return out
        if isinstance(node, ast.Name) and node.id in names:
            return names[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self._value(node.operand, names, aliases)
            return _UNSET if inner is _UNSET else not inner
        if isinstance(node, ast.Constant) and node.value is None:
            return None
        return _literal(node, names)

    def _bind(
        self, func: Any, node: ast.Call, names: dict[str, Any], aliases: dict[str, str]
    ) -> dict[str, Any]:
        """The call's literal positional and keyword arguments by parameter name."""
        params = [a.arg for a in func.args.args]
        args: dict[str, Any] = {}
        for i, arg in enumerate(node.args[: len(params)]):
            value = self._value(arg, names, aliases)
            if value is not _UNSET:
                args[params[i]] = value
        for kw in node.keywords:
            if kw.arg is not None:
                value = self._value(kw.value, names, aliases)
                if value is not _UNSET:
                    args[kw.arg] = value
        return args

    def _returned(self, node: ast.Call, names: dict[str, Any], aliases: dict[str, str]) -> Any:
        """What a factory function (e.g. distributed_muon_with_cosine_annealing) returns."""
        assert isinstance(node.func, ast.Name)
        where = self._where
        found = self._resolve(where, node.func.id)
        if found is None or self.depth > 12:
            return _UNSET
        func = found[1]
        args = self._bind(func, node, names, aliases)
        sub = type(self)(self.mirror, self.ref, self.preset)
        sub.depth = self.depth + 1
        sub.call(found, args, [], aliases={})
        return sub.returned

    def _set(self, path: str, value: Any) -> None:
        if isinstance(value, tuple) and value and value[0] == "obj":
            for key, item in value[1].items():
                self._set(f"{path}.{key}", item)
            return
        if path == "mixed_precision" and isinstance(value, str) and value in MP_RECIPES:
            value = ("mp", {"_recipe": value, **MP_RECIPES[value]})
        if path == "mixed_precision" and isinstance(value, tuple) and value and value[0] == "mp":
            mp: dict[str, Any] = value[1]
            for key in [k for k in self.trace.values if k.startswith("mixed_precision.")]:
                del self.trace.values[key]
            for key, item in mp.items():
                self.trace.values[f"mixed_precision.{key}"] = item
            return
        if path == "env_vars" and isinstance(value, dict):
            for key in [k for k in self.trace.values if k.startswith("env_vars.")]:
                del self.trace.values[key]
            for key, item in value.items():
                self.trace.values[f"env_vars.{key}"] = item
            return
        self.trace.values[path] = value

    def run(self, path: str, name: str, args: dict[str, Any] | None = None) -> bool:
        found = self._resolve(path, name)
        if found is None:
            return False
        self.call(found, args or {}, [("cfg", "")])
        return True

    def call(
        self,
        found: tuple[str, ast.FunctionDef, ast.Module],
        args: dict[str, Any],
        cfg_params: list[tuple[str, str]],
        aliases: dict[str, str] | None = None,
    ) -> None:
        where, func, tree = found
        if self.depth > 12:
            return
        self.depth += 1
        self.trace.calls.append(f"{where}::{func.name}")
        local: dict[str, Any] = {}
        params = func.args.args
        defaults = func.args.defaults
        for param, default in zip(params[len(params) - len(defaults) :], defaults, strict=True):
            value = _literal(default, {})
            if value is not _UNSET:
                local[param.arg] = value
        for param, kw_default in zip(func.args.kwonlyargs, func.args.kw_defaults, strict=True):
            if kw_default is not None:
                value = _literal(kw_default, {})
                if value is not _UNSET:
                    local[param.arg] = value
        local.update(args)
        if aliases is None:
            aliases = {"cfg": "", "recipe": "", "config": ""}
        aliases = {**aliases, **dict(cfg_params)}
        names = self._names(tree, local)
        outer = getattr(self, "_where", where)
        self._where = where
        self._block(func.body, where, tree, names, aliases)
        self._where = outer
        self.depth -= 1

    def _call_expr(
        self,
        node: ast.Call,
        where: str,
        tree: ast.Module,
        names: dict[str, Any],
        aliases: dict[str, str],
    ) -> None:
        if not isinstance(node.func, ast.Name) or node.func.id in self.NATIVE:
            self._opaque_call(node, names, aliases)
            return
        cfg_positions = {
            i: self._path(a, aliases)
            for i, a in enumerate(node.args)
            if (isinstance(a, (ast.Name, ast.Attribute)) and self._path(a, aliases) is not None)
            or (isinstance(a, ast.Name) and a.id in aliases)
        }
        found = self._resolve(where, node.func.id)
        if found is None:
            self._opaque_call(node, names, aliases)
            return
        func = found[1]
        params = [a.arg for a in func.args.args]
        args: dict[str, Any] = {}
        cfg_params: list[tuple[str, str]] = []
        for i, arg in enumerate(node.args):
            if i >= len(params):
                break
            if i in cfg_positions:
                cfg_params.append((params[i], cfg_positions[i] or ""))
                continue
            value = self._value(arg, names, aliases)
            if value is not _UNSET:
                args[params[i]] = value
        for kw in node.keywords:
            if kw.arg is None:
                continue
            if isinstance(kw.value, ast.Name) and kw.value.id in aliases:
                cfg_params.append((kw.arg, aliases[kw.value.id]))
                continue
            value = self._value(kw.value, names, aliases)
            if value is not _UNSET:
                args[kw.arg] = value
        self.call(found, args, cfg_params)

    def _block(
        self,
        body: list[ast.stmt],
        where: str,
        tree: ast.Module,
        names: dict[str, Any],
        aliases: dict[str, str],
    ) -> bool:
        """Run statements; False when a return was reached."""
        for stmt in body:
            if isinstance(stmt, ast.Return):
                if stmt.value is not None and self.depth >= 1:
                    self.returned = self._value(stmt.value, names, aliases)
                return False
            if isinstance(stmt, ast.If):
                test = self._value(stmt.test, names, aliases)
                if test is _UNSET:
                    if not self._undecided_if(stmt, where, tree, names, aliases):
                        return False
                    continue
                if not self._block(stmt.body if test else stmt.orelse, where, tree, names, aliases):
                    return False
                continue
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                self._call_expr(stmt.value, where, tree, names, aliases)
                continue
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Tuple)
            ):
                value = self._value(stmt.value, names, aliases)
                elts = stmt.targets[0].elts
                if (
                    isinstance(value, (list, tuple))
                    and len(value) == len(elts)
                    and (not value or value[0] != "obj")
                ):
                    for elt, item in zip(elts, value, strict=True):
                        if isinstance(elt, ast.Name) and item is not _UNSET:
                            names[elt.id] = item
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Name):
                    early = _UNSET
                    if isinstance(stmt.value, ast.Call):
                        early = self._value(stmt.value, names, aliases)
                    if isinstance(early, tuple) and early and early[0] == "mp":
                        names[target.id] = ("mp", dict(early[1]))
                        aliases.pop(target.id, None)
                        continue
                    if isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name):
                        if (
                            target.id in aliases or target.id == "cfg"
                        ) and stmt.value.func.id == "ConfigContainer":
                            built = self._value(stmt.value, names, aliases)
                            if isinstance(built, tuple) and built[0] == "obj":
                                self.trace.values.clear()  # a new config: nothing set before
                                for section, obj in built[1].items():
                                    if section in self.sections:
                                        self._set(section, obj)
                            aliases[target.id] = ""
                            continue
                        if target.id in aliases or target.id == "cfg":
                            # cfg = library_recipe(...): run it with its config as ours
                            self._assign_from_call(stmt.value, where, tree, names, aliases)
                            aliases[target.id] = ""
                            continue
                    value = self._value(stmt.value, names, aliases)
                    if value is not _UNSET:
                        names[target.id] = value
                    continue
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and isinstance(names.get(target.value.id), tuple)
                    and names[target.value.id][0] == "mp"
                ):
                    item = self._value(stmt.value, names, aliases)
                    if item is not _UNSET:
                        names[target.value.id][1][target.attr] = item
                    continue
                path = self._path(target, aliases)
                if path is None or path.split(".")[0] not in self.sections:
                    continue
                value = self._value(stmt.value, names, aliases)
                if value is not _UNSET:
                    self._set(path, value)
                else:
                    self._unresolved(path, stmt.value, names, aliases)
            if isinstance(stmt, ast.Assign) and len(stmt.targets) > 1:
                # a.x = b.x = value (cfg.rng.te_rng_tracker = cfg.model.use_te_rng_tracker = True)
                value = self._value(stmt.value, names, aliases)
                for target in stmt.targets:
                    path = self._path(target, aliases)
                    if (
                        path is not None
                        and path.split(".")[0] in self.sections
                        and value is not _UNSET
                    ):
                        self._set(path, value)
            if not isinstance(stmt, (ast.Assign, ast.Expr, ast.If, ast.Return)) and not self._other(
                stmt, where, tree, names, aliases
            ):
                return False
        return True

    # -- hooks (gen_bridge_recipes.py's reading refines them; this tool's use keeps these) --

    def _unresolved(
        self, path: str, node: ast.AST, names: dict[str, Any], aliases: dict[str, str]
    ) -> None:
        """``cfg.<path> = <not a literal>``: forget what was known of ``path``."""
        self.trace.values.pop(path, None)

    def _undecided_if(
        self,
        stmt: ast.If,
        where: str,
        tree: ast.Module,
        names: dict[str, Any],
        aliases: dict[str, str],
    ) -> bool:
        """An ``if`` whose test cannot be decided from literals: neither branch is followed.
        False when every path through it returns."""
        self.trace.skipped_ifs += 1
        return True

    def _other(
        self,
        stmt: ast.stmt,
        where: str,
        tree: ast.Module,
        names: dict[str, Any],
        aliases: dict[str, str],
    ) -> bool:
        """A statement the reading does not follow (loops, ``with``, ``try``, ``+=``); False
        when every path through it returns."""
        return True

    def _opaque_call(self, node: ast.Call, names: dict[str, Any], aliases: dict[str, str]) -> None:
        """A call statement the reading cannot follow (a method, a function outside Bridge)."""

    def _assign_from_call(
        self,
        node: ast.Call,
        where: str,
        tree: ast.Module,
        names: dict[str, Any],
        aliases: dict[str, str],
    ) -> None:
        assert isinstance(node.func, ast.Name)
        found = self._resolve(where, node.func.id)
        if found is None:
            self._unresolved("", node, names, aliases)  # cfg = <a call the reading cannot find>
            return
        func = found[1]
        args = self._bind(func, node, names, aliases)
        self.call(found, args, [])


TAGS = {
    "25.09": "r0.1.0",
    "25.11": "v0.2.0",
    "26.02": "v0.3.0",
    "26.02.01": "v0.3.1",
    "26.04": "v0.4.0",
    "26.04.01": "v0.4.2",
    "26.06": "v0.5.0",
    "26.06.01": "v0.5.1",
    "26.08": "v0.6.0",
}
#: r0.1.0 is a branch; the TSV header gives its commit.
REFS = {"r0.1.0": "684a68616597c8097b17e089f91f86383d9e7b74"}


def extract_row(mirror: Mirror, row: Row) -> dict[str, Any] | str:
    """The recipe settings of one row (dict) or why they cannot be read (str)."""
    tag = TAGS[row["release"]]
    ref = REFS.get(tag, tag)
    guess = row.tag_recipe
    _, stem = MODELS[row["model"]]
    gpu, _ = GPUS[row["gpu"]]
    dtype = row.compute_dtype
    match = re.match(r"(\w+) \((\S+?)(?::(\d+))? @", guess)
    yaml_match = re.match(r"(\S+\.yaml) perf_matrix\.(\w+)\.(num_gpus_\d+)\.(\w+)", guess)
    if yaml_match:
        return _extract_perf_matrix(mirror, ref, tag, *yaml_match.groups())
    if not match:
        return f"recipe_guess names no recipe at the release tag: {guess!r}"
    name, path = match.group(1), match.group(2)
    if path.endswith("workload_base_configs.py"):
        presets = read_presets(mirror, ref, path)
        if name not in presets:
            return f"{name} is not a WorkloadBaseConfig preset in {path}@{tag}"
        preset = presets[name]
        interp = Interpreter(mirror, ref, preset)
        folder = str(Path(path).parent)
        candidates = [f"{stem}_pretrain_config_{gpu}", f"{stem}_{gpu}_config"]
        ran = None
        for file in mirror.ls(ref, folder):
            if not file.endswith("_llm_pretrain.py"):
                continue
            for func in candidates:
                if interp.run(file, func, {"precision": dtype}):
                    ran = f"{file}::{func}"
                    break
            if ran:
                break
        values = dict(interp.trace.values)
        values.update(preset_fields(preset, tag))
        if values.get("model.moe_flex_dispatcher_backend") == "hybridep" and tag != "v0.2.0":
            values["model.moe_hybridep_num_sms"] = 32  # _set_common_perf_overrides
        if "mixed_precision._recipe" not in values:
            # The precision config reached the recipe through a constructor or **kwargs the
            # reading does not follow: get_precision_config(precision) is what the function
            # passes (v0.2.0 .. v0.5.1); fields the function set on it afterwards stay.
            later = {k: v for k, v in values.items() if k.startswith("mixed_precision.")}
            interp._set("mixed_precision", ("mp", _precision_fields(dtype, "get_precision_config")))
            values.update(
                {k: v for k, v in interp.trace.values.items() if k.startswith("mixed_precision.")}
            )
            values.update(later)
        return {
            "source": f"{path}::{name} @{tag} ({ref if ref != tag else 'tag'})",
            "function": ran or f"(no {' / '.join(candidates)} found in {folder}/*_llm_pretrain.py)",
            "calls": interp.trace.calls,
            "skipped_ifs": interp.trace.skipped_ifs,
            "preset": {k: v for k, v in sorted(preset.items())},
            "values": values,
        }
    interp = Interpreter(mirror, ref, None)
    if not interp.run(path, name):
        return f"{name} not found in {path}@{tag}"
    return {
        "source": f"{path}::{name} @{tag}",
        "function": f"{path}::{name}",
        "calls": interp.trace.calls,
        "skipped_ifs": interp.trace.skipped_ifs,
        "values": dict(interp.trace.values),
    }


def _run_script_r010(path: str, gpu: str) -> dict[str, Any]:
    """What scripts/performance/run_script.py (r0.1.0) sets per model and GPU after the YAML:
    written out here because it branches on the launcher's --gpu argument."""
    token_drop = {
        "model.moe_expert_capacity_factor": 1.0,
        "model.moe_pad_expert_input_to_capacity": True,
    }
    if "qwen3" in path:
        return dict(token_drop)  # apply_moe_token_drop(recipe.model) for both Qwen3 sizes
    if "deepseek" not in path:
        return {}
    out: dict[str, Any] = {}
    tokendrop = gpu in ("b200", "gb200")
    if tokendrop:
        out.update(token_drop)
    if gpu == "h100":  # enable_deepep (the flex dispatcher with DeepEP) and force-balanced routing
        out.update(
            {
                "model.moe_token_dispatcher_type": "flex",
                "model.moe_flex_dispatcher_backend": "deepep",
                "model.moe_router_force_load_balancing": True,
                "model.pipeline_model_parallel_layout": "Et|(tt|)*30mL",
            }
        )
    a2a = gpu == "h100"
    out.update(
        {
            "comm_overlap.overlap_moe_expert_parallel_comm": a2a,
            "comm_overlap.delay_wgrad_compute": a2a,
            "model.moe_shared_expert_overlap": not a2a,
        }
    )
    modules = {"h100": ["mla_up_proj", "mlp"], "b200": ["mla_up_proj"], "gb200": ["mla_up_proj"]}
    if gpu in modules:
        out["model.recompute_modules"] = modules[gpu]
    return out


def _extract_perf_matrix(
    mirror: Mirror, ref: str, tag: str, path: str, gpu: str, ngpus: str, dtype: str
) -> dict[str, Any] | str:
    text = mirror.text(ref, path)
    if text is None:
        return f"{path} not found at {tag}"
    data = yaml.safe_load(text)
    entry = ((data.get("perf_matrix") or {}).get(gpu) or {}).get(ngpus) or {}
    merged = {**(entry.get("common") or {}), **(entry.get(dtype) or {})}
    values: dict[str, Any] = {}
    for section, body in (data.get("ConfigContainer") or {}).items():
        if section in SECTIONS and isinstance(body, dict):
            for key, value in body.items():
                values[f"{section}.{key}"] = value
    for key, target in (
        ("tp", "model.tensor_model_parallel_size"),
        ("pp", "model.pipeline_model_parallel_size"),
        ("cp", "model.context_parallel_size"),
        ("vp", "model.virtual_pipeline_model_parallel_size"),
        ("ep", "model.expert_model_parallel_size"),
        ("etp", "model.expert_tensor_parallel_size"),
        ("gbs", "train.global_batch_size"),
        ("mbs", "train.micro_batch_size"),
        ("seq_length", "model.seq_length"),
    ):
        if key in merged:
            values[target] = merged[key]
    if "tp" in merged:
        values["model.sequence_parallel"] = bool(merged["tp"] and merged["tp"] > 1)
    if merged.get("fsdp"):
        values["ddp.use_megatron_fsdp"] = True
    values.update(_run_script_r010(path, gpu))
    mp = (
        {"_recipe": COMPUTE_DTYPES[dtype], **MP_RECIPES[COMPUTE_DTYPES[dtype]]}
        if dtype in COMPUTE_DTYPES
        else {}
    )
    for key, item in mp.items():
        values.setdefault(f"mixed_precision.{key}", item)
    return {
        "source": f"{path} perf_matrix.{gpu}.{ngpus}.{dtype} @{tag} ({ref})",
        "function": "(YAML perf_matrix entry, then scripts/performance/run_script.py's"
        + " per-GPU settings; cuda_graphs: "
        + str(merged.get("cuda_graphs"))
        + " is a launcher flag, not read)",
        "calls": [],
        "skipped_ifs": 0,
        "values": values,
    }


def extract(mirror_path: Path, rows: list[Row], *, check: bool) -> int:
    mirror = Mirror(mirror_path)
    out: dict[str, Any] = {}
    for row in rows:
        out[str(row.line)] = extract_row(mirror, row)
    header = (
        "# Recipe settings of every published-performance row (used where no full Bridge dump\n"
        "# fits the row), read statically from NVIDIA-NeMo/Megatron-Bridge (Apache-2.0) at each\n"
        "# row's release tag\n"
        f"# by `{COMMAND} --extract` (see its docstring). Keyed by the row's line in\n"
        "# tests/data/published-performance.tsv; a string value says why the recipe could not be\n"
        "# read.\n"
    )
    text = header + yaml.safe_dump(out, sort_keys=False, width=120, allow_unicode=True)
    return write_or_check(RECIPES, text, check=check, command=f"{COMMAND} --extract")


# --------------------------------------------------------------------------------------------
# Writing the row files
# --------------------------------------------------------------------------------------------


def _yaml_scalar(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    return text[:-4].rstrip() if text.endswith("\n...") else text.removesuffix("...").strip()


def _apply_to_dump(text: str, overrides: dict[str, Any]) -> tuple[str, list[str]]:
    """Write dotted-path scalars over a full dump (line edits, so the rest stays byte-identical)."""
    lines = text.split("\n")
    notes: list[str] = []
    for path, value in overrides.items():
        section, key = path.split(".", 1)
        start = next((i for i, line in enumerate(lines) if line == f"{section}:"), None)
        if start is None:
            notes.append(f"{path}: no '{section}:' section in the dump")
            continue
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith(" ")),
            len(lines),
        )
        idx = next((i for i in range(start + 1, end) if lines[i].startswith(f"  {key}:")), None)
        new = f"  {key}: {_yaml_scalar(value)}"
        if idx is None:
            lines.insert(end, new)
            notes.append(f"{path} = {_yaml_scalar(value)} (added)")
            continue
        old = lines[idx]
        # A value continued on the next lines (lists) ends where the indentation returns.
        stop = idx + 1
        while stop < end and (lines[stop].startswith("  - ") or lines[stop].startswith("    ")):
            stop += 1
        if old == new and stop == idx + 1:
            continue
        old_value = old.split(":", 1)[1].strip() or "(block)"
        lines[idx:stop] = [new]
        notes.append(f"{path}: {old_value} -> {_yaml_scalar(value)}")
    return "\n".join(lines), notes


def _source_comment(row: Row) -> list[str]:
    return [
        f"# Row: tests/data/published-performance.tsv line {row.line} = {row['source']}",
        f"#   {row['release']} {row['model']} {row['gpu']} x{row['num_gpus']} {row['precision']}: "
        f"GBS {row['gbs']} MBS {row['mbs']} seq {row['seq_len']} TP {row['tp']} PP {row['pp']} "
        f"CP {row['cp']} VP {row['vp']} EP {row['ep']}; "
        f"{row['tokens_per_sec_per_gpu']} tokens/s/GPU",
        f"#   {row['other_columns_verbatim']}",
        f"#   notes: {row['notes']}",
        f"#   recipe_guess: {row['recipe_guess']} ({row['recipe_confidence']})",
    ]


def _nest(values: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for section in SECTIONS:
        keys = sorted(k for k in values if k.split(".", 1)[0] == section)
        body: dict[str, Any] = {}
        for key in keys:
            if "." not in key:  # a whole section assigned a non-literal
                continue
            _, rest = key.split(".", 1)
            if section == "train" and rest not in TRAIN_FIELDS:
                continue
            if section == "dataset" and rest not in DATASET_FIELDS:
                continue
            if "." in rest:  # nested objects (e.g. model.x.y): not written
                continue
            body[rest] = values[key]
        if body:
            out[section] = body
    return out


def render_override(row: Row, recipe: dict[str, Any]) -> str:
    preset, _ = MODELS[row["model"]]
    _, gpu_key = GPUS[row["gpu"]]
    values = dict(recipe["values"])
    own = stated(row)
    changed = {k: v for k, v in own.items() if k in values and values[k] != v}
    values.update(own)
    layout_note = _stale_layout(values, changed)
    if "model.tensor_model_parallel_size" in changed:
        values["model.sequence_parallel"] = bool(own["model.tensor_model_parallel_size"] > 1)
    mp = {k.split(".", 1)[1]: v for k, v in values.items() if k.startswith("mixed_precision.")}
    recipe_name = mp.pop("_recipe", None)
    for key in [k for k in values if k.startswith("mixed_precision.")]:
        del values[key]
    body = _nest(values)
    if mp:
        body["mixed_precision"] = mp
    lines = [
        f"# moe-lint: gpus={row['num_gpus']} gpu={gpu_key} model={preset}",
        f"# GENERATED by {COMMAND} from tests/data/published-performance.tsv and",
        "# tests/data/published-recipes.yaml; do not edit (re-run the tool).",
        *_source_comment(row),
        f"# Recipe (override style, read statically): {recipe['source']}",
        f"#   function: {recipe['function']}",
        f"#   followed: {', '.join(recipe['calls']) or '(none)'}; "
        f"if statements not decidable: {recipe['skipped_ifs']}",
    ]
    if recipe.get("why"):
        lines.append(f"#   {recipe['why']}")
    if recipe_name:
        lines.append(
            f"#   mixed_precision: {recipe_name} as Bridge's recipe function returns it, "
            "with the recipe's changes"
        )
    if changed:
        lines.append(
            "#   row values written over the recipe: "
            + ", ".join(
                f"{k} {_yaml_scalar(recipe['values'][k])} -> {_yaml_scalar(v)}"
                for k, v in changed.items()
            )
        )
    if layout_note:
        lines.append(layout_note)
    lines.append(
        "#   fields the recipe leaves unset take the model preset's and Bridge's defaults."
    )
    text = "\n".join(lines) + "\n" + yaml.safe_dump(body, sort_keys=False, width=120)
    return text


#: What a row states that changes the memory of one GPU: where the dump differs from the row in
#: any of these, its other settings (recompute, CUDA graphs, paged stash, offloading) were tuned
#: for another run, and the release-tag recipe is the better reconstruction. (GBS alone changes
#: only the number of micro-batches, which the pipeline schedule bounds.)
_SHAPE = (
    "model.tensor_model_parallel_size",
    "model.pipeline_model_parallel_size",
    "model.context_parallel_size",
    "model.virtual_pipeline_model_parallel_size",
    "model.expert_model_parallel_size",
    "train.micro_batch_size",
    "model.seq_length",
)


def _shape_mismatch(row: Row, dump: Path) -> list[str]:
    """The memory-shaping values (TP/PP/CP/VP/EP, MBS, sequence) where row and dump differ."""
    data = yaml.safe_load(dump.read_text(encoding="utf-8")) or {}
    own = stated(row)
    out = []
    for path in _SHAPE:
        section, key = path.split(".", 1)
        have = (data.get(section) or {}).get(key)
        if path in own and have != own[path]:
            short = key.replace("_model_parallel_size", "").replace("_parallel_size", "")
            out.append(f"{short} {have} (row: {own[path]})")
    if "tokendrop" in row["other_columns_verbatim"] and not (data.get("model") or {}).get(
        "moe_expert_capacity_factor"
    ):
        out.append("token-dropless routing (row: tokendrop)")
    return out


_LAYOUT = "model.pipeline_model_parallel_layout"
_PP_VP = ("model.pipeline_model_parallel_size", "model.virtual_pipeline_model_parallel_size")


def _stale_layout(values: dict[str, Any], changed: dict[str, Any]) -> str | None:
    """Drop a pipeline layout written for other PP/VP sizes than the row's (Megatron-Core would
    reject it: layout stages must equal PP*VP); say so in the file."""
    if values.get(_LAYOUT) is None or not any(k in changed for k in _PP_VP):
        return None
    values[_LAYOUT] = None
    return (
        "#   the recipe's pipeline_model_parallel_layout was built for its own PP/VP, "
        "not the row's: "
        "dropped (layout null)"
    )


def render_dump(row: Row, dump: Path) -> str:
    _, gpu_key = GPUS[row["gpu"]]
    raw = dump.read_text(encoding="utf-8")
    own = stated(row)
    model = (yaml.safe_load(raw) or {}).get("model") or {}
    recipe_vals = {f"model.{k}": v for k, v in model.items()}
    changed = {k: v for k, v in own.items() if k in recipe_vals and recipe_vals[k] != v}
    if _stale_layout(recipe_vals, changed):
        own[_LAYOUT] = None
    text, notes = _apply_to_dump(raw, own)
    lines = [
        f"# moe-lint: gpus={row['num_gpus']} gpu={gpu_key}",
        f"# GENERATED by {COMMAND} from tests/data/published-performance.tsv and the full",
        f"# Bridge dump tests/data/corpus/bridge-full-dumps/{dump.name};",
        "# do not edit (re-run the tool).",
        *_source_comment(row),
        f"# Recipe: full dump of {row.head_recipe} (Megatron Bridge 0.6.2), the row's HEAD recipe.",
        "#   row values written over the dump: "
        + ("; ".join(notes) if notes else "none (the dump matches the row)"),
    ]
    if row["release"] != "26.08":
        lines.append(
            f"#   the row ran release {row['release']} ({TAGS[row['release']]}); "
            "settings the row does not print are the 0.6.2 recipe's."
        )
    return "\n".join(lines) + "\n" + text


#: Models with no architecture preset, and why (a row of theirs cannot be estimated).
NO_PRESET = {
    "DeepSeek-V4-Flash": "no architecture preset: Bridge's deepseek_v4_bridge.py builds "
    "dsv4_hybrid attention, hyper-connections and hash-routed MoE layers that neither "
    "Megatron-Core 0.19.2 nor Megatron-LM main (d98e8a6) contains, so their weight shapes "
    "cannot be taken from the framework source",
}


def unusable(row: Row) -> str | None:
    """Why a row cannot be reconstructed: no preset for its model, or printed values that
    contradict each other (gradient accumulation GA = GBS / (MBS·DP), DP = GPUs/(TP·PP·CP)),
    so the printed layout is not the one that ran."""
    if row["model"] in NO_PRESET:
        return NO_PRESET[row["model"]]
    match = re.search(r"GA=(\d+)", row["other_columns_verbatim"])
    try:
        gpus, gbs, mbs, tp, pp, cp = (
            int(row[k]) for k in ("num_gpus", "gbs", "mbs", "tp", "pp", "cp")
        )
    except ValueError:
        return None
    dp = gpus // (tp * pp * cp)
    if match and int(match.group(1)) * mbs * dp != gbs:
        return (
            f"printed values contradict each other: GA={match.group(1)}, but GBS {gbs} / "
            f"(MBS {mbs} · DP {dp}) = {gbs / (mbs * dp):g} with DP = {gpus} GPUs / (TP {tp} · "
            f"PP {pp} · CP {cp}); the printed layout is not the one that ran"
        )
    return None


def generate(rows: list[Row], header: list[str], *, check: bool) -> int:
    recipes: dict[str, Any] = {}
    if RECIPES.exists():
        loaded = yaml.safe_load(RECIPES.read_text(encoding="utf-8")) or {}
        recipes = {str(k): v for k, v in loaded.items()}
    names = stems(rows)
    dumps = {p.name: p for p in DUMPS.glob("*.yaml")}
    wanted: dict[Path, str] = {}
    skipped: list[tuple[Row, str]] = []
    for row in rows:
        stem = names[row.line]
        problem = unusable(row)
        if problem is not None:
            skipped.append((row, problem))
            continue
        dump = dumps.get(f"{row.head_recipe}.yaml") if row.head_recipe else None
        recipe = recipes.get(str(row.line))
        mismatch = _shape_mismatch(row, dump) if dump is not None else []
        if dump is not None and (not mismatch or not isinstance(recipe, dict)):
            wanted[OUT / f"{stem}.yaml"] = render_dump(row, dump)
            continue
        if dump is not None and isinstance(recipe, dict):
            recipe = {
                **recipe,
                "why": f"the full dump {dump.name} has {', '.join(mismatch)}: "
                "values that shape memory differ from the row, so the release-tag recipe is used",
            }
        if recipe is None:
            skipped.append(
                (
                    row,
                    f"no full dump of {row.head_recipe} and no extracted recipe "
                    f"(run {COMMAND} --extract)",
                )
            )
        elif isinstance(recipe, str):
            skipped.append((row, recipe))
        else:
            wanted[OUT / f"{stem}.yaml"] = render_override(row, recipe)
    buf = io.StringIO()
    buf.write(
        "# Rows of tests/data/published-performance.tsv with no reconstructed config; "
        f"GENERATED by {COMMAND}.\n"
    )
    writer = csv.writer(buf, delimiter="\t", lineterminator="\n")
    writer.writerow(["line", "release", "model", "gpu", "num_gpus", "precision", "reason"])
    for row, reason in skipped:
        writer.writerow(
            [
                row.line,
                row["release"],
                row["model"],
                row["gpu"],
                row["num_gpus"],
                row["precision"],
                reason,
            ]
        )
    wanted[SKIPPED] = buf.getvalue()
    status = 0
    for path, text in sorted(wanted.items()):
        status |= write_or_check(path, text, check=check, command=COMMAND)
    keep = set(wanted) | {RECIPES}
    for path in sorted(OUT.glob("*")):
        if path not in keep:
            if check:
                print(f"{path} is not generated by {COMMAND}: remove it or re-run", file=sys.stderr)
                status = 1
            else:
                path.unlink()
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say which files are stale")
    parser.add_argument(
        "--extract", action="store_true", help="re-read the recipe sources from --mirror"
    )
    parser.add_argument(
        "--mirror", type=Path, default=DEFAULT_MIRROR, help="bare git mirror of Megatron Bridge"
    )
    args = parser.parse_args(argv)
    header, rows = read_rows()
    status = 0
    if args.extract:
        status |= extract(args.mirror, rows, check=args.check)
    status |= generate(rows, header, check=args.check)
    return status


if __name__ == "__main__":
    sys.exit(main())
