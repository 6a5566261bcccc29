"""The package's import graph has no cycle, and every import hidden in a function says why.

Issue 11: a cycle means two modules are one concept split in two, and 93 function-level
imports hid the real graph. tools/import_graph.py reads every import (module level and inside
functions, not TYPE_CHECKING blocks) with ``ast``.
"""

from __future__ import annotations

from typing import Any

import pytest

from conftest import load_tool

graph = load_tool("import_graph")


@pytest.fixture(scope="module")
def scan() -> tuple[set[str], list[Any]]:
    """(modules, edges) of the package: one ``ast`` read of every file for the tests below."""
    modules, edges = graph.collect()
    return modules, edges


def test_no_import_cycles(scan: tuple[set[str], list[Any]]) -> None:
    modules, edges = scan
    assert len(modules) > 40 and any(e.lazy for e in edges), "the scan found nothing"
    assert graph.cycles(modules, edges) == []


def test_every_function_level_import_has_a_reason(scan: tuple[set[str], list[Any]]) -> None:
    _, edges = scan
    bad = graph.unexplained_lazy(edges)
    assert bad == [], [f"{e.source}:{e.line} -> {e.target}" for e in bad]


def test_a_cycle_is_found() -> None:
    """The detector itself: a two-module loop through a function-level import is a cycle."""
    a_to_b = graph.Edge("moe_lint.a", "moe_lint.b", 1, False, "")
    b_to_a = graph.Edge("moe_lint.b", "moe_lint.a", 5, True, "reason")
    found = graph.cycles({"moe_lint.a", "moe_lint.b"}, [a_to_b, b_to_a])
    assert found == [["moe_lint.a", "moe_lint.b"]]


#: The data path's order: a package may import the ones before it, never one after it.
LAYERS = ("config", "analysis", "engine", "output")


def test_packages_import_only_earlier_stages(scan: tuple[set[str], list[Any]]) -> None:
    modules, edges = scan
    backwards = []
    for e in edges:
        if e.target not in modules:
            continue
        src, dst = e.source.split("."), e.target.split(".")
        staged = len(src) > 2 and len(dst) > 2 and src[1] in LAYERS and dst[1] in LAYERS
        if staged and LAYERS.index(dst[1]) > LAYERS.index(src[1]):
            backwards.append(f"{e.source}:{e.line} -> {e.target}")
    assert backwards == []
