"""Fuzzing: generated Bridge-shaped configs and mutated corpus files never break moe-lint.

Inputs (hypothesis strategies):

- ``bridge_configs()``: configs with the sections ``model``, ``train``, ``dataset``,
  ``optimizer``, ``ddp``, ``mixed_precision``, ``comm_overlap``, ``env_vars`` (now and then
  other or unknown sections), keys drawn from the typed fields (``moe_lint.config.schema``),
  from the
  keys the rules read, from Bridge's field catalogue (``data/fields.json``) and unknown
  ones; values of the right type and of wrong ones (negatives, zero, huge ints, floats, inf,
  NaN, null, strings, lists, nested mappings); written in varied YAML styles (block and flow,
  quotes, block scalars, comments, suppression and directive comments, anchors, aliases, merge
  keys, duplicate keys, ``ConfigContainer:`` wrapping, full-dump ``_target_``, CRLF), linted
  with or without cluster arguments (``--gpus``, ``--gpu``, ``--model``, ``--nodes``);
- ``mutated_corpus()``: a file of ``tests/data/corpus/**/*.yaml`` or ``examples/*.yaml`` after
  1-4 edits: lines deleted, duplicated, swapped, re-indented or inserted, values or keys
  changed, garbage characters inserted, the text truncated.

Properties, for every input (MOE_LINT_STRICT off: the product's real behaviour):

1. the CLI (in process, ``moe_lint.cli.main``) never raises and exits 0, 1 or 2, never 3 (1
   exactly when there is an error finding); exit 2 prints exactly one stderr line, naming the
   file; the library (``lint_text``) never raises (but for a bad in-file directive, a
   ``UsageError`` naming the file);
2. ``--format json`` (and ``Finding.to_json``) matches ``docs/findings.schema.json``;
3. each finding's (line, column) is the start of the key or list item its path names (below a
   ``ConfigContainer:`` root), computed here independently from ``yaml.compose`` node marks with
   YAML's semantics (the last of duplicate keys wins, a written key beats a ``<<`` merge, an
   earlier merge source beats a later one); for a path the file does not contain, the start of
   its nearest written ancestor, or 1:1. Exempt: findings about suppression comments (SUP001,
   SUP002, path ``<comment>``); SCH003 may point at any written occurrence of its key; and the
   known location bugs pinned in ``test_known_location_bugs`` (keys holding '.', '[' or ']',
   keys a later merge overrides in moe-lint's span map, mappings replaced by a duplicate key);
4. determinism: the same input linted twice gives the same result, and the CLI prints the same
   ``--format json`` and ``--format sarif`` output twice.

The short run is part of the normal suite (200 examples for each library property, 100 for the
CLI, 30 for CLI determinism; about 15 s on two cores). The long run is
skipped unless ``MOE_LINT_FUZZ_EXAMPLES`` is set; its examples are split evenly between the two
long tests (generated configs, mutated corpus; the library for every example, the CLI for one in
twenty), which may run in two shells at once:

    MOE_LINT_FUZZ_EXAMPLES=100000 pytest tests/test_fuzz.py -k long
    MOE_LINT_FUZZ_EXAMPLES=100000 pytest tests/test_fuzz.py -k long_generated   # one half
    MOE_LINT_FUZZ_EXAMPLES=100000 pytest tests/test_fuzz.py -k long_mutated     # the other half
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tempfile
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CORPUS, REPO
from moe_lint.cli import main
from moe_lint.config.fields import table as field_table
from moe_lint.config.schema import SECTIONS
from moe_lint.config.settings import Settings
from moe_lint.engine.catalogue import load_catalogue
from moe_lint.engine.suppress import SUPPRESSION_CHECKS
from moe_lint.errors import UsageError
from moe_lint.linting import lint_text

CATALOGUE = load_catalogue(plugins=False)
FINDINGS_SCHEMA = json.loads((REPO / "docs" / "findings.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(FINDINGS_SCHEMA)
#: Codes of the rules that report suppression comments (located at the comment, not a key).
COMMENT_CODES = frozenset(r.code for r in CATALOGUE.rules if r.check in SUPPRESSION_CHECKS)

_COMPOSE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@pytest.fixture(scope="module", autouse=True)
def _lenient() -> Iterator[None]:
    """Test the product as users run it: rules that cannot judge odd data are skipped."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("MOE_LINT_STRICT", raising=False)
        mp.delenv("MOE_LINT_DEBUG", raising=False)
        mp.delenv("GITHUB_STEP_SUMMARY", raising=False)
        yield


# ---- vocabulary ---------------------------------------------------------------------------------

_FIELDS = field_table()
MAIN_SECTIONS = (
    "model", "train", "dataset", "optimizer", "ddp", "mixed_precision", "comm_overlap", "env_vars",
)  # fmt: skip
OTHER_SECTIONS = tuple(sorted(set(_FIELDS["top_level"]) - set(MAIN_SECTIONS)))
UNKNOWN_SECTIONS = ("modle", "data", "training", "Model", "moe", "cluster", "ConfigContainer")


def _rule_keys() -> dict[str, list[str]]:
    """``section.field`` names the rule packs and Python checks read, per section."""
    pattern = re.compile(
        r"\b(" + "|".join(sorted(_FIELDS["top_level"])) + r")\.([A-Za-z_][A-Za-z0-9_]*)"
    )
    texts = [p.read_text(encoding="utf-8") for p in sorted((REPO / "rules").glob("*.yaml"))]
    texts += [p.read_text(encoding="utf-8") for p in sorted((REPO / "src").rglob("*.py"))]
    out: dict[str, set[str]] = {}
    for text in texts:
        for section, key in pattern.findall(text):
            out.setdefault(section, set()).add(key)
    return {s: sorted(keys) for s, keys in out.items()}


RULE_KEYS = _rule_keys()
CATALOGUE_KEYS = {s: sorted(f) for s, f in _FIELDS["sections"].items() if "." not in s}
ENV_VARS = sorted(
    set(RULE_KEYS.get("env_vars", []))
    | {"CUDA_DEVICE_MAX_CONNECTIONS", "NCCL_NVLS_ENABLE", "NVTE_FWD_LAYERNORM_SM_MARGIN"}
)


def _literal_choices(annotation: Any) -> list[Any]:
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    return [c for arg in typing.get_args(annotation) for c in _literal_choices(arg)]


def _kind(annotation: Any) -> str:
    """A coarse kind for a typed field: literal / bool / int / float / list / dict / str."""
    if _literal_choices(annotation):
        return "literal"
    text = str(annotation)
    for kind in ("list", "dict", "bool", "int", "float", "str"):
        if kind in text:
            return kind
    return "any"


KINDS: dict[str, dict[str, str]] = {}
CHOICES: dict[str, list[Any]] = {}
for _section, _fields in _FIELDS["sections"].items():
    KINDS[_section] = {name: entry["type"] for name, entry in _fields.items()}
for _section, _model in SECTIONS.items():
    for _name, _info in _model.model_fields.items():
        KINDS.setdefault(_section, {})[_name] = _kind(_info.annotation)
        if _literal_choices(_info.annotation):
            CHOICES[f"{_section}.{_name}"] = _literal_choices(_info.annotation)

WORDS = [
    "deepep", "hybridep", "alltoall", "allgather", "flex", "alltoall_seq", "p2p", "a2a",
    "a2a+p2p", "all_gather", "selective", "full", "uniform", "block", "transformer_engine",
    "local", "none", "full_iteration", "attn", "mlp", "moe_router", "moe_preprocess", "fp32",
    "bf16", "fp16", "e4m3", "hybrid", "tensorwise", "blockwise", "mxfp8", "delayed", "nvfp4",
    "bf16_mixed", "bf16_with_fp8_current_scaling_mixed", "core_attn", "moe_act", "layernorm",
    "mla_up_proj", "up_proj", "norm", "moe", "shared_experts", "gdn_norm_out", "aux_loss",
    "seq_aux_loss", "sigmoid", "softmax", "cyclic", "single", "expandable_segments:True",
    "${TP}", "${oc.env:HOME}", "${model.seq_length}", "Et|(tt|)*3", "t|tt*3|m|L", "E", "",
    "megatron.bridge.training.config.ConfigContainer", "true", "null", "8", "1e3",
]  # fmt: skip
INTERESTING_INTS = [
    0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 58, 61, 64, 96, 128, 160, 256, 384, 512, 1024,
    2048, 4096, 7168, 8192, 32768, 65536, 131072, 262144, 1048576, -1, -8, 2**20 + 1, 2**31,
    2**31 - 1, 2**63, 10**30,
]  # fmt: skip
CODES = sorted(CATALOGUE.by_code)
NAMES = sorted(CATALOGUE.by_name)
GPUS = ["h100", "h200", "b200", "b300", "gb200", "gb300", "a100"]
MODELS = ["deepseek-v3", "qwen3-30b-a3b", "qwen3-235b-a22b", "kimi-k2", "gpt-oss-120b",
          "moonlight-16b-a3b", "qwen3-next-80b-a3b", "mixtral-8x7b"]  # fmt: skip


# ---- values -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Raw:
    """Scalar text written as is (``0x10``, ``.inf``, ``yes``, ``${TP}``)."""

    text: str


class Pairs(list[tuple[Any, Any]]):
    """A mapping as written: ordered, may repeat a key."""


def unique(pairs: list[tuple[Any, Any]]) -> Pairs:
    """The pairs without repeated keys (duplicates are added on purpose, and rarely)."""
    seen: set[str] = set()
    out = Pairs()
    for key, value in pairs:
        if str(key) not in seen:
            seen.add(str(key))
            out.append((key, value))
    return out


ints = st.one_of(
    st.sampled_from(INTERESTING_INTS), st.integers(-5, 300), st.integers(-(2**70), 2**70)
)
floats = st.one_of(
    st.sampled_from([0.0, 0.5, 1.0, 1.5, -0.5, 1e-9, 1e9, 4096.5, float("inf"), float("nan")]),
    st.floats(allow_nan=True, allow_infinity=True),
)
strings = st.one_of(
    st.sampled_from(WORDS),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
)
raws = st.sampled_from(
    ["0x10", "0o17", "1_024", "+8", "-0", ".inf", "-.inf", ".nan", "yes", "No", "on", "OFF", "~",
     "2024-01-01", "1e3", "1.0e+3", "8.", "0b101", "!!str 8", "!!int '8'", "!!float 1", "0777"]
).map(Raw)  # fmt: skip
scalars = st.one_of(st.none(), st.booleans(), ints, floats, strings, raws)


def any_value(depth: int = 2) -> st.SearchStrategy[Any]:
    if depth <= 0:
        return scalars
    inner = any_value(depth - 1)
    return st.one_of(
        scalars,
        st.lists(inner, max_size=4),
        st.lists(st.tuples(key_names(), inner), max_size=4).map(unique),
    )


CORE = {
    "model": [
        "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
        "expert_model_parallel_size", "expert_tensor_parallel_size",
        "virtual_pipeline_model_parallel_size", "sequence_parallel", "seq_length", "num_layers",
        "hidden_size", "num_attention_heads", "num_query_groups", "num_moe_experts",
        "moe_router_topk", "moe_token_dispatcher_type", "moe_grouped_gemm",
        "recompute_granularity", "recompute_modules", "cuda_graph_impl", "cp_comm_type",
        "multi_latent_attention", "moe_flex_dispatcher_backend", "fp8", "bf16",
    ],
    "train": ["global_batch_size", "micro_batch_size", "train_iters"],
    "dataset": ["seq_length", "sequence_length"],
    "optimizer": [
        "use_distributed_optimizer", "optimizer_cpu_offload", "optimizer_offload_fraction",
    ],
    "ddp": ["use_distributed_optimizer", "overlap_grad_reduce", "overlap_param_gather"],
    "comm_overlap": ["tp_comm_overlap", "overlap_moe_expert_parallel_comm", "delay_wgrad_compute"],
    "mixed_precision": ["bf16", "fp8", "fp8_recipe", "fp8_param_gather"],
}  # fmt: skip
ODD_KEYS = ["a.b", "model.seq_length", "x[0]", "a]b", "[1]", "", " ", "1.5", "k:v", "#", "-"]


def key_names() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(["a", "b", "x", "type", "value", "enabled", "size", "1", "true", "null"]),
        st.from_regex(r"[a-z_][a-z0-9_]{0,15}", fullmatch=True),
        st.sampled_from([1, 0, -3, 2.5, True, None, *ODD_KEYS]),
    )


def right_value(section: str, key: str) -> st.SearchStrategy[Any]:
    dotted = f"{section}.{key}"
    if dotted in CHOICES:
        return st.sampled_from(CHOICES[dotted])
    if section == "env_vars":
        return st.one_of(st.sampled_from([0, 1, 8, 32]), strings)
    kind = KINDS.get(section, {}).get(key, "any")
    if "modules" in key or "scope" in key or key == "cp_comm_type":
        return st.one_of(st.lists(st.sampled_from(WORDS), max_size=4), st.sampled_from(WORDS))
    if key in ("hierarchical_context_parallel_sizes", "moe_layer_freq"):
        return st.one_of(st.lists(ints, max_size=4), ints, strings)
    if key.endswith("_size") or key.startswith("num_") or kind == "int":
        return st.sampled_from(INTERESTING_INTS[:24])
    return {
        "bool": st.booleans(),
        "float": floats,
        "str": st.sampled_from(WORDS),
        "list": st.lists(scalars, max_size=4),
        "dict": st.lists(st.tuples(key_names(), scalars), max_size=4).map(unique),
    }.get(kind, any_value(1))


@st.composite
def field_entry(draw: st.DrawFn, section: str) -> tuple[Any, Any]:
    """One ``key: value`` of a section: mostly known keys, mostly well-typed values."""
    pools = [RULE_KEYS.get(section), CATALOGUE_KEYS.get(section)]
    if section == "env_vars":
        pools = [ENV_VARS]
    pools = [p for p in pools if p]
    source = draw(st.integers(0, 9))
    if pools and source < 8:  # mostly keys the rules read, then Bridge's other fields
        key = draw(st.sampled_from(pools[0 if source < 5 else -1]))
    elif source == 8 and pools:  # a typo of a known key
        known = draw(st.sampled_from(pools[0]))
        cut = draw(st.integers(0, len(known) - 1))
        key = known[:cut] + draw(st.sampled_from(["", "_", "s", "x"])) + known[cut + 1 :]
    else:
        key = draw(key_names())
    if draw(st.integers(0, 5)) == 0:
        value = draw(any_value(2))
    else:
        value = draw(right_value(section, str(key)))
    return key, value


@st.composite
def section_body(draw: st.DrawFn, section: str) -> Any:
    shape = draw(st.integers(0, 19))
    if shape == 0:
        return draw(scalars)
    if shape == 1:
        return draw(st.lists(scalars, max_size=3))
    entries = draw(st.lists(field_entry(section), max_size=12))
    if section in CORE and draw(st.booleans()):  # the fields most rules combine
        core = draw(
            st.lists(st.sampled_from(CORE[section]), unique=True, max_size=len(CORE[section]))
        )
        entries = [(key, draw(right_value(section, key))) for key in core] + entries
    entries = unique(entries)
    if entries and draw(st.integers(0, 9)) == 0:  # a duplicate key
        entries.append((entries[0][0], draw(right_value(section, str(entries[0][0])))))
    return Pairs(entries)


# ---- YAML writer --------------------------------------------------------------------------------

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-/]*$")
_PLAIN_BLOCK = re.compile(r"^[A-Za-z_$][A-Za-z0-9_.\-/${}:|*+()]*$")
_RESERVED = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


def double_quoted(text: str) -> str:
    """A YAML double-quoted scalar for any text (JSON's surrogate-pair escapes are not YAML)."""
    out = []
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


class Writer:
    """Renders values as YAML text, drawing every style choice from hypothesis."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.lines: list[str] = []
        self.anchors: list[str] = []
        self.map_anchors: list[str] = []
        self.pending: list[tuple[str, bool]] = []
        self.count = 0

    def chance(self, n: int) -> bool:
        """True with probability about 1/n."""
        return self.draw(st.integers(0, n - 1)) == 0

    def comment(self) -> str:
        if not self.chance(8):
            return ""
        if self.chance(4):
            codes = self.draw(
                st.lists(
                    st.sampled_from([*CODES, *NAMES, "XYZ999", "bogus"]), min_size=1, max_size=2
                )
            )
            return f"  # moe-lint: disable={','.join(codes)} -- fuzz"
        return "  # " + self.draw(st.text("abc xyz-_:#'\"", max_size=10))

    def key(self, key: Any) -> str:
        text = str(key)
        if key is None:
            return "null"
        if not isinstance(key, str):
            return text
        if _PLAIN.match(text) and text.lower() not in _RESERVED and not self.chance(12):
            return text
        if self.chance(2) or not text.isprintable():
            return double_quoted(text)
        return "'" + text.replace("'", "''") + "'"

    def scalar(self, value: Any, flow: bool) -> str:
        if isinstance(value, Raw):
            return value.text
        if value is None:
            return self.draw(st.sampled_from(["null", "~", "Null", "NULL"]))
        if isinstance(value, bool):
            return self.draw(
                st.sampled_from(["true", "True", "TRUE"] if value else ["false", "False"])
            )
        if isinstance(value, int):
            if self.chance(10):
                return f'"{value}"'
            return str(value)
        if isinstance(value, float):
            if value != value:
                return ".nan"
            if value in (float("inf"), float("-inf")):
                return ".inf" if value > 0 else "-.inf"
            return repr(value)
        text = str(value)
        plain = (_PLAIN if flow else _PLAIN_BLOCK).match(text)
        style = self.draw(st.integers(0, 2))
        if plain and text.lower() not in _RESERVED and style == 0:
            return text
        if style == 1 and text.isprintable():
            return "'" + text.replace("'", "''") + "'"
        return double_quoted(text)

    def flow(self, value: Any) -> str:
        if isinstance(value, Pairs):
            return "{" + ", ".join(f"{self.key(k)}: {self.flow(v)}" for k, v in value) + "}"
        if isinstance(value, list):
            return "[" + ", ".join(self.flow(v) for v in value) + "]"
        return self.scalar(value, flow=True)

    def anchor(self, value: Any, force: bool = False) -> str:
        """An anchor for ``value`` (usable by aliases once :meth:`written` is called)."""
        if not force and not self.chance(8):
            return ""
        name = f"a{self.count}"
        self.count += 1
        self.pending.append((name, isinstance(value, Pairs)))
        return f" &{name}"

    def written(self) -> None:
        """The nodes anchored so far are complete: aliases may now refer to them."""
        for name, is_map in self.pending:
            self.anchors.append(name)
            if is_map:
                self.map_anchors.append(name)
        self.pending = []

    def entry(
        self, indent: int, key: Any, value: Any, anchor: bool = False, merge: str | None = None
    ) -> None:
        """``key: value``; ``anchor`` forces an anchor on a mapping value, ``merge`` a
        ``<<: *merge`` among its keys."""
        pad = " " * indent
        if self.chance(15):
            note = self.draw(st.sampled_from(["note", "moe-lint: disable=CP001", "TODO: tune"]))
            self.lines.append(f"{pad}# {note}")
        if self.chance(25):
            self.lines.append("")
        head = f"{pad}{self.key(key)}:"
        if self.anchors and not anchor and not merge and self.chance(15):  # an alias
            self.lines.append(f"{head} *{self.draw(st.sampled_from(self.anchors))}{self.comment()}")
            return
        is_map, is_list = (
            isinstance(value, Pairs),
            isinstance(value, list) and not isinstance(value, Pairs),
        )
        if (is_map or is_list) and value and (merge or not self.chance(4)):
            mark = self.anchor(value, anchor)
            self.lines.append(f"{head}{mark}{self.comment()}")
            if is_map:
                self.mapping(indent + self.draw(st.sampled_from([2, 2, 4])), value, merge)
            else:
                item_indent = indent + self.draw(st.sampled_from([0, 2]))
                for item in value:
                    self.item(item_indent, item)
            return
        if is_map or is_list:
            mark = self.anchor(value, anchor)
            self.lines.append(f"{head}{mark} {self.flow(value)}{self.comment()}")
            return
        if value is None and self.chance(3):
            self.lines.append(f"{head}{self.comment()}")
            return
        if isinstance(value, str) and value.strip() and value.isprintable() and self.chance(10):
            style = self.draw(st.sampled_from(["|", ">", "|-", ">+"]))
            self.lines.append(f"{head} {style}{self.comment()}")
            self.lines.append(f"{pad}  {value.strip()}")
            return
        self.lines.append(
            f"{head}{self.anchor(value)} {self.scalar(value, flow=False)}{self.comment()}"
        )

    def item(self, indent: int, value: Any) -> None:
        pad = " " * indent
        if isinstance(value, Pairs) and value and self.chance(2):
            (k0, v0), rest = value[0], value[1:]
            self.lines.append(f"{pad}- {self.key(k0)}: {self.flow(v0)}")
            for k, v in rest:
                self.lines.append(f"{pad}  {self.key(k)}: {self.flow(v)}")
            return
        if isinstance(value, list):
            self.lines.append(f"{pad}- {self.flow(value)}{self.comment()}")
            return
        self.lines.append(f"{pad}- {self.scalar(value, flow=False)}{self.comment()}")

    def mapping(self, indent: int, pairs: Pairs, merge: str | None = None) -> None:
        merge_at = -1
        if merge or (self.map_anchors and self.chance(8)):
            merge_at = self.draw(st.integers(0, len(pairs)))
        for i, (key, value) in enumerate(pairs):
            if i == merge_at:
                self.merge(indent, merge)
            self.entry(indent, key, value)
        if merge_at == len(pairs):
            self.merge(indent, merge)

    def merge(self, indent: int, name: str | None) -> None:
        names = (
            [name]
            if name
            else self.draw(st.lists(st.sampled_from(self.map_anchors), min_size=1, max_size=2))
        )
        target = (
            f"*{names[0]}" if len(names) == 1 else "[" + ", ".join(f"*{n}" for n in names) + "]"
        )
        self.lines.append(f"{' ' * indent}<<: {target}")


@dataclass
class Case:
    """One input: its text and the cluster arguments it is linted with."""

    text: str
    cluster: dict[str, str]
    name: str = "generated"

    def args(self) -> list[str]:
        return [a for key, value in self.cluster.items() for a in (f"--{key}", value)]


clusters = st.one_of(
    st.just({}),
    st.fixed_dictionaries(
        {},
        optional={
            "gpus": st.sampled_from(
                ["1", "8", "16", "64", "128", "200", "256", "384", "512", "1024"]
            ),
            "gpu": st.sampled_from(GPUS),
            "model": st.sampled_from(MODELS),
        },
    ),
    st.fixed_dictionaries(
        {
            "nodes": st.sampled_from(["1", "2", "16", "32"]),
            "gpus-per-node": st.sampled_from(["4", "8"]),
        }
    ),
)


@st.composite
def bridge_configs(draw: st.DrawFn) -> Case:
    """A Bridge-shaped config file in one of the three forms, in varied YAML styles."""
    w = Writer(draw)
    if w.chance(4):
        w.lines.append(
            "# "
            + draw(st.sampled_from(["DeepSeek-V3 128K", "fuzz", "moe-lint: disable-file=SCH001"]))
        )
    if w.chance(8):
        body = draw(
            st.lists(
                st.sampled_from(
                    ["gpus=256", "gpu=h100", "model=deepseek-v3", "gpus=0", "gpus=abc", "gpu=h900",
                     "model=nope", "nodes=2", "gpus-per-node=8", "megatron-core=0.14", "bridge=x"]
                ),
                min_size=1,
                max_size=3,
            )
        )  # fmt: skip
        w.lines.append("# moe-lint: " + " ".join(body))
    form = draw(st.sampled_from(["override", "override", "wrapped", "full-dump"]))
    indent = 0
    if form == "wrapped":
        w.lines.append("ConfigContainer:")
        indent = 2
    elif form == "full-dump":
        w.lines.append("_target_: megatron.bridge.training.config.ConfigContainer")
    names = draw(st.lists(st.sampled_from(MAIN_SECTIONS), unique=True, max_size=6))
    names += draw(st.lists(st.sampled_from(OTHER_SECTIONS + UNKNOWN_SECTIONS), max_size=2))
    names = list(dict.fromkeys(draw(st.permutations(names)))) or ["model"]
    if w.chance(10):  # a section written twice
        names.append(draw(st.sampled_from(names)))
    for name in names:
        w.written()
        body = draw(section_body(name))
        if isinstance(body, Pairs) and body and w.chance(6):
            # shared defaults merged into the section, some keys written again
            base = Pairs(draw(st.lists(field_entry(name), min_size=1, max_size=4)))
            anchor = f"a{w.count}"  # the next anchor written
            w.entry(indent, f"x-{name}-defaults", base, anchor=True)
            body = Pairs(body + [(k, draw(right_value(name, str(k)))) for k, _ in base[:2]])
            w.entry(indent, name, Pairs(draw(st.permutations(body))), merge=anchor)
        else:
            w.entry(indent, name, body)
    eol = "\r\n" if w.chance(10) else "\n"
    text = eol.join(w.lines) + (eol if not w.chance(10) else "")
    return Case(text, draw(clusters))


# ---- mutated corpus -----------------------------------------------------------------------------

CORPUS_FILES = sorted(CORPUS.rglob("*.yaml")) + sorted((REPO / "examples").glob("*.yaml"))
CORPUS_TEXTS = [
    (p.relative_to(REPO).as_posix(), p.read_text(encoding="utf-8")) for p in CORPUS_FILES
]
_KEY_VALUE = re.compile(r"^(\s*(?:- )?[^#:\s][^#:]*:[ \t]+)(\S[^#]*?)(\s*(?:#.*)?)$")
_KEY = re.compile(r"^(\s*(?:- )?)([^#:\s][^#:]*)(:.*)$")
GARBAGE = st.text(
    st.one_of(
        st.sampled_from(
            [*":{}[]&*!|>'\"%@`#,-?\t \\\r\n", "\x00", "\x85", "\ufeff", "\u2028", "\x0c", "é"]
        ),
        st.characters(blacklist_categories=("Cs",)),
    ),
    min_size=1,
    max_size=6,
)


@st.composite
def mutated_corpus(draw: st.DrawFn) -> Case:
    """A corpus file after 1-4 random edits."""
    name, text = draw(st.sampled_from(CORPUS_TEXTS))
    lines = text.splitlines(keepends=True) or ["\n"]
    w = Writer(draw)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "value", "value", "key",
                                   "garbage", "indent", "insert", "truncate"]))  # fmt: skip
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        eol = line[len(line.rstrip("\r\n")) :] or "\n"
        if op == "delete" and len(lines) > 1:
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, line)
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "value" and (m := _KEY_VALUE.match(line.rstrip("\r\n"))):
            section = draw(st.sampled_from(MAIN_SECTIONS))
            value = draw(st.one_of(any_value(1), right_value(section, m.group(1).strip(" -:"))))
            lines[i] = m.group(1) + w.flow(value) + m.group(3) + eol
        elif op == "key" and (m := _KEY.match(line.rstrip("\r\n"))):
            section = draw(st.sampled_from(MAIN_SECTIONS))
            key, _ = draw(field_entry(section))
            lines[i] = m.group(1) + w.key(key) + m.group(3) + eol
        elif op == "garbage":
            at = draw(st.integers(0, len(line)))
            lines[i] = line[:at] + draw(GARBAGE) + line[at:]
        elif op == "indent":
            delta = draw(st.sampled_from([-2, -1, 1, 2]))
            lines[i] = (
                " " * delta + line
                if delta > 0
                else line[min(-delta, len(line) - len(line.lstrip(" "))) :]
            )
        elif op == "insert":
            section = draw(st.sampled_from(MAIN_SECTIONS))
            key, value = draw(field_entry(section))
            pad = " " * draw(st.sampled_from([0, 2, 4]))
            lines.insert(i, f"{pad}{w.key(key)}: {w.flow(value)}{eol}")
        elif op == "truncate":
            joined = "".join(lines)
            cut = draw(st.integers(0, len(joined)))
            lines = joined[:cut].splitlines(keepends=True) or [""]
    return Case("".join(lines), draw(clusters), name)


# ---- properties ---------------------------------------------------------------------------------


def _compose(text: str) -> Any:
    return yaml.compose(text, Loader=_COMPOSE_LOADER)


_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_MERGE = "tag:yaml.org,2002:merge"
_INDEX = re.compile(r"\[(\d+)\]")
#: Characters that make a key's dotted path ambiguous (see test_known_location_bugs).
_PATH_SYNTAX = re.compile(r"[.\[\]]")


def _key_text(node: Any) -> str:
    value = _CONSTRUCTOR.construct_object(node, deep=True)
    return value if isinstance(value, str) else str(value)


@dataclass(frozen=True)
class Entry:
    key_node: Any
    value_node: Any
    #: A later provider of the same key (a ``<<`` merge written after it, or a later merge
    #: source) that YAML does not let win: moe-lint's span for it is the loser's
    #: (test_known_location_bugs); findings below it are not checked.
    shadowed: bool


def _merge_sources(value_node: Any) -> list[Any]:
    """The mappings a ``<<`` key merges: one alias, or a sequence of them."""
    sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
    return [source for source in sources if isinstance(source, yaml.MappingNode)]


def _providers(node: Any, seen: frozenset[int]) -> list[tuple[str, bool, Entry]]:
    """Every (key, written?, entry) of a mapping in document order: written keys (duplicates
    included) and the effective keys of each merge source."""
    providers: list[tuple[str, bool, Entry]] = []
    for key_node, value_node in node.value:
        if key_node.tag == _MERGE:
            for source in _merge_sources(value_node):
                for key, entry in _entries(source, seen | {id(node)}).items():
                    providers.append((key, False, entry))
        elif isinstance(key_node, yaml.ScalarNode):
            providers.append((_key_text(key_node), True, Entry(key_node, value_node, False)))
    return providers


def _entries(node: Any, seen: frozenset[int] = frozenset()) -> dict[str, Entry]:
    """A mapping's effective keys with YAML semantics: the last written occurrence of a key
    wins; a key written nowhere comes from the first merge source (``<<``) that has it."""
    if id(node) in seen:
        return {}
    providers = _providers(node, seen)
    out: dict[str, Entry] = {}
    for key in dict.fromkeys(k for k, _, _ in providers):
        mine = [p for p in providers if p[0] == key]
        written = [p for p in mine if p[1]]
        winner = written[-1] if written else mine[0]
        shadowed = winner[2].shadowed or winner is not mine[-1]
        out[key] = Entry(winner[2].key_node, winner[2].value_node, shadowed)
    return out


def _written(node: Any, seen: frozenset[int]) -> list[tuple[str, Entry]]:
    """Every key written in a mapping, duplicates included, and every key written in its merge
    sources (``<<``), theirs included: a duplicate key is reported where it is written, also
    below a key of a merge source that a later duplicate there replaces."""
    if id(node) in seen:
        return []
    out: list[tuple[str, Entry]] = []
    for key_node, value_node in node.value:
        if key_node.tag == _MERGE:
            for source in _merge_sources(value_node):
                out += _written(source, seen | {id(node)})
        elif isinstance(key_node, yaml.ScalarNode):
            out.append((_key_text(key_node), Entry(key_node, value_node, False)))
    return out


def _find(
    node: Any, rest: str, every: bool = False, odd: bool = False
) -> list[tuple[tuple[int, int], bool]]:
    """Start positions (1-based) of the keys or list items the dotted path ``rest`` names below
    ``node``, each with a flag: the way there passes a shadowed key or a key whose text holds
    '.', '[' or ']' (or is empty). Such keys make dotted paths ambiguous, so every split of
    ``rest`` that matches is followed. With ``every``, every written occurrence of a key is
    followed (a duplicate key is found where it is written), not only the one YAML keeps."""
    if rest.startswith("["):
        match = _INDEX.match(rest)
        if match is None or not isinstance(node, yaml.SequenceNode):
            return []
        index = int(match.group(1))
        if index >= len(node.value):
            return []
        item, tail = node.value[index], rest[match.end() :]
        if not tail:
            return [((item.start_mark.line + 1, item.start_mark.column + 1), odd)]
        return _find(item, tail[1:] if tail.startswith(".") else tail, every, odd)
    if not isinstance(node, yaml.MappingNode):
        return []
    out: list[tuple[tuple[int, int], bool]] = []
    entries = list(_entries(node).items())
    if every:
        entries += _written(node, frozenset())
    for key, entry in entries:
        flag = odd or entry.shadowed or not key or bool(_PATH_SYNTAX.search(key))
        if rest == key:
            mark = entry.key_node.start_mark
            out.append(((mark.line + 1, mark.column + 1), flag))
        elif rest.startswith(key + "."):
            out += _find(entry.value_node, rest[len(key) + 1 :], every, flag)
        elif rest.startswith(key + "[") and key:
            out += _find(entry.value_node, rest[len(key) :], every, flag)
    return out


def expected_positions(root: Any, path: str, every: bool = False) -> set[tuple[int, int]] | None:
    """Where a finding at config path ``path`` must point (property 3); None when the way
    there passes a key of a known location bug. ``every``: see :func:`_find`."""
    wrapper = _entries(root).get("ConfigContainer")  # the wrapped form
    prefix = (
        "ConfigContainer" if wrapper and isinstance(wrapper.value_node, yaml.MappingNode) else ""
    )
    full = f"{prefix}.{path}".strip(".") if path else prefix
    cuts = [len(full), *[m.start() for m in re.finditer(r"[.\[]", full)][::-1]]
    for cut in cuts:
        found = _find(root, full[:cut], every) if cut else []
        if any(odd for _, odd in found):
            return None
        if found:
            return {pos for pos, _ in found}
        if cut and _find(root, full[:cut], every=True):
            return None  # only in a mapping a later duplicate replaces: test_known_location_bugs
    return {(1, 1)}


def check_locations(text: str, records: list[dict[str, Any]]) -> None:
    checked = [r for r in records if r["path"] != "<comment>" and r["code"] not in COMMENT_CODES]
    if not checked:
        return
    root = _compose(text)
    for record in checked:
        got = (record["line"], record["column"])
        assert (record["end_line"], record["end_column"]) >= got, record
        # A duplicate key (SCH003) is reported where it is written, even in a mapping that a
        # later duplicate of its parent replaces.
        want = expected_positions(root, record["path"], every=record["code"] == "SCH003")
        if want is not None:
            assert got in want, (record["code"], record["path"], got, sorted(want))


def check_library(case: Case) -> None:
    """Properties 1-4 through ``lint_text``."""
    results = []
    for _ in range(2):
        try:
            result = lint_text(
                case.text, CATALOGUE, Settings(), [], dict(case.cluster), path="fuzz.yaml"
            )
        except UsageError as exc:  # a bad in-file directive: the CLI's exit 2, naming the file
            assert "fuzz.yaml" in str(exc), exc
            return
        results.append((result.error, result.notice, [f.to_json() for f in result.findings]))
    assert results[0] == results[1], "nondeterministic findings"
    error, notice, records = results[0]
    if error is not None:
        assert not records and notice is None
        assert error.strip() and "\n" not in error.strip(), error
        return
    VALIDATOR.validate(records)
    check_locations(case.text, records)


_TMP = Path(tempfile.mkdtemp(prefix="moe-lint-fuzz-"))


def run_cli(args: list[str]) -> tuple[int, str, str]:
    """``moe-lint ARGS`` in process, with a stdout that, like a real one, cannot encode lone
    surrogates (errors="strict") and a stderr that backslash-escapes them."""
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8", errors="strict", newline="")
    err = io.TextIOWrapper(err_bytes, encoding="utf-8", errors="backslashreplace", newline="")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    out.flush()
    err.flush()
    return code, out_bytes.getvalue().decode("utf-8"), err_bytes.getvalue().decode("utf-8")


def write_case(case: Case) -> Path:
    path = _TMP / "fuzz config.yaml"
    path.write_bytes(case.text.encode("utf-8", "surrogatepass"))
    return path


def check_cli(case: Case, formats: tuple[str, ...] = ("json",), twice: bool = False) -> None:
    """Properties 1, 2 (and 4 with ``twice``) through the command line."""
    path = write_case(case)
    for fmt in formats:
        runs = [
            run_cli([str(path), "--isolated", "--format", fmt, *case.args()])
            for _ in range(2 if twice else 1)
        ]
        if twice:
            assert runs[0] == runs[1], f"nondeterministic --format {fmt}"
        code, out, err = runs[0]
        assert code in (0, 1, 2), (code, err)
        assert "Traceback" not in out + err and "internal error" not in err, err
        if code == 2:
            lines = err.splitlines()
            assert len(lines) == 1 and str(path) in lines[0], err
            if not out:  # a usage error (a bad in-file directive) stops before any report
                continue
        document = json.loads(out)
        if fmt != "json":
            continue
        records = document
        VALIDATOR.validate(records)
        if code != 2:
            assert all(r["file"] == str(path) for r in records)
            assert (code == 1) == any(r["severity"] == "error" for r in records), (code, records)
            check_locations(case.text, records)


SHORT = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


@pytest.mark.slow
@SHORT
@given(bridge_configs())
def test_generated_configs_library(case: Case) -> None:
    check_library(case)


@pytest.mark.slow
@SHORT
@given(mutated_corpus())
def test_mutated_corpus_library(case: Case) -> None:
    check_library(case)


@pytest.mark.slow
@settings(SHORT, max_examples=100)
@given(st.one_of(bridge_configs(), mutated_corpus()))
def test_cli_json(case: Case) -> None:
    check_cli(case)


@pytest.mark.slow
@settings(SHORT, max_examples=30)
@given(st.one_of(bridge_configs(), mutated_corpus()))
def test_cli_deterministic(case: Case) -> None:
    check_cli(case, formats=("json", "sarif"), twice=True)


# ---- the long run -------------------------------------------------------------------------------

LONG_EXAMPLES = int(os.environ.get("MOE_LINT_FUZZ_EXAMPLES") or 0)
long_run = pytest.mark.skipif(
    not LONG_EXAMPLES, reason="long fuzz run: set MOE_LINT_FUZZ_EXAMPLES (e.g. 100000)"
)
LONG = settings(SHORT, max_examples=max(1, LONG_EXAMPLES // 2))


@long_run
@LONG
@given(bridge_configs(), st.integers(0, 19))
def test_long_generated(case: Case, cli: int) -> None:
    check_library(case)
    if cli == 0:  # the CLI costs ~5x the library call: one example in twenty
        check_cli(case)


@long_run
@LONG
@given(mutated_corpus(), st.integers(0, 19))
def test_long_mutated(case: Case, cli: int) -> None:
    check_library(case)
    if cli == 0:
        check_cli(case)


# ---- known bugs found by fuzzing (the fuzz properties skip these cases; see expected_positions) --

_MERGE_AFTER_KEY = """\
base: &b
  context_parallel_size: 3
model:
  context_parallel_size: 6
  <<: *b
"""
_TWO_MERGE_SOURCES = """\
train: &a {context_parallel_size: 6}
dataset: &b {context_parallel_size: 3}
model:
  <<: [*a, *b]
"""
_REPLACED_DUPLICATE = """\
optimizer:
  optimizer_offload_fraction: 0.5
optimizer:
  optimizer_cpu_offload: true
"""


def _bug(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason)


_DOTTED = _bug(
    "a key whose text holds '.', '[' or ']' is not found by its dotted path (load.parse_path "
    "splits it), so the finding is anchored at the key's parent"
)
_STALE = _bug(
    "spans below a mapping that a later duplicate key replaces are kept: a path only the "
    "replaced mapping holds is located there, not at the parent that is kept"
)
_CP = "model.context_parallel_size"
KNOWN_LOCATION_BUGS = [
    pytest.param("train:\n  a]b: 1\n", "SCH001", "train.a]b", (2, 3), marks=_DOTTED, id="bracket"),
    pytest.param("model:\n  a.b: 1\n", "SCH001", "model.a.b", (2, 3), marks=_DOTTED, id="dot"),
    pytest.param(_MERGE_AFTER_KEY, "CP001", _CP, (4, 3), id="merge-after-key"),  # fixed
    pytest.param(_TWO_MERGE_SOURCES, "CP001", _CP, (1, 12), id="merge-sources"),  # fixed
    pytest.param(
        _REPLACED_DUPLICATE, "OPT001", "optimizer.optimizer_offload_fraction", (3, 1),
        marks=_STALE, id="replaced-duplicate",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("text", "code", "path", "where"), KNOWN_LOCATION_BUGS)
def test_known_location_bugs(text: str, code: str, path: str, where: tuple[int, int]) -> None:
    """Where the finding must point; the fuzz properties skip these cases until fixed."""
    result = lint_text(text, CATALOGUE, Settings(), [], {}, path="bug.yaml")
    [finding] = [f for f in result.findings if f.code == code and f.path == path]
    assert (finding.line, finding.column) == where


@pytest.mark.parametrize(
    ("text", "path"), [(p.values[0], p.values[2]) for p in KNOWN_LOCATION_BUGS]
)
def test_fuzz_skips_only_the_known_location_bugs(text: str, path: str) -> None:
    """The location property's exemptions (expected_positions -> None) cover these cases; drop
    them when test_known_location_bugs passes."""
    assert expected_positions(_compose(text), path) is None
    assert expected_positions(_compose("model:\n  ab: 1\n"), "model.ab") == {(2, 3)}


#: Found by test_generated_configs_library (hypothesis seed 118): a duplicate key inside a
#: mapping reached through a merge source's key that a later duplicate there replaces.
_DUPLICATE_BELOW_A_REPLACED_MERGE_KEY = """\
scheduler: &s
  lr_decay_iters: 1
  lr_decay_iters: 2
defaults: &d
  main_grads_dtype: *s
  main_grads_dtype: 1.0
optimizer:
  <<: *d
"""


def test_a_duplicate_is_located_where_written_below_a_replaced_merge_key() -> None:
    """SCH003 points at the duplicate as written (line 3), on every path that reaches it,
    ``optimizer.main_grads_dtype.lr_decay_iters`` through the merge included: the location
    property follows every written key of a merge source too, not only the one YAML keeps."""
    text = _DUPLICATE_BELOW_A_REPLACED_MERGE_KEY
    result = lint_text(text, CATALOGUE, Settings(), [], {}, path="dup.yaml")
    at = {f.path: (f.line, f.column) for f in result.findings if f.code == "SCH003"}
    assert at["optimizer.main_grads_dtype.lr_decay_iters"] == (3, 3)
    assert at["scheduler.lr_decay_iters"] == (3, 3)
    check_library(Case(text=text, cluster={}, name="merge-replaced-duplicate"))


@pytest.mark.parametrize("value", [".inf", ".nan"])
def test_message_with_inf_or_nan(value: str) -> None:
    text = f"train:\n  step_batch_size_schedule: {value}\n"
    result = lint_text(text, CATALOGUE, Settings(), [], {}, path="bug.yaml")
    assert "BAT008" in [f.code for f in result.findings]
