"""The safe expression language of rule packs.

Conditions, ``let`` values and fix values are Python-syntax expressions evaluated by
``simpleeval`` (a maintained sandboxed evaluator: no imports, no dunder/underscore attribute
access, no calls except whitelisted functions). On top of its sandbox we check every name and
every ``section.field`` reference when a pack is *loaded*, so a typo in a rule fails loudly at
load time instead of silently never firing, and we keep the parsed AST so each expression is
parsed once per process, not once per file.

Templates (messages, fix titles) use ``{name}`` / ``{name:spec}`` / ``{section.field}``
placeholders only: no indexing, no attribute chains beyond one section field.
"""

from __future__ import annotations

import ast
import math
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from moe_lint.derive import is_pow2, pow2_round
from moe_lint.errors import NotDerivable, RulePackError


def _divisors(n: int) -> list[int]:
    n = int(n)
    return [d for d in range(1, n + 1) if n % d == 0] if 0 < n <= 1_000_000 else []


def _join(items: Iterable[Any], sep: str = ", ") -> str:
    return sep.join(str(i) for i in items)


def _log2(x: float) -> float:
    return math.log2(x) if x > 0 else float("-inf")


#: Functions rule expressions may call (besides ``explicit``/``known``, bound per config).
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "lcm": math.lcm,
    "gcd": math.gcd,
    "pow2_round": pow2_round,
    "is_pow2": is_pow2,
    "divisors": _divisors,
    "join": _join,
    "log2": _log2,
    "len": len,
    "min": min,
    "max": max,
    "abs": abs,
    "int": int,
    "bool": bool,
    "float": float,
    "round": round,
    "sorted": sorted,
    "str": str,
    "any": any,
    "all": all,
    "prod": math.prod,
    "set": set,
}
CONFIG_FUNCTIONS = (
    "explicit", "stated", "known", "value", "fact", "version_below", "version_at_least",
)  # fmt: skip

#: Names of derived facts (see derive.py) rules may reference.
FACT_NAMES = frozenset(
    {
        "tp", "pp", "cp", "ep", "etp", "vpp", "sp", "dense_mesh", "expert_mesh", "min_world",
        "world", "world_assumed", "dp", "edp", "seq", "dataset_seq", "gbs", "mbs", "microbatches",
        "tokens_per_cp_rank", "cp_target", "tokens_per_tp_cp_rank", "is_moe",
        "experts_per_rank", "vpp_stages", "full_dump", "gpu", "gpus_per_node",
        "gpu_name", "gpu_hbm_gib", "nvlink_domain", "gpu_cc", "gpu_fp8", "gpu_fp8_blockwise",
        "gpu_mxfp8", "gpu_nvfp4", "dispatch_group", "tokens_per_rank", "layout_error",
        "layout_stages", "layout_layers", "layout_mtp", "layout_problems", "stage_layers",
        "stage_split_error", "mcore_version", "te_version", "bridge_version",
        "mem_peak_gib", "mem_usable_gib", "mem_headroom_gib", "mem_warn_gib", "mem_error_gib",
        "mem_stage",
        "mem_top_terms", "mem_levers", "edp2_saving_gib", "selective_fits",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Compiled:
    """An expression parsed and name-checked once."""

    text: str
    #: The expression node itself (simpleeval dispatches on node type).
    tree: ast.expr
    names: frozenset[str]


def _fail(where: str, text: str, problem: str) -> RulePackError:
    return RulePackError(f"{where}: {problem} in expression {text!r}")


def compile_expr(
    text: str,
    where: str,
    known_names: frozenset[str],
    field_exists: Callable[[str, str], bool],
) -> Compiled:
    """Parse ``text`` and check its names; raise RulePackError naming ``where`` on problems."""
    if not isinstance(text, str) or not text.strip():
        raise RulePackError(f"{where}: empty expression")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise _fail(where, text, f"syntax error ({exc.msg})") from None
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.comprehension):
            for target in ast.walk(node.target):
                if isinstance(target, ast.Name):
                    bound.add(target.id)
        if isinstance(node, ast.Lambda):
            raise _fail(where, text, "lambda is not allowed")
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                raise _fail(where, text, f"attribute {node.attr!r} is not allowed")
            if isinstance(node.value, ast.Name) and node.value.id in SECTION_NAMES:
                if not field_exists(node.value.id, node.attr):
                    raise _fail(where, text, f"unknown field {node.value.id}.{node.attr}")
            else:
                raise _fail(where, text, "attribute access is only allowed as section.field")
        elif isinstance(node, ast.Name):
            if node.id in bound:
                continue
            if node.id not in known_names:
                raise _fail(where, text, f"unknown name {node.id!r}")
            used.add(node.id)
        elif isinstance(node, ast.Call):
            func = node.func
            if not isinstance(func, ast.Name) or (
                func.id not in FUNCTIONS and func.id not in CONFIG_FUNCTIONS
            ):
                raise _fail(where, text, "only whitelisted functions may be called")
    return Compiled(text.strip(), tree.body, frozenset(used))


#: Config sections expressions may read as ``section.field``.
SECTION_NAMES = frozenset(
    {
        "model", "train", "dataset", "optimizer", "ddp", "mixed_precision", "comm_overlap",
        "rerun_state_machine", "rng", "dist", "validation", "env_vars", "checkpoint", "scheduler",
        "logger", "tokenizer", "peft", "profiling",
    }
)  # fmt: skip


class SectionView:
    """``model.tensor_model_parallel_size`` in an expression: effective value or NotDerivable."""

    __slots__ = ("_config", "_name")

    def __init__(self, config: Any, name: str) -> None:
        self._config = config
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        dotted = f"{self._name}.{attr}"
        if dotted in self._config.unknown:
            raise NotDerivable(dotted, f"{dotted} is not set (the recipe decides)")
        value = self._config.get(dotted)
        if dotted not in self._config.values:
            kind = _catalogue_type(self._name, attr)
            if not _fits(value, kind):
                # An untyped field holding a value of the wrong kind: treat it as unknown
                # rather than let a rule compute with it.
                raise NotDerivable(dotted, f"{dotted} = {value!r} is not a {kind}")
        return value


def _catalogue_type(section: str, field: str) -> str:
    from moe_lint.catalogue import bridge_fields

    fields = bridge_fields().get("sections", {}).get(section) or {}
    return str(fields.get(field, "any"))


def _fits(value: Any, kind: str) -> bool:
    if value is None or kind == "any":
        return True
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        if isinstance(value, str):
            try:
                float(value)
            except ValueError:
                return False
            return True
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "list":
        return isinstance(value, list)
    if kind == "dict":
        return isinstance(value, dict)
    return True


_FORMATTER = string.Formatter()


@dataclass(frozen=True)
class Template:
    """A message template with checked placeholders."""

    text: str
    fields: tuple[str, ...]

    def render(self, lookup: Callable[[str], Any]) -> str:
        out: list[str] = []
        for literal, name, spec, conv in _FORMATTER.parse(self.text):
            out.append(literal)
            if name is None:
                continue
            value = lookup(name)
            if conv == "r":
                value = repr(value)
            if isinstance(value, float) and not spec and value == int(value):
                value = int(value)
            if isinstance(value, list) and not spec:
                value = "[" + ", ".join(str(v) for v in value) + "]"
            out.append(format(value, spec or ""))
        return "".join(out)


def compile_template(
    text: str, where: str, known_names: frozenset[str], field_exists: Callable[[str, str], bool]
) -> Template:
    """Check a template's placeholders against the names available to the rule."""
    if not isinstance(text, str):
        raise RulePackError(f"{where}: template must be a string")
    fields: list[str] = []
    try:
        parsed = list(_FORMATTER.parse(text))
    except ValueError as exc:
        raise RulePackError(f"{where}: bad template {text!r}: {exc}") from None
    for _, name, spec, conv in parsed:
        if name is None:
            continue
        if conv not in (None, "r", "s"):
            raise RulePackError(f"{where}: conversion !{conv} not allowed in {text!r}")
        if spec and "{" in spec:
            raise RulePackError(f"{where}: nested placeholders not allowed in {text!r}")
        parts = name.split(".")
        if len(parts) == 2 and parts[0] in SECTION_NAMES:
            if not field_exists(parts[0], parts[1]):
                raise RulePackError(f"{where}: unknown field {name!r} in {text!r}")
        elif len(parts) != 1 or not parts[0].isidentifier() or parts[0] not in known_names:
            raise RulePackError(f"{where}: unknown placeholder {{{name}}} in {text!r}")
        fields.append(name)
    return Template(text, tuple(fields))
