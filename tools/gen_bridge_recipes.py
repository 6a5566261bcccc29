"""Write src/moe_lint/data/bridge_recipes.json: what each released Megatron Bridge recipe sets.

A Bridge launch script names its config by recipe (``scripts/training/run_recipe.py --recipe
NAME model.x=y ...``); moe-lint lints it as that recipe's config with the script's overrides
applied (src/moe_lint/config/bridge_launch.py). This tool reads every recipe the release
exports, statically (nothing is imported or run), with tools/published_rows.py's Interpreter:
``cfg.<section>.<field> = <literal>`` through the recipe function and the functions it calls,
the ``ConfigContainer(...)`` / ``*Config(...)`` constructors they build, and the model provider
(``AutoBridge.from_hf_pretrained("<hf id>")``: the architecture is moe-lint's preset for that
checkpoint). What the reading cannot decide is recorded as unknown, never guessed:

- an assignment of a value that is not a literal (``cfg.x = some_call()``);
- an ``if`` whose test it cannot decide: both branches are read, and a field they leave with
  different values is unknown (a ``return`` on one side is followed to the function's end);
- loops, ``try`` and ``+=``: every field their body changes is unknown;
- a call it cannot follow that is handed the config or a section (a method of the config, a
  function outside Bridge): that section (or the whole config) is unknown;
- a constructor called with ``**kwargs`` or an argument that is not a literal: the section, or
  that field.

Which recipes exist and which function a name runs follow scripts/training/recipe_runner.py::
load_recipe and scripts/training/recipe_metadata.py (v0.6.0): a name that matches
``BENCHMARK_RECIPE_PATTERN`` and is exported by a ``megatron.bridge.perf_recipes`` package is a
benchmark recipe; otherwise the library recipe exported by ``megatron.bridge.recipes`` (the
family packages' and their ``h100`` packages' exports).

Usage::

    python tools/gen_bridge_recipes.py --wheel megatron_bridge-0.6.2-py3-none-any.whl
        [--mirror DIR] [--check]

The package is read from the released wheel (``pip download --no-deps megatron-bridge==0.6.2``);
with ``--mirror`` (a bare git mirror of NVIDIA-NeMo/Megatron-Bridge) each recipe's file is
compared with the release tag v0.6.0 and the data says whether it is the same there. Not run
by tools/regenerate.py (it needs the wheel).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any, ClassVar

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _generated import write_or_check  # noqa: E402
from published_rows import _UNSET, DEFAULT_MIRROR, Interpreter, Mirror, _literal  # noqa: E402

from moe_lint.config import fields  # noqa: E402
from moe_lint.config.bridge_recipes import BENCHMARK_RECIPE_PATTERN  # noqa: E402

OUT = REPO / "src" / "moe_lint" / "data" / "bridge_recipes.json"
COMMAND = "python tools/gen_bridge_recipes.py --wheel WHEEL"
TAG = "v0.6.0"
PKG = "src/megatron/bridge"

#: Calls that change no config (logging, checks, path helpers).
HARMLESS = re.compile(
    r"^(print|len|isinstance|hasattr|getattr|logger\.\w+|logging\.\w+|warnings\.warn|"
    r"os\.\w+|os\.path\.\w+|assert_\w+|_?validate\w*|_?check\w*|_?warn\w*|torch\.\w+)$"
)


class Opaque:
    """A value the static reading cannot know (why is kept for the data's notes)."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why

    def __repr__(self) -> str:
        return f"Opaque({self.why!r})"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, Opaque) or isinstance(b, Opaque):
        return False
    return type(a) is type(b) and a == b


class WheelMirror(Mirror):
    """The released wheel read like the git mirror (``src/megatron/bridge/...`` paths)."""

    def __init__(self, wheel: Path) -> None:
        super().__init__(wheel)
        self.zip = zipfile.ZipFile(wheel)
        self.names = set(self.zip.namelist())

    def text(self, ref: str, path: str) -> str | None:
        key = (ref, path)
        if key not in self._text:
            inner = path.removeprefix("src/")
            self._text[key] = self.zip.read(inner).decode("utf-8") if inner in self.names else None
        return self._text[key]

    def ls(self, ref: str, folder: str) -> list[str]:
        inner = folder.removeprefix("src/").rstrip("/") + "/"
        return sorted("src/" + n for n in self.names if n.startswith(inner))


def _uncast(node: ast.AST) -> ast.AST:
    """``cast(T, expr)`` is ``expr``."""
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "cast"
        and len(node.args) == 2
    ):
        node = node.args[1]
    return node


def _call_name(node: ast.AST) -> str:
    """``a.b.c`` of a call's function (``""`` when it is not a dotted name)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Call):
        inner = _call_name(node.func)
        return f"{inner}()." + ".".join(reversed(parts)) if inner else ""
    return ""


class RecipeInterpreter(Interpreter):
    """published_rows.Interpreter that records what it cannot know instead of forgetting it."""

    NATIVE: ClassVar[set[str]] = set()
    sections = tuple(fields.table()["top_level"])

    def __init__(self, mirror: Mirror, ref: str, preset: dict[str, Any] | None) -> None:
        super().__init__(mirror, ref, preset)
        #: Machine states at a ``return`` reached on one side of an undecided ``if``.
        self._exits: list[dict[str, Any]] = []
        self._returned_uncertain = False
        self.opaque_calls: list[str] = []
        #: The recipe returns something other than the config it built (not followed).
        self.odd_return: str | None = None
        #: The exception the path being read raises (it builds no config).
        self.raised: str | None = None

    # -- values ---------------------------------------------------------------------------

    def _names(self, tree: ast.Module, local: dict[str, Any]) -> dict[str, Any]:
        """Module constants, annotated ones and the ones imported from other Bridge modules
        too (``COMMON_RECIPE_ENV_VARS``), then the function's locals."""
        names = dict(self._constants(tree, 0))
        names.update(local)
        return names

    def _constants(self, tree: ast.Module, depth: int) -> dict[str, Any]:
        cache: dict[int, dict[str, Any]] = self.mirror.__dict__.setdefault("_constants", {})
        if id(tree) in cache:
            return cache[id(tree)]
        here = next((p for (_, p), t in self.mirror._tree.items() if t is tree), None)
        out: dict[str, Any] = {}
        cache[id(tree)] = out  # (an import cycle reads what is known so far)
        for stmt in tree.body:
            if isinstance(stmt, ast.ImportFrom) and here is not None and depth < 6:
                target = self._module_path(here, stmt.module or "", stmt.level)
                other = self.mirror.tree(self.ref, target) if target else None
                if other is None:
                    continue
                theirs = self._constants(other, depth + 1)
                for alias in stmt.names:
                    if alias.name in theirs:
                        out[alias.asname or alias.name] = theirs[alias.name]
                continue
            target_node = value_node = None
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target_node, value_node = stmt.targets[0], stmt.value
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                target_node, value_node = stmt.target, stmt.value
            if isinstance(target_node, ast.Name) and value_node is not None:
                value = _literal(value_node, out)
                if value is not _UNSET:
                    out[target_node.id] = value
        return out

    def _value(self, node: ast.AST, names: dict[str, Any], aliases: dict[str, str]) -> Any:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id[:1].isupper():  # a dataclass built from keyword arguments
                return self._constructed(node, names, aliases)
            if node.func.id == "getattr" and len(node.args) == 3:
                # A field the reading has not seen set is not the getattr default: the
                # provider or the class may have set it.
                path = self._path(node.args[0], aliases)
                attr = self._value(node.args[1], names, aliases)
                if path is not None and isinstance(attr, str):
                    found = self.trace.values.get(f"{path}.{attr}", _UNSET)
                    return _UNSET if isinstance(found, Opaque) else found
        value = super()._value(node, names, aliases)
        return _UNSET if isinstance(value, Opaque) else value

    def _constructed(self, node: ast.Call, names: dict[str, Any], aliases: dict[str, str]) -> Any:
        """``SomeConfig(a=1, b=f())``: ("obj", {a: 1, b: Opaque}); ``**kw``: all unknown."""
        assert isinstance(node.func, ast.Name)
        if node.args or any(kw.arg is None for kw in node.keywords):
            return _UNSET  # positional or ** arguments: what it holds is not known
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            assert kw.arg is not None
            item = self._value(kw.value, names, aliases)
            kwargs[kw.arg] = item if item is not _UNSET else Opaque(f"{node.func.id}({kw.arg}=...)")
        if node.func.id.endswith("Provider"):
            kwargs["_provider"] = node.func.id
        target = self._class_path(self._where, node.func.id, 0)
        if target is not None:
            kwargs["_target_"] = target  # the class, as a full dump names it
        return ("obj", kwargs)

    def _class_path(self, where: str, name: str, depth: int) -> str | None:
        """``megatron.bridge...Class`` of a class a module defines or imports from Bridge."""
        tree = self.mirror.tree(self.ref, where)
        if tree is None or depth > 8:
            return None
        for stmt in tree.body:
            if isinstance(stmt, ast.ClassDef) and stmt.name == name:
                module = where.removeprefix("src/").removesuffix(".py").removesuffix("/__init__")
                return module.replace("/", ".") + "." + name
        for stmt in tree.body:
            if isinstance(stmt, ast.ImportFrom):
                for alias in stmt.names:
                    if (alias.asname or alias.name) == name or alias.name == "*":
                        target = self._module_path(where, stmt.module or "", stmt.level)
                        if target and target != where:
                            found = self._class_path(
                                target, alias.name if alias.name != "*" else name, depth + 1
                            )
                            if found is not None:
                                return found
        return None

    # -- functions ----------------------------------------------------------------------

    def _resolve(self, path: str, name: str) -> tuple[str, ast.FunctionDef, ast.Module] | None:
        """The base lookup, then ``from module import *`` (the ``h100`` packages)."""
        found = super()._resolve(path, name)
        if found is not None:
            return found
        tree = self.mirror.tree(self.ref, path)
        for stmt in tree.body if tree is not None else []:
            if (  # name = other_function (a module-level alias)
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id == name
                and isinstance(stmt.value, ast.Name)
                and stmt.value.id != name
            ):
                return self._resolve(path, stmt.value.id)
            if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                target = self._module_path(path, stmt.module or "", stmt.level)
                if target and target != path:
                    found = self._resolve(target, name)
                    if found is not None:
                        return found
        return None

    def _builds_config(self, node: ast.AST) -> tuple[str, ast.FunctionDef, ast.Module] | None:
        """The function of a call that returns a ConfigContainer (a recipe or a helper
        that takes one and gives it back), by its return annotation."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            return None
        found = self._resolve(self._where, node.func.id)
        if found is None:
            return None
        returns = found[1].returns
        text = ast.unparse(returns) if returns is not None else ""
        return found if text.strip("'\"") == "ConfigContainer" else None

    def _assign_from_call(
        self,
        node: ast.Call,
        where: str,
        tree: ast.Module,
        names: dict[str, Any],
        aliases: dict[str, str],
    ) -> None:
        """``cfg = f(...)``: f runs on our config; an argument that is itself a config
        (``f(other_recipe(), 64)``, ``f(cfg)``) is built first and handed over as f's."""
        assert isinstance(node.func, ast.Name)
        found = self._resolve(where, node.func.id)
        if found is None:
            self._unresolved("", node, names, aliases)
            return
        func = found[1]
        params = [a.arg for a in func.args.args]
        cfg_params: list[tuple[str, str]] = []
        args: dict[str, Any] = {}
        given = [(params[i] if i < len(params) else None, a) for i, a in enumerate(node.args)]
        given += [(kw.arg, kw.value) for kw in node.keywords]
        for param, arg in given:
            if param is None:
                continue
            if self._builds_config(arg) is not None:
                assert isinstance(arg, ast.Call)
                self._assign_from_call(arg, where, tree, names, aliases)
                cfg_params.append((param, ""))
            elif isinstance(arg, ast.Name) and arg.id in aliases:
                cfg_params.append((param, aliases[arg.id]))
            else:
                value = self._value(arg, names, aliases)
                if value is not _UNSET:
                    args[param] = value
        self.call(found, args, cfg_params)

    def _block(
        self,
        body: list[ast.stmt],
        where: str,
        tree: ast.Module,
        names: dict[str, Any],
        aliases: dict[str, str],
    ) -> bool:
        """The base reading, statement by statement; ``return <call building a config>`` is
        read as ``cfg = <call>`` (the config it returns is the one it built)."""
        for stmt in body:
            if (  # model = <provider>: the variable stands for the model section
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and self._is_provider(stmt.value, names, aliases)
            ):
                aliases[stmt.targets[0].id] = "model"
                self._model_from(stmt.value, names, aliases)
                continue
            if (
                isinstance(stmt, ast.Return)
                and stmt.value is not None
                and self.depth > 1
                and self._is_provider(stmt.value, names, aliases)
            ):
                self._model_from(stmt.value, names, aliases)  # a builder returning a provider
                return False
            if isinstance(stmt, ast.Return) and stmt.value is not None:
                value = stmt.value
                if (
                    isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Name)
                    and value.func.id == "ConfigContainer"
                ):  # return ConfigContainer(...): the config it returns is that one
                    target = ast.Name(id="cfg", ctx=ast.Store())
                    super()._block(
                        [ast.Assign(targets=[target], value=value)], where, tree, names, aliases
                    )
                    return False
                if self._builds_config(value) is not None:
                    assert isinstance(value, ast.Call)
                    self._assign_from_call(value, where, tree, names, aliases)
                    return False
                if not (isinstance(value, ast.Name) and value.id in aliases) and self.depth <= 1:
                    self.odd_return = ast.unparse(value)[:80]
            if not super()._block([stmt], where, tree, names, aliases):
                return False
        return True

    # -- recording ----------------------------------------------------------------------

    def _clear(self, path: str) -> None:
        values = self.trace.values
        for key in [k for k in values if path == "" or k == path or k.startswith(path + ".")]:
            del values[key]

    def _set(self, path: str, value: Any) -> None:
        if isinstance(value, tuple) and value and value[0] == "obj":
            self._clear(path)  # a new object replaces the old one (its fields: class defaults)
            kwargs = dict(value[1])
            provider = kwargs.pop("_provider", None)
            if path == "model" and provider:
                self.trace.values["model._provider"] = {"class": provider}
            for key, item in kwargs.items():
                self._set(f"{path}.{key}", item)
            return
        if isinstance(value, Opaque):
            self._clear(path)
            self.trace.values[path] = value
            return
        if path == "model" and value is None:
            self._clear(path)
            self.trace.values[path] = None
            return
        super()._set(path, value)

    def _unresolved(
        self, path: str, node: ast.AST, names: dict[str, Any], aliases: dict[str, str]
    ) -> None:
        if path == "model" and self._model_from(node, names, aliases):
            return
        what = _call_name(node.func) + "()" if isinstance(node, ast.Call) else type(node).__name__
        self._set(path, Opaque(f"set to {what or 'an expression'}"))

    def _provider_builder(self, node: ast.AST) -> tuple[str, ast.FunctionDef, ast.Module] | None:
        """A call of a function that returns a model provider (``-> ...Provider``)."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            return None
        found = self._resolve(self._where, node.func.id)
        returns = found[1].returns if found is not None else None
        return found if returns is not None and "Provider" in ast.unparse(returns) else None

    def _is_provider(self, node: ast.AST, names: dict[str, Any], aliases: dict[str, str]) -> bool:
        node = _uncast(node)
        if not isinstance(node, ast.Call):
            return False
        if self._hf_id(node, names, aliases) is not _UNSET or self._provider_builder(node):
            return True
        return isinstance(node.func, ast.Name) and node.func.id.endswith("Provider")

    def _model_from(self, node: ast.AST, names: dict[str, Any], aliases: dict[str, str]) -> bool:
        """Make the model section what a provider expression builds; False when ``node`` is
        not one the reading knows (an HF checkpoint's provider, ``SomeProvider(...)``, or a
        function building one)."""
        node = _uncast(node)
        if not isinstance(node, ast.Call):
            return False
        hf = self._hf_id(node, names, aliases)
        if hf is not _UNSET:
            self._clear("model")
            self.trace.values["model._provider"] = {"hf": hf}
            return True
        if isinstance(node.func, ast.Name) and node.func.id.endswith("Provider"):
            built = self._value(node, names, aliases)
            if isinstance(built, tuple) and built and built[0] == "obj":
                self._set("model", built)
            else:
                self._set("model", Opaque(f"{node.func.id}(...) with positional or ** arguments"))
                self.trace.values["model._provider"] = {"class": node.func.id}
            return True
        found = self._provider_builder(node)
        if found is None:
            return False
        args = self._bind(found[1], node, names, aliases)
        self.call(found, args, [])
        return True

    def _hf_id(self, node: ast.Call, names: dict[str, Any], aliases: dict[str, str]) -> Any:
        """The checkpoint of ``AutoBridge.from_hf_pretrained(ID, ...).to_megatron_provider()``
        (None when the id is not a literal); _UNSET when the call is not that."""
        probe: ast.AST = _uncast(node)
        while isinstance(probe, ast.Call):
            func = probe.func
            if isinstance(func, ast.Attribute) and func.attr == "from_hf_config":
                return None  # built from a config object, not a named checkpoint
            if isinstance(func, ast.Attribute) and func.attr == "from_hf_pretrained":
                if not probe.args:
                    return None
                hf = self._value(probe.args[0], names, aliases)
                return hf if isinstance(hf, str) else None
            probe = func.value if isinstance(func, ast.Attribute) else func
        return _UNSET

    # -- control flow ---------------------------------------------------------------------

    def _snapshot(self) -> dict[str, Any]:
        return dict(self.trace.values)

    def _merge(self, states: list[dict[str, Any]], why: str) -> dict[str, Any]:
        """One state from several possible ones: a field they disagree on is unknown."""
        keys: set[str] = set().union(*states)
        missing = object()
        out: dict[str, Any] = {}
        for key in keys:
            seen = [s.get(key, missing) for s in states]
            first = seen[0]
            if first is not missing and all(v is not missing and _same(v, first) for v in seen):
                out[key] = first
            elif all(v is missing for v in seen):
                continue
            else:
                out[key] = Opaque(why)
        # A field one state sets whole-section-wise (obj) and another not: the prefix rule
        # above already made each differing leaf unknown.
        return out

    def _run_branch(
        self,
        body: list[ast.stmt],
        start: dict[str, Any],
        where: str,
        tree: ast.Module,
        names: dict[str, Any],
        aliases: dict[str, str],
    ) -> tuple[dict[str, Any], dict[str, Any], bool | str]:
        """Run ``body`` from state ``start``: (state, locals, True when it runs on / False
        when it returns / "raised" when it raises: no config comes out of that path)."""
        self.trace.values = dict(start)
        local = dict(names)
        outer, self.raised = self.raised, None
        ran_on = self._block(body, where, tree, local, dict(aliases))
        raised, self.raised = self.raised, outer
        return self.trace.values, local, ran_on if raised is None else "raised"

    def _undecided_if(
        self,
        stmt: ast.If,
        where: str,
        tree: ast.Module,
        names: dict[str, Any],
        aliases: dict[str, str],
    ) -> bool:
        self.trace.skipped_ifs += 1
        start = self._snapshot()
        returned = self.returned
        outcomes = [
            self._run_branch(stmt.body, start, where, tree, names, aliases),
            self._run_branch(stmt.orelse, start, where, tree, names, aliases),
        ]
        if self.returned is not returned:
            self._returned_uncertain = True
        going = [o for o in outcomes if o[2] is True]
        for values, _, ran_on in outcomes:
            if ran_on is False:
                self._exits.append(values)  # this side returns: its state is final
        if not going:
            ends = [o[0] for o in outcomes if o[2] is False]
            if not ends:  # both sides raise
                self.raised = "both branches of an if raise"
                return False
            self.trace.values = self._merge(ends, "set in an undecided if")
            self._exits = [e for e in self._exits if all(e is not x for x in ends)]
            return False
        self.trace.values = self._merge([o[0] for o in going], "set in an undecided if")
        merged_names = self._merge_names([o[1] for o in going])
        names.clear()
        names.update(merged_names)
        return True

    @staticmethod
    def _merge_names(states: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in set().union(*states):
            seen = [s.get(key, _UNSET) for s in states]
            if all(v is not _UNSET and _same(v, seen[0]) for v in seen):
                out[key] = seen[0]
        return out

    def _other(
        self,
        stmt: ast.stmt,
        where: str,
        tree: ast.Module,
        names: dict[str, Any],
        aliases: dict[str, str],
    ) -> bool:
        if isinstance(stmt, ast.Raise):
            self.raised = ast.unparse(stmt.exc)[:160] if stmt.exc is not None else "raise"
            return False
        if isinstance(stmt, ast.With):
            return self._block(stmt.body, where, tree, names, aliases)
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.Try)):
            start = self._snapshot()
            body = list(stmt.body)
            if isinstance(stmt, ast.Try):
                body += [s for h in stmt.handlers for s in h.body] + stmt.orelse + stmt.finalbody
            values, _, _ = self._run_branch(body, start, where, tree, names, aliases)
            why = f"changed in a {type(stmt).__name__.lower()} statement"
            self.trace.values = self._merge([start, values], why)
            for target in ast.walk(stmt):
                if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store):
                    names.pop(target.id, None)
            return True
        if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
            path = self._path(stmt.target, aliases)
            if path is not None and path.split(".")[0] in self.sections:
                value = (
                    self._value(stmt.value, names, aliases)
                    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None
                    else _UNSET
                )
                self._set(path, value if value is not _UNSET else Opaque("changed by +="))
            elif isinstance(stmt.target, ast.Name):
                names.pop(stmt.target.id, None)
        return True

    def _opaque_call(self, node: ast.Call, names: dict[str, Any], aliases: dict[str, str]) -> None:
        name = _call_name(node.func)
        if HARMLESS.match(name):
            return
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "update" and len(node.args) == 1:
            path = self._path(func.value, aliases)
            value = self._value(node.args[0], names, aliases)
            if path is not None and path.split(".")[0] in self.sections:
                if isinstance(value, dict):
                    for key, item in value.items():
                        self._set(f"{path}.{key}", item)
                else:
                    self._set(path, Opaque(f"{name}(...)"))
                return
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id not in aliases
        ):
            names.pop(func.value.id, None)  # stage.append(...): the local list changed
        touched: list[str] = []
        if isinstance(func, ast.Attribute):
            owner = self._path(func.value, aliases)
            if owner is not None:
                touched.append(owner)
        for arg in [*node.args, *(kw.value for kw in node.keywords)]:
            path = self._path(arg, aliases) if isinstance(arg, (ast.Name, ast.Attribute)) else None
            if path is not None:
                touched.append(path)
        touched = [t for t in touched if t == "" or t.split(".")[0] in self.sections]
        if not touched:
            return
        self.opaque_calls.append(name or "<call>")
        for path in touched:
            if path == "":
                for section in self.sections:
                    self._set(section, Opaque(f"{name}(cfg) is not followed"))
            else:
                self._set(path, Opaque(f"{name}(...) is not followed"))

    def call(
        self,
        found: tuple[str, ast.FunctionDef, ast.Module],
        args: dict[str, Any],
        cfg_params: list[tuple[str, str]],
        aliases: dict[str, str] | None = None,
    ) -> None:
        outer_exits, outer_uncertain = self._exits, self._returned_uncertain
        self._exits, self._returned_uncertain = [], False
        super().call(found, args, cfg_params, aliases)
        if self._exits:
            self.trace.values = self._merge(
                [self.trace.values, *self._exits], "differs between the function's returns"
            )
        if self._returned_uncertain and self.depth >= 1:
            self.returned = _UNSET
        self._exits, self._returned_uncertain = outer_exits, outer_uncertain


# --------------------------------------------------------------------------------------------
# Which recipes a release exports
# --------------------------------------------------------------------------------------------


def _exported(mirror: Mirror, ref: str, init: str, depth: int = 0) -> list[str]:
    """Names a package ``__init__.py`` exports that end in ``_config``: its ``__all__`` when it
    has one (what ``from pkg import *`` takes), else the names it imports or lists (and, for
    ``from module import *``, what that module exports)."""
    tree = mirror.tree(ref, init)
    if tree is None or depth > 6:
        return []
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets)
            and isinstance(stmt.value, (ast.List, ast.Tuple))
        ):
            return [
                e.value
                for e in stmt.value.elts
                if isinstance(e, ast.Constant) and str(e.value).endswith("_config")
            ]
    names: list[str] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
            probe = RecipeInterpreter(mirror, ref, None)
            target = probe._module_path(init, stmt.module or "", stmt.level)
            if target and target != init:
                names += _exported(mirror, ref, target, depth + 1)
    for node in ast.walk(tree):
        if isinstance(node, ast.alias):
            candidate = node.asname or node.name
            if candidate.endswith("_config"):
                names.append(candidate)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.endswith("_config")
        ):
            names.append(node.value)
    return names


def library_names(mirror: Mirror, ref: str) -> dict[str, str]:
    """Library recipe name -> the package ``__init__.py`` it is found through
    (recipe_runner.py::find_library_recipe: ``megatron.bridge.recipes`` re-exports every
    family and its ``h100`` package with ``import *``)."""
    root = f"{PKG}/recipes/__init__.py"
    tree = mirror.tree(ref, root)
    out: dict[str, str] = {}
    assert tree is not None, f"no {root}"
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.ImportFrom)
            and stmt.module
            and any(a.name == "*" for a in stmt.names)
        ):
            init = "src/" + stmt.module.replace(".", "/") + "/__init__.py"
            for name in _exported(mirror, ref, init):
                out.setdefault(name, init)
    return out


def benchmark_names(mirror: Mirror, ref: str) -> dict[str, str]:
    """recipe_metadata.py::benchmark_recipe_names: every ``*_config`` name the
    ``megatron.bridge.perf_recipes`` packages' ``__init__.py`` files import or list."""
    out: dict[str, str] = {}
    for path in mirror.ls(ref, f"{PKG}/perf_recipes"):
        if path.endswith("/__init__.py"):
            for name in _exported(mirror, ref, path):
                if BENCHMARK_RECIPE_PATTERN.search(name):
                    out.setdefault(name, path)
    return out


# --------------------------------------------------------------------------------------------
# Reading one recipe
# --------------------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(type(value).__name__)


#: The sections shipped: those the rules and derivations read (logging, tokenizer, profiling
#: and fault-tolerance settings change nothing moe-lint checks).
SHIPPED = (
    "model",
    "train",
    "validation",
    "optimizer",
    "scheduler",
    "ddp",
    "dist",
    "comm_overlap",
    "mixed_precision",
    "env_vars",
    "dataset",
    "rerun_state_machine",
    "rng",
    "checkpoint",
    "peft",
)


def _kept(path: str) -> bool:
    """A field of a shipped section that moe-lint's field table knows (or an env variable)."""
    if path.split(".")[0] not in SHIPPED:
        return False
    section, _, key = path.rpartition(".")
    if section == "env_vars" or key == "_target_":
        return True
    return bool(section) and key in fields.section(section)


def read_recipe(mirror: Mirror, ref: str, init: str, name: str) -> dict[str, Any] | str:
    """The settings one recipe name gives (a dict), or why they cannot be read (str)."""
    probe = RecipeInterpreter(mirror, ref, None)
    found = probe._resolve(init, name)
    if found is None:
        return f"{name} is not defined where {init} imports it from"
    where, func, _ = found
    interp = RecipeInterpreter(mirror, ref, None)
    interp.call(found, {}, [("cfg", "")])
    if interp.raised is not None:
        return f"{where}::{func.name} raises {interp.raised}"
    if interp.odd_return is not None:
        return (
            f"{where}::{func.name} returns {interp.odd_return}, which the reading does not follow"
        )
    values: dict[str, Any] = {}
    unknown: dict[str, str] = {}
    mp_recipe = None
    provider = interp.trace.values.get("model._provider")
    for path, value in interp.trace.values.items():
        if path == "model._provider":
            continue
        if isinstance(value, Opaque):
            if ("." not in path and path in SHIPPED) or _kept(path):
                unknown[path] = value.why
            continue
        if path == "mixed_precision._recipe":
            mp_recipe = value
            continue
        if isinstance(value, tuple) and value and value[0] in ("section", "mp", "obj"):
            continue
        if "." not in path:
            if value is None and path in SHIPPED:
                values[path] = None  # a section the recipe leaves unset (comm_overlap=None)
            continue
        if not _kept(path):
            continue
        try:
            values[path] = _jsonable(value)
        except TypeError:
            unknown[path] = f"a {type(value).__name__} value"
    out: dict[str, Any] = {
        "function": f"{where}::{func.name}",
        "model": provider if not isinstance(provider, Opaque) else {"unknown": provider.why},
        "mixed_precision": mp_recipe,
        "values": dict(sorted(values.items())),
        "unknown": dict(sorted(unknown.items())),
        "undecided_ifs": interp.trace.skipped_ifs,
    }
    return out


# --------------------------------------------------------------------------------------------
# The data file
# --------------------------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tag_commit(mirror: Path) -> str | None:
    import subprocess

    proc = subprocess.run(
        ["git", "-C", str(mirror), "rev-parse", f"{TAG}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def build(wheel: Path, mirror_path: Path | None) -> dict[str, Any]:
    mirror = WheelMirror(wheel)
    ref = "wheel"
    tag = Mirror(mirror_path) if mirror_path is not None else None
    library = library_names(mirror, ref)
    benchmark = benchmark_names(mirror, ref)
    recipes: dict[str, Any] = {}
    functions: dict[str, Any] = {}
    failures: dict[str, str] = {}
    same_at_tag: dict[str, bool] = {}
    # recipe_runner.py::load_recipe: an exported benchmark name wins (its
    # BENCHMARK_RECIPE_PRECEDENCE_COLLISIONS are such names), else the library recipe.
    for name in sorted(set(library) | set(benchmark)):
        kind = "benchmark" if name in benchmark else "library"
        init = benchmark[name] if kind == "benchmark" else library[name]
        read = read_recipe(mirror, ref, init, name)
        if isinstance(read, str):
            failures[name] = read
            continue
        key = read.pop("function")
        # A benchmark recipe's GPU count, hardware and precision are in its name
        # (BENCHMARK_RECIPE_PATTERN); moe-lint reads them from there.
        recipes[name] = [key, kind]
        functions.setdefault(key, read)
        file = key.split("::")[0]
        if tag is not None and file not in same_at_tag:
            same_at_tag[file] = tag.text(TAG, file) == mirror.text(ref, file)
    source: dict[str, Any] = {
        "package": f"megatron-bridge {_version(mirror)}",
        "wheel": wheel.name,
        "wheel_sha256": _sha256(wheel),
        "repo": "https://github.com/NVIDIA-NeMo/Megatron-Bridge",
        "licence": "Apache-2.0",
        "tool": COMMAND,
    }
    if mirror_path is not None:
        source["tag"] = TAG
        source["tag_commit"] = _tag_commit(mirror_path)
        source["files_differing_from_tag"] = sorted(
            f for f, same in same_at_tag.items() if not same
        )
    return {"source": source, **_interned(functions), "recipes": recipes, "unreadable": failures}


def _bitset(indices: Any) -> str:
    """The set of pair indices as a hexadecimal number (bit i: pair i)."""
    bits = 0
    for i in indices:
        bits |= 1 << i
    return format(bits, "x")


def _interned(functions: dict[str, Any]) -> dict[str, Any]:
    """Recipes share most settings (about 1,000 distinct field values over 80,000 set): each
    (field, value) pair and each reason is written once; a function's values are the set of
    its pairs (a hexadecimal bit set), its unknown fields name their reason by index."""
    pairs: dict[tuple[str, str], int] = {}
    whys: dict[str, int] = {}
    for read in functions.values():
        for path, value in read["values"].items():
            pairs.setdefault((path, json.dumps(value, sort_keys=True)), 0)
        for why in read["unknown"].values():
            whys.setdefault(why, 0)
    order = sorted(pairs)
    index = {pair: i for i, pair in enumerate(order)}
    why_order = sorted(whys)
    why_index = {w: i for i, w in enumerate(why_order)}
    out: dict[str, Any] = {}
    for key, read in sorted(functions.items()):
        out[key] = {
            "model": read["model"],
            "mixed_precision": read["mixed_precision"],
            "values": _bitset(
                index[(p, json.dumps(v, sort_keys=True))] for p, v in read["values"].items()
            ),
            "unknown": {p: why_index[w] for p, w in read["unknown"].items()},
            "undecided_ifs": read["undecided_ifs"],
        }
    return {
        "pairs": [[p, json.loads(v)] for p, v in order],
        "reasons": why_order,
        "functions": out,
    }


def _version(mirror: WheelMirror) -> str:
    text = mirror.text("wheel", f"{PKG}/package_info.py") or ""
    parts = [re.search(rf"^{k} = (\d+)", text, re.M) for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(m.group(1) for m in parts if m) or "unknown"


def _dump(data: dict[str, Any]) -> str:
    """One line per pair, reason, function and recipe: compact, and diffs stay readable."""
    lines = ["{"]
    items = list(data.items())
    for n, (key, value) in enumerate(items):
        tail = "," if n < len(items) - 1 else ""
        if isinstance(value, list):
            body = ",\n".join("  " + json.dumps(v, separators=(",", ":")) for v in value)
            lines.append(f"{json.dumps(key)}:[\n{body}\n]{tail}")
        elif isinstance(value, dict) and key != "source":
            body = ",\n".join(
                f"  {json.dumps(k)}:{json.dumps(v, separators=(',', ':'))}"
                for k, v in value.items()
            )
            lines.append(f"{json.dumps(key)}:{{\n{body}\n}}{tail}")
        else:
            lines.append(f"{json.dumps(key)}:{json.dumps(value, indent=1)}{tail}")
    return "\n".join(lines) + "\n}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, required=True, help="megatron_bridge-*.whl")
    parser.add_argument(
        "--mirror", type=Path, default=DEFAULT_MIRROR, help="bare git mirror of Megatron Bridge"
    )
    parser.add_argument("--check", action="store_true", help="only say whether the file is stale")
    args = parser.parse_args(argv)
    mirror = args.mirror if args.mirror.exists() else None
    data = build(args.wheel, mirror)
    text = _dump(data)
    return write_or_check(OUT, text, check=args.check, command=COMMAND)


if __name__ == "__main__":
    sys.exit(main())
