#!/usr/bin/env python3
"""Generate src/moe_lint/data/bridge_classes.json: config-class fields per framework release.

SCH001 (unknown key) asks what Megatron Bridge asks before it sets a YAML key: does the
section's object have that attribute (``training/utils/omegaconf_utils.py::_apply_overrides``,
``hasattr``), or does the ``_target_`` class accept that keyword (``from_yaml`` ->
``megatron/training/config/instantiate_utils.py::_filter_kwargs_for_target``). The answer
depends on the section's class and on the Bridge and Megatron-Core releases, so this tool
reads the released sources of both packages and records, per release and class:

* the names an instance has: dataclass fields (base classes resolved at lint time), class-level
  assignments, properties with a setter, and ``self.X = ...`` in ``__init__``/``__post_init__``;
* the base classes (qualified names, across the two packages);
* for fields whose annotation names config classes, those classes (nested sections such as
  ``dataset.offline_packing_specs``; other mapping-valued fields are free-form).

Sources are the PyPI wheels, read with ``ast`` straight from the zip files (nothing is imported,
so no torch): ``pip download --no-deps --python-version 3.12 --only-binary=:all:
megatron-core==X megatron-bridge==Y`` into a temporary folder, or ``--wheels DIR`` holding the
wheels (or unpacked wheels, ``DIR/<dist>-<version>/megatron/...``) already.

Output (deterministic, compact; loaded lazily by ``src/moe_lint/config/bridge_classes.py``)::

    {"format": 1,
     "packages": {"bridge": {"releases": ["0.3.1", ...], "pairs": {"0.3.1": "0.16.1", ...},
                             "roots": {"model": {"...ModelProviderMixin": MASK}, ...},
                             "families": {"DeepSeekV3Bridge": "megatron.bridge.models.deepseek"},
                             "classes": {QUALNAME: {"r": MASK, "b": {BASE: MASK},
                                                    "f": {MASK: "name name ..."},
                                                    "n": {FIELD: [QUALNAME, ...]},
                                                    "d": "field field ..."}}},
                  "megatron-core": {...}},
     "sources": [...]}

MASK is a bit set over the package's ``releases`` (bit i = releases[i]); ``r`` says in which
releases the class exists. Names present in the same releases are grouped and space-joined.
``n`` lists the config classes a field's annotation names; ``d`` the ones of those fields whose
annotation also admits a plain mapping (``X | dict | None``: the recipe may hold a dict there,
whose keys Bridge does not check).

    python tools/gen_bridge_classes.py                 # download the wheels, write the file
    python tools/gen_bridge_classes.py --wheels DIR    # use wheels already downloaded
    python tools/gen_bridge_classes.py --wheels DIR --check
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _generated import write_or_check

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "src" / "moe_lint" / "data" / "bridge_classes.json"

#: Each Bridge release with the Megatron-Core release it was built and tested against: the
#: 3rdparty/Megatron-LM submodule at the Bridge tag (git describe in NVIDIA/Megatron-LM):
#: v0.3.1 -> core_v0.16.1, v0.4.2 -> core_v0.17.1~2, v0.5.0 -> core_v0.18.0~8,
#: v0.6.0 -> core_v0.19.0~35. The pair is the default Megatron-Core when a user states only
#: the Bridge version, and the other way round.
PAIRS = (("0.3.1", "0.16.1"), ("0.4.2", "0.17.1"), ("0.5.1", "0.18.2"), ("0.6.2", "0.19.2"))
#: Megatron-Core releases without a Bridge pair of their own (Bridge 0.3.x accepts >=0.15).
MCORE_EXTRA = ("0.15.3",)
DISTS = {"bridge": "megatron_bridge", "megatron-core": "megatron_core"}
PYPI = {"bridge": "megatron-bridge", "megatron-core": "megatron-core"}
#: The class whose fields are the top-level sections.
CONTAINER = "megatron.bridge.training.config.ConfigContainer"
#: Section classes beyond ConfigContainer's annotation: recipes put any model provider into
#: ``model`` (Wan, Flux and the VLM providers are not GPTModelProvider subclasses; distillation
#: recipes a class made from DistillationProvider and the student's provider,
#: ``models/distillation_provider.py::convert_to_distillation_provider``) and any dataset
#: provider into ``dataset``. Matched by class name among the Bridge classes.
ROOTS = {
    "model": ("ModelProviderMixin", "DistillationProvider"),
    "dataset": ("DataloaderConfig", "DatasetProvider"),
}
#: Methods whose ``self.X = ...`` assignments exist before Bridge applies YAML overrides.
INIT_METHODS = ("__init__", "__post_init__")


# ------------------------------------------------------------------------------- sources
@dataclass
class Module:
    name: str
    tree: ast.Module
    is_package: bool
    #: local name -> ("class", qualname) | ("from", module, attr) | ("module", module)
    symbols: dict[str, tuple[str, ...]] = field(default_factory=dict)
    star: list[str] = field(default_factory=list)
    #: module-level ``Name = <type expression>`` (type aliases such as ``A | B``)
    aliases: dict[str, ast.expr] = field(default_factory=dict)


@dataclass
class ClassInfo:
    qualname: str
    module: str
    bases: list[str]
    names: set[str]
    nested: dict[str, list[str]]
    is_dataclass: bool
    mappings: set[str] = field(default_factory=set)


def read_sources(source: Path) -> dict[str, bytes]:
    """Module name -> source bytes of every ``megatron/**.py`` in a wheel or unpacked folder."""
    out: dict[str, bytes] = {}
    if source.is_file():
        with zipfile.ZipFile(source) as wheel:
            for name in wheel.namelist():
                if name.startswith("megatron/") and name.endswith(".py"):
                    out[name] = wheel.read(name)
    else:
        for path in sorted((source / "megatron").rglob("*.py")):
            out[path.relative_to(source).as_posix()] = path.read_bytes()
    return out


def module_name(path: str) -> tuple[str, bool]:
    parts = path[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def top_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, including those inside if/try blocks (not functions)."""
    for node in body:
        if isinstance(node, ast.If):
            yield from top_statements(node.body)
            yield from top_statements(node.orelse)
        elif isinstance(node, ast.Try):
            yield from top_statements(node.body)
            for handler in node.handlers:
                yield from top_statements(handler.body)
            yield from top_statements(node.orelse)
        else:
            yield node


class Package:
    """One release's modules, with name resolution across the two packages."""

    def __init__(self, sources: dict[str, bytes], others: list[Package] | None = None) -> None:
        self.modules: dict[str, Module] = {}
        self.others = others or []
        self.syntax_errors: list[str] = []
        for path, text in sources.items():
            name, is_package = module_name(path)
            try:
                tree = ast.parse(text, filename=path)
            except SyntaxError as exc:
                self.syntax_errors.append(f"{path}: {exc}")
                continue
            self.modules[name] = Module(name, tree, is_package)
        for module in self.modules.values():
            self._symbols(module)

    def _symbols(self, module: Module) -> None:
        package = module.name if module.is_package else module.name.rpartition(".")[0]
        for node in top_statements(module.tree.body):
            if isinstance(node, ast.ClassDef):
                module.symbols[node.name] = ("class", f"{module.name}.{node.name}")
            elif (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                module.aliases[node.targets[0].id] = node.value
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parent = parts[: len(parts) - node.level + 1]
                    base = ".".join([*parent, *([node.module] if node.module else [])])
                for alias in node.names:
                    if alias.name == "*":
                        module.star.append(base)
                    else:
                        module.symbols.setdefault(
                            alias.asname or alias.name, ("from", base, alias.name)
                        )
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        module.symbols[alias.asname] = ("module", alias.name)
                    else:
                        head = alias.name.split(".")[0]
                        module.symbols.setdefault(head, ("module", head))

    def find_module(self, name: str) -> Module | None:
        for package in (self, *self.others):
            if name in package.modules:
                return package.modules[name]
        return None

    def resolve_in(self, module_name: str, attr: str, seen: set[tuple[str, str]]) -> str | None:
        """Qualified name of ``attr`` looked up in module ``module_name`` (following imports)."""
        if (module_name, attr) in seen:
            return None
        seen.add((module_name, attr))
        module = self.find_module(module_name)
        if module is None:
            return f"{module_name}.{attr}"  # outside the scanned packages (torch, typing, ...)
        entry = module.symbols.get(attr)
        if entry is not None:
            return self._entry(entry, seen)
        if attr in module.aliases:
            return f"{module_name}.{attr}"
        if self.find_module(f"{module_name}.{attr}") is not None:
            return f"{module_name}.{attr}"
        for star in module.star:
            found = self.resolve_in(star, attr, seen)
            if found is not None and self.is_class(found):
                return found
        return None

    def _entry(self, entry: tuple[str, ...], seen: set[tuple[str, str]]) -> str | None:
        if entry[0] == "class":
            return entry[1]
        if entry[0] == "module":
            return entry[1]
        return self.resolve_in(entry[1], entry[2], seen)

    def resolve(self, module: Module, expr: ast.expr) -> str | None:
        """Qualified name of a Name/Attribute expression in ``module``."""
        parts: list[str] = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        entry = module.symbols.get(expr.id)
        if entry is None:
            for star in module.star:
                found = self.resolve_in(star, expr.id, set())
                if found is not None:
                    entry = ("class", found)
                    break
        if entry is None:
            return None
        current = self._entry(entry, set())
        for attr in reversed(parts):
            if current is None:
                return None
            if self.find_module(current) is not None:
                current = self.resolve_in(current, attr, set())
            else:
                current = f"{current}.{attr}"
        return current

    def annotation_classes(self, module: Module, annotation: ast.expr, depth: int = 0) -> list[str]:
        """Qualified megatron names an annotation refers to, type aliases expanded."""
        out: list[str] = []
        for ref in _annotation_names(annotation):
            resolved = self.resolve(module, ref)
            if resolved is None and isinstance(ref, ast.Name) and ref.id in module.aliases:
                resolved = f"{module.name}.{ref.id}"
            if not resolved or not resolved.startswith("megatron."):
                continue
            owner_name, _, attr = resolved.rpartition(".")
            owner = self.find_module(owner_name)
            if owner is not None and attr in owner.aliases and depth < 5:
                refs = self.annotation_classes(owner, owner.aliases[attr], depth + 1)
                out.extend(r for r in refs if r not in out)
            elif resolved not in out:
                out.append(resolved)
        return out

    def is_class(self, qualname: str) -> bool:
        module_name, _, name = qualname.rpartition(".")
        module = self.find_module(module_name)
        return module is not None and module.symbols.get(name, ("",))[0] == "class"


# ------------------------------------------------------------------------------- classes
def _is_dataclass(node: ast.ClassDef) -> bool:
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name.endswith("dataclass"):
            return True
    return False


def _annotation_names(annotation: ast.expr) -> Iterator[ast.expr]:
    """Name/Attribute nodes in an annotation (string annotations parsed)."""
    for node in ast.walk(annotation):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                parsed = ast.parse(node.value, mode="eval")
            except SyntaxError:
                continue
            yield from _annotation_names(parsed.body)
        elif isinstance(node, ast.Name | ast.Attribute):
            yield node


#: Annotation heads that let a field hold a plain mapping (then its keys are free-form).
MAPPING_TYPES = {"dict", "Dict", "Mapping", "MutableMapping", "Any", "DictConfig", "TypedDict"}


def _union_members(annotation: ast.expr) -> Iterator[ast.expr]:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        yield from _union_members(annotation.left)
        yield from _union_members(annotation.right)
        return
    if isinstance(annotation, ast.Subscript):
        head = annotation.value
        name = head.attr if isinstance(head, ast.Attribute) else getattr(head, "id", "")
        if name in ("Optional", "Union", "Annotated"):
            inner = annotation.slice
            members = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            if name == "Annotated":
                members = members[:1]
            for member in members:
                yield from _union_members(member)
            return
    yield annotation


def admits_mapping(annotation: ast.expr) -> bool:
    """Whether a field of this type may hold a plain mapping (``dict[str, Any] | None``)."""
    for member in _union_members(annotation):
        head = member.value if isinstance(member, ast.Subscript) else member
        name = head.attr if isinstance(head, ast.Attribute) else getattr(head, "id", "")
        if name in MAPPING_TYPES:
            return True
    return False


def _is_classvar(annotation: ast.expr) -> bool:
    node = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return name == "ClassVar"


def _self_assignments(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[str]:
    for node in ast.walk(func):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        for target in targets:
            for sub in ast.walk(target):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id == "self"
                ):
                    yield sub.attr


def class_infos(package: Package) -> dict[str, ClassInfo]:
    infos: dict[str, ClassInfo] = {}
    for module in package.modules.values():
        for node in top_statements(module.tree.body):
            if isinstance(node, ast.ClassDef):
                _class(package, module, node, f"{module.name}.{node.name}", infos)
    return infos


def _class(
    package: Package, module: Module, node: ast.ClassDef, qualname: str, out: dict[str, ClassInfo]
) -> None:
    bases = []
    for base in node.bases:
        expr = base.value if isinstance(base, ast.Subscript) else base
        resolved = package.resolve(module, expr)
        if resolved is not None and resolved.startswith("megatron."):
            bases.append(resolved)
    is_dc = _is_dataclass(node)
    names: set[str] = set()
    nested: dict[str, list[str]] = {}
    mappings: set[str] = set()
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            name = stmt.target.id
            if _is_classvar(stmt.annotation):
                if stmt.value is not None:
                    names.add(name)
                continue
            if is_dc or stmt.value is not None:
                names.add(name)
            classes = package.annotation_classes(module, stmt.annotation)
            if classes:
                nested[name] = classes
                if admits_mapping(stmt.annotation):
                    mappings.add(name)
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name) and not target.id.startswith("__"):
                    names.add(target.id)
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            if stmt.name in INIT_METHODS:
                names.update(_self_assignments(stmt))
            for deco in stmt.decorator_list:
                if isinstance(deco, ast.Attribute) and deco.attr == "setter":
                    names.add(stmt.name)
        elif isinstance(stmt, ast.ClassDef):
            _class(package, module, stmt, f"{qualname}.{stmt.name}", out)
    out[qualname] = ClassInfo(qualname, module.name, bases, names, nested, is_dc, mappings)


# ------------------------------------------------------------------------------- selection
def keep_classes(infos: dict[str, ClassInfo], seeds: set[str]) -> set[str]:
    """Seeds, their subclasses, their ancestors and the config classes their fields name.

    Only config classes (dataclasses, or classes with a dataclass ancestor) are followed into
    subclasses and field annotations: a field typed with a module class, an enum or a spec is
    not a section a YAML file fills in key by key.
    """
    children: dict[str, set[str]] = {}
    for info in infos.values():
        for base in info.bases:
            children.setdefault(base, set()).add(info.qualname)
    memo: dict[str, bool] = {}

    def config_like(name: str) -> bool:
        if name not in memo:
            memo[name] = False  # cycle guard
            info = infos.get(name)
            memo[name] = info is not None and (
                info.is_dataclass or any(config_like(b) for b in info.bases)
            )
        return memo[name]

    kept: set[str] = set()
    section_types = set(seeds)
    todo = list(seeds)
    while todo:
        name = todo.pop()
        if name in kept or name not in infos:
            continue
        kept.add(name)
        info = infos[name]
        todo.extend(info.bases)
        if name in section_types:
            for child in children.get(name, ()):
                if config_like(child):
                    section_types.add(child)  # subclasses of subclasses too
                    todo.append(child)
        for classes in info.nested.values():
            for cls in classes:
                if not config_like(cls):
                    continue
                if cls not in section_types:
                    section_types.add(cls)
                    kept.discard(cls)  # visit again, now as a section type
                todo.append(cls)
    return kept


# ------------------------------------------------------------------------------- output
def mask_of(present: list[bool]) -> int:
    return sum(1 << i for i, here in enumerate(present) if here)


def encode(
    releases: list[dict[str, ClassInfo]], names_kept: set[str], known: set[str]
) -> dict[str, object]:
    """The compact form of one package's classes (``known``: classes field types may name)."""
    classes: dict[str, object] = {}
    for qualname in sorted(names_kept):
        versions = [rel.get(qualname) for rel in releases]
        entry: dict[str, object] = {"r": mask_of([v is not None for v in versions])}
        bases: dict[str, int] = {}
        for base in {b for v in versions if v for b in v.bases}:
            bases[base] = mask_of([v is not None and base in v.bases for v in versions])
        if bases:
            entry["b"] = dict(sorted(bases.items()))
        by_mask: dict[int, list[str]] = {}
        for name in sorted({n for v in versions if v for n in v.names}):
            by_mask.setdefault(
                mask_of([v is not None and name in v.names for v in versions]), []
            ).append(name)
        if by_mask:
            entry["f"] = {str(m): " ".join(names) for m, names in sorted(by_mask.items())}
        nested: dict[str, list[str]] = {}
        for version in versions:
            for name, refs in (version.nested if version else {}).items():
                merged = nested.setdefault(name, [])
                merged.extend(r for r in refs if r in known and r not in merged)
        nested = {k: v for k, v in nested.items() if v}
        if nested:
            entry["n"] = {k: sorted(v) for k, v in sorted(nested.items())}
        mappings = sorted({m for v in versions if v for m in v.mappings if m in nested})
        if mappings:
            entry["d"] = " ".join(mappings)
        classes[qualname] = entry
    return classes


def version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def locate(folder: Path, package: str, version: str) -> Path:
    dist = DISTS[package]
    for candidate in [
        *sorted(folder.glob(f"{dist}-{version}-*.whl")),
        folder / f"{dist}-{version}",
    ]:
        if candidate.exists():
            return candidate
    raise SystemExit(f"{folder}: no {PYPI[package]} {version} wheel (or {dist}-{version}/ folder)")


def download(folder: Path, wanted: list[tuple[str, str]]) -> None:
    for package, version in wanted:
        dist = DISTS[package]
        if any(folder.glob(f"{dist}-{version}-*.whl")) or (folder / f"{dist}-{version}").exists():
            continue
        command = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--python-version", "3.12",
            "--only-binary=:all:", f"{PYPI[package]}=={version}", "-d", str(folder),
        ]  # fmt: skip
        print("+", " ".join(command), file=sys.stderr)
        subprocess.run(command, check=True, stdout=sys.stderr)


def build(folder: Path) -> dict[str, object]:
    bridge_versions = sorted({b for b, _ in PAIRS}, key=version_key)
    mcore_versions = sorted({m for _, m in PAIRS} | set(MCORE_EXTRA), key=version_key)
    mcore_pkgs = {
        v: Package(read_sources(locate(folder, "megatron-core", v))) for v in mcore_versions
    }
    mcore_infos = {v: class_infos(p) for v, p in mcore_pkgs.items()}
    pair = dict(PAIRS)
    bridge_infos: dict[str, dict[str, ClassInfo]] = {}
    bridge_keep: set[str] = set()
    mcore_seeds: set[str] = set()
    roots: dict[str, dict[str, int]] = {}
    families: dict[str, str] = {}
    problems: list[str] = []
    for index, version in enumerate(bridge_versions):
        package = Package(
            read_sources(locate(folder, "bridge", version)), [mcore_pkgs[pair[version]]]
        )
        problems += package.syntax_errors
        infos = class_infos(package)
        bridge_infos[version] = infos
        if CONTAINER not in infos:
            raise SystemExit(f"Bridge {version}: no {CONTAINER}")
        seeds = {CONTAINER}
        for section, names in ROOTS.items():
            for info in infos.values():
                if info.qualname.rpartition(".")[2] in names and info.module.startswith(
                    "megatron.bridge."
                ):
                    seeds.add(info.qualname)
                    roots.setdefault(section, {}).setdefault(info.qualname, 0)
                    roots[section][info.qualname] |= 1 << index
        for info in infos.values():
            # Model bridges (DeepSeekV3Bridge, ...) -> the family package whose providers a
            # preset's recipe uses (models.yaml names the bridge; see bridge_classes.py).
            name = info.qualname.rpartition(".")[2]
            if name.endswith("Bridge") and info.module.startswith("megatron.bridge.models."):
                families[name] = ".".join(info.module.split(".")[:4])
        combined = {**mcore_infos[pair[version]], **infos}
        kept = keep_classes(combined, seeds)
        bridge_keep |= {k for k in kept if k in infos}
        mcore_seeds |= {k for k in kept if k not in infos}
    for package in mcore_pkgs.values():
        problems += package.syntax_errors
    mcore_keep: set[str] = set()
    for infos in mcore_infos.values():
        mcore_keep |= keep_classes(infos, {s for s in mcore_seeds if s in infos})
    if problems:
        listed = "\n  ".join(problems)
        raise SystemExit(f"sources this Python cannot parse (use Python 3.12):\n  {listed}")
    known = bridge_keep | mcore_keep
    sources = [
        f"{PYPI['bridge']} {v} wheel (PyPI, --python-version 3.12)" for v in bridge_versions
    ] + [f"{PYPI['megatron-core']} {v} wheel (PyPI, --python-version 3.12)" for v in mcore_versions]
    return {
        "format": 1,
        "sources": sources,
        "packages": {
            "bridge": {
                "releases": bridge_versions,
                "pairs": {b: m for b, m in PAIRS},
                "container": CONTAINER,
                "roots": {s: dict(sorted(r.items())) for s, r in sorted(roots.items())},
                "families": dict(sorted(families.items())),
                "classes": encode([bridge_infos[v] for v in bridge_versions], bridge_keep, known),
            },
            "megatron-core": {
                "releases": mcore_versions,
                "classes": encode([mcore_infos[v] for v in mcore_versions], mcore_keep, known),
            },
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="output JSON path")
    parser.add_argument(
        "--wheels",
        type=Path,
        help="folder with the wheels (missing ones are downloaded into it); "
        "default: a temporary folder",
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the output file is out of date"
    )
    args = parser.parse_args(argv)
    wanted = [("bridge", b) for b, _ in PAIRS] + [
        ("megatron-core", m) for m in sorted({m for _, m in PAIRS} | set(MCORE_EXTRA))
    ]
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.wheels or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        download(folder, wanted)
        data = build(folder)
    text = json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n"
    code = write_or_check(
        args.out, text, check=args.check, command="python tools/gen_bridge_classes.py"
    )
    if args.check:
        return code
    counts = {p: len(d["classes"]) for p, d in data["packages"].items()}  # type: ignore[attr-defined]
    shown = args.out.relative_to(REPO) if args.out.is_relative_to(REPO) else args.out
    print(f"wrote {shown}: {counts}, {len(text)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
