"""The import graph of ``src/moe_lint``: every edge, its cycles, the imports hidden in functions.

Why: a cycle (``a`` imports ``b`` imports ``a``) means two modules are one concept split in two,
and an import inside a function hides an edge from the reader and from this graph's casual
readers alike. The package rule (issue 11) is: no cycles over *all* runtime edges -- module-level
and function-level alike -- and function-level imports only for the heavy optional modules, each
with a one-line reason on the line above (each of them: standard library, third party or our
own), e.g. ``# Lazy: pydantic (~185 ms) only on the slow validation path.``. ``TYPE_CHECKING``
imports are not runtime edges.

Usage:  python tools/import_graph.py            # summary: modules, edges, cycles, lazy imports
        python tools/import_graph.py --edges    # also every edge, one per line
        python tools/import_graph.py --check    # exit 1 on a cycle or an unexplained lazy import
Standard library only.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "moe_lint"


@dataclass(frozen=True)
class Edge:
    """One import of a moe_lint module (or a heavy external one) by a moe_lint module."""

    source: str
    target: str
    line: int
    lazy: bool  # inside a function body
    reason: str  # the comment on the line above a lazy import, '' when there is none


def module_name(path: Path) -> str:
    """``src/moe_lint/engine/expr.py`` -> ``moe_lint.engine.expr``; a package: its ``__init__``."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(current: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _comment_above(lines: list[str], lineno: int) -> str:
    """The comment right above an import, or above the run of imports it belongs to."""
    index = lineno - 2
    while index >= 0 and lines[index].strip().startswith(("from ", "import ", ")")):
        if lines[index].strip().startswith("#"):
            break
        index -= 1
    above = lines[index].strip() if index >= 0 else ""
    return above[1:].strip() if above.startswith("#") else ""


def edges_of(path: Path, modules: set[str]) -> list[Edge]:
    """Every runtime import in one file, with whether it sits inside a function."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    lines = text.splitlines()
    name = module_name(path)
    is_package = path.name == "__init__.py"
    found: list[Edge] = []

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        base = _resolve(name, is_package, node)
        out = []
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            out.append(sub if sub in modules else base)
        return out

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit(other, lazy)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                for target in targets(child):
                    internal = target == "moe_lint" or target.startswith("moe_lint.")
                    if internal or lazy:
                        reason = _comment_above(lines, child.lineno) if lazy else ""
                        found.append(Edge(name, target, child.lineno, lazy, reason))
                continue
            inner = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            visit(child, inner)

    visit(tree, False)
    return found


def collect() -> tuple[set[str], list[Edge]]:
    files = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
    modules = {module_name(p) for p in files}
    edges = [e for p in files for e in edges_of(p, modules)]
    return modules, edges


def cycles(modules: set[str], edges: list[Edge]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), over all runtime edges.

    A package's ``__init__`` importing its own submodules is not a cycle of concepts, so edges
    from a module to its own parent package are left out.
    """
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for e in edges:
        if e.target in modules and e.target != e.source:
            if e.source.startswith(e.target + "."):
                continue  # a submodule importing its package's __init__ (names it re-exports)
            graph[e.source].add(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


def unexplained_lazy(edges: list[Edge]) -> list[Edge]:
    """Function-level imports without a one-line reason on the line above (or above their run
    of imports): each one hides an edge, so it must say what start-up cost it saves."""
    return [e for e in edges if e.lazy and not e.reason]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", action="store_true", help="print every edge")
    parser.add_argument("--check", action="store_true", help="exit 1 on a cycle or bad lazy import")
    args = parser.parse_args(argv)
    modules, edges = collect()
    internal = [e for e in edges if e.target in modules or e.target == "moe_lint"]
    statements = {(e.source, e.line) for e in edges if e.lazy}
    internal_statements = {(e.source, e.line) for e in internal if e.lazy}
    found = cycles(modules, edges)
    bad = unexplained_lazy(edges)
    print(f"modules: {len(modules)}")
    print(f"internal edges: {len(internal)} ({sum(e.lazy for e in internal)} inside functions)")
    print(
        f"function-level import statements: {len(statements)} "
        f"({len(internal_statements)} of moe_lint modules; {len(bad)} without a reason)"
    )
    print(f"cycles: {len(found)}")
    for comp in found:
        print("  cycle: " + " <-> ".join(comp))
    for e in bad:
        print(f"  lazy import without a reason: {e.source}:{e.line} -> {e.target}")
    if args.edges:
        for e in sorted(internal, key=lambda e: (e.source, e.target, e.line)):
            print(f"{e.source} -> {e.target}{'  (in a function)' if e.lazy else ''}")
    return 1 if args.check and (found or bad) else 0


if __name__ == "__main__":
    sys.exit(main())
