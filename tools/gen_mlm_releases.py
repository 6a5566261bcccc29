#!/usr/bin/env python3
"""Generate src/moe_lint/data/mlm_releases.json: the flags of each released Megatron-LM.

Megatron-LM's ``pretrain_*.py`` scripts parse their command line with the ``argparse`` parser that
``megatron/training/arguments.py::add_megatron_arguments`` builds (``allow_abbrev=False``, so a
flag is accepted only when spelt in full). MLM001 (rules/mlm.yaml) warns about a flag that parser
does not have in the Megatron-LM release the user states (``--megatron-core``: Megatron-LM's
``core_vX.Y.Z`` tags are the Megatron-Core releases).

The flags are read statically, never by importing or running the source:

* every ``<parser or group>.add_argument('--a', '--b', dest=..., action=..., type=...,
  default=..., choices=...)`` call in ``megatron/training/arguments.py`` (an
  ``action=argparse.BooleanOptionalAction`` flag also has its ``--no-a`` twin, as
  ``BooleanOptionalAction.__init__`` adds it for every ``--`` option string);
* every ``add_argument`` of ``megatron/post_training/arguments.py::add_modelopt_args``, which
  ``pretrain_gpt.py`` / ``pretrain_mamba.py`` add when nvidia-modelopt is installed (marked
  ``"extra": "modelopt"``);
* from core_v0.16 on, ``ArgumentGroupFactory(SomeConfig, exclude=[...]).build_group(...)``
  (``megatron/training/argument_utils.py``) adds one flag per field of a config dataclass: the
  class (and its bases) is found in the same tag and its fields are turned into flags the way
  ``ArgumentGroupFactory._build_argparse_kwargs_from_field`` does (``--field-name``; a bool field
  whose default is not False becomes ``--no-field-name`` / ``--disable-field-name``; a field's
  ``metadata={"argparse_meta": {...}}`` takes precedence).

Only released tags are read (``core_vX.Y.Z``, no release candidates, no main). It needs the git
mirror of NVIDIA/Megatron-LM, which a fresh clone does not have, so it is not part of
tools/regenerate.py; run it when a new Megatron-LM release is added:

    python tools/gen_mlm_releases.py --mirror /work/.mirror/NVIDIA+Megatron-LM/repo    # rewrite
    python tools/gen_mlm_releases.py --mirror /work/.mirror/NVIDIA+Megatron-LM/repo --check

Output (deterministic, sorted): ``{"source": ..., "releases": {"0.14.0": "core_v0.14.0 <sha>",
...}, "flags": {"--flag": {"in": ["0.14.0..0.19.0"], "dest": ..., "action": ..., "type": ...,
"default": ..., "choices": [...]}}}``: ``in`` lists the runs of consecutive releases that have
the flag (``first..last`` or one version); the attributes are those of the newest release with
the flag (a value that is not a literal is kept as its source text; no ``default`` means None),
and ``"was"`` lists, per older release, the attributes that differed there.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _generated import write_or_check

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "moe_lint" / "data" / "mlm_releases.json"
ARGUMENTS = "megatron/training/arguments.py"
#: pretrain_gpt.py and pretrain_mamba.py pass ``extra_args_provider=add_modelopt_args`` when
#: nvidia-modelopt is installed (as in NVIDIA's containers): those flags are marked
#: ``"extra": "modelopt"``.
MODELOPT = "megatron/post_training/arguments.py"
#: The oldest release moe-lint's Megatron-LM support covers (Megatron-Core 0.14 is the oldest
#: version the rules are gated against).
OLDEST = (0, 14, 0)
_TAG = re.compile(r"^core_v(\d+)\.(\d+)\.(\d+)$")
ATTRS = ("dest", "action", "type", "nargs", "default", "choices", "extra")


def _git(mirror: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(mirror), *args], check=True, capture_output=True, text=True
    ).stdout


def release_tags(mirror: Path) -> list[tuple[str, str, str]]:
    """(version, tag, commit) of every released core tag from OLDEST on, oldest first."""
    found = []
    for tag in _git(mirror, "tag").split():
        match = _TAG.match(tag)
        if match and tuple(int(g) for g in match.groups()) >= OLDEST:
            commit = _git(mirror, "rev-parse", f"{tag}^{{commit}}").strip()
            found.append((tuple(int(g) for g in match.groups()), tag, commit))
    found.sort()
    return [(".".join(map(str, v)), tag, commit) for v, tag, commit in found]


def _literal(node: ast.AST | None) -> Any:
    """A literal's value (lists and tuples as lists), else its source text."""
    if node is None:
        return None
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.unparse(node)
    if isinstance(value, tuple | set | frozenset):
        return sorted(value, key=repr) if isinstance(value, set | frozenset) else list(value)
    return value


def _type_text(node: ast.AST) -> str:
    return ast.unparse(node)


def _entry(kwargs: dict[str, ast.AST]) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    for name in ATTRS:
        if name in kwargs:
            node = kwargs[name]
            entry[name] = _type_text(node) if name == "type" else _literal(node)
    return entry


class _Source:
    """One tag's files, read from the mirror on demand."""

    def __init__(self, mirror: Path, commit: str) -> None:
        self.mirror = mirror
        self.commit = commit
        self.classes: dict[str, ast.ClassDef | None] = {}

    def read(self, path: str) -> str:
        return _git(self.mirror, "show", f"{self.commit}:{path}")

    def find_class(self, name: str) -> ast.ClassDef | None:
        if name in self.classes:
            return self.classes[name]
        proc = subprocess.run(
            ["git", "-C", str(self.mirror), "grep", "-l", "-E", f"^class {name}\\b",
             self.commit, "--", "megatron/core", "megatron/training"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        paths = sorted(line.split(":", 1)[1] for line in proc.stdout.split())
        found = None
        if len(paths) > 1:
            raise SystemExit(f"{self.commit}: class {name} is defined in {paths}")
        if paths:
            for node in ast.parse(self.read(paths[0])).body:
                if isinstance(node, ast.ClassDef) and node.name == name:
                    found = node
        self.classes[name] = found
        return found


def _field_call(value: ast.AST | None) -> dict[str, ast.AST] | None:
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name | ast.Attribute)
        and (value.func.id if isinstance(value.func, ast.Name) else value.func.attr) == "field"
    ):
        return {k.arg: k.value for k in value.keywords if k.arg}
    return None


def _unwrap_optional(ann: ast.AST) -> ast.AST:
    """``Optional[X]`` / ``X | None`` -> X (ArgumentGroupFactory._extract_type)."""
    if isinstance(ann, ast.Subscript) and ast.unparse(ann.value).endswith("Optional"):
        return ann.slice
    if (
        isinstance(ann, ast.BinOp)
        and isinstance(ann.op, ast.BitOr)
        and (ast.unparse(ann.right) == "None")
    ):
        return ann.left
    if isinstance(ann, ast.Subscript) and ast.unparse(ann.value).endswith("Union"):
        elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        if len(elts) == 2 and ast.unparse(elts[1]) == "None":
            return elts[0]
    return ann


def _dataclass_fields(src: _Source, name: str) -> list[tuple[str, ast.AST, ast.AST | None]]:
    """(name, annotation, default node) of a dataclass's init fields, bases first."""
    node = src.find_class(name)
    if node is None:
        raise SystemExit(f"{src.commit}: class {name} not found")
    out: dict[str, tuple[str, ast.AST, ast.AST | None]] = {}
    for base in node.bases:
        base_name = ast.unparse(base).rsplit(".", 1)[-1]
        if base_name not in {"object", "Generic"} and src.find_class(base_name) is not None:
            for item in _dataclass_fields(src, base_name):
                out[item[0]] = item
    for stmt in node.body:
        if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
            continue
        if "ClassVar" in ast.unparse(stmt.annotation):
            continue
        field_kw = _field_call(stmt.value)
        if field_kw is not None and _literal(field_kw.get("init")) is False:
            out.pop(stmt.target.id, None)
            continue
        out[stmt.target.id] = (stmt.target.id, stmt.annotation, stmt.value)
    return list(out.values())


def _factory_flags(
    src: _Source, cls: str, exclude: set[str]
) -> list[tuple[list[str], dict[str, Any]]]:
    """The flags ``ArgumentGroupFactory(cls, exclude).build_group`` adds."""
    flags = []
    for name, ann, value in _dataclass_fields(src, cls):
        if name in exclude:
            continue
        field_kw = _field_call(value)
        meta: dict[str, Any] = {}
        if field_kw is not None:
            default_node = field_kw.get("default")
            default = _literal(default_node) if default_node is not None else None
            if "default_factory" in field_kw:
                factory = field_kw["default_factory"]
                text = ast.unparse(factory)
                default = {"list": [], "dict": {}}.get(text, f"{text}()")
                if isinstance(factory, ast.Lambda):
                    default = _literal(factory.body)
            metadata = field_kw.get("metadata")
            if isinstance(metadata, ast.Dict):
                for key, val in zip(metadata.keys, metadata.values, strict=True):
                    if _literal(key) == "argparse_meta" and isinstance(val, ast.Dict):
                        for mkey, mval in zip(val.keys, val.values, strict=True):
                            meta[str(_literal(mkey))] = mval
        else:
            default = _literal(value) if value is not None else None
        inner = _unwrap_optional(ann)
        entry: dict[str, Any] = {"dest": name, "default": default}
        names = ["--" + name.replace("_", "-")]
        text = ast.unparse(inner)
        if text == "bool":
            entry["action"] = "store_true" if default is False else "store_false"
            if entry["action"] == "store_false":
                names = ["--no-" + name.replace("_", "-"), "--disable-" + name.replace("_", "-")]
        elif isinstance(inner, ast.Subscript) and ast.unparse(inner.value) in {"list", "List"}:
            entry["type"] = ast.unparse(inner.slice)
            entry["nargs"] = "+"
        elif isinstance(inner, ast.Subscript) and ast.unparse(inner.value).endswith("Literal"):
            elts = inner.slice.elts if isinstance(inner.slice, ast.Tuple) else [inner.slice]
            entry["choices"] = [_literal(e) for e in elts]
            entry["type"] = type(entry["choices"][0]).__name__ if entry["choices"] else "str"
        else:
            entry["type"] = text
        for key, val in meta.items():
            if key == "arg_names":
                names = [str(n) for n in _literal(val)]
            elif key in ATTRS:
                entry[key] = _type_text(val) if key == "type" else _literal(val)
        if entry.get("action") in {"store_true", "store_false"}:
            entry.pop("type", None)
        flags.append((names, entry))
    return flags


def _exclude_list(func: ast.FunctionDef, node: ast.AST | None) -> set[str]:
    if node is None:
        return set()
    if isinstance(node, ast.Name):  # a list assigned earlier in the same function
        var = node.id
        for stmt in ast.walk(func):
            if isinstance(stmt, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == var for t in stmt.targets
            ):
                node = stmt.value
    value = _literal(node)
    if not isinstance(value, list):
        raise SystemExit(f"exclude list not a literal: {ast.unparse(node)}")
    return {str(v) for v in value}


def release_flags(mirror: Path, commit: str) -> dict[str, dict[str, Any]]:
    """Option string -> attributes, for one release."""
    src = _Source(mirror, commit)
    tree = ast.parse(src.read(ARGUMENTS))
    flags: dict[str, dict[str, Any]] = {}

    def add(names: list[str], entry: dict[str, Any]) -> None:
        if "default" not in entry and entry.get("action") in {"store_true", "store_false"}:
            entry["default"] = entry["action"] == "store_false"  # argparse's implied default
        if entry.get("default", 0) is None:
            del entry["default"]  # argparse's default default
        if "dest" not in entry:  # argparse: the first long option string, dashes to _
            long = next((n for n in names if n.startswith("--")), names[0])
            entry["dest"] = long.lstrip("-").replace("-", "_")
        if str(entry.get("action", "")).endswith("BooleanOptionalAction"):
            names = names + ["--no-" + n[2:] for n in names if n.startswith("--")]
        for flag in names:
            flags[flag] = entry

    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef):
            continue
        for call in ast.walk(func):
            if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
                continue
            if call.func.attr == "add_argument":
                names = [
                    a.value for a in call.args
                    if isinstance(a, ast.Constant) and isinstance(a.value, str)
                ]  # fmt: skip
                if names and all(n.startswith("-") for n in names):
                    add(names, _entry({k.arg: k.value for k in call.keywords if k.arg}))
            elif call.func.attr == "build_group":
                factory = call.func.value
                if isinstance(factory, ast.Name):  # x = ArgumentGroupFactory(...); x.build_group
                    var = factory.id
                    for stmt in ast.walk(func):
                        if isinstance(stmt, ast.Assign) and any(
                            isinstance(t, ast.Name) and t.id == var for t in stmt.targets
                        ):
                            factory = stmt.value
                if not (
                    isinstance(factory, ast.Call)
                    and ast.unparse(factory.func) == "ArgumentGroupFactory"
                ):
                    raise SystemExit(f"{commit}: unrecognised build_group: {ast.unparse(call)}")
                cls = ast.unparse(factory.args[0])
                kw = {k.arg: k.value for k in factory.keywords if k.arg}
                for names, entry in _factory_flags(
                    src, cls, _exclude_list(func, kw.get("exclude"))
                ):
                    add(names, entry)
    try:
        modelopt = ast.parse(src.read(MODELOPT))
    except subprocess.CalledProcessError:  # not in this release
        return flags
    for call in ast.walk(modelopt):
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "add_argument"
        ):
            names = [
                a.value
                for a in call.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
            if names and all(n.startswith("-") for n in names) and names[0] not in flags:
                entry = _entry({k.arg: k.value for k in call.keywords if k.arg})
                add(names, {**entry, "extra": "modelopt"})
    return flags


def _option_strings(call: ast.Call) -> list[str]:
    """The option strings of an ``add_argument`` call (empty for a positional argument)."""
    names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return names if names and all(n.startswith("-") for n in names) else []


def _runs(present: list[str], order: list[str]) -> list[str]:
    """Consecutive releases as ``"first..last"`` (or one version): the releases with a flag."""
    runs: list[list[str]] = []
    for version in present:
        index = order.index(version)
        if runs and order.index(runs[-1][-1]) == index - 1:
            runs[-1].append(version)
        else:
            runs.append([version])
    return [run[0] if len(run) == 1 else f"{run[0]}..{run[-1]}" for run in runs]


def build(mirror: Path) -> dict[str, Any]:
    releases = release_tags(mirror)
    per_release = {version: release_flags(mirror, commit) for version, _, commit in releases}
    order = [version for version, _, _ in releases]
    table: dict[str, dict[str, Any]] = {}
    for flag in sorted({f for flags in per_release.values() for f in flags}):
        present = [v for v in order if flag in per_release[v]]
        newest = per_release[present[-1]][flag]
        entry: dict[str, Any] = {"in": _runs(present, order), **newest}
        was = {}
        for version in present[:-1]:
            old = per_release[version][flag]
            diff = {k: old.get(k) for k in ATTRS if old.get(k) != newest.get(k)}
            if diff:
                was[version] = diff
        if was:
            entry["was"] = was
        table[flag] = entry
    return {
        "source": (
            "NVIDIA/Megatron-LM megatron/training/arguments.py (add_argument calls and "
            "ArgumentGroupFactory config dataclasses), read statically by tools/gen_mlm_releases.py"
        ),
        "releases": {version: f"{tag} {commit}" for version, tag, commit in releases},
        "flags": table,
    }


def render(data: dict[str, Any]) -> str:
    lines = ["{"]
    lines.append(f' "source": {json.dumps(data["source"])},')
    lines.append(f' "releases": {json.dumps(data["releases"], sort_keys=True)},')
    lines.append(' "flags": {')
    items = list(data["flags"].items())
    for i, (flag, entry) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        lines.append(f"  {json.dumps(flag)}: {json.dumps(entry, sort_keys=True)}{comma}")
    lines.append(" }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, required=True, help="git dir of NVIDIA/Megatron-LM")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is out of date")
    args = parser.parse_args(argv)
    text = render(build(args.mirror))
    return write_or_check(
        OUT, text, check=args.check, command="python tools/gen_mlm_releases.py --mirror DIR"
    )


if __name__ == "__main__":
    sys.exit(main())
