"""The safe expression language of rule packs.

Conditions, ``let`` values and fix values are Python-syntax expressions. When a pack is loaded
each expression is parsed and checked against a whitelist: only the node types listed in
``_ALLOWED_NODES`` (arithmetic, comparisons, boolean logic, conditional expressions, literals,
subscripts and comprehensions), names that are derived facts, ``let`` values or whitelisted
functions, attribute access only as ``section.field`` on a known field, calls only to
whitelisted functions, and nothing that starts with an underscore. A name a comprehension binds
is checked like any other: it may not start with ``_``, shadow a known name or an enclosing
comprehension's name, and is only visible inside its comprehension. The checked tree is then
compiled to a code object and evaluated with no builtins.

Rule packs can come from the linted repository (``--rules``, pyproject ``rules``), so they are
untrusted data, and an expression must not be able to hang the linter or take its memory. Every
operation whose cost depends on its operands' sizes is routed through a bounded helper (see
``_Bounded``), under a cost budget (``LIMITS``):

- at load time: the expression's length, node count and nesting depth; constant parts (no
  config value in them, such as ``(10**10000)**10000``) are evaluated once, under the budget;
- at evaluation: integers from ``**`` and ``*`` of at most ``int_bits`` bits; strings, lists and
  other values built by ``*``, ``+``, ``str()``, ``join()`` and comprehensions of at most
  ``size`` elements and characters (shared parts counted each time they appear, so
  ``[s for x in s]`` is as big as it prints); no ``str % args`` formatting; and a budget of
  ``steps`` per file, charged for each expression evaluated (its node count), each
  comprehension iteration (the nodes it runs), every value built and every sized argument of a
  function call.

An expression over budget raises BudgetExceeded, a RulePackError: the run stops with one line
naming the rule (exit code 2), never a rule silently skipped.

Why not simpleeval (which the first version used): it walks the AST in Python on every
evaluation, about 100× slower than the compiled form, and with ~200 rules that was most of the
time of a lint; the whitelist above is at least as strict as its sandbox (no imports, no
dunders, no attribute access beyond section fields, no calls beyond the whitelist), and it runs
once, when the pack loads, so a typo in a rule fails loudly instead of silently never firing.

Templates (messages, fix titles) use ``{name}`` / ``{name:spec}`` / ``{section.field}``
placeholders only: no indexing, no attribute chains beyond one section field, no names or
fields that start with ``_``, and format widths and precisions below 10,000.
"""

from __future__ import annotations

import ast
import math
import re
import string
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from moe_lint.analysis import facts as fact_registry
from moe_lint.analysis.derive import is_pow2, pow2_round
from moe_lint.bounds import MAX_FIELD_CHARS, bounded_repr, bounded_str
from moe_lint.config import fields as field_table
from moe_lint.errors import NotDerivable, RulePackError
from moe_lint.records import NamedTuple

#: The cost budget of rule expressions (see the module docstring).
LIMITS: dict[str, int] = {
    "chars": 10_000,  # length of one expression
    "nodes": 2_000,  # syntax-tree nodes in one expression
    "depth": 100,  # nesting depth of one expression
    "int_bits": 16_384,  # bits of an integer built by ** or * (about 4,900 digits)
    "size": 100_000,  # elements and characters of a value built by an expression
    # Cost units per file, all rules together: the shipped ~214 rules use at most ~10,000 on
    # the corpus (median ~7,000), so this is 100x headroom and about 0.2 s of worst-case work.
    "steps": 1_000_000,
    "round_digits": 1_000,  # |ndigits| of round()
}


class BudgetExceeded(RulePackError):
    """A rule expression went over the cost budget (a broken or hostile rule pack)."""


#: Steps left in the current budget (one list so the helpers can update it cheaply).
_LEFT = [LIMITS["steps"]]


def reset_budget() -> None:
    """Start a fresh budget (the engine calls this once per file)."""
    _LEFT[0] = LIMITS["steps"]


def charge(cost: int) -> None:
    left = _LEFT[0] - cost
    _LEFT[0] = left
    if left < 0:
        raise BudgetExceeded(
            f"over the expression cost budget ({LIMITS['steps']:,} steps per file)"
        )


_SCALARS = (int, float, bool, type(None))


def weight(value: Any, cap: int | None = None) -> int:
    """Elements and characters in ``value``, shared parts counted each time they appear.

    This is about the length of ``str(value)`` and the work of comparing or copying it; the
    walk stops (BudgetExceeded) as soon as the count passes ``cap`` (default: the size limit),
    so it never costs more than ``cap`` steps.
    """
    limit = LIMITS["size"] if cap is None else cap
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            total += item.bit_length() // 3 + 1  # about its decimal digits
        elif isinstance(item, list | tuple | set | frozenset):
            total += len(item) + 1
            if total <= limit:
                stack.extend(item)
        elif isinstance(item, dict):
            total += 2 * len(item) + 1
            if total <= limit:
                stack.extend(item.keys())
                stack.extend(item.values())
        else:
            total += 1
        if total > limit:
            raise BudgetExceeded(f"a value would have more than {limit:,} elements and characters")
    return total


def _int_bits(value: Any) -> int:
    return value.bit_length() if isinstance(value, int) else 0


def _check_bits(bits: int, what: str) -> None:
    if bits > LIMITS["int_bits"]:
        raise BudgetExceeded(
            f"{what} would have about {bits:,} bits (limit {LIMITS['int_bits']:,})"
        )


def _pow(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1:
        _check_bits(abs(a).bit_length() * b, "a power")
        charge(abs(a).bit_length() * b // 64 + 1)
    elif isinstance(b, int) and abs(b) > 1_000_000_000:
        raise BudgetExceeded(f"exponent {b} is too large")
    return a**b


def _mul(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        bits = a.bit_length() + b.bit_length()
        if bits > 64:
            _check_bits(bits, "a product")
            charge(bits // 64)
        return a * b
    for seq, n in ((a, b), (b, a)):
        if isinstance(seq, str | list | tuple) and isinstance(n, int) and n > 0 and seq:
            size = weight(seq) * n
            if size > LIMITS["size"]:
                raise BudgetExceeded(
                    f"a repetition would have {size:,} elements and characters "
                    f"(limit {LIMITS['size']:,})"
                )
            charge(size)
    return a * b


def _add(a: Any, b: Any) -> Any:
    if isinstance(a, str) and isinstance(b, str):
        size = len(a) + len(b)
        if size > LIMITS["size"]:
            raise BudgetExceeded(
                f"a string would have {size:,} characters (limit {LIMITS['size']:,})"
            )
        charge(size // 64 + 1)
    elif isinstance(a, list | tuple) and isinstance(b, list | tuple):
        charge(weight(a, LIMITS["size"] - weight(b)) + len(b))
    return a + b


def _mod(a: Any, b: Any) -> Any:
    if isinstance(a, str | bytes):
        # printf-style formatting has unbounded widths ('%0999999999d' % 0); use str() and +.
        raise TypeError("string formatting with % is not available in rule expressions")
    return a % b


def _it(iterable: Any, cost: int) -> Iterator[Any]:
    """A comprehension's iterable: each iteration costs the nodes it runs."""
    left = _LEFT
    for item in iterable:
        left[0] -= cost
        if left[0] < 0:
            charge(0)
        yield item


def _built(value: Any) -> Any:
    """A list, set or dict built by a comprehension: within the size limit."""
    charge(weight(value))
    return value


def _w(value: Any) -> Any:
    """An operand compared inside a comprehension: the comparison costs its size."""
    if isinstance(value, str):
        if len(value) > 256:  # short strings compare in the time the item is charged
            charge(len(value) // 8)
    elif not isinstance(value, _SCALARS):
        charge(weight(value) // 8 + 1)
    return value


def _sized(value: Any) -> Any:
    """A slice: copying it costs its length."""
    if isinstance(value, str | list | tuple):
        charge(len(value) // 8 + 1)
    return value


def _divisors(n: int) -> list[int]:
    """The divisors of ``n`` in order, in O(sqrt n) (a loop up to ``n`` cost 0.1 s a call)."""
    n = int(n)
    if not 0 < n <= 1_000_000:
        return []
    charge(math.isqrt(n) // 4)
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]


def _bounded_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, _SCALARS):
        return str(value)  # ints are below Python's 4,300-digit str() limit or refused
    charge(weight(value))
    return str(value)


def _join(items: Iterable[Any], sep: str = ", ") -> str:
    pieces = [_bounded_str(i) for i in _counted(items)]
    size = sum(map(len, pieces)) + len(str(sep)) * max(0, len(pieces) - 1)
    if size > LIMITS["size"]:
        raise BudgetExceeded(f"join() would build {size:,} characters (limit {LIMITS['size']:,})")
    return str(sep).join(pieces)


def _counted(items: Any) -> Any:
    """A sized argument of a function: the call costs its length."""
    if isinstance(items, str | list | tuple | set | frozenset | dict):
        charge(len(items) + 1)
    return items


def _log2(x: float) -> float:
    return math.log2(x) if x > 0 else float("-inf")


def _over_args(func: Callable[..., Any]) -> Callable[..., Any]:
    def bounded(*args: Any, **kwargs: Any) -> Any:
        for arg in args:
            _counted(arg)
        return func(*args, **kwargs)

    bounded.__name__ = getattr(func, "__name__", "function")
    return bounded


def _sorted(items: Any, **kwargs: Any) -> list[Any]:
    _counted(items)
    if isinstance(items, str | list | tuple | set | frozenset | dict):
        charge(len(items) * max(1, len(items).bit_length()))
    return sorted(items, **kwargs)


def _gcd_like(func: Callable[..., int]) -> Callable[..., int]:
    def bounded(*args: Any) -> int:
        bits = sum(_int_bits(a) for a in args)
        _check_bits(bits, f"{func.__name__}()")
        charge((bits // 64 + 1) ** 2 // 4 + len(args))
        return func(*args)

    bounded.__name__ = func.__name__
    return bounded


def _prod(items: Iterable[Any], start: Any = 1) -> Any:
    result = start
    for item in _counted(items):
        result = _mul(result, item)
    return result


def _round(number: Any, ndigits: Any = None) -> Any:
    if isinstance(ndigits, int) and abs(ndigits) > LIMITS["round_digits"]:
        raise BudgetExceeded(f"round() to {ndigits} digits (limit {LIMITS['round_digits']:,})")
    return round(number) if ndigits is None else round(number, ndigits)


def _int(value: Any = 0, *args: Any) -> int:
    if isinstance(value, str):
        charge(len(value) // 8 + 1)
    return int(value, *args)


def _float(value: Any = 0.0) -> float:
    if isinstance(value, str):
        charge(len(value) // 8 + 1)
    return float(value)


#: Functions rule expressions may call (besides ``explicit``/``known``, bound per config).
#: Each one whose cost depends on its arguments' sizes charges the budget.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "lcm": _gcd_like(math.lcm),
    "gcd": _gcd_like(math.gcd),
    "pow2_round": pow2_round,
    "is_pow2": is_pow2,
    "divisors": _divisors,
    "join": _join,
    "log2": _log2,
    "len": len,
    "min": _over_args(min),
    "max": _over_args(max),
    "abs": abs,
    "int": _int,
    "bool": bool,
    "float": _float,
    "round": _round,
    "sorted": _sorted,
    "str": _bounded_str,
    "any": _over_args(any),
    "all": _over_args(all),
    "prod": _prod,
    "set": _over_args(set),
}
CONFIG_FUNCTIONS = (
    "explicit", "stated", "known", "value", "fact", "version_below", "version_at_least",
)  # fmt: skip

#: Names of derived facts rules may reference: the registry (analysis/facts.py).
FACT_NAMES = fact_registry.NAMES


class Compiled(NamedTuple):
    """An expression parsed, checked and compiled once."""

    text: str
    code: Any  # a code object (types.CodeType), evaluated with no builtins
    names: frozenset[str]
    #: Steps one evaluation charges before it runs (its node count).
    cost: int = 1


#: AST node types an expression may contain (everything else is rejected at load time).
_ALLOWED_NODES: tuple[type, ...] = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.BinOp, ast.UnaryOp, ast.Not, ast.USub,
    ast.UAdd, ast.Invert, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In,
    ast.NotIn, ast.IfExp, ast.Call, ast.keyword, ast.Name, ast.Load, ast.Store, ast.Attribute,
    ast.Subscript, ast.Slice, ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set,
    ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp, ast.comprehension,
)  # fmt: skip
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_CONSTANT_TYPES = (str, int, float, bool, type(None))
_HELPERS = {ast.Pow: "_pow", ast.Mult: "_mul", ast.Add: "_add", ast.Mod: "_mod"}


def _size(node: ast.AST) -> int:
    return sum(1 for _ in ast.walk(node))


def _call(helper: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast.Name(helper, ast.Load()), list(args), [])


class _Bounded(ast.NodeTransformer):
    """Route size-dependent operations through the bounded helpers.

    ``**`` ``*`` ``+`` ``%`` everywhere; a slice's result is charged its length; each
    comprehension iterable is counted (every iteration costs the nodes of the comprehension
    that run per item) and each list/set/dict a comprehension builds is checked against the size
    limit; inside a comprehension, where an expression runs once per item, the operands of
    comparisons are charged their size too.
    """

    def __init__(self) -> None:
        self.in_comprehension = 0

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        helper = _HELPERS.get(type(node.op))
        if helper is None:
            return node
        return ast.copy_location(_call(helper, node.left, node.right), node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.slice, ast.Slice):
            return ast.copy_location(_call("_sized", node), node)
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if self.in_comprehension:
            node.left = _call("_w", node.left)
            node.comparators = [_call("_w", c) for c in node.comparators]
        return node

    def _comprehension(self, node: Any) -> ast.AST:
        generators = node.generators
        per_item = 1 + sum(_size(part) for part in _per_item_parts(node))  # 1: the step
        # The first iterable runs once, in the enclosing scope; the rest run per item.
        generators[0].iter = self.visit(generators[0].iter)
        self.in_comprehension += 1
        for gen in generators:
            if gen is not generators[0]:
                gen.iter = self.visit(gen.iter)
            gen.ifs = [self.visit(test) for test in gen.ifs]
        for name in ("elt", "key", "value"):
            if hasattr(node, name):
                setattr(node, name, self.visit(getattr(node, name)))
        self.in_comprehension -= 1
        for gen in generators:
            gen.iter = _call("_it", gen.iter, ast.Constant(per_item))
        if isinstance(node, ast.GeneratorExp):
            return node
        return ast.copy_location(_call("_built", node), node)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension


def _per_item_parts(node: Any) -> list[ast.AST]:
    parts: list[ast.AST] = []
    for i, gen in enumerate(node.generators):
        if i:
            parts.append(gen.iter)
        parts.extend(gen.ifs)
    parts.extend(getattr(node, name) for name in ("elt", "key", "value") if hasattr(node, name))
    return parts


#: Names every namespace provides: the bounded helpers and an empty builtins table.
BASE_NAMESPACE: dict[str, Any] = {
    "__builtins__": {},
    "_pow": _pow,
    "_mul": _mul,
    "_add": _add,
    "_mod": _mod,
    "_it": _it,
    "_built": _built,
    "_w": _w,
    "_sized": _sized,
}


def _fail(where: str, text: str, problem: str) -> RulePackError:
    shown = text if len(text) <= 200 else text[:200] + "..."
    return RulePackError(f"{where}: {problem} in expression {shown!r}")


class _Names:
    """Check every name against its scope; collect the free names and the constant parts."""

    def __init__(
        self,
        where: str,
        text: str,
        known: frozenset[str],
        field_exists: Callable[[str, str], bool],
    ) -> None:
        self.where, self.text, self.known, self.field_exists = where, text, known, field_exists
        self.used: set[str] = set()
        #: Largest subtrees with no config value in them that compute something.
        self.constant: list[ast.expr] = []

    def fail(self, problem: str) -> RulePackError:
        return _fail(self.where, self.text, problem)

    def check(self, node: ast.AST, scope: dict[str, bool]) -> bool:
        """Check ``node``; True when it reads nothing from the config (only functions)."""
        if isinstance(node, ast.Name):
            return self._name(node, scope)
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                raise self.fail(f"attribute {node.attr!r} is not allowed")
            section = node.value
            if not isinstance(section, ast.Name) or section.id not in SECTION_NAMES:
                raise self.fail("attribute access is only allowed as section.field")
            if not self.field_exists(section.id, node.attr):
                raise self.fail(f"unknown field {section.id}.{node.attr}")
            self.used.add(section.id)
            return False
        if isinstance(node, ast.Call):
            func = node.func
            if not isinstance(func, ast.Name) or (
                func.id not in FUNCTIONS and func.id not in CONFIG_FUNCTIONS
            ):
                raise self.fail("only whitelisted functions may be called")
            self.used.add(func.id)
            pure = func.id in FUNCTIONS
            children: list[ast.AST] = [*node.args, *node.keywords]
            return self._children(node, children, scope) and pure
        if isinstance(node, ast.keyword):
            return self.check(node.value, scope)
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, _CONSTANT_TYPES):
                raise self.fail(f"a constant of type {type(node.value).__name__} is not allowed")
            return True
        if isinstance(node, _COMPREHENSIONS):
            return self._comprehension(node, scope)
        return self._children(node, list(ast.iter_child_nodes(node)), scope)

    def _name(self, node: ast.Name, scope: dict[str, bool]) -> bool:
        if node.id.startswith("_"):
            raise self.fail(f"name {node.id!r} is not allowed")
        if node.id in scope:
            return scope[node.id]  # a comprehension's own name: constant when its iterable is
        if node.id not in self.known:
            raise self.fail(f"unknown name {node.id!r}")
        self.used.add(node.id)
        return node.id in FUNCTIONS

    def _children(self, node: ast.AST, children: list[ast.AST], scope: dict[str, bool]) -> bool:
        return self._pure(children, [self.check(child, scope) for child in children])

    def _pure(self, parts: list[ast.AST], flags: list[bool]) -> bool:
        """Whether every part reads no config; if not, the parts that do not are constants
        to evaluate (under the budget) when the pack loads."""
        if all(flags):
            return True
        for part, pure in zip(parts, flags, strict=True):
            if pure and isinstance(part, ast.expr):
                self._constant(part)
        return False

    def _constant(self, node: ast.expr) -> None:
        if any(isinstance(n, ast.BinOp | ast.Call | ast.Subscript | ast.comprehension)
               for n in ast.walk(node)):  # fmt: skip
            self.constant.append(node)

    def _comprehension(self, node: Any, scope: dict[str, bool]) -> bool:
        inner = dict(scope)
        parts: list[ast.AST] = []
        flags: list[bool] = []
        for gen in node.generators:
            if gen.is_async:
                raise self.fail("async comprehensions are not allowed")
            parts.append(gen.iter)
            flags.append(self.check(gen.iter, inner))
            for name in self._targets(gen.target, inner):
                inner[name] = flags[-1]
            for test in gen.ifs:
                parts.append(test)
                flags.append(self.check(test, inner))
        for name in ("elt", "key", "value"):
            if hasattr(node, name):
                parts.append(getattr(node, name))
                flags.append(self.check(parts[-1], inner))
        return self._pure(parts, flags)

    def _targets(self, target: ast.AST, scope: dict[str, bool]) -> list[str]:
        names: list[str] = []
        stack = [target]
        while stack:
            item = stack.pop()
            if isinstance(item, ast.Tuple | ast.List):
                stack.extend(item.elts)
            elif isinstance(item, ast.Name):
                names.append(item.id)
            else:
                raise self.fail("a comprehension may only bind plain names")
        for name in names:
            if name.startswith("_"):
                raise self.fail(f"name {bounded_repr(name)} is not allowed")
            if name in self.known or name in scope:
                raise self.fail(f"comprehension variable {bounded_repr(name)} shadows a known name")
            if names.count(name) > 1:
                raise self.fail(f"comprehension variable {bounded_repr(name)} is bound twice")
        return names


def _depth(tree: ast.AST) -> int:
    deepest = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _evaluate_constant(node: ast.expr, where: str, text: str) -> None:
    """Evaluate a part that reads no config once, under the budget, so that a pack asking for
    ``(10**10000)**10000`` fails when it loads."""
    tree = ast.fix_missing_locations(_Bounded().visit(ast.Expression(body=node)))
    namespace: dict[str, Any] = {**BASE_NAMESPACE, **FUNCTIONS}
    try:
        eval(compile(tree, f"<rule {where}>", "eval"), namespace)
    except BudgetExceeded as exc:
        raise _fail(where, text, str(exc)) from None
    except Exception:  # other errors depend on the data: the rule skips then
        pass


def compile_expr(
    text: Any,
    where: str,
    known_names: frozenset[str],
    field_exists: Callable[[str, str], bool],
) -> Compiled:
    """Parse ``text`` and check its names; raise RulePackError naming ``where`` on problems."""
    if isinstance(text, bool | int | float):
        text = str(text)
    if not isinstance(text, str):
        raise RulePackError(f"{where}: an expression must be a string, not {type(text).__name__}")
    if not text.strip():
        raise RulePackError(f"{where}: empty expression")
    if len(text) > LIMITS["chars"]:
        raise RulePackError(
            f"{where}: expression of {len(text):,} characters (limit {LIMITS['chars']:,})"
        )
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise _fail(where, text, f"syntax error ({exc.msg})") from None
    except (RecursionError, MemoryError):
        raise _fail(where, text, "nesting too deep to parse") from None
    except ValueError as exc:
        raise _fail(where, text, f"syntax error ({exc})") from None
    nodes = _size(tree)
    if nodes > LIMITS["nodes"]:
        raise _fail(where, text, f"{nodes:,} syntax nodes (limit {LIMITS['nodes']:,})")
    if _depth(tree) > LIMITS["depth"]:
        raise _fail(where, text, f"nesting deeper than {LIMITS['depth']} levels")
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda):
            raise _fail(where, text, "lambda is not allowed")
        if not isinstance(node, _ALLOWED_NODES):
            raise _fail(where, text, f"{type(node).__name__} is not allowed")
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
        ):
            raise _fail(where, text, "string formatting with % is not allowed (use str() and +)")
    names = _Names(where, text, known_names, field_exists)
    if names.check(tree.body, {}):
        names._constant(tree.body)
    for part in names.constant:
        _evaluate_constant(_copy(part), where, text)
    bounded = ast.fix_missing_locations(_Bounded().visit(tree))
    code = compile(bounded, f"<rule {where}>", "eval")
    return Compiled(text.strip(), code, frozenset(names.used), nodes)


def _copy(node: ast.expr) -> ast.expr:
    copied: ast.expr = ast.parse(ast.unparse(node), mode="eval").body
    return copied


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
        """The field's value; templates call it as ``_read`` (never getattr, so no slot such as
        ``_config`` is reachable from a pack)."""
        if attr.startswith("_"):
            raise NotDerivable(attr, "not a config field")
        dotted = f"{self._name}.{attr}"
        value = self._config.value(dotted)
        if value is field_table.UNKNOWN:
            raise NotDerivable(dotted, f"{dotted} is not set (the recipe decides)")
        if dotted not in self._config.values:
            kind = field_table.kind(self._name, attr)
            if not _fits(value, kind):
                # An untyped field holding a value of the wrong kind: treat it as unknown
                # rather than let a rule compute with it.
                raise NotDerivable(dotted, f"{dotted} = {bounded_repr(value)} is not a {kind}")
        return value

    _read = __getattr__


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
_BIG_NUMBER = re.compile(r"\d{5,}")


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
    if len(text) > LIMITS["chars"]:
        raise RulePackError(
            f"{where}: template of {len(text):,} characters (limit {LIMITS['chars']:,})"
        )
    fields: list[str] = []
    try:
        parsed = list(_FORMATTER.parse(text))
    except ValueError as exc:
        raise RulePackError(
            f"{where}: bad template {bounded_repr(text)}: {bounded_str(str(exc))}"
        ) from None
    for _, name, spec, conv in parsed:
        if name is None:
            continue
        if conv not in (None, "r", "s"):
            raise RulePackError(f"{where}: conversion !{conv} not allowed in {bounded_repr(text)}")
        if spec and "{" in spec:
            raise RulePackError(f"{where}: nested placeholders not allowed in {bounded_repr(text)}")
        if spec and _BIG_NUMBER.search(spec):
            raise RulePackError(
                f"{where}: format width or precision of 10,000 or more in {{{name}:{spec}}}"
            )
        parts = name.split(".")
        if len(parts) == 2 and parts[0] in SECTION_NAMES:
            if parts[1].startswith("_"):
                raise RulePackError(
                    f"{where}: placeholder {{{bounded_str(name, 100)}}} is not a config field"
                )
            if not field_exists(parts[0], parts[1]):
                raise RulePackError(
                    f"{where}: unknown field {bounded_repr(name)} in {bounded_repr(text)}"
                )
        elif len(parts) != 1 or not parts[0].isidentifier() or parts[0] not in known_names:
            raise RulePackError(
                f"{where}: unknown placeholder {{{bounded_str(name, 100)}}} in {bounded_repr(text)}"
            )
        fields.append(name)
    return Template(text, tuple(fields))
