"""Compile the shipped rule packs ahead of time into ``src/moe_lint/engine/_compiled_rules.py``.

Parsing and validating ``rules/*.yaml`` (YAML, the expression whitelist, field lookups) costs
far more than linting a file. This generator does it once and writes a plain Python module:
every rule expression becomes the body of a zero-argument function (``def _e12(): return
...``), whose code object the engine evaluates against the rule namespace exactly like the code
``expr_compiler.compile_expr`` makes (``eval(code, namespace)``), and every other part of a
rule is a literal. Python's own bytecode cache then serves it, so the first run of a fresh
install is as fast as any later one, and nothing is ever read back from a user cache.

The module records a content hash of the packs and engine files it was made from
(``catalogue.shipped_hash``); at load time moe-lint compares it with the files on disk and
compiles the packs itself when they differ (a developer editing ``rules/`` in a checkout), so a
stale module is never served. The wheel build regenerates it (``hatch_build.py``); the tests
run ``--check`` so the committed copy cannot drift.

    python tools/compile_rules.py                 # rewrite src/moe_lint/engine/_compiled_rules.py
    python tools/compile_rules.py --check         # exit 1 if it is out of date
    python tools/compile_rules.py --output FILE   # write elsewhere (the wheel build hook)
"""

from __future__ import annotations

import argparse
import ast
import math
import sys
import types
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TARGET = REPO / "src" / "moe_lint" / "engine" / "_compiled_rules.py"
COMMAND = "python tools/compile_rules.py"

HEADER = '''\
"""The shipped rule catalogue, compiled ahead of time. Generated: do not edit.

Made by `python tools/compile_rules.py` from rules/*.yaml (see that script); moe-lint uses it
only while SOURCE_HASH matches the packs and engine files on disk (catalogue.shipped_hash).
"""
# fmt: off
# ruff: noqa
'''


def _record_expression_trees() -> dict[int, ast.Expression]:
    """Record the final (checked, rewritten) tree of every expression the compiler makes.

    ``compile_expr`` ends in ``compile(tree, ...)``; shadowing ``compile`` in its module's
    globals (``engine/expr_compiler.py``) captures the tree without touching the engine,
    whatever rewrites it applies.
    """
    import builtins

    from moe_lint.engine import expr_compiler as expr

    trees: dict[int, ast.Expression] = {}
    real = builtins.compile

    def recording(source: Any, filename: str, mode: str, *args: Any, **kwargs: Any) -> Any:
        code = real(source, filename, mode, *args, **kwargs)
        if isinstance(source, ast.Expression) and mode == "eval":
            trees[id(code)] = source
        return code

    expr.compile = recording  # type: ignore[attr-defined]
    return trees


class _Emitter:
    def __init__(self, trees: dict[int, ast.Expression]) -> None:
        self.trees = trees
        self.functions: list[str] = []
        self.by_code: dict[int, str] = {}
        self.classes: dict[str, type] = {}

    def code(self, code: types.CodeType) -> str:
        if id(code) in self.by_code:
            return self.by_code[id(code)]
        tree = self.trees.get(id(code))
        if tree is None:
            raise SystemExit(f"compile_rules: no recorded tree for {code.co_filename}")
        source = ast.unparse(tree.body)
        # The emitted text must parse back to the very tree the engine compiled.
        again = ast.parse(source, mode="eval")
        if ast.dump(again) != ast.dump(tree):
            raise SystemExit(f"compile_rules: {code.co_filename} does not round-trip: {source}")
        name = f"_e{len(self.functions)}"
        text = f"def {name}(): return ({source})"
        func = compile(text, "<check>", "exec").co_consts[0]
        if func.co_freevars or func.co_argcount:
            raise SystemExit(f"compile_rules: {code.co_filename} needs a closure: {source}")
        self.functions.append(text)
        self.by_code[id(code)] = f"{name}.__code__"
        return self.by_code[id(code)]

    def value(self, value: Any) -> str:
        if isinstance(value, types.CodeType):
            return self.code(value)
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            cls = type(value)
            if not cls.__module__.startswith("moe_lint."):
                raise SystemExit(f"compile_rules: cannot emit a {cls.__qualname__}")
            self.classes[cls.__name__] = cls
            return f"{cls.__name__}({', '.join(self.value(v) for v in value)})"
        if isinstance(value, frozenset):
            if not value:
                return "frozenset()"
            items = ", ".join(self.value(v) for v in sorted(value))
            return f"frozenset(({items}{',' if len(value) == 1 else ''}))"
        if isinstance(value, tuple):
            items = ", ".join(self.value(v) for v in value)
            return f"({items}{',' if len(value) == 1 else ''})"
        if isinstance(value, list):
            return "[" + ", ".join(self.value(v) for v in value) + "]"
        if isinstance(value, dict):
            pairs = (f"{self.value(k)}: {self.value(v)}" for k, v in value.items())
            return "{" + ", ".join(pairs) + "}"
        if isinstance(value, float) and not math.isfinite(value):
            raise SystemExit(f"compile_rules: cannot emit the float {value!r} as a literal")
        if value is None or isinstance(value, bool | int | float | str):
            text = repr(value)
            if ast.literal_eval(text) != value:
                raise SystemExit(f"compile_rules: {text} does not round-trip")
            return text
        raise SystemExit(f"compile_rules: cannot emit a {type(value).__qualname__}: {value!r}")


def generate() -> str:
    """The module text for the packs and engine files of this checkout."""
    sys.path.insert(0, str(REPO / "src"))
    trees = _record_expression_trees()
    from moe_lint.engine import catalogue, checks

    rules_dir = REPO / "rules"
    package = REPO / "src" / "moe_lint"
    index = checks.check_index()
    rules = catalogue.compile_packs(sorted(rules_dir.glob("*.yaml")), catalogue.LazyChecks(index))
    emit = _Emitter(trees)
    body = [f"    {emit.value(rule)}," for rule in rules]
    lines = [HEADER]
    for cls in sorted(emit.classes.values(), key=lambda c: (c.__module__, c.__name__)):
        lines.append(f"from {cls.__module__} import {cls.__name__}")
    lines += [
        "",
        f"SOURCE_HASH = {catalogue.shipped_hash(rules_dir, package)!r}",
        f"CHECK_INDEX = {dict(sorted(index.items()))!r}",
        "",
        *emit.functions,
        "",
        "",
        "def rules():",
        "    return [",
        *body,
        "    ]",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the module is stale")
    parser.add_argument("--output", type=Path, default=TARGET, help="where to write it")
    ns = parser.parse_args(argv)
    sys.path.insert(0, str(REPO / "tools"))
    from _generated import write_or_check

    return write_or_check(ns.output, generate(), check=ns.check, command=COMMAND)


if __name__ == "__main__":
    sys.exit(main())
