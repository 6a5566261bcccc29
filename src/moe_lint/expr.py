"""The safe expression language of rule packs.

Conditions, ``let`` values and fix values are Python-syntax expressions. When a pack is loaded
each expression is parsed and checked against a whitelist: only the node types listed in
``_ALLOWED_NODES`` (arithmetic, comparisons, boolean logic, conditional expressions, literals,
subscripts and comprehensions), names that are derived facts, ``let`` values or whitelisted
functions, attribute access only as ``section.field`` on a known field, calls only to
whitelisted functions, and nothing that starts with an underscore. ``**`` and ``*`` are
rewritten to bounded helpers so a pack cannot ask for a 10**10**10 or a gigabyte string.
The checked tree is then compiled to a code object and evaluated with no builtins.

Why not simpleeval (which the first version used): it walks the AST in Python on every
evaluation, about 100× slower than the compiled form, and with ~200 rules that was most of the
time of a lint; the whitelist above is at least as strict as its sandbox (no imports, no
dunders, no attribute access beyond section fields, no calls beyond the whitelist), and it runs
once, when the pack loads, so a typo in a rule fails loudly instead of silently never firing.

Templates (messages, fix titles) use ``{name}`` / ``{name:spec}`` / ``{section.field}``
placeholders only: no indexing, no attribute chains beyond one section field.
"""

from __future__ import annotations

import ast
import math
import string
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from moe_lint.bounds import MAX_FIELD_CHARS, bounded_repr, bounded_str
from moe_lint.derive import is_pow2, pow2_round
from moe_lint.errors import NotDerivable, RulePackError


def _divisors(n: int) -> list[int]:
    """The divisors of ``n`` in order, in O(sqrt n) (a loop up to ``n`` cost 0.1 s a call)."""
    n = int(n)
    if not 0 < n <= 1_000_000:
        return []
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]


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
        "selective_needs_offload",
    }
)  # fmt: skip


class Compiled(NamedTuple):
    """An expression parsed, checked and compiled once."""

    text: str
    code: Any  # a code object (types.CodeType), evaluated with no builtins
    names: frozenset[str]


#: AST node types an expression may contain (everything else is rejected at load time).
_ALLOWED_NODES: tuple[type, ...] = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.BinOp, ast.UnaryOp, ast.Not, ast.USub,
    ast.UAdd, ast.Invert, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In,
    ast.NotIn, ast.IfExp, ast.Call, ast.keyword, ast.Name, ast.Load, ast.Store, ast.Attribute,
    ast.Subscript, ast.Slice, ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set,
    ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp, ast.comprehension,
)  # fmt: skip
MAX_POWER = 10_000
MAX_SIZE = 1_000_000


def _pow(a: Any, b: Any) -> Any:
    if isinstance(b, int | float) and abs(b) > MAX_POWER:
        raise ValueError(f"exponent {b} is too large")
    return a**b


def _mul(a: Any, b: Any) -> Any:
    for seq, n in ((a, b), (b, a)):
        if isinstance(seq, str | list | tuple) and isinstance(n, int) and len(seq) * n > MAX_SIZE:
            raise ValueError("sequence repetition is too large")
    return a * b


class _Bounded(ast.NodeTransformer):
    """Route ``**`` and ``*`` through the bounded helpers."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        helper = {ast.Pow: "_pow", ast.Mult: "_mul"}.get(type(node.op))
        if helper is None:
            return node
        call = ast.Call(ast.Name(helper, ast.Load()), [node.left, node.right], [])
        return ast.copy_location(call, node)


#: Names every namespace provides: the bounded helpers and an empty builtins table.
BASE_NAMESPACE: dict[str, Any] = {"__builtins__": {}, "_pow": _pow, "_mul": _mul}


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
        if isinstance(node, ast.Lambda):
            raise _fail(where, text, "lambda is not allowed")
        if not isinstance(node, _ALLOWED_NODES):
            raise _fail(where, text, f"{type(node).__name__} is not allowed")
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
    bounded = ast.fix_missing_locations(_Bounded().visit(tree))
    code = compile(bounded, f"<rule {where}>", "eval")
    return Compiled(text.strip(), code, frozenset(used))


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


class Template(NamedTuple):
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
            # Config values are echoed through the bounded helpers: a value may share one
            # large string or list through thousands of aliases (bounds.MAX_REPR_CHARS,
            # MAX_FIELD_CHARS).
            if conv == "r":
                value = bounded_repr(value)
            if isinstance(value, float) and not spec and value.is_integer():
                value = int(value)
            if isinstance(value, list) and not spec:
                value = "[" + _bounded_join(value) + "]"
            if not spec:
                out.append(bounded_str(value))
                continue
            out.append(format(value, spec))
        return "".join(out)


def _bounded_join(items: list[Any]) -> str:
    """``", ".join(str(v) for v in items)`` stopped past bounds.MAX_FIELD_CHARS."""
    parts: list[str] = []
    size = 0
    for item in items:
        if size > MAX_FIELD_CHARS:
            parts.append("...")
            break
        text = bounded_str(item)
        parts.append(text)
        size += len(text) + 2
    return ", ".join(parts)


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
