"""Megatron Bridge launch scripts, read the way Bridge runs them.

Bridge's launchers name a recipe and change it with Hydra overrides::

    torchrun --nproc_per_node=8 scripts/training/run_recipe.py \\
        --recipe qwen3_600m_sft_128k_config train.global_batch_size=2 model.x=y

So a launch script is linted as the recipe's config (data/bridge_recipes.json, what Bridge
0.6.2's recipe function sets; config/bridge_recipes.py) with its overrides applied the way
Bridge applies them (config/overrides.py, in order, after the recipe) and with the world its
launcher starts. Nothing is run: the script is read by config/mlm_args.py's ShellReader; a
command wrapped in ``bash -c "$CMD"`` is read inside its string.

The launchers read (Megatron Bridge v0.6.0; their argparse restated below):

- ``scripts/training/run_recipe.py`` (run_recipe.py::_build_parser): ``--recipe NAME`` or
  ``--model STEM --mode MODE``, the convenience options (``-tp 2`` is
  ``model.tensor_model_parallel_size=2``, COMMON_OVERRIDE_FIELDS, placed before the trailing
  overrides), ``--dataset``, ``--deterministic``, then ``KEY=VALUE`` overrides. The world is the
  launcher's: ``torchrun --nproc_per_node N --nnodes M``, else ``srun``/``#SBATCH`` ``-N`` x
  ``--ntasks-per-node`` (Bridge reads WORLD_SIZE or SLURM_NTASKS).
- ``scripts/training/setup_experiment.py`` (its ``train.sh``): ``--nodes`` x
  ``--gpus-per-node`` tasks, everything else forwarded to run_recipe.py.
- ``scripts/performance/{setup_experiment,bootstrap,run_script}.py``: the flat benchmark
  recipe ``<model_recipe_name>_<task>_<num_gpus>gpu_<gpu>_<precision>[_<variant>]_config``
  (utils/utils.py::get_perf_recipe_by_name) on ``--num_gpus`` GPUs, its parallelism and batch
  options (utils/overrides.py::set_user_overrides); options whose effect is not restated leave
  the fields they change unknown.

Conversion, inference and data-preparation commands are not training: such a script is skipped
with a notice, as is a launch of a recipe moe-lint does not know or whose name the script
computes at run time. What run_recipe.py does to the config after the overrides
(recipe_runner.py: the sequence-length, pipeline-layout and SFT context-parallel syncs, a
benchmark recipe's weak-scaled batch) is applied by :meth:`Launch.after_overrides`, which
normalize calls once the overrides are in.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from typing import TYPE_CHECKING, Any

from moe_lint.bounds import bounded_repr
from moe_lint.config import bridge_recipes, fields, mlm_args
from moe_lint.config.mixed_precision import MP_DEFAULTS
from moe_lint.config.overrides import parse_override
from moe_lint.config.positions import Pos, Span
from moe_lint.config.settings import preset_key
from moe_lint.config.shell import UNKNOWN_AT, _PStr
from moe_lint.errors import InputError
from moe_lint.records import NamedTuple, field, record

if TYPE_CHECKING:
    from moe_lint.config.overrides import Override

FORM = "bridge-launch"

#: Text that may name a Bridge launcher; other scripts go straight to the Megatron-LM reader.
#: Matched against the lowercased text (a case-insensitive search cost 0.2 s a megabyte).
_MARKER = re.compile(
    r"run_recipe\.py|run_script\.py|setup_experiment\.py|bootstrap\.py|launch_with_nemo_run\.py|"
    r"setup_(?:conversion|inference)\.py|scripts/(?:conversion|inference|performance|training)/|"
    r"examples/(?:conversion|models|megatron_mimo|training_features)/|"
    r"tutorials/recipes/|hf_to_megatron|megatron[./_]bridge|megatron-bridge"
)

#: Bridge commands that do not train, by their script's path: (pattern, what it is).
_NOT_TRAINING = (
    (r"(^|/)setup_inference\.py$", "an inference run"),
    (
        r"(^|/)scripts/conversion/|(^|/)examples/conversion/(?!.*generate)|convert\w*\.py$|"
        r"(^|/)convert\.sh$|roundtrip\w*\.py$|export_adapter\.py$",
        "a checkpoint conversion",
    ),
    (
        r"(^|/)scripts/inference/|(^|/)infer\.sh$|generate\w*\.py$|text_generation\w*\.py$|"
        r"openai_server\.py$|inference\w*\.py$",
        "an inference run",
    ),
    (r"(^|/)setup_conversion\.py$", "a checkpoint conversion"),
    (
        r"prepare_\w+\.py$|build_\w+_shards\.py$|synthesize_\w+\.py$|download_\w+\.py$|"
        r"preprocess\w*\.py$",
        "a data preparation step",
    ),
    (
        r"verify_\w+\.py$|(^|/)compare\.py$|parity_check\w*\.py$|create_smoke_checkpoint\.py$|"
        r"checkpoint_inspector\.py$|dump_perf_configs\.py$",
        "a verification or inspection step",
    ),
)

#: Training scripts of Bridge's examples and tutorials that build their config in Python.
_OWN_CONFIG = re.compile(
    r"(^|/)(examples|tutorials)/.*\.py$|megatron_mimo_training_\w+\.py$|"
    r"(^|/)\d\d_\w+\.py$|\w+_example\.py$|finetune_qwen35_vl\.py$"
)

#: Checkpoints whose Bridge model needs a Megatron-Core moe-lint does not model.
_UNMODELLED = {
    "deepseek-ai/DeepSeek-V4-Flash": "DeepSeek-V4",
    "deepseek-ai/DeepSeek-V4-Pro": "DeepSeek-V4",
}
_UNMODELLED_WHY = (
    "Bridge's deepseek_v4_bridge.py builds dsv4_hybrid attention, hyper-connections and "
    "hash-routed MoE layers that the Megatron-Core releases moe-lint models (and the one Bridge "
    "0.6 pins, 0.19.0) do not contain: its settings cannot be checked"
)

_SKIP_WORDS = {
    "echo", "printf", "[", "[[", "test", "ls", "cat", "cd", "mkdir", "export", "source",
    "which", "command", "type", "local", "read",
}  # fmt: skip
_LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch")


# --- run_recipe.py's command line (scripts/training/run_recipe.py::_build_parser, v0.6.0) ------

#: Option -> (dest, takes a value, type) of run_recipe.py's parser.
_RUN_RECIPE: dict[str, tuple[str, bool, str]] = {}
for _names, _dest, _value, _kind in (
    (("--model",), "model", True, "str"),
    (("--recipe",), "recipe", True, "str"),
    (("--mode",), "mode", True, "str"),
    (("--step-func", "--step_func"), "step_func", True, "str"),
    (("--dataset",), "dataset", True, "str"),
    (("-ms", "--max_steps"), "max_steps", True, "int"),
    (("-gb", "--global_batch_size"), "global_batch_size", True, "int"),
    (("-mb", "--micro_batch_size"), "micro_batch_size", True, "int"),
    (("-sl", "--seq_length"), "seq_length", True, "int"),
    (("-tp", "--tensor_model_parallel_size"), "tensor_model_parallel_size", True, "int"),
    (("-pp", "--pipeline_model_parallel_size"), "pipeline_model_parallel_size", True, "int"),
    (("-cp", "--context_parallel_size"), "context_parallel_size", True, "int"),
    (
        ("-vp", "--virtual_pipeline_model_parallel_size"),
        "virtual_pipeline_model_parallel_size",
        True,
        "int",
    ),
    (("-ep", "--expert_model_parallel_size"), "expert_model_parallel_size", True, "int"),
    (("-etp", "--expert_tensor_parallel_size"), "expert_tensor_parallel_size", True, "int"),
    (("--lr",), "lr", True, "float"),
    (("--min_lr",), "min_lr", True, "float"),
    (("--warmup_iters",), "warmup_iters", True, "int"),
    (("--pretrained_checkpoint",), "pretrained_checkpoint", True, "str"),
    (("--save_dir",), "save_dir", True, "str"),
    (("--load_dir",), "load_dir", True, "str"),
    (("--save_interval",), "save_interval", True, "int"),
    (("--dry-run", "--dry_run"), "dryrun", False, "bool"),
    (("--deterministic",), "deterministic", False, "bool"),
    (("--dump-env", "--dump_env"), "dump_env", False, "bool"),
    (("-h", "--help"), "help", False, "bool"),
):
    for _name in _names:
        _RUN_RECIPE[_name] = (_dest, _value, _kind)

#: run_recipe.py::COMMON_OVERRIDE_FIELDS: convenience option -> the override it stands for.
COMMON_OVERRIDE_FIELDS = (
    ("max_steps", "train.train_iters"),
    ("global_batch_size", "train.global_batch_size"),
    ("micro_batch_size", "train.micro_batch_size"),
    ("seq_length", "dataset.seq_length"),
    ("tensor_model_parallel_size", "model.tensor_model_parallel_size"),
    ("pipeline_model_parallel_size", "model.pipeline_model_parallel_size"),
    ("context_parallel_size", "model.context_parallel_size"),
    ("virtual_pipeline_model_parallel_size", "model.virtual_pipeline_model_parallel_size"),
    ("expert_model_parallel_size", "model.expert_model_parallel_size"),
    ("expert_tensor_parallel_size", "model.expert_tensor_parallel_size"),
    ("lr", "optimizer.lr"),
    ("min_lr", "optimizer.min_lr"),
    ("warmup_iters", "scheduler.lr_warmup_iters"),
    ("pretrained_checkpoint", "checkpoint.pretrained_checkpoint"),
    ("save_dir", "checkpoint.save"),
    ("load_dir", "checkpoint.load"),
    ("save_interval", "checkpoint.save_interval"),
)

#: scripts/training/setup_experiment.py::_build_parser (v0.6.0): its own options (the rest is
#: forwarded to run_recipe.py); name -> takes a value.
_SETUP_EXPERIMENT = {
    "--nodes": True, "--gpus-per-node": True, "--gpus_per_node": True, "--account": True,
    "--partition": True, "--time": True, "--gres": True, "--additional-slurm-params": True,
    "--additional_slurm_params": True, "--no-gpu-resource-request": False,
    "--container-image": True, "--mount": True, "--env": True, "--srun-arg": True, "-lmc": True,
    "--peak-mem-clk": True, "--peak_mem_clk": True, "--experiment-name": True,
    "--submission-dry-run": False, "--dry-run": False, "--wait": False,
}  # fmt: skip


# --- the performance launchers (scripts/performance/argument_parser.py, v0.6.0) --------------

#: scripts/performance/argument_parser.py::parse_cli_args (v0.6.0), every option as
#: ``names:values`` (0: a switch, 1: one value, ?/*/+: argparse nargs). It is parsed with
#: parse_known_args: words it does not know are passed on as Hydra overrides.
_PERF_SPEC = """
--domain:1 -m --model_family_name:1 -mr --model_recipe_name:1 --use_recipes:0 -nh
--nemo_home:1 --detach:1 --max_retries:1 -ng --num_gpus:1 --hidden_size:1 --num_layers:1
--num_moe_experts:1 --pipeline_model_parallel_layout:1 --first_k_dense_replace:1 -d
--dryrun:0 --task:1 -ms --max_steps:1 -gb --global_batch_size:1 -mb --micro_batch_size:1 -sl
--seq_length:1 --distributed_timeout_minutes:1 --lr:1 --min_lr:1 --warmup_iters:1
--pretrained_checkpoint:1 --save_dir:1 --load_dir:1 --save_interval:1 --most_recent_k:1
--data:1 --c4_root:1 --c4_train_shards:+ --dataset_paths:* --dataset_root:1
--index_mapping_dir:1 --dataset_name:1 --packed_sequence:0 --head_only:0
--diffusion_dataset_path:1 --tokenizer_type:1 --tokenizer_model:1 --vocab_size:1 -hf
--hf_token:1 --offline:0 -tp --tensor_model_parallel_size:1 -pp
--pipeline_model_parallel_size:1 -cp --context_parallel_size:1 -vp
--virtual_pipeline_model_parallel_size:1 -ep --expert_model_parallel_size:1 -et
--expert_tensor_parallel_size:? -a --account:1 -p --partition:1 -t --time_limit:1
--preempt_time:1 -gn --gpus_per_node:1 -i --container_image:1 -cm --custom_mounts:1 -ce
--custom_env_vars:1 -E --env:1 -cs --custom_srun_args:1 -cb --custom_bash_cmds:* --gres:1
--additional_slurm_params:1 --packager:1 --enable_pct_binding:1 --kubeflow_namespace:1
--csp:1 --kubeflow_workdir_pvc:1 --kubeflow_workdir_pvc_path:1
--kubeflow_workdir_local_path:1 --kubeflow_image_pull_secrets:1 --kubeflow_volumes_json:1
--kubeflow_volume_mounts_json:1 --kubeflow_tolerations_json:1 --kubeflow_affinity_json:1
--kubeflow_env_list_json:1 --kubeflow_extra_resource_requests_json:1
--kubeflow_extra_resource_limits_json:1 --kubeflow_pod_spec_overrides_json:1
--kubeflow_pod_annotations_json:1 --kubeflow_container_kwargs_json:1
--kubeflow_labels_json:1 -g --gpu:1 -c --compute_dtype:1 --optimizer_type:1 -vb
--enable_vboost:1 -lgc --lock_gpu_freq:1 -lmc --peak_mem_clk:1 -en --enable_nsys:0
--export_nsys_sqlite:0 -pyp --pytorch_profiler:1 --profiling_start_step:1
--profiling_stop_step:1 -mh --record_memory_history:1 --profiling_gpu_metrics:0
--profiling_ranks:1 --nsys_trace:1 --nsys_extra_args:1 --use_tokendrop:1
--use_megatron_fsdp:1 --nccl_ub:1 --cuda_graph_impl:1 --cuda_graph_scope:1
--moe_a2a_overlap:1 -rl --recompute_num_layers:1 -ol --activation_offload_layers:1
--recompute_modules:1 --moe_flex_dispatcher_backend:1 --deterministic:0 -wdk --wandb_key:1
-wdp --wandb_project_name:1 -wde --wandb_entity_name:1 -wdj --wandb_experiment_name:1 -wds
--wandb_save_dir:1 -l --log_dir:1 --save_config_filepath:1 --dump_env:0 -cv
--config_variant:1 --list_config_variants:0 --is_long_convergence_run:0
--retry_on_testing_failure:0 --golden_values_path:1 --timing_threshold:1
--skip_first_percent_time:1 --correlation_threshold:1 --high_loss_tolerance:1
--medium_loss_tolerance:1 --low_loss_tolerance:1 --final_loss_tolerance:1
--max_outlier_ratio:1 --outlier_threshold:1 --skip_first_percent_loss:1 --memory_threshold:1
--eval_time_start_step:1 --eval_time_end_step:1
"""


def _perf_table() -> dict[str, tuple[str, str]]:
    """Option -> (dest, values) from _PERF_SPEC."""
    out: dict[str, tuple[str, str]] = {}
    names: list[str] = []
    for token in _PERF_SPEC.split():
        if ":" not in token:
            names.append(token)
            continue
        last, values = token.split(":")
        names.append(last)
        dest = max(names, key=len).lstrip("-")
        for name in names:
            out[name] = (dest, values)
        names = []
    return out


_PERF = _perf_table()

#: Perf options that change no config field moe-lint reads (the job, its logging and
#: profiling, the perf tests, the checkpoint paths and learning rate).
_PERF_JOB_ONLY = {
    "domain", "model_family_name", "model_recipe_name", "nemo_home", "detach", "max_retries",
    "num_gpus", "dryrun", "task", "hf_token", "offline", "account", "partition", "time_limit",
    "preempt_time", "gpus_per_node", "container_image", "custom_mounts", "custom_env_vars",
    "env", "custom_srun_args", "custom_bash_cmds", "gres", "additional_slurm_params",
    "packager", "enable_pct_binding", "gpu", "compute_dtype", "config_variant", "log_dir", "lr",
    "min_lr", "warmup_iters", "pretrained_checkpoint", "save_dir", "load_dir", "save_interval",
    "most_recent_k", "distributed_timeout_minutes", "enable_vboost", "lock_gpu_freq",
    "peak_mem_clk", "enable_nsys", "export_nsys_sqlite", "pytorch_profiler",
    "profiling_start_step", "profiling_stop_step", "record_memory_history",
    "profiling_gpu_metrics", "profiling_ranks", "nsys_trace", "nsys_extra_args", "wandb_key",
    "wandb_project_name", "wandb_entity_name", "wandb_experiment_name", "wandb_save_dir",
    "save_config_filepath", "dump_env", "list_config_variants", "is_long_convergence_run",
    "retry_on_testing_failure", "golden_values_path", "timing_threshold",
    "skip_first_percent_time", "correlation_threshold", "high_loss_tolerance",
    "medium_loss_tolerance", "low_loss_tolerance", "final_loss_tolerance", "max_outlier_ratio",
    "outlier_threshold", "skip_first_percent_loss", "memory_threshold", "eval_time_start_step",
    "eval_time_end_step", "c4_root", "c4_train_shards", "dataset_paths", "dataset_root",
    "index_mapping_dir", "dataset_name", "diffusion_dataset_path", "tokenizer_type",
    "tokenizer_model", "vocab_size",
    "kubeflow_namespace", "csp",
} | {d for d, _ in _PERF.values() if d.startswith("kubeflow_")}  # fmt: skip

#: Perf options set_user_overrides writes straight onto a field.
_PERF_FIELDS = {
    "max_steps": "train.train_iters",
    "tensor_model_parallel_size": "model.tensor_model_parallel_size",
    "pipeline_model_parallel_size": "model.pipeline_model_parallel_size",
    "context_parallel_size": "model.context_parallel_size",
    "virtual_pipeline_model_parallel_size": "model.virtual_pipeline_model_parallel_size",
    "expert_model_parallel_size": "model.expert_model_parallel_size",
    "expert_tensor_parallel_size": "model.expert_tensor_parallel_size",
    "global_batch_size": "train.global_batch_size",
    "micro_batch_size": "train.micro_batch_size",
    "seq_length": "model.seq_length",
}

#: utils/utils.py::_normalize_precision_name: the compute dtype's name in a recipe name.
_PERF_PRECISION = {
    "bf16": "bf16",
    "fp8_cs": "fp8cs",
    "fp8_mx": "fp8mx",
    "fp8_sc": "fp8sc",
    "nvfp4": "nvfp4",
    "fp8cs": "fp8cs",
    "fp8mx": "fp8mx",
    "fp8sc": "fp8sc",
}


# --- reading the commands -----------------------------------------------------------------


class Entry(NamedTuple):
    """One command that runs a Python script: the script, its arguments, the words before it
    (``srun ... torchrun --nproc_per_node 8``) and what kind of Bridge command it is."""

    kind: str  # "recipe", "setup", "perf", "skip" or "other"
    script: Any  # mlm_args._PStr
    args: list[Any]
    launcher: list[Any]
    why: str = ""


#: The longest ``bash -c`` string read as a command (real ones are a few kilobytes; a longer
#: one is left as one unread word: a 4 MB string read again cost 330 MB of positions).
_MAX_INNER_COMMAND = 65_536


def _unnest(words: list[Any], depth: int = 0,
            unknown: dict[str, Any] | None = None) -> list[list[Any]]:  # fmt: skip
    """A command's words with ``bash -c "<command>"`` read inside its string: the string
    (the command the script built in a variable) is read again by ShellReader, each of its
    commands after the words before ``bash -c`` (``srun ...``), positions kept. A value the
    script could not know is written ``$NAME`` in the string; ``unknown`` (the script's
    unknown variables) gives the inner read the same unknown, with what it may hold."""
    for k in range(len(words) - 2):
        if words[k].text not in ("bash", "sh") or depth >= 4:
            continue
        j = k + 1
        runs = False
        while j < len(words) and re.fullmatch(r"-[a-zA-Z]+", words[j].text):
            runs = runs or "c" in words[j].text  # -c, -lc, -ec: the next word is run
            j += 1
        if runs and j < len(words) and len(words[j].text) <= _MAX_INNER_COMMAND:
            outer = words[j]
            inner = mlm_args.ShellReader(outer.text)
            inner.vars.update(unknown or {})
            try:
                inner.run()
            except (InputError, RecursionError):
                return [words]
            out: list[list[Any]] = []
            for command in inner.commands:
                mapped = [_mapped(w, outer) for w in command.words]
                out.extend(words[:k] + nested for nested in _unnest(mapped, depth + 1, unknown))
            return out or [words]
    return [words]


def _mapped(word: Any, outer: Any) -> Any:
    """A word read from inside ``outer``'s text, with ``outer``'s source positions: a
    character the inner read could not know, or one of ``outer``'s that the script could not
    (``$TP`` set by a ``read`` at run time), stays unknown."""
    unknown = UNKNOWN_AT
    idx = [outer.idx[i] if 0 <= i < len(outer.idx) else (unknown if i == unknown else -1)
           for i in word.idx]  # fmt: skip
    out = type(word)(word.text, idx)
    inner_unknown = unknown in word.idx
    from_outer = any(0 <= i < len(outer.idx) and outer.idx[i] == unknown for i in word.idx)
    if out.unresolved:
        out.maybe = word.maybe + outer.maybe if from_outer else word.maybe
        if from_outer and not inner_unknown:
            out.hidden = outer.hidden
        elif inner_unknown and not from_outer:
            out.hidden = word.hidden
    return out


def _classify(script: str, args: list[Any]) -> tuple[str, str]:
    """What a script is, by its path (and, for run_recipe.py, its arguments). A "path" past
    Linux's PATH_MAX (4,096) names no file Python could run: "other", before the patterns
    (each a search over the word; on a 100 KB word they took 10 s)."""
    if len(script) > 4096:
        return "other", ""
    name = script.rsplit("/", 1)[-1]
    words = {a.text.split("=", 1)[0] for a in args}
    performance = "performance/" in script
    if (
        name == "run_recipe.py"
        and not performance
        and ("training/" in script or words & {"--recipe", "--model"})
    ):
        return "recipe", ""
    if name in ("run_script.py", "bootstrap.py", "run_recipe.py") and (
        performance or words & {"-mr", "--model_recipe_name", "--model_family_name"}
    ):
        return "perf", ""
    if name == "setup_experiment.py":
        if performance or words & {"-mr", "--model_recipe_name", "--model_family_name", "-ng"}:
            return "perf", ""
        return "setup", ""
    if name == "launch_with_nemo_run.py":
        return "skip", "a NeMo-Run launcher (scripts/training/launch_with_nemo_run.py)"
    for pattern, what in _NOT_TRAINING:
        if re.search(pattern, script):
            return "skip", f"{what} ({name})"
    if _OWN_CONFIG.search(script):
        return "skip", f"a training script that builds its config in Python ({name})"
    return "other", ""


def entries(reader: mlm_args.ShellReader) -> list[Entry]:
    """Every command of the script that runs a Python script (or a Bridge shell launcher)."""
    out: list[Entry] = []
    unknown = {n: v for n, v in reader.vars.items()
               if isinstance(v, _PStr) and v.unresolved and v.text == "$" + n}  # fmt: skip
    for command in reader.commands:
        for words in _unnest(list(command.words), 0, unknown):
            entry = _entry(words)
            if entry is not None:
                out.append(entry)
    return out


def _entry(words: list[Any]) -> Entry | None:
    if not words or words[0].text in _SKIP_WORDS:
        return None
    for k, word in enumerate(words):
        text = word.text
        if k > 0 and words[k - 1].text == "-m":
            if text in _LAUNCHER_MODULES:
                continue
            kind, why = _classify(text.replace(".", "/") + ".py", words[k + 1 :])
            return Entry(kind, word, words[k + 1 :], words[:k], why)
        if text.endswith(".py") or (
            text.endswith(".sh") and (k == 0 or words[k - 1].text in ("bash", "sh", "exec"))
        ):
            kind, why = _classify(text, words[k + 1 :])
            if text.endswith("/train.sh") or text == "train.sh":
                kind, why = "setup", ""
            return Entry(kind, word, words[k + 1 :], words[:k], why)
    return None


# --- positions ------------------------------------------------------------------------------


class _Where:
    """Character index -> Pos for one text."""

    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def pos(self, index: int) -> Pos:
        line = bisect.bisect_right(self.starts, index) - 1
        return Pos(line + 1, index - self.starts[line] + 1, index)

    def span(self, word: Any, cut: int | None = None) -> Span | None:
        """The span of a word written in the file (its ``key=`` part as the key when ``cut``
        is the index of the ``=``); None when it is not written there as one run."""
        idx = word.idx
        first, last = _known_ends(idx, 0, len(idx))
        if first is None or last is None:
            return None
        start, end = self.pos(first), self.pos(last + 1)
        if cut is None:
            return Span(start, end, start, end, False)
        _, key_last = _known_ends(idx, 0, cut)
        value_first, value_last = _known_ends(idx, cut + 1, len(idx))
        key_end = self.pos(key_last + 1) if key_last is not None else end
        if value_first is not None and value_last is not None:
            return Span(start, key_end, self.pos(value_first), self.pos(value_last + 1), False)
        return Span(start, key_end, start, key_end, False)


def _known_ends(idx: Any, lo: int, hi: int) -> tuple[int | None, int | None]:
    """The first and last source index (>= 0) of ``idx[lo:hi]``, scanning in from each end
    (a list of every known index of a 4 MB word cost 150 MB)."""
    first = next((idx[k] for k in range(lo, hi) if idx[k] >= 0), None)
    if first is None:
        return None, None
    last = next(idx[k] for k in range(hi - 1, lo - 1, -1) if idx[k] >= 0)
    return first, last


# --- branches ----------------------------------------------------------------------------------


class _Context:
    """One script's text positions, and the command being read.

    The shell reader decides an ``if`` / ``case`` from the script's own values where it can
    and runs only the arm bash runs; where it cannot, a variable the arms set differently is
    unknown, with no hidden part (``hidden`` False: it stands only for what the arms wrote).
    """

    def __init__(self, text: str, command: Any) -> None:
        self.where = _Where(text)
        self.command = command

    def off(self, word: Any) -> bool:
        """The word's value is chosen by if/case arms the script cannot decide."""
        return bool(word.unresolved and not word.hidden)


# --- the launch ------------------------------------------------------------------------------


@record
class Launch:
    """A Bridge launch as moe-lint lints it: the recipe, the overrides after it (in order), what
    is unknown, and what run_recipe.py does after the overrides (:meth:`after_overrides`)."""

    recipe: str
    function: str
    kind: str  # "library" or "benchmark"
    #: "pretrain" or "finetune" (run_recipe.py::_train_mode of --mode or the recipe's name).
    mode: str | None
    overrides: list[Override] = field(default_factory=list)
    #: Dotted field or section -> why the recipe's value is not known (an override of the
    #: field gives it).
    unknown: dict[str, str] = field(default_factory=dict)
    #: Dotted field -> why the script's own setting is not known (a value computed at run time,
    #: an override in a branch that may not run): unknown whatever the recipe says, unless a
    #: later override (of the script or moe-lint's command line) sets it.
    unread: dict[str, str] = field(default_factory=dict)
    #: The recipe's own values of the parallel sizes (a benchmark recipe's canonical layout).
    canonical: dict[str, Any] = field(default_factory=dict)
    world: int | None = None
    #: The launcher: "run_recipe" (scripts/training) or "perf" (scripts/performance).
    runner: str = "run_recipe"
    notes: list[str] = field(default_factory=list)

    def after_overrides(
        self, raw: dict[str, Any], overridden: set[str]
    ) -> list[tuple[str, str, bool]]:
        """Apply to ``raw`` (the recipe's values with every override in) what Bridge does after
        the overrides, and say which fields are unknown: (dotted, note, unknown) each."""
        out: list[tuple[str, str, bool]] = []
        tree = _Tree(raw)

        def given(dotted: str) -> bool:
            return any(dotted == o or dotted.startswith(o + ".") for o in overridden)

        for dotted, why in self.unknown.items():
            for leaf in _leaves(dotted):
                if not given(leaf) and not tree.has(leaf):
                    out.append((leaf, f"{self._who()}: {why}", True))
        mine = {".".join(str(p) for p in o.path) for o in self.overrides}
        later = {o for o in overridden if o not in mine}  # moe-lint's own command line
        for dotted, why in self.unread.items():
            for leaf in _leaves(dotted):
                if not any(leaf == o or leaf.startswith(o + ".") for o in later):
                    out.append((leaf, f"the script's {why}", True))
        unknown = {d for d, _, u in out if u}
        if self.runner == "run_recipe":
            out += _sync_pipeline_layout(tree, overridden)
            if self.kind == "benchmark":
                out += self._benchmark_defaults(tree, given, unknown)
            if self.mode == "finetune":
                out += _sync_finetuning_cp(tree, unknown)
            out += _sync_packing(tree, unknown)
            out += _sync_seq_length(tree, unknown)
        else:
            out += self._perf_after(tree, given, unknown)
        return out

    def _who(self) -> str:
        return f"recipe {self.recipe}"

    def _benchmark_defaults(
        self, tree: _Tree, given: Any, unknown: set[str]
    ) -> list[tuple[str, str, bool]]:
        """run_recipe.py::_apply_benchmark_runtime_defaults and _apply_benchmark_weak_scaling."""
        out: list[tuple[str, str, bool]] = []
        meta = bridge_recipes.lookup(self.recipe)
        bench = meta.benchmark if meta is not None else None
        if bench is None:
            return out
        paw = "optimizer.use_precision_aware_optimizer"
        if bench["precision"] == "bf16" and not given(paw):
            opt, known = tree.get("optimizer.optimizer", unknown)
            if not known:
                out.append(
                    (
                        paw,
                        "run_recipe.py turns it on for a BF16 Adam benchmark; the "
                        "optimizer is not known",
                        True,
                    )
                )
            elif opt == "adam":
                tree.set(paw, True)
                out.append(
                    (
                        paw,
                        "true: run_recipe.py::_apply_benchmark_runtime_defaults (BF16 "
                        "benchmark recipe, Adam)",
                        False,
                    )
                )
        gbs = "train.global_batch_size"
        if given(gbs):
            return out
        scaled = self._weak_scaled(tree, unknown, bench["num_gpus"])
        if isinstance(scaled, str):
            out.append((gbs, scaled, True))
        elif scaled is not None:
            tree.set(gbs, scaled)
            out.append(
                (
                    gbs,
                    f"{scaled}: run_recipe.py::_apply_benchmark_weak_scaling keeps the "
                    f"samples per data-parallel rank of the recipe's {bench['num_gpus']} "
                    "GPUs",
                    False,
                )
            )
        return out

    def _weak_scaled(self, tree: _Tree, unknown: set[str], num_gpus: int) -> int | str | None:
        """The benchmark GBS on this world (None: unchanged; str: why it is not known)."""
        if self.world is None:
            return (
                "run_recipe.py weak-scales a benchmark recipe's batch to the world size, "
                "which the script does not give"
            )
        sizes = {}
        for key in (
            "tensor_model_parallel_size",
            "pipeline_model_parallel_size",
            "context_parallel_size",
        ):
            value, known = tree.get(f"model.{key}", unknown)
            canon = self.canonical.get(key, 1)
            if not known or not isinstance(value, int) or not isinstance(canon, int):
                return "the parallel sizes that weak-scale the batch are not known"
            sizes[key] = (canon, value)
        base_gbs, known = self.canonical.get("global_batch_size"), True
        if not isinstance(base_gbs, int):
            return "the recipe's global batch size is not known"
        canon_dense = math.prod(c for c, _ in sizes.values())
        dense = math.prod(v for _, v in sizes.values())
        if num_gpus % canon_dense or self.world % dense or dense <= 0:
            return None  # Bridge raises on the world (data_parallel_size); other rules say so
        base_dp, dp = num_gpus // canon_dense, self.world // dense
        if base_dp == dp:
            return None
        if (base_gbs * dp) % base_dp:
            return (
                f"run_recipe.py stops: weak scaling GBS {base_gbs} from DP {base_dp} to DP "
                f"{dp} does not give an integer batch"
            )
        return base_gbs * dp // base_dp

    def _perf_after(
        self, tree: _Tree, given: Any, unknown: set[str]
    ) -> list[tuple[str, str, bool]]:
        """scripts/performance: run_script.py::_run_training turns the precision-aware
        optimizer on for a BF16 Adam run; utils/overrides.py::set_user_overrides sets
        sequence parallelism with TP."""
        out: list[tuple[str, str, bool]] = []
        meta = bridge_recipes.lookup(self.recipe)
        bench = meta.benchmark if meta is not None else None
        paw = "optimizer.use_precision_aware_optimizer"
        if bench is not None and bench["precision"] == "bf16":
            opt, known = tree.get("optimizer.optimizer", unknown)
            if not known:
                out.append(
                    (
                        paw,
                        "run_script.py turns it on for BF16 Adam; the optimizer is not known",
                        True,
                    )
                )
            elif opt == "adam":
                tree.set(paw, True)
                out.append((paw, "true: run_script.py (BF16 compute dtype, Adam)", False))
        return out


def _leaves(dotted: str) -> list[str]:
    """A field, or every field of a section (and, for mixed_precision, the model precision
    fields it sets)."""
    section = fields.section(dotted)
    if not section:
        return [dotted]
    out = [f"{dotted}.{k}" for k in section]
    if dotted == "mixed_precision":  # it sets the model fields it shares (see recipe_data)
        model = fields.section("model")
        out += [f"model.{k}" for k in MP_DEFAULTS if k in model]
    return out


class _Tree:
    """Dotted access to the raw config tree."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw

    def has(self, dotted: str) -> bool:
        node: Any = self.raw
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
        return True

    def get(self, dotted: str, unknown: set[str]) -> tuple[Any, bool]:
        """(value, True) when the value is known; (None, False) when it is not. A field no one
        set has Bridge's default (fields.default), unknown when a recipe decides it."""
        node: Any = self.raw
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                if dotted in unknown:
                    return None, False
                default = fields.default(dotted)
                return (None, False) if default is fields.UNKNOWN else (default, True)
            node = node[part]
        return node, True

    def set(self, dotted: str, value: Any) -> None:
        node = self.raw
        parts = dotted.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[parts[-1]] = value


def _sync_pipeline_layout(tree: _Tree, overridden: set[str]) -> list[tuple[str, str, bool]]:
    """recipe_runner.py::sync_model_pipeline_layout: a PP or VP override rebuilds a layout the
    recipe computes (its builder is not a config field, so the new layout is not known)."""
    layout = "model.pipeline_model_parallel_layout"
    topology = {"model.pipeline_model_parallel_size", "model.virtual_pipeline_model_parallel_size"}
    if not (topology & overridden) or layout in overridden:
        return []
    value, known = tree.get(layout, set())
    if known and value is None:
        return []  # no layout set: the recipe has no layout to rebuild either way
    return [
        (
            layout,
            "run_recipe.py rebuilds the recipe's pipeline layout for the overridden "
            "PP/VP (recipe_runner.py::sync_model_pipeline_layout)",
            True,
        )
    ]


def _cp_sizes(tree: _Tree, unknown: set[str]) -> list[Any] | None:
    sizes = []
    for dotted in ("model.context_parallel_size", "dist.eval_context_parallel_size"):
        value, known = tree.get(dotted, unknown)
        if not known:
            return None
        if value is not None:
            sizes.append(value)
    return sizes


def _sync_finetuning_cp(tree: _Tree, unknown: set[str]) -> list[tuple[str, str, bool]]:
    """recipe_runner.py::sync_finetuning_cp_invariants: SFT on a finetuning dataset with CP > 1
    computes the loss per token and does not average in the collective."""
    targets = (("model.calculate_per_token_loss", True), ("ddp.average_in_collective", False))
    sizes = _cp_sizes(tree, unknown)
    finetuning = tree.has("dataset.enable_offline_packing") or tree.has(
        "dataset.enable_in_batch_packing"
    )
    if sizes is not None and not any(isinstance(s, int) and s > 1 for s in sizes):
        return []
    if sizes is None or not finetuning or not all(isinstance(s, int) for s in sizes):
        why = (
            "run_recipe.py sets it for SFT with context parallelism; CP or the dataset is not known"
        )
        return [(d, why, True) for d, _ in targets]
    out = []
    for dotted, value in targets:
        tree.set(dotted, value)
        out.append(
            (
                dotted,
                f"{json.dumps(value)}: run_recipe.py (SFT with context parallelism, "
                "recipe_runner.py::sync_finetuning_cp_invariants)",
                False,
            )
        )
    return out


def _sync_packing(tree: _Tree, unknown: set[str]) -> list[tuple[str, str, bool]]:
    """recipe_runner.py::sync_offline_packing_alignment: offline packing takes the dataset's
    sequence length as its packed size and pads to a multiple of 2·CP (and of CP·TP with
    sequence parallelism), for the training and the evaluation CP size."""
    enabled, known = tree.get("dataset.enable_offline_packing", unknown)
    if known and not enabled:
        return []
    size_key = "dataset.offline_packing_specs.packed_sequence_size"
    pad_key = "dataset.offline_packing_specs.pad_seq_to_mult"
    where = "(recipe_runner.py::sync_offline_packing_alignment)"
    seq, seq_known = tree.get("dataset.seq_length", unknown)
    sizes = _cp_sizes(tree, unknown)
    tp, tp_known = tree.get("model.tensor_model_parallel_size", unknown)
    sp, sp_known = tree.get("model.sequence_parallel", unknown)
    pad, pad_known = tree.get(pad_key, unknown)
    out: list[tuple[str, str, bool]] = []
    if not known:
        why = "run_recipe.py realigns offline packing, which the recipe may not enable"
        return [(size_key, why, True), (pad_key, why, True)]
    if seq_known and isinstance(seq, int):
        tree.set(size_key, seq)
        out.append((size_key, f"{seq}: the dataset's sequence length {where}", False))
    elif not seq_known:
        out.append(
            (
                size_key,
                "run_recipe.py sets it to the dataset's sequence length, which is not known",
                True,
            )
        )
    cp = [s for s in sizes or [] if isinstance(s, int)]
    if (
        sizes is None
        or len(cp) != len(sizes)
        or not (tp_known and isinstance(tp, int))
        or not sp_known
        or not pad_known
        or not isinstance(pad or 1, int)
    ):
        out.append(
            (
                pad_key,
                "run_recipe.py pads packing to the final CP/TP layout, which is not known",
                True,
            )
        )
        return out
    multiples = [2 * s if s > 1 else 1 for s in cp]
    multiples += [s * tp if sp and tp > 1 else 1 for s in cp]
    value = math.lcm(pad or 1, *multiples)
    tree.set(pad_key, value)
    out.append((pad_key, f"{value}: padded to the final CP/TP layout {where}", False))
    return out


def _sync_seq_length(tree: _Tree, unknown: set[str]) -> list[tuple[str, str, bool]]:
    """recipe_runner.py::sync_model_dataset_sequence_length: the model takes the dataset's
    sequence length."""
    seq, known = None, False
    for key in ("dataset.seq_length", "dataset.sequence_length"):
        value, found = tree.get(key, unknown)
        if found and value is not None:
            seq, known = value, True
            break
        if not found and tree.has("dataset") is False:
            break
    target = "model.seq_length"
    if not known:
        if "dataset.seq_length" in unknown or not tree.has("dataset.seq_length"):
            return [
                (
                    target,
                    "run_recipe.py gives the model the dataset's sequence length, "
                    "which is not known",
                    True,
                )
            ]
        return []
    current, have = tree.get(target, unknown)
    tree.set(target, seq)
    if have and current == seq:
        return []
    return [
        (
            target,
            f"{seq}: run_recipe.py gives the model the dataset's sequence length "
            "(recipe_runner.py::sync_model_dataset_sequence_length)",
            False,
        )
    ]


# --- the document -----------------------------------------------------------------------------


def document(text: str, path: str, had_bom: bool = False) -> LaunchRead | None:
    """The Document of a Bridge launch script, or None when ``text`` is not one (it is then
    read as a Megatron-LM script)."""
    if not _MARKER.search(text.lower()):
        return None
    reader = mlm_args.read_shell(text)
    found = entries(reader)
    training = [e for e in found if e.kind in ("recipe", "setup", "perf")]
    if not training:
        if mlm_args.find_launch(reader) is not None:
            return None  # a Megatron-LM training command: the Megatron-LM reader's
        skips = sorted({e.why for e in found if e.kind == "skip"})
        if skips:
            return _skipped(
                path,
                text,
                had_bom,
                "a Megatron Bridge script that does not train: " + "; ".join(skips),
            )
        return _skipped(
            path,
            text,
            had_bom,
            "a Megatron Bridge script with no training command "
            "moe-lint reads (run_recipe.py, setup_experiment.py, the performance "
            "launchers)",
        )
    entry = training[0]
    ctx = _Context(text, entry.script)
    launch_doc = _read(entry, text, path, had_bom, ctx)
    if len(training) > 1 and launch_doc.launch is not None:
        launch_doc.launch.notes.append(
            f"{len(training)} training commands in the script: the first (line "
            f"{_line(ctx.where, entry.script)}) is linted"
        )
    return launch_doc


def _line(where: _Where, word: Any) -> int:
    first, _ = _known_ends(word.idx, 0, len(word.idx))
    return where.pos(first).line if first is not None else 1


@record
class LaunchRead:
    """What the reader makes of a Bridge launch script; config/load.py::launch_document makes
    the Document of it (form "bridge-launch", skipped when ``skip`` says why)."""

    path: str
    text: str
    had_bom: bool
    data: dict[str, Any] = field(default_factory=dict)
    spans: dict[Any, Span] = field(default_factory=dict)
    skip: str | None = None
    #: The launcher's world (``gpus-per-node``, ``nodes`` or ``gpus``) and the recipe's model
    #: preset (``model``), as settings keys.
    launcher: dict[str, str] = field(default_factory=dict)
    launch: Launch | None = None
    form: str = FORM


def _skipped(path: str, text: str, had_bom: bool, why: str) -> LaunchRead:
    return LaunchRead(path, text, had_bom, skip=why)


def _read(entry: Entry, text: str, path: str, had_bom: bool, ctx: _Context) -> LaunchRead:
    where = ctx.where
    if entry.kind == "perf":
        return _perf_document(entry, text, path, had_bom, ctx)
    args = list(entry.args)
    world: dict[str, str] = {}
    if entry.kind == "setup":
        args, world = _setup_args(args, ctx)
        if args and all(a.unresolved for a in args):
            return _skipped(
                path,
                text,
                had_bom,
                "a Megatron Bridge launcher whose arguments "
                "come from its own command line ($@): nothing to read",
            )
    else:
        world = _launcher_world(entry.launcher, text, ctx)
    parsed = _run_recipe_args(_arguments(args, text))
    stops = [n for n in parsed.notes if n.startswith("run_recipe.py stops")]
    if stops:
        return _skipped(path, text, had_bom, stops[0] + ": the config is never built")
    name_word = parsed.values.get("recipe")
    if name_word is None and parsed.values.get("model") is not None:
        mode = parsed.values.get("mode")
        if mode is None or mode.unresolved or name_word is not None:
            return _skipped(
                path,
                text,
                had_bom,
                "run_recipe.py --model needs --mode to name "
                "its recipe, and the script gives none moe-lint can read",
            )
        stem = parsed.values["model"]
        recipe_name = f"{stem.text}_{_task(mode.text)}_config"
        unresolved = stem.unresolved
        anchor = parsed.options.get("model", stem)
    elif name_word is not None:
        recipe_name, unresolved = name_word.text, name_word.unresolved
        anchor = parsed.options.get("recipe", name_word)
    else:
        return _skipped(
            path,
            text,
            had_bom,
            "run_recipe.py is run without --recipe or --model that moe-lint can read",
        )
    if ctx.off(name_word if name_word is not None else parsed.values["model"]):
        return _skipped(
            path,
            text,
            had_bom,
            f"the recipe ({bounded_repr(recipe_name)} as read) "
            "is chosen by an if/case branch of the script: moe-lint cannot tell "
            "which recipe runs",
        )
    if unresolved:
        return _skipped(
            path,
            text,
            had_bom,
            f"the recipe name {bounded_repr(recipe_name)} is "
            "computed when the script runs: moe-lint cannot tell which recipe it is",
        )
    recipe = bridge_recipes.lookup(recipe_name)
    if recipe is None:
        return _skipped(path, text, had_bom, _unknown_recipe(recipe_name))
    family = _UNMODELLED.get(str((recipe.model or {}).get("hf")))
    if family is not None:
        return _skipped(
            path, text, had_bom, f"recipe {recipe_name} trains {family}: " + _UNMODELLED_WHY
        )
    mode_word = parsed.values.get("mode")
    mode = mode_word.text if mode_word is not None and not mode_word.unresolved else None
    if mode is None:
        mode = _infer_mode(recipe_name)
    launch = Launch(
        recipe_name, recipe.function, recipe.kind, None if mode is None else _train_mode(mode)
    )
    launch.unknown.update(recipe.unknown)
    launch.notes += parsed.notes
    launch.canonical = {
        k.split(".", 1)[1]: v
        for k, v in recipe.values.items()
        if k
        in (
            "model.tensor_model_parallel_size",
            "model.pipeline_model_parallel_size",
            "model.context_parallel_size",
        )
    }
    launch.canonical["global_batch_size"] = recipe.values.get("train.global_batch_size")
    if mode is None:
        launch.notes.append(
            "the training mode is not known (no --mode, and the recipe's name does not say)"
        )
    data = recipe_data(recipe)
    spans = _recipe_spans(data, where.span(anchor))
    bench = recipe.benchmark
    if bench is not None and bench["task"] in ("sft", "peft") and _text_step(recipe_name):
        data.pop("dataset", None)
        launch.unknown["dataset"] = (
            "run_recipe.py gives a text finetuning benchmark a mock "
            "dataset (_apply_benchmark_dataset_defaults)"
        )
    if parsed.values.get("dataset") is not None:
        launch.unknown["dataset"] = (
            f"--dataset {parsed.values['dataset'].text} replaces the "
            "recipe's dataset (build_dataset_config)"
        )
        data.pop("dataset", None)
    if parsed.flags.get("deterministic"):
        _deterministic(data)
    for word, cut, override_text in parsed.overrides:
        _add_override(launch, word, cut, override_text, ctx, spans)
    document = _document(path, text, had_bom, data, spans, launch, world, recipe)
    return document


def recipe_data(recipe: bridge_recipes.Recipe) -> dict[str, Any]:
    """The recipe's values as a config tree. With a mixed-precision config, the model fields it
    shares are its values (training/mixed_precision.py::update_config_with_precision_overrides
    sets each one), so the recipe's own values of them are not the run's and are left out."""
    data = recipe.data()
    if "mixed_precision" in recipe.unknown:
        return data
    if recipe.mixed_precision or isinstance(data.get("mixed_precision"), dict):
        data.setdefault("mixed_precision", {})
        model = data.get("model")
        if isinstance(model, dict):
            for key in MP_DEFAULTS:
                model.pop(key, None)
    return data


def _unknown_recipe(name: str) -> str:
    why = bridge_recipes.unreadable(name)
    if why is not None:
        return f"recipe {bounded_repr(name)} of {bridge_recipes.release()} cannot be read: {why}"
    return (
        f"recipe {bounded_repr(name)} is not a recipe of {bridge_recipes.release()} (the "
        "release moe-lint knows): nothing checked"
    )


#: recipe_metadata.py::RECIPE_FORWARD_STEP_PREFIXES (v0.6.0): recipes whose default forward
#: step is not the text one (llm_step).
_NON_TEXT_STEP_PREFIXES = (
    "nemotron_nano_v2_vl_", "nemotron_omni_", "qwen2_audio_", "qwen3_omni_", "qwen3_vl_",
    "qwen35_vl_", "step37_", "gemma3_vl_", "gemma4_vl_", "glm_45v_", "kimi_k25_vl_",
    "ministral3_", "qwen25_vl_", "flux_", "wan_",
)  # fmt: skip


def _text_step(name: str) -> bool:
    """recipe_metadata.py::recipe_step gives the recipe the text forward step (llm_step)."""
    return not name.startswith(_NON_TEXT_STEP_PREFIXES)


def _task(mode: str) -> str:
    """recipe_metadata.py::recipe_task."""
    return "peft" if mode in ("lora", "dora") else mode


def _train_mode(mode: str) -> str:
    """run_recipe.py::_train_mode."""
    return "pretrain" if mode == "pretrain" else "finetune"


def _infer_mode(name: str) -> str | None:
    """recipe_metadata.py::infer_recipe_mode."""
    normalized = f"_{name.lower().strip('_')}_"
    if "_pretrain_" in normalized:
        return "pretrain"
    if "_sft_" in normalized or "_finetune_" in normalized:
        return "sft"
    if "_dora_" in normalized:
        return "dora"
    if "_peft_" in normalized or "_lora_" in normalized:
        return "lora"
    return None


def _deterministic(data: dict[str, Any]) -> None:
    """recipes/utils/determinism_utils.py::apply_determinism_overrides (--deterministic)."""
    model = data.setdefault("model", {})
    model["deterministic_mode"] = True
    model["cross_entropy_loss_fusion"] = False
    env = data.setdefault("env_vars", {})
    if isinstance(env, dict):
        env.update(
            {
                "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
                "NCCL_ALGO": "Ring",
                "NVTE_ALLOW_NONDETERMINISTIC_ALGO": 0,
            }
        )
    if isinstance(data.get("comm_overlap"), dict):
        data["comm_overlap"]["tp_comm_overlap"] = False


def _recipe_spans(data: dict[str, Any], anchor: Span | None) -> dict[Any, Span]:
    """Every value the recipe sets points at the recipe's name in the script."""
    spans: dict[Any, Span] = {}
    if anchor is None:
        return spans

    def walk(node: Any, path: tuple[str, ...]) -> None:
        spans[path] = anchor
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, (*path, key))

    for key, value in data.items():
        walk(value, (key,))
    return spans


def _arguments(words: list[Any], text: str) -> list[Any]:
    """The words a program receives, without a redirection's file-descriptor number (``2`` of
    ``2>&1``). An empty word stays: it is an option's value (``--config_variant ""``); alone it
    is left out by the parsers (an empty ``"${ARRAY[@]}"`` passes no word)."""
    out = []
    for word in words:
        last = word.idx[-1] if word.idx else -1
        if word.text.isdigit() and 0 <= last < len(text) - 1 and text[last + 1] in "<>":
            continue
        out.append(word)
    return out


class _Parsed(NamedTuple):
    values: dict[str, Any]
    #: The option word of each value (``--recipe`` of ``--recipe NAME``): findings point there.
    options: dict[str, Any]
    flags: dict[str, bool]
    #: (word, index of its '=' or None, the override text) in command-line order
    overrides: list[tuple[Any, int | None, str]]
    notes: list[str]


def _run_recipe_args(args: list[Any]) -> _Parsed:
    """run_recipe.py::parse_args: its options, then the trailing KEY=VALUE overrides, with the
    convenience options' overrides first (as _common_config_overrides puts them)."""
    values: dict[str, Any] = {}
    options: dict[str, Any] = {}
    flags: dict[str, bool] = {}
    trailing: list[tuple[Any, int | None, str]] = []
    notes: list[str] = []
    k = 0
    while k < len(args):
        word = args[k]
        k += 1
        text = word.text
        name, eq, _ = text.partition("=")
        spec = _RUN_RECIPE.get(name) if text.startswith("-") else None
        if spec is not None:
            dest, takes, _ = spec
            if not takes:
                flags[dest] = True
                continue
            options[dest] = _sub(word, 0) if not eq else _head(word, len(name))
            if eq:
                values[dest] = _sub(word, len(name) + 1)
            elif k < len(args):
                values[dest] = args[k]
                k += 1
            continue
        if word.unresolved and not eq:
            how = ("is set differently by if/case arms the script cannot decide"
                   if not word.hidden else "is computed when the script runs")  # fmt: skip
            notes.append(f"{bounded_repr(text)} {how}: not read")
            continue
        if not text:
            notes.append("an empty word (from an empty array, or an empty argument): not read")
            continue
        if text.startswith("-"):
            notes.append(
                f"run_recipe.py stops at {bounded_repr(text)}: 'Unknown option' "
                "(_collect_overrides)"
            )
            continue
        if not eq:
            notes.append(
                f"run_recipe.py stops at {bounded_repr(text)}: 'Expected override in "
                "KEY=VALUE form' (_collect_overrides)"
            )
            continue
        trailing.append((word, len(name), text))
    common: list[tuple[Any, int | None, str]] = []
    for dest, target in COMMON_OVERRIDE_FIELDS:
        word = values.get(dest)
        if word is None:
            continue
        kind = _RUN_RECIPE["--" + dest][2] if "--" + dest in _RUN_RECIPE else "str"
        value = word.text
        if not word.unresolved and kind == "str":
            value = json.dumps(value)
        common.append((word, None, f"{target}={value}"))
    return _Parsed(values, options, flags, common + trailing, notes)


def _sub(word: Any, start: int) -> Any:
    """The part of a positioned word from ``start`` (``--recipe=NAME`` -> ``NAME``)."""
    return type(word)(word.text[start:], word.idx[start:], word.unresolved)


def _head(word: Any, end: int) -> Any:
    """The part of a positioned word before ``end`` (``--recipe=NAME`` -> ``--recipe``)."""
    return type(word)(word.text[:end], word.idx[:end], False)


def _add_override(
    launch: Launch,
    word: Any,
    cut: int | None,
    text: str,
    ctx: _Context,
    spans: dict[Any, Span],
) -> None:
    """One override of the script: parsed as Hydra reads it, located at its word."""
    span = ctx.where.span(word, cut)
    key = text.partition("=")[0].lstrip("+~")
    why = None
    if ctx.off(word):
        why = f"{bounded_repr(text)} is written in an if/case branch that may not run"
    elif word.unresolved:
        why = f"{bounded_repr(text)} has a value computed when the script runs"
    if why is None:
        try:
            override = parse_override(text)
        except InputError as exc:
            why = f"{bounded_repr(text)} is not an override moe-lint reads ({exc})"
    # A later setting of the key replaces an earlier one: drop what it replaces.
    launch.overrides = [o for o in launch.overrides if ".".join(map(str, o.path)) != key]
    launch.unread.pop(key, None)
    if why is not None:
        launch.unread[key] = why
        if span is not None and re.fullmatch(r"[\w.]+", key):
            spans[tuple(key.split("."))] = span
        return
    override = override._replace(span=span)
    launch.overrides.append(override)
    if span is not None and not override.delete:
        spans[tuple(str(p) for p in override.path)] = span


def _document(
    path: str,
    text: str,
    had_bom: bool,
    data: dict[str, Any],
    spans: dict[Any, Span],
    launch: Launch,
    world: dict[str, str],
    recipe: bridge_recipes.Recipe,
) -> LaunchRead:
    launcher = dict(world)
    if launcher.get("gpus-per-node") and launcher.get("nodes"):
        launch.world = int(launcher["gpus-per-node"]) * int(launcher["nodes"])
    hf = (recipe.model or {}).get("hf")
    if isinstance(hf, str):
        preset = preset_key(hf)
        if preset is not None:
            launcher["model"] = preset
        else:
            launch.notes.append(f"no moe-lint preset for {hf}: its architecture is not known")
    return LaunchRead(path, text, had_bom, data, spans, launcher=launcher, launch=launch)


# --- the world ------------------------------------------------------------------------------

_SBATCH = re.compile(
    r"^#SBATCH[ \t]+(-N|--nodes|--ntasks-per-node|--gpus-per-node|-n|--ntasks)"
    r"(?:=|[ \t]+)(\d+)\b",
    re.M,
)


def _launcher_world(words: list[Any], text: str, ctx: _Context) -> dict[str, str]:
    """The processes the launcher starts: torchrun's ``--nproc_per_node`` x ``--nnodes``;
    under srun with no torchrun, one process per task (``-N`` x ``--ntasks-per-node``, from
    srun's options or the script's ``#SBATCH`` lines). Empty when it is not known."""
    texts = [w.text for w in words]
    torchrun = any(t == "torchrun" or t.endswith("/torchrun") for t in texts) or any(
        m in texts for m in _LAUNCHER_MODULES
    )
    sbatch = {m.group(1): m.group(2) for m in _SBATCH.finditer(text)}
    srun = _options(
        words,
        {
            "-N": "nodes",
            "--nodes": "nodes",
            "--ntasks-per-node": "per",
            "-n": "tasks",
            "--ntasks": "tasks",
        },
        ctx,
    )
    nodes = srun.get("nodes") or sbatch.get("--nodes") or sbatch.get("-N")
    if torchrun:
        tr = _options(
            words, {"--nproc_per_node": "per", "--nproc-per-node": "per", "--nnodes": "nodes"}, ctx
        )
        per = tr.get("per")
        if per is None:
            return {}
        tr_nodes = tr.get("nodes")
        if tr_nodes is None and "--nnodes" not in " ".join(texts):
            tr_nodes = "1"  # torchrun's default
        if tr_nodes is None:
            tr_nodes = nodes
        return {"gpus-per-node": per, "nodes": tr_nodes} if tr_nodes else {}
    if not any(t == "srun" or t.endswith("/srun") for t in texts):
        return {}
    per = srun.get("per") or sbatch.get("--ntasks-per-node")
    tasks = srun.get("tasks") or sbatch.get("--ntasks") or sbatch.get("-n")
    if per and nodes:
        return {"gpus-per-node": per, "nodes": nodes}
    if tasks and not per:
        return {"gpus-per-node": tasks, "nodes": "1"} if nodes in (None, "1") else {}
    return {}


def _options(words: list[Any], names: dict[str, str], ctx: _Context) -> dict[str, str]:
    """Numeric values of the options ``names`` among ``words`` (``--x N`` or ``--x=N``);
    one computed at run time or written in a branch that may not run is left out."""
    out: dict[str, str] = {}
    for k, word in enumerate(words):
        name, eq, value = word.text.partition("=")
        if name not in names:
            continue
        if not eq:
            if k + 1 >= len(words):
                continue
            nxt = words[k + 1]
            if nxt.unresolved or ctx.off(nxt):
                continue
            value = nxt.text
        elif word.unresolved or ctx.off(word):
            continue
        if value.isdigit() and int(value) > 0:
            out[names[name]] = value
    return out


def _setup_args(args: list[Any], ctx: _Context) -> tuple[list[Any], dict[str, str]]:
    """scripts/training/setup_experiment.py: its own options out, the rest for run_recipe.py;
    the world is ``--nodes`` x ``--gpus-per-node`` (one task per GPU)."""
    rest: list[Any] = []
    mine: list[Any] = []
    k = 0
    while k < len(args):
        word = args[k]
        name = word.text.split("=", 1)[0]
        takes = _SETUP_EXPERIMENT.get(name)
        if takes is None:
            rest.append(word)
            k += 1
            continue
        mine.append(word)
        if takes and "=" not in word.text and k + 1 < len(args):
            mine.append(args[k + 1])
            k += 1
        k += 1
    found = _options(
        mine, {"--nodes": "nodes", "--gpus-per-node": "per", "--gpus_per_node": "per"}, ctx
    )
    nodes = (
        found.get("nodes", "1")
        if not any(w.text.startswith("--nodes") for w in mine) or "nodes" in found
        else None
    )
    world = {"gpus-per-node": found["per"], "nodes": nodes} if "per" in found and nodes else {}
    return rest, world


# --- the performance launchers ----------------------------------------------------------------


def _perf_args(args: list[Any]) -> tuple[dict[str, Any], list[tuple[Any, int, str]], list[str]]:
    """parse_known_args over _PERF: option values (True for a switch), the other ``KEY=VALUE``
    words (Hydra overrides) and notes on what is not read."""
    values: dict[str, Any] = {}
    trailing: list[tuple[Any, int, str]] = []
    notes: list[str] = []
    k = 0
    while k < len(args):
        word = args[k]
        k += 1
        name, eq, _ = word.text.partition("=")
        spec = _PERF.get(name) if word.text.startswith("-") else None
        if spec is not None:
            dest, takes = spec
            if takes == "0":
                values[dest] = True
            elif eq:
                values[dest] = _sub(word, len(name) + 1)
            elif k < len(args) and (takes in ("1", "+") or not args[k].text.startswith("-")):
                values[dest] = args[k]
                k += 1
            elif takes == "?":
                values[dest] = True
            if takes in ("*", "+"):
                while k < len(args) and not args[k].text.startswith("-"):
                    k += 1
            continue
        if word.text.startswith("-"):
            notes.append(
                f"{bounded_repr(word.text)} is not an option of the performance "
                "launcher (passed on to Hydra)"
            )
            continue
        if eq and not word.unresolved:
            trailing.append((word, len(name), word.text))
        elif word.unresolved:
            notes.append(f"{bounded_repr(word.text)} is computed when the script runs: not read")
    return values, trailing, notes


def _perf_document(entry: Entry, text: str, path: str, had_bom: bool, ctx: _Context) -> LaunchRead:
    """scripts/performance: the flat benchmark recipe the arguments name, on --num_gpus GPUs."""
    where = ctx.where
    values, trailing, notes = _perf_args(_arguments(list(entry.args), text))

    def word(dest: str) -> str | None:
        found = values.get(dest)
        if found is None or found is True:
            return None
        return None if found.unresolved or ctx.off(found) else found.text

    if any(
        values.get(d) is not None
        and values[d] is not True
        and (values[d].unresolved or ctx.off(values[d]))
        for d in ("model_recipe_name", "num_gpus", "gpu", "compute_dtype", "task", "config_variant")
    ):
        return _skipped(
            path,
            text,
            had_bom,
            "the performance launcher's recipe is computed when "
            "the script runs: moe-lint cannot tell which recipe it is",
        )
    if values.get("use_recipes") is True:
        return _skipped(
            path,
            text,
            had_bom,
            "the performance launcher with --use_recipes runs "
            "a model recipe chosen by its family tables: not read",
        )
    recipe_stem, gpus, gpu = word("model_recipe_name"), word("num_gpus"), word("gpu")
    task = word("task") or "pretrain"
    dtype = (word("compute_dtype") or "bf16").lower()
    if not (recipe_stem and gpus and gpu):
        return _skipped(
            path,
            text,
            had_bom,
            "the performance launcher needs -mr, -ng and -g to "
            "name a flat recipe, and the script does not give them all",
        )
    variant = word("config_variant")
    precision = _PERF_PRECISION.get(dtype, dtype)
    name = (
        f"{recipe_stem.lower()}_{task}_{gpus}gpu_{gpu.lower()}_{precision}"
        f"{'_' + variant if variant and variant != 'v1' else ''}_config"
    )
    recipe = bridge_recipes.lookup(name)
    if recipe is None or recipe.kind != "benchmark":
        return _skipped(
            path,
            text,
            had_bom,
            f"{_unknown_recipe(name)} (the performance launcher "
            "then falls back to its per-family tables, which moe-lint does not read)",
        )
    family = _UNMODELLED.get(str((recipe.model or {}).get("hf")))
    if family is not None:
        return _skipped(path, text, had_bom, f"recipe {name} trains {family}: " + _UNMODELLED_WHY)
    launch = Launch(name, recipe.function, recipe.kind, _train_mode(task), runner="perf")
    launch.unknown.update(recipe.unknown)
    launch.notes += notes
    data = recipe_data(recipe)
    anchor = values.get("model_recipe_name")
    spans = _recipe_spans(data, where.span(anchor) if anchor is not None else None)
    # run_script.py::_apply_perf_recipe_overrides: the Hydra overrides first, then the
    # launcher's own options (set_user_overrides), which win.
    for word_, cut, override_text in trailing:
        _add_override(launch, word_, cut, override_text, ctx, spans)
    for dest, found in values.items():
        if dest in _PERF_JOB_ONLY:
            continue
        target = _PERF_FIELDS.get(dest)
        if target is None:
            if dest != "data":
                launch.unread[f"@{dest}"] = ""
            continue
        if found is True or found.unresolved or ctx.off(found):
            launch.unread[target] = f"--{dest} is computed when the script runs"
            continue
        raw = found.text
        if dest == "virtual_pipeline_model_parallel_size" and raw == "None":
            raw = "null"
        _add_override(launch, found, None, f"{target}={raw}", ctx, spans)
        if dest == "tensor_model_parallel_size" and raw.isdigit():
            _add_override(
                launch, found, None, f"model.sequence_parallel={int(raw) > 1}", ctx, spans
            )
    _perf_unknowns(launch, values, data)
    world: dict[str, str] = {}
    per = word("gpus_per_node")
    if gpus.isdigit():
        per_node = int(per) if per and per.isdigit() else None
        if per_node and int(gpus) % per_node == 0:
            world = {"gpus-per-node": str(per_node), "nodes": str(int(gpus) // per_node)}
        else:
            world = {"gpus": gpus}
            launch.world = int(gpus)
    return _document(path, text, had_bom, data, spans, launch, world, recipe)


#: Perf options set_user_overrides applies through helpers not restated here -> the fields
#: they change (left unknown when the option is given).
_PERF_UNRESTATED = {
    "cuda_graph_impl": (
        "model.cuda_graph_impl",
        "model.cuda_graph_scope",
        "model.use_te_rng_tracker",
        "rng.te_rng_tracker",
    ),
    "cuda_graph_scope": ("model.cuda_graph_scope",),
    "recompute_num_layers": (
        "model.recompute_granularity",
        "model.recompute_method",
        "model.recompute_num_layers",
    ),
    "recompute_modules": ("model.recompute_granularity", "model.recompute_modules"),
    "activation_offload_layers": (
        "model.cpu_offloading",
        "model.cpu_offloading_num_layers",
        "model.cpu_offloading_weights",
    ),
    "use_megatron_fsdp": (
        "ddp",
        "model.init_model_with_meta_device",
        "optimizer.use_precision_aware_optimizer",
    ),
    "nccl_ub": ("ddp.nccl_ub", "ddp.average_in_collective"),
    "moe_a2a_overlap": ("comm_overlap", "model.moe_shared_expert_overlap"),
    "use_tokendrop": (
        "model.moe_expert_capacity_factor",
        "model.moe_pad_expert_input_to_capacity",
        "model.moe_router_force_load_balancing",
    ),
    "hidden_size": ("model.hidden_size",),
    "num_layers": ("model.num_layers",),
    "num_moe_experts": ("model.num_moe_experts",),
    "pipeline_model_parallel_layout": ("model.pipeline_model_parallel_layout",),
    "first_k_dense_replace": ("model.moe_layer_freq",),
    "packed_sequence": ("dataset",),
    "head_only": ("dataset",),
    "optimizer_type": ("optimizer", "scheduler"),
    "moe_flex_dispatcher_backend": (
        "model.moe_token_dispatcher_type",
        "model.moe_flex_dispatcher_backend",
        "model.moe_hybridep_num_sms",
        "model.moe_enable_deepep",
    ),
    "deterministic": (
        "model.deterministic_mode",
        "model.cross_entropy_loss_fusion",
        "comm_overlap.tp_comm_overlap",
        "env_vars",
    ),
}


def _perf_unknowns(launch: Launch, values: dict[str, Any], tree: dict[str, Any]) -> None:
    """The perf launcher always replaces an LLM's dataset after the overrides (``--data``,
    mock by default: set_user_overrides); options whose effect is not restated leave their
    fields unknown, whatever the recipe or an override says."""
    for key in [k for k in launch.unread if k.startswith("@")]:
        dest = key[1:]
        del launch.unread[key]
        for target in _PERF_UNRESTATED.get(dest, ("model", "ddp", "comm_overlap")):
            launch.unread[target] = f"--{dest} is applied by the performance launcher's helpers"
    data_word, domain_word = values.get("data"), values.get("domain")
    data = "mock" if data_word is None or data_word is True else data_word.text
    domain = "llm" if domain_word is None or domain_word is True else domain_word.text
    if data == "mock" and domain != "llm":
        return  # a VLM keeps its recipe's dataset with mock data
    tree.pop("dataset", None)
    launch.overrides = [o for o in launch.overrides if str(o.path[0]) != "dataset"]
    launch.unread["dataset"] = (
        f"the performance launcher builds a {data!r} dataset (set_user_overrides)"
    )
