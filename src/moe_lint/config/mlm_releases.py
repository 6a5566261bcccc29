"""The command-line flags of each released Megatron-LM, and the arguments a flag list gives.

``data/mlm_releases.json`` (tools/gen_mlm_releases.py, read statically from
``megatron/training/arguments.py`` of every ``core_vX.Y.Z`` tag) lists each flag with the
releases that have it and its argparse attributes (dest, action, type, default, choices).

A Megatron-LM release is named by the Megatron-Core version it tags (``--megatron-core``): the
flags of a version are those of the newest release at or below it (Megatron-Core 0.19.2 reads
core_v0.19.0's list: the 0.19.2 wheel's ``arguments.py`` is that tag's). A version older than
the oldest release in the table has no list (:func:`release_for` gives None).

:class:`MlmArgs` replays a flag list the way argparse does (the last occurrence of a dest wins,
``store_true`` / ``store_false`` set True / False, other flags take their value) over the
release's defaults, for the checks that re-state ``validate_args``. With ``--use-checkpoint-args``
the arguments ``load_args_from_checkpoint`` takes from the checkpoint (:data:`FROM_CHECKPOINT`)
read as UNSET: the command line does not decide them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from importlib import resources
from typing import Any

from packaging.version import Version

from moe_lint.records import NamedTuple

#: A value the flag list cannot tell (an unexpanded ``$VAR``, a value of the wrong type).
UNSET: Any = type("Unset", (), {"__repr__": lambda self: "UNSET"})()


class FlagInfo(NamedTuple):
    """One flag in one release."""

    flag: str
    dest: str
    action: str | None
    type: str | None
    default: Any


@cache
def _table() -> dict[str, Any]:
    text = resources.files("moe_lint.data").joinpath("mlm_releases.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


#: megatron/training/checkpointing.py::load_args_from_checkpoint, which
#: megatron/training/arguments.py::parse_and_validate_args runs before validate_args when
#: ``--use-checkpoint-args`` is given: each ``_set_arg`` as (dest, force, first release, last
#: release, condition), read from core_v0.14.0 .. core_v0.19.0. ``force``: the checkpoint's
#: value replaces the command line's; otherwise it fills only an argument still None. The
#: condition names the flag the call sits under: "mp" ``if args.use_mp_args_from_checkpoint_args``
#: (default off), "tok" ``if args.use_tokenizer_model_from_checkpoint_args`` (default on).
#: ``moe_ffn_hidden_size`` is the checkpoint's or None (``setattr`` when it has no experts).
FROM_CHECKPOINT: tuple[tuple[str, bool, str, str | None, str], ...] = (
    ("num_layers", False, "0.14.0", None, ""),
    ("hidden_size", False, "0.14.0", None, ""),
    ("ffn_hidden_size", False, "0.14.0", None, ""),
    ("seq_length", False, "0.14.0", None, ""),
    ("num_attention_heads", False, "0.14.0", None, ""),
    ("num_query_groups", True, "0.14.0", None, ""),
    ("group_query_attention", True, "0.14.0", None, ""),
    ("kv_channels", False, "0.14.0", None, ""),
    ("max_position_embeddings", False, "0.14.0", None, ""),
    ("position_embedding_type", True, "0.14.0", None, ""),
    ("add_position_embedding", True, "0.14.0", None, ""),
    ("use_rotary_position_embeddings", True, "0.14.0", None, ""),
    ("rotary_base", True, "0.14.0", None, ""),
    ("rotary_percent", True, "0.14.0", None, ""),
    ("rotary_interleaved", True, "0.14.0", None, ""),
    ("add_bias_linear", True, "0.14.0", None, ""),
    ("add_qkv_bias", True, "0.14.0", None, ""),
    ("squared_relu", True, "0.14.0", None, ""),
    ("swiglu", True, "0.14.0", None, ""),
    ("untie_embeddings_and_output_weights", True, "0.14.0", None, ""),
    ("apply_layernorm_1p", True, "0.14.0", None, ""),
    ("normalization", True, "0.14.0", None, ""),
    ("apply_query_key_layer_scaling", True, "0.14.0", None, ""),
    ("attention_dropout", True, "0.14.0", None, ""),
    ("hidden_dropout", True, "0.14.0", None, ""),
    ("hybrid_override_pattern", True, "0.14.0", "0.16.1", ""),
    ("hybrid_attention_ratio", True, "0.14.0", "0.16.1", ""),
    ("hybrid_mlp_ratio", True, "0.14.0", "0.16.1", ""),
    ("is_hybrid_model", True, "0.14.0", "0.16.1", ""),
    ("mtp_hybrid_override_pattern", True, "0.17.0", None, ""),
    ("mtp_num_layers", True, "0.17.0", None, ""),
    ("mtp_use_repeated_layer", True, "0.17.0", None, ""),
    ("spec", True, "0.14.0", None, ""),
    ("num_experts", True, "0.14.0", None, ""),
    ("moe_layer_freq", True, "0.14.0", None, ""),
    ("moe_ffn_hidden_size", True, "0.14.0", None, ""),
    ("moe_router_topk", True, "0.14.0", None, ""),
    ("moe_token_dispatcher_type", True, "0.14.0", "0.14.0", ""),
    ("moe_router_pre_softmax", True, "0.14.0", None, ""),
    ("moe_grouped_gemm", True, "0.14.0", None, ""),
    ("moe_single_grouped_weight", True, "0.18.0", None, ""),
    ("moe_single_grouped_bias", True, "0.18.0", None, ""),
    ("moe_shared_expert_intermediate_size", True, "0.14.0", None, ""),
    ("moe_router_score_function", True, "0.16.0", None, ""),
    ("moe_router_enable_expert_bias", True, "0.16.0", None, ""),
    ("moe_router_topk_scaling_factor", True, "0.16.0", None, ""),
    ("mamba_state_dim", True, "0.14.0", None, ""),
    ("mamba_head_dim", True, "0.14.0", None, ""),
    ("mamba_num_groups", True, "0.14.0", None, ""),
    ("mamba_num_heads", True, "0.14.0", None, ""),
    ("hybrid_layer_pattern", False, "0.17.0", None, ""),
    ("heterogeneous_layers_config_path", True, "0.14.0", None, ""),
    ("heterogeneous_layers_config_encoded_json", True, "0.14.0", None, ""),
    ("moe_latent_size", True, "0.16.0", None, ""),
    ("tokenizer_model", True, "0.14.0", None, "tok"),
    ("tokenizer_type", True, "0.14.0", "0.15.3", ""),
    ("tokenizer_type", True, "0.16.0", None, "tok"),
    ("tiktoken_pattern", True, "0.14.0", None, ""),
    ("padded_vocab_size", False, "0.14.0", None, ""),
    ("ckpt_format", False, "0.14.0", None, ""),
    ("tensor_model_parallel_size", True, "0.14.0", None, "mp"),
    ("pipeline_model_parallel_size", True, "0.14.0", None, "mp"),
    ("virtual_pipeline_model_parallel_size", True, "0.14.0", None, "mp"),
    ("num_layers_per_virtual_pipeline_stage", False, "0.14.0", None, "mp"),
    ("expert_model_parallel_size", True, "0.14.0", None, "mp"),
)


#: What only a hybrid model takes from its checkpoint: a GPT run loads a GPT checkpoint (a
#: hybrid one is refused for a non-hybrid model,
#: megatron/training/checkpointing.py::_maybe_setup_gpt_to_hybrid_load).
_HYBRID_ONLY = frozenset({
    "hybrid_layer_pattern", "hybrid_override_pattern", "is_hybrid_model", "hybrid_attention_ratio",
    "hybrid_mlp_ratio", "mtp_hybrid_override_pattern", "mamba_state_dim", "mamba_head_dim",
    "mamba_num_groups", "mamba_num_heads",
})  # fmt: skip


def from_checkpoint(release: str | None, condition: dict[str, bool]) -> dict[str, bool]:
    """dest -> force, for the arguments ``load_args_from_checkpoint`` may set in ``release``
    (every release's when None), under the conditions that hold ("mp", "tok" -> True when the
    command line turns that flag on, or cannot tell)."""
    out: dict[str, bool] = {}
    for dest, force, first, last, when in FROM_CHECKPOINT:
        if when and not condition.get(when, True):
            continue
        if release is not None and not Version(first) <= Version(release) <= Version(last or "99"):
            continue
        out[dest] = out.get(dest, False) or force
    return out


def _layout_stages(layout: str) -> int:
    """The PP·VPP stages of a layout string as validate_args counts them
    (megatron/core/transformer/pipeline_parallel_layer_layout.py::
    PipelineParallelLayerLayout.parse_str_to_list); the layout itself is checked later, by
    TransformerConfig (PP005-PP007)."""
    text = layout.replace(",", "")
    for pattern in (r"\(([^)]+)\)\*(\d+)", r"(.)\*(\d+)"):
        text = re.sub(pattern, lambda m: m.group(1) * min(int(m.group(2)[:6]), 100_000), text)
        if len(text) > 10_000_000:
            break
    return text.count("|") + 1


def py_names(text: str, inside: Callable[[str], bool], limit: int) -> Iterator[tuple[int, int]]:
    """(start, end) of the name before each ``.py`` in ``text``: the characters ``inside``
    accepts, read back over at most ``limit`` of them, ending where ``.py`` starts.

    Linear in ``text``: each ``.py`` is found once and read back a bounded way (a regex with a
    leading ``\\w*`` or ``[^\\s...]+`` backtracks from every start of a long word: 8 s on 20 KB
    of letters, 30 s on a 100 KB word). The entry-script checks and the run mode share it.
    """
    for m in re.finditer(r"\.py\b", text):
        end = start = m.start()
        while start > 0 and end - start < limit and inside(text[start - 1]):
            start -= 1
        if start < end:
            yield start, end


def releases() -> list[str]:
    """The Megatron-LM releases in the table, oldest first."""
    return sorted(_table()["releases"], key=Version)


def release_for(version: Version) -> str | None:
    """The newest release at or below ``version``, or None when it predates the table."""
    found = None
    for release in releases():
        if Version(release) <= version:
            found = release
    return found


def _present(entry: dict[str, Any], release: str) -> bool:
    v = Version(release)
    for run in entry["in"]:
        first, _, last = run.partition("..")
        if Version(first) <= v <= Version(last or first):
            return True
    return False


@cache
def flags_of(release: str) -> dict[str, FlagInfo]:
    """Flag -> its attributes in ``release`` (a key of :func:`releases`)."""
    out = {}
    for flag, entry in _table()["flags"].items():
        if not _present(entry, release):
            continue
        attrs = {**entry, **entry.get("was", {}).get(release, {})}
        out[flag] = FlagInfo(
            flag, attrs["dest"], attrs.get("action"), attrs.get("type"), attrs.get("default")
        )
    return out


def releases_with(flag: str) -> list[str]:
    """Every release that has ``flag`` (empty for a flag no release has)."""
    entry = _table()["flags"].get(flag)
    return [] if entry is None else [r for r in releases() if _present(entry, r)]


def flag_name(raw: str) -> str:
    """``--foo=1`` -> ``--foo`` (argparse splits a long option at ``=``)."""
    return raw.split("=", 1)[0] if raw.startswith("--") else raw


def _convert(info: FlagInfo, text: str | None) -> Any:
    if info.action in ("store_true", "store_false") or str(info.action).endswith(
        "BooleanOptionalAction"
    ):
        if text is not None:  # a switch given a value: a flag only some branch passes
            return UNSET
        if str(info.action).endswith("BooleanOptionalAction"):
            # argparse.BooleanOptionalAction: --x sets True, its --no-x twin False.
            return not (info.flag.startswith("--no-") and info.dest != _dest_of(info.flag))
        return info.action == "store_true"
    if text is None or "$" in text or "`" in text:
        return UNSET
    text = text.strip().strip("'\"")
    try:
        if info.type == "int":
            return int(text)
        if info.type == "float":
            return float(text)
    except ValueError:
        return UNSET
    return text


def _dest_of(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


class MlmArgs:
    """The argument values a Megatron-LM flag list gives, for one release."""

    def __init__(self, release: str, flags: Iterable[Any], *, incomplete: bool = False) -> None:
        self.release = release
        #: The reader could not expand some words: a flag left at its default may be in them.
        self.incomplete = incomplete
        self.table = flags_of(release)
        self.defaults: dict[str, Any] = {}
        for info in self.table.values():
            # argparse: the first action of a dest sets its default; a store_false twin
            # (--no-x) of a typed or store_true flag does not decide it.
            if info.dest not in self.defaults or self.defaults[info.dest][0]:
                self.defaults[info.dest] = (info.action == "store_false", info.default)
        #: dest -> (value, the MlmFlag that set it), in command-line order.
        self.given: dict[str, tuple[Any, Any]] = {}
        #: The command line builds a hybrid (Mamba) model: ``--model-provider mamba|hybrid``
        #: (the inference scripts' flag) or a hybrid / Mamba ``--spec``.
        self.hybrid = False
        #: dests the checkpoint sets with --use-checkpoint-args (read as UNSET).
        self.from_checkpoint: set[str] = set()
        for item in flags:
            raw = str(item.name)
            name = flag_name(raw)
            text = str(item.value or "").lower()
            if (name == "--model-provider" and text in ("mamba", "hybrid")) or (
                name == "--spec" and ("hybrid" in text or "mamba" in text)
            ):
                self.hybrid = True
            found = self.table.get(name)
            if found is None:
                continue
            text = item.value if name == raw else raw.split("=", 1)[1]
            self.given[found.dest] = (_convert(found, text), item)
        self.from_checkpoint = self.checkpoint_dests(release)

    def checkpoint_dests(self, release: str | None) -> set[str]:
        """With ``--use-checkpoint-args``, the dests the checkpoint decides in ``release`` (in
        any release when None): a forced one always, another unless the command line sets it
        (load_args_from_checkpoint's ``_set_arg``)."""
        if self["use_checkpoint_args"] is not True:
            return set()

        def maybe(dest: str) -> bool:
            value = self[dest]
            return value is UNSET or bool(value)

        flags_on = {"mp": maybe("use_mp_args_from_checkpoint_args"),
                    "tok": maybe("use_tokenizer_model_from_checkpoint_args")}  # fmt: skip
        return {dest for dest, force in from_checkpoint(release, flags_on).items()
                if (self.hybrid or dest not in _HYBRID_ONLY)
                and (force or self.given.get(dest, (None,))[0] in (None, UNSET))}  # fmt: skip

    def __getitem__(self, dest: str) -> Any:
        """The value of ``dest``: given on the command line, else the release's default (UNSET
        where the checkpoint decides it)."""
        if dest in self.from_checkpoint:
            return UNSET
        if dest in self.given:
            return self.given[dest][0]
        if dest not in self.defaults:
            return UNSET
        default = self.defaults[dest][1]
        return UNSET if isinstance(default, str) and "(" in default else default

    def value(self, dest: str) -> Any:
        """:meth:`__getitem__`, but None for a dest the release does not define (an argument
        that does not exist there is never set)."""
        return self[dest] if dest in self.defaults or dest in self.given else None

    def virtual_pipeline_size(self) -> Any:
        """The virtual pipeline size validate_args sets (core_v0.14.0 .. core_v0.19.0 and
        main): an int > 1, None for no interleaving (it turns 1 into None), or UNSET where an
        argument it needs is not told or an assert of that block stops the run first (MLM005
        reports those).

        In validate_args' order: a hybrid layer pattern's pipe segments / PP (when more than
        PP); a ``--pipeline-model-parallel-layout``'s stages / PP
        (PipelineParallelLayerLayout.get_num_stages_from_str: the layout with ``(...)*n`` and
        ``x*n`` unrolled and commas dropped, split at ``|``); ``--num-virtual-stages-per-
        pipeline-rank``; ``--num-layers-per-virtual-pipeline-stage`` as (layers [+1 per
        account_for_*] / PP) / that; else None.
        """
        get = self.value

        def count(value: Any) -> int | None:
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        pattern = get("hybrid_layer_pattern")
        if pattern is None:
            pattern = get("hybrid_override_pattern")
        pp = count(get("pipeline_model_parallel_size"))
        if pattern is UNSET or pp is None or pp < 1:
            return UNSET
        if isinstance(pattern, str):
            segments = pattern.split("/")[0].count("|") + 1
            if segments == 1 and pp > 1:
                return None
            if segments % pp:
                return UNSET
            return segments // pp if segments > pp else None
        layout = get("pipeline_model_parallel_layout")
        per_layer = get("num_layers_per_virtual_pipeline_stage")
        per_rank = get("num_virtual_stages_per_pipeline_rank")
        if UNSET in (layout, per_layer, per_rank):
            return UNSET
        if layout is not None:
            stages = _layout_stages(str(layout))
            if stages % pp:
                return UNSET
            vpp: int | None = stages // pp
        elif per_rank is not None:
            vpp = count(per_rank)
            if vpp is None:
                return UNSET
        elif per_layer is not None:
            layers = get("num_layers")
            if layers is None:
                layers = get("decoder_num_layers")
            extra = [get("account_for_embedding_in_pipeline_split"),
                     get("account_for_loss_in_pipeline_split")]  # fmt: skip
            n = count(per_layer)
            if (
                count(layers) is None
                or n is None
                or n < 1
                or not all(isinstance(e, bool) for e in extra)
            ):
                return UNSET
            total = layers + sum(1 for e in extra if e)
            if total % pp or (total // pp) % n:
                return UNSET
            vpp = total // pp // n
        else:
            return None
        return None if vpp == 1 else vpp

    def flag(self, dest: str) -> Any:
        """The MlmFlag that set ``dest`` (None when it keeps its default)."""
        found = self.given.get(dest)
        return None if found is None else found[1]

    def has(self, dest: str) -> bool:
        return dest in self.given
