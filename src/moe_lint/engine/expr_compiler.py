"""The rule-expression compiler: parse, check and compile a rule's ``condition`` / ``when``.

Why a module of its own: a run with the shipped catalogue never compiles an expression (the
catalogue ships compiled, ``tools/compile_rules.py``), so ``ast`` and this code load only for
packs from the linted repository, plugins, or an edited checkout (``engine.expr`` keeps what
evaluating a compiled expression needs).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from moe_lint.bounds import bounded_repr
from moe_lint.engine.expr import (
    BASE_NAMESPACE,
    CONFIG_FUNCTIONS,
    FUNCTIONS,
    LIMITS,
    SECTION_NAMES,
    BudgetExceeded,
    Compiled,
)
from moe_lint.errors import RulePackError

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
