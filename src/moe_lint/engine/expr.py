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
