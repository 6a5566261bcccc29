#!/usr/bin/env python3
"""Generate src/moe_lint/data/bridge_fields.json, the catalogue of known Megatron Bridge keys.

This union of keys (with value types) is what rule expressions may name (``field_exists``) and
how untyped values are typed (``expr._catalogue_type``). SCH001 no longer uses it: it checks
keys by section class and release (``data/bridge_classes.json``, tools/gen_bridge_classes.py).

Evidence, in order:
  1. every ``tests/data/corpus/bridge-full-dumps/*.yaml`` (``ConfigContainer.to_yaml()`` dumps of
     Megatron Bridge 0.6.2 MoE performance recipes): the union of keys per section, with value
     types inferred from the dumped values;
  2. ``tools/bridge_fields_extra.yaml``: hand-curated keys (each group names the public repository
     file it was confirmed in) for sections and configs the pretraining dumps cannot show.

Output shape::

    {"schema_version": 1,
     "sources": [...],
     "top_level": [...all allowed top-level keys...],
     "sections": {"model": {"tensor_model_parallel_size": "int", ...},
                  "dataset.offline_packing_specs": {...}, ...},
     "free_form": ["env_vars", "dataset.dataset_kwargs", ...]}

``_target_`` is accepted in every section and is not listed. Keys under a ``free_form`` path are
never checked. Type strings: int, float, bool, str, list, dict, any ("any" when the only evidence
is null, when types conflict, or when the value is an instantiated object).

Run from anywhere; paths are resolved relative to the repository root. Output is deterministic
(sorted keys, indent=1).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _generated import write_or_check

try:  # pragma: no cover - depends on the local libyaml build
    Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    Loader = yaml.SafeLoader

REPO = Path(__file__).resolve().parent.parent
DUMPS_DIR = REPO / "tests" / "data" / "corpus" / "bridge-full-dumps"
EXTRA = REPO / "tools" / "bridge_fields_extra.yaml"
OUT = REPO / "src" / "moe_lint" / "data" / "bridge_fields.json"

TYPES = ("int", "float", "bool", "str", "list", "dict", "any")
# Keys Hydra-style instantiation specs use next to _target_; a dict carrying one of them is an
# object reference (torch dtype, activation function, partial layer spec, signal), not a section.
OBJECT_MARKERS = {"_call_", "_partial_", "_args_", "_name_"}
TARGET = "_target_"


def value_type(value: object) -> str | None:
    """Type name for one dumped value; None for null (no evidence)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "any" if TARGET in value else "dict"
    return "any"


def combine(observed: set[str]) -> str:
    """Collapse a set of observed type names into one type string."""
    if not observed:
        return "any"
    if observed == {"int", "float"}:
        return "float"
    if len(observed) == 1:
        return next(iter(observed))
    return "any"


def is_object_ref(value: dict) -> bool:
    return TARGET in value and bool(OBJECT_MARKERS & set(value))


class Catalogue:
    def __init__(self) -> None:
        self.evidence: dict[str, dict[str, set[str]]] = {}
        self.overrides: dict[str, dict[str, str]] = {}
        self.free_form: set[str] = set()
        self.top_level: set[str] = set()
        self.sources: list[str] = []

    def add_source(self, source: str) -> None:
        if source not in self.sources:
            self.sources.append(source)

    def section(self, name: str) -> dict[str, set[str]]:
        return self.evidence.setdefault(name, {})

    def observe(self, section: str, key: str, type_name: str | None) -> None:
        seen = self.section(section).setdefault(key, set())
        if type_name is not None:
            seen.add(type_name)

    # ---------------------------------------------------------------- dumps
    def walk_section(self, name: str, body: dict) -> None:
        self.section(name)
        for key, value in body.items():
            if key == TARGET:
                continue
            if isinstance(value, dict):
                if is_object_ref(value):
                    # instantiated object (dtype, callable, partial spec): opaque value
                    self.observe(name, key, "any")
                    self.free_form.add(f"{name}.{key}")
                elif TARGET in value:
                    # nested dataclass with fixed fields
                    self.observe(name, key, "dict")
                    self.walk_section(f"{name}.{key}", value)
                else:
                    # plain mapping field (kwargs dicts): keys are free-form
                    self.observe(name, key, "dict")
                    self.free_form.add(f"{name}.{key}")
            else:
                self.observe(name, key, value_type(value))

    def load_dump(self, path: Path) -> None:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)
        if not isinstance(data, dict):
            raise SystemExit(f"{path}: not a mapping")
        for key, value in data.items():
            if key == TARGET:
                continue
            self.top_level.add(key)
            if isinstance(value, dict) and TARGET in value and not is_object_ref(value):
                self.walk_section(key, value)
            elif isinstance(value, dict):
                # top-level plain mapping (env_vars)
                self.free_form.add(key)
            # None / scalar top-level values: allowed key, section content comes from extras

    # ---------------------------------------------------------------- extras
    def load_extra(self, path: Path) -> None:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
        for group in data.get("groups", []):
            source = group.get("source")
            section = group.get("section")
            fields = group.get("fields") or {}
            if not source or not section or not isinstance(fields, dict):
                raise SystemExit(f"{path}: group needs source, section and fields: {group!r}")
            self.add_source(source)
            root = section.split(".", 1)[0]
            self.top_level.add(root)
            self.section(section)
            for key, type_name in fields.items():
                if type_name not in TYPES:
                    raise SystemExit(f"{path}: {section}.{key}: unknown type {type_name!r}")
                if group.get("override"):
                    self.overrides.setdefault(section, {})[key] = type_name
                    self.section(section).setdefault(key, set())
                else:
                    self.observe(section, key, type_name)
        for entry in data.get("free_form", []):
            if not entry.get("source") or not entry.get("path"):
                raise SystemExit(f"{path}: free_form entry needs path and source: {entry!r}")
            self.add_source(entry["source"])
            self.free_form.add(entry["path"])
        for key in data.get("top_level", []):
            self.top_level.add(key)

    # ---------------------------------------------------------------- output
    def build(self) -> dict:
        sections: dict[str, dict[str, str]] = {}
        for name, fields in self.evidence.items():
            out = {}
            for key, seen in fields.items():
                out[key] = self.overrides.get(name, {}).get(key) or combine(seen)
            sections[name] = dict(sorted(out.items()))
        self.check(sections)
        return {
            "schema_version": 1,
            "sources": self.sources,
            "top_level": sorted(self.top_level),
            "sections": dict(sorted(sections.items())),
            "free_form": sorted(self.free_form),
        }

    def check(self, sections: dict[str, dict[str, str]]) -> None:
        """Every dotted section and free-form path must hang off a known field."""
        problems = []
        for name in sections:
            if "." in name:
                parent, leaf = name.rsplit(".", 1)
                if leaf not in sections.get(parent, {}):
                    problems.append(f"section {name}: parent field {parent}.{leaf} unknown")
            elif name not in self.top_level:
                problems.append(f"section {name}: not a top-level key")
        for path in self.free_form:
            if "." not in path:
                if path not in self.top_level:
                    problems.append(f"free_form {path}: not a top-level key")
                continue
            parent, leaf = path.rsplit(".", 1)
            if leaf not in sections.get(parent, {}):
                problems.append(f"free_form {path}: field unknown")
            if path in sections:
                problems.append(f"free_form {path}: also a fixed-field section")
        if problems:
            raise SystemExit("inconsistent catalogue:\n  " + "\n  ".join(problems))


# Files in the Megatron Bridge corpus that are not Bridge override configs.
SCAN_SKIP = ("examples/model_verification_cards/", "examples/gpt3/gpt_config.yaml")


def unknown_paths(doc: object, catalogue: dict) -> list[str]:
    """Key paths in one config document that the catalogue does not know.

    A top-level ``ConfigContainer:`` wrapper (older perf configs) is unwrapped. Keys under a
    free-form path, and the contents of instantiated-object values (dicts with ``_target_`` under a
    non-section field), are not checked. Only the outermost unknown key of a subtree is reported.
    """
    if not isinstance(doc, dict):
        return []
    sections = catalogue["sections"]
    free_form = set(catalogue["free_form"])
    top_level = set(catalogue["top_level"])
    if isinstance(doc.get("ConfigContainer"), dict):
        doc = {**{k: v for k, v in doc.items() if k != "ConfigContainer"}, **doc["ConfigContainer"]}
    found: list[str] = []

    def walk(section: str, body: dict) -> None:
        fields = sections.get(section, {})
        for key, value in body.items():
            if key == TARGET:
                continue
            path = f"{section}.{key}"
            if key not in fields:
                found.append(path)
            elif path not in free_form and path in sections and isinstance(value, dict):
                walk(path, value)

    for key, value in doc.items():
        if key == TARGET:
            continue
        if key not in top_level:
            found.append(str(key))
        elif key not in free_form and key in sections and isinstance(value, dict):
            walk(key, value)
    return found


def scan(root: Path, catalogue: dict) -> int:
    """Print every unknown key path in the YAML files under root; return how many were found."""
    total = 0
    for path in sorted(root.rglob("*.yaml")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(SCAN_SKIP[0]) or rel == SCAN_SKIP[1]:
            continue
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)
        for key_path in unknown_paths(doc, catalogue):
            print(f"{rel}: {key_path}")
            total += 1
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="output JSON path")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the output file is out of date"
    )
    parser.add_argument(
        "--scan",
        type=Path,
        metavar="DIR",
        help="instead of writing, list key paths in DIR/**/*.yaml that the catalogue does not "
        "know (e.g. tests/data/corpus/megatron-bridge)",
    )
    args = parser.parse_args(argv)

    cat = Catalogue()
    dumps = sorted(DUMPS_DIR.glob("*.yaml"))
    if not dumps:
        raise SystemExit(f"no dumps found in {DUMPS_DIR}")
    for dump in dumps:
        rel = dump.relative_to(REPO).as_posix()
        cat.add_source(f"{rel} (Megatron Bridge 0.6.2 ConfigContainer.to_yaml dump)")
        cat.load_dump(dump)
    cat.load_extra(EXTRA)

    built = cat.build()
    if args.scan is not None:
        count = scan(args.scan, built)
        print(f"{count} unknown key path(s)", file=sys.stderr)
        return 0
    text = json.dumps(built, sort_keys=True, indent=1) + "\n"
    code = write_or_check(
        args.out, text, check=args.check, command="python tools/gen_bridge_fields.py"
    )
    if args.check:
        return code
    data = json.loads(text)
    n_fields = sum(len(v) for v in data["sections"].values())
    shown = args.out.relative_to(REPO) if args.out.is_relative_to(REPO) else args.out
    print(
        f"wrote {shown}: {len(data['sections'])} sections, {n_fields} fields, "
        f"{len(data['free_form'])} free-form paths"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
