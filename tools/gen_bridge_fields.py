#!/usr/bin/env python3
"""Generate src/moe_lint/data/fields.json, moe-lint's one field table (config/fields.py loads it).

It holds, per section, every known Megatron Bridge key with its value type (what rule
expressions may name, ``field_exists``, and how untyped values are typed,
``expr._catalogue_type``) and, for the fields moe-lint reads, the framework default, the
validated types and bounds, and whether a recipe decides the field: ``tools/fields.yaml``, the
hand-kept part, each default cited to the released source. SCH001 checks keys by section class
and release (``data/bridge_classes.json``, tools/gen_bridge_classes.py).

    python tools/gen_bridge_fields.py                        # rewrite data/fields.json
    python tools/gen_bridge_fields.py --check                # exit 1 if it is out of date
    python tools/gen_bridge_fields.py --verify-defaults DIR  # compare fields.yaml's defaults
        # with the dataclass defaults of the unpacked wheels in DIR (megatron_bridge-0.6.2/,
        # megatron_core-0.19.2/), read with ast; exit 1 listing each disagreement

Key evidence, in order:
  1. every ``tests/data/corpus/bridge-full-dumps/*.yaml`` (``ConfigContainer.to_yaml()`` dumps of
     Megatron Bridge 0.6.2 MoE performance recipes): the union of keys per section, with value
     types inferred from the dumped values;
  2. ``tools/bridge_fields_extra.yaml``: hand-curated keys (each group names the public repository
     file it was confirmed in) for sections and configs the pretraining dumps cannot show.

Output shape::

    {"schema_version": 2,
     "sources": [...],
     "top_level": [...all allowed top-level keys...],
     "sections": {"model": {"tensor_model_parallel_size":
                               {"type": "int", "types": ["int"], "default": 1, "ge": 1, ...},
                            "moe_router_topk": {"type": "int", ..., "recipe": true},
                            "window_size": {"type": "any"}, ...},
                  "dataset.offline_packing_specs": {...}, ...},
     "validated": ["comm_overlap", "dataset", ...],
     "free_form": ["env_vars", "dataset.dataset_kwargs", ...]}

``_target_`` is accepted in every section and is not listed. Keys under a ``free_form`` path are
never checked. Type strings: int, float, bool, str, list, dict, any ("any" when the only evidence
is null, when types conflict, or when the value is an instantiated object).

Run from anywhere; paths are resolved relative to the repository root. Output is deterministic
(sorted keys, indent=1).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path
from typing import Any

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
TABLE = REPO / "tools" / "fields.yaml"
OUT = REPO / "src" / "moe_lint" / "data" / "fields.json"
#: Symbolic bounds fields.yaml may use (moe_lint/bounds.py, moe-lint's one table of bounds).
BOUNDS = {"MAX_SIZE": 1 << 20, "MAX_COUNT": 1 << 31}
#: What a field-table entry may say (tools/fields.yaml's header explains each).
TABLE_KEYS = {"types", "default", "ge", "le", "choices", "recipe", "source", "moe_lint_default",
              "versions"}  # fmt: skip
VALIDATED_TYPES = {"null", "bool", "int", "float", "str", "list[str]", "list[int]", "list",
                   "dict", "any"}  # fmt: skip

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
    def build(self, table: dict[str, dict[str, dict[str, Any]]]) -> dict:
        sections: dict[str, dict[str, str]] = {}
        for name, fields in self.evidence.items():
            if any(name == p or name.startswith(p + ".") for p in self.free_form):
                continue  # a dump's object under a free-form field: its keys are never checked
            out = {}
            for key, seen in fields.items():
                out[key] = self.overrides.get(name, {}).get(key) or combine(seen)
            sections[name] = dict(sorted(out.items()))
        self.check(sections)
        merged: dict[str, dict[str, dict[str, Any]]] = {
            name: {key: {"type": kind} for key, kind in fields.items()}
            for name, fields in sections.items()
        }
        validated = []
        for name, fields in table.items():
            if name not in merged:
                raise SystemExit(f"{TABLE}: section {name} is not a known section")
            for key, entry in fields.items():
                if key not in merged[name]:
                    raise SystemExit(f"{TABLE}: {name}.{key} is not a known key")
                merged[name][key].update(entry)
            if any("types" in entry for entry in fields.values()):
                validated.append(name)
        return {
            "schema_version": 2,
            "sources": [str(TABLE.relative_to(REPO)), *self.sources],
            "top_level": sorted(self.top_level),
            "sections": dict(sorted(merged.items())),
            "validated": sorted(validated),
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


def load_table(path: Path = TABLE) -> dict[str, dict[str, dict[str, Any]]]:
    """tools/fields.yaml, checked, with symbolic bounds resolved."""
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for section, fields in data.items():
        for key, entry in fields.items():
            where = f"{path.name}: {section}.{key}"
            if not isinstance(entry, dict) or set(entry) - TABLE_KEYS:
                raise SystemExit(f"{where}: entry must be a mapping of {sorted(TABLE_KEYS)}")
            entry = dict(entry)
            for bound in ("ge", "le"):
                if isinstance(entry.get(bound), str):
                    entry[bound] = BOUNDS[entry[bound]]
            if set(entry.get("types", [])) - VALIDATED_TYPES:
                raise SystemExit(f"{where}: unknown type in {entry['types']}")
            if "moe_lint_default" in entry:
                entry["framework_default"] = entry.pop("default")
                entry["default"] = entry.pop("moe_lint_default")
            table.setdefault(section, {})[key] = entry
    return table


# ------------------------------------------------------------------ defaults from the source
#: Per section, the classes whose dataclass defaults are the framework's, subclass first
#: (``wheel dir / path :: class``); the first class that declares a field gives its default.
_B = "megatron_bridge-0.6.2/megatron/bridge/"
_C = "megatron_core-0.19.2/megatron/"
DEFAULT_CLASSES = {
    "model": [_B + "models/gpt_provider.py::GPTModelProvider",
              _B + "models/transformer_config.py::TransformerConfig",
              _C + "core/transformer/transformer_config.py::TransformerConfig",
              _C + "core/transformer/transformer_config.py::MLATransformerConfig",
              _C + "core/model_parallel_config.py::ModelParallelConfig"],
    "train": [_B + "training/config.py::TrainingConfig",
              _C + "training/config/training_config.py::TrainingConfig"],
    "dataset": [_B + "training/config.py::GPTDatasetConfig",
                _C + "core/datasets/gpt_dataset.py::GPTDatasetConfig",
                _C + "core/datasets/blended_megatron_dataset_config.py"
                "::BlendedMegatronDatasetConfig",
                _B + "data/base.py::DataloaderConfig"],
    "dataset.offline_packing_specs": [_B + "data/packing/config.py::PackedSequenceSpecs"],
    "optimizer": [_B + "training/config.py::OptimizerConfig",
                  _C + "core/optimizer/optimizer_config.py::OptimizerConfig"],
    "ddp": [_B + "training/config.py::DistributedDataParallelConfig",
            _C + "core/distributed/distributed_data_parallel_config.py"
            "::DistributedDataParallelConfig"],
    "dist": [_B + "training/config.py::DistributedInitConfig",
             _C + "training/config/common_config.py::DistributedInitConfig"],
    "scheduler": [_B + "training/config.py::SchedulerConfig",
                  _C + "training/config/training_config.py::SchedulerConfig"],
    "checkpoint": [_B + "training/config.py::CheckpointConfig",
                   _C + "training/config/training_config.py::CheckpointConfig"],
    "rerun_state_machine": [_B + "training/config.py::RerunStateMachineConfig",
                            _C + "training/config/resilience_config.py::RerunStateMachineConfig"],
    "rng": [_C + "training/config/common_config.py::RNGConfig"],
    "comm_overlap": [_B + "training/comm_overlap.py::CommOverlapConfig"],
    "mixed_precision": [_B + "training/mixed_precision.py::MixedPrecisionConfig"],
}  # fmt: skip
_NOT_LITERAL = object()


def _literal(node: ast.expr | None) -> object:
    """A dataclass field's default as a Python value (enum members by name), or _NOT_LITERAL."""
    if node is None:
        return _NOT_LITERAL  # required field
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "field":
        for kw in node.keywords:
            if kw.arg == "default":
                return _literal(kw.value)
            if kw.arg == "default_factory" and isinstance(kw.value, ast.Name):
                return {"list": [], "dict": {}}.get(kw.value.id, _NOT_LITERAL)
            if kw.arg == "default_factory" and isinstance(kw.value, ast.Lambda):
                return _literal(kw.value.body)
        return _NOT_LITERAL
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.attr  # AttnBackend.auto -> "auto", as normalize resolves enum members
    return _NOT_LITERAL


def _class_defaults(root: Path, spec: str) -> dict[str, object]:
    path, name = spec.split("::")
    tree = ast.parse((root / path).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            out: dict[str, object] = {}
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    out[stmt.target.id] = _literal(stmt.value)
            return out
    raise SystemExit(f"{spec}: class not found under {root}")


def verify_defaults(root: Path, table: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """Each fields.yaml default that differs from the released source's dataclass default."""
    problems = []
    for section, fields in table.items():
        found: dict[str, tuple[object, str]] = {}
        for spec in DEFAULT_CLASSES.get(section, []):
            for key, value in _class_defaults(root, spec).items():
                found.setdefault(key, (value, spec))
        for key, entry in fields.items():
            if "default" not in entry:
                continue  # the table records no default (its comment says why)
            if key not in found and entry.get("default") is None:
                continue  # a field of other dataset / provider classes: no single default
            if key not in found:
                problems.append(f"{section}.{key}: no default in {DEFAULT_CLASSES.get(section)}")
                continue
            value, spec = found[key]
            want = entry.get("framework_default", entry.get("default"))
            if value is _NOT_LITERAL:
                if want is not None:
                    problems.append(f"{section}.{key}: {spec} has no literal default")
            elif value != want:
                problems.append(f"{section}.{key}: table {want!r}, {spec} {value!r}")
    return problems


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
    parser.add_argument(
        "--verify-defaults",
        type=Path,
        metavar="DIR",
        help="compare tools/fields.yaml's defaults with the unpacked wheels in DIR",
    )
    args = parser.parse_args(argv)
    table = load_table()
    if args.verify_defaults is not None:
        problems = verify_defaults(args.verify_defaults, table)
        for line in problems:
            print(line)
        print(f"{len(problems)} default(s) differ from the source", file=sys.stderr)
        return 1 if problems else 0

    cat = Catalogue()
    dumps = sorted(DUMPS_DIR.glob("*.yaml"))
    if not dumps:
        raise SystemExit(f"no dumps found in {DUMPS_DIR}")
    for dump in dumps:
        rel = dump.relative_to(REPO).as_posix()
        cat.add_source(f"{rel} (Megatron Bridge 0.6.2 ConfigContainer.to_yaml dump)")
        cat.load_dump(dump)
    cat.load_extra(EXTRA)

    built = cat.build(table)
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
