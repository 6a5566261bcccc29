"""moe-lint's own settings: CLI > in-file directive > ``[tool.moe-lint]`` in pyproject.toml.

The cluster (GPU count and type) and the model preset can be given in all three places; rule
selection, fail-on and extra packs in the CLI and pyproject. ``per-file`` tables in pyproject
apply cluster/model settings and ``extra-fields`` to files matching a glob
(``[tool.moe-lint.per-file."dsv3/*.yaml"]``).
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from moe_lint.bounds import MAX_GPUS, bounded_repr, number_too_long
from moe_lint.config import hf_config
from moe_lint.config.memory_settings import memory_settings
from moe_lint.config.versions import package_key, parse_version
from moe_lint.errors import UsageError


def _shown(value: object) -> str:
    """A value from a file or command line, echoed bounded (bounds.MAX_REPR_CHARS)."""
    return bounded_repr(value)


if TYPE_CHECKING:
    from packaging.version import Version

#: ``--gpu`` short names -> keys of data/gpus.yaml.
GPU_ALIASES = {
    "a100": "a100-sxm-80gb",
    "h100": "h100-sxm-80gb",
    "h200": "h200-141gb",
    "b200": "b200",
    "b300": "b300",
    "gb200": "gb200-nvl72",
    "gb300": "gb300-nvl72",
    "vr200": "vr200-nvl72",
}

_DIRECTIVE = re.compile(r"#\s*moe-lint:\s*(?P<body>.*)$")
_VERSION_KEYS = {"megatron-core", "transformer-engine", "bridge"}
_CLUSTER_KEYS = {"gpus", "nodes", "gpus-per-node", "gpu", "model"} | _VERSION_KEYS
#: Settings a ``per-file`` table may give besides the cluster/model/version keys.
_PER_FILE_KEYS = _CLUSTER_KEYS | {"extra-fields"}
_FIELD_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclass
class Settings:
    """Resolved settings for one file."""

    gpus: int | None = None
    nodes: int | None = None
    gpus_per_node: int | None = None
    gpu: str | None = None
    model: str | None = None
    #: Framework versions the config targets (PEP 440); a package not stated here means its
    #: newest release (``versions.NEWEST_RELEASED``).
    versions: dict[str, Version] = field(default_factory=dict)
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    per_file: dict[str, dict[str, Any]] = field(default_factory=dict)
    fail_on: str = "error"
    rules: list[str] = field(default_factory=list)
    #: Raw memory-model settings ([tool.moe-lint.memory], --memory NAME=VALUE).
    memory: dict[str, Any] = field(default_factory=dict)
    #: Dotted key paths SCH001 accepts besides the field table (``model.crossattn_emb_size``).
    extra_fields: tuple[str, ...] = ()
    #: Read the config classes from an importable Megatron Bridge, not the shipped class table.
    introspect_bridge: bool = False
    #: File patterns a folder walk or glob skips (``exclude``; None: files.DEFAULT_EXCLUDE)
    #: and more of them (``extend-exclude``), relative to ``base_dir``.
    exclude: list[str] | None = None
    extend_exclude: list[str] = field(default_factory=list)
    #: Where pyproject.toml was found (globs and pack paths are relative to it).
    base_dir: Path | None = None
    #: Where the world size came from when a launch command gave it (its flags, the lines
    #: and shell defaults their numbers came from); None for a cluster setting.
    world_source: str | None = None

    def world(self) -> int | None:
        """Total GPUs from ``gpus`` or ``nodes × gpus-per-node``."""
        if self.gpus is not None:
            return self.gpus
        if self.nodes is not None:
            per_node = self.gpus_per_node or default_gpus_per_node(self.gpu)
            return self.nodes * per_node
        return None


def _int(value: Any, key: str, where: str) -> int:
    text = str(value).replace("_", "")
    too_long = number_too_long(text)
    if too_long:
        raise UsageError(f"{where}: {key}: {too_long}")
    try:
        number = int(text)
    except ValueError:
        raise UsageError(
            f"{where}: {key} must be a positive integer, got {_shown(value)}"
        ) from None
    if number < 1:
        raise UsageError(f"{where}: {key} must be a positive integer, got {_shown(value)}")
    if number > MAX_GPUS:
        raise UsageError(
            f"{where}: {key} = {number:,} is past moe-lint's bound of {MAX_GPUS:,} GPUs "
            "(bounds.MAX_GPUS)"
        )
    return number


def normalize_gpu(name: str, where: str) -> str:
    key = name.strip().lower()
    key = GPU_ALIASES.get(key, key)
    if key not in gpu_specs():
        choices = ", ".join(GPU_ALIASES)
        raise UsageError(f"{where}: unknown GPU {_shown(name)} (choose from {choices})")
    return key


def apply_cluster(
    settings: Settings,
    values: dict[str, Any],
    where: str,
    base: Path | None = None,
    source: str | None = None,
) -> Settings:
    """Return settings with cluster/model keys from ``values`` applied (a relative ``model``
    path is read from ``base``, else the working directory). ``source``: where the world
    these values give came from (a launch command's flags), for the derivations."""
    out = replace(settings)
    keys = {k.replace("_", "-") for k in values}
    if keys & {"gpus", "nodes", "gpus-per-node"}:
        out.world_source = source
    # A layer that gives the world one way replaces a world given the other way below it.
    if "nodes" in keys and "gpus" not in keys:
        out.gpus = None
    if "gpus" in keys and "nodes" not in keys:
        out.nodes = None
    for key, value in values.items():
        norm = key.replace("_", "-")
        if norm == "gpus":
            out.gpus = _int(value, key, where)
        elif norm == "nodes":
            out.nodes = _int(value, key, where)
        elif norm == "gpus-per-node":
            out.gpus_per_node = _int(value, key, where)
        elif norm == "gpu":
            out.gpu = normalize_gpu(str(value), where)
        elif norm == "model":
            out.model = normalize_model(str(value), where, base)
        elif norm == "extra-fields":
            out.extra_fields = (*out.extra_fields, *extra_fields(value, f"{where}: {key}"))
        elif norm in _VERSION_KEYS:
            try:
                out.versions = {**out.versions, norm: parse_version(str(value))}
            except ValueError:
                raise UsageError(f"{where}: {key} must be a version like 0.15 or 2.6.0") from None
    return out


def extra_fields(value: Any, where: str) -> list[str]:
    """``["model.crossattn_emb_size", ...]``: dotted key paths, checked for shape."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f'{where} must be a list of dotted key paths, e.g. ["model.my_field"]')
    for path in value:
        if not _FIELD_PATH.match(path):
            raise UsageError(
                f'{where}: {_shown(path)} is not a dotted key path like "model.crossattn_emb_size"'
            )
    return list(value)


def parse_directives(text: str, where: str) -> dict[str, str]:
    """``# moe-lint: gpus=256 gpu=h100 model=deepseek-v3`` comments (not disable=...)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _DIRECTIVE.search(line)
        if not match:
            continue
        body = match.group("body").split(" -- ")[0]
        for token in body.split():
            key, sep, value = token.partition("=")
            if not sep or key.startswith("disable") or key.startswith("enable"):
                continue

            key = package_key(key) or key
            if key.replace("_", "-") not in _CLUSTER_KEYS:
                raise UsageError(f"{where}: unknown moe-lint directive {_shown(key)}")
            found[key] = value
    return found


def find_pyproject(start: Path) -> Path | None:
    for folder in [start, *start.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


_PYPROJECT_KEYS = {
    "gpus", "nodes", "gpus-per-node", "gpu", "model", "select", "extend-select", "ignore",
    "per-file-ignores", "per-file", "fail-on", "rules", "format", "megatron-core",
    "transformer-engine", "bridge", "memory", "extra-fields", "introspect-bridge",
    "exclude", "extend-exclude",
}  # fmt: skip


def load_pyproject(path: Path | None) -> tuple[Settings, str | None]:
    """Settings and default output format from ``[tool.moe-lint]``."""
    settings = Settings()
    if path is None:
        return settings, None
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read pyproject.toml: {exc}") from None
    if b"moe-lint" not in raw:  # no [tool.moe-lint] table: skip parsing TOML at all
        return settings, None
    # Lazy: tomllib only when a pyproject.toml is found.
    import tomllib

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{path}: cannot read pyproject.toml: {exc}") from None
    table = data.get("tool", {}).get("moe-lint")
    if table is None:
        return settings, None
    return settings_from_table(table, f"{path} [tool.moe-lint]", path.parent)


def settings_from_table(
    table: Any, where: str, base_dir: Path | None
) -> tuple[Settings, str | None]:
    """Settings and default output format from a ``[tool.moe-lint]`` table (pyproject.toml,
    or the ``settings`` mapping of the Python API); ``base_dir`` anchors globs and pack paths
    (None: the current directory)."""
    settings = Settings()
    if not isinstance(table, dict):
        raise UsageError(f"{where}: must be a table")
    unknown = set(table) - _PYPROJECT_KEYS
    if unknown:
        raise UsageError(f"{where}: unknown setting(s) {', '.join(sorted(unknown))}")
    settings = apply_cluster(
        settings, {k: v for k, v in table.items() if k in _CLUSTER_KEYS}, where, base_dir
    )
    settings.base_dir = base_dir

    def str_list(key: str) -> list[str]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{where}: {key} must be a list of strings")
        return list(value)

    if "select" in table:
        settings.select = str_list("select")
    settings.extend_select = str_list("extend-select")
    settings.ignore = str_list("ignore")
    settings.rules = [str(((base_dir or Path()) / p).resolve()) for p in str_list("rules")]
    if "exclude" in table:
        settings.exclude = str_list("exclude")
    settings.extend_exclude = str_list("extend-exclude")
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise UsageError(f"{where}: per-file-ignores must be a table of glob = [codes]")
    settings.per_file_ignores = {str(k): list(v) for k, v in pfi.items()}
    per_file = table.get("per-file", {})
    if not isinstance(per_file, dict):
        raise UsageError(f"{where}: per-file must be a table of glob = {{settings}}")
    for glob, values in per_file.items():
        if not isinstance(values, dict) or {k.replace("_", "-") for k in values} - _PER_FILE_KEYS:
            raise UsageError(
                f"{where}: per-file.{_shown(glob)} may only set {sorted(_PER_FILE_KEYS)}"
            )
        apply_cluster(Settings(), values, f"{where} per-file.{glob}", base_dir)  # validate
    settings.per_file = {str(k): dict(v) for k, v in per_file.items()}
    if "extra-fields" in table:
        settings.extra_fields = tuple(extra_fields(table["extra-fields"], f"{where}: extra-fields"))
    introspect = table.get("introspect-bridge", False)
    if not isinstance(introspect, bool):
        raise UsageError(f"{where}: introspect-bridge must be true or false")
    settings.introspect_bridge = introspect
    fail_on = table.get("fail-on", "error")
    if fail_on not in ("error", "warning", "info"):
        raise UsageError(f"{where}: fail-on must be error, warning or info")
    settings.fail_on = fail_on
    memory = table.get("memory", {})
    if not isinstance(memory, dict):
        raise UsageError(f"{where}: memory must be a table of memory-model settings")
    memory_settings(memory, f"{where} memory")  # validate now
    settings.memory = dict(memory)
    fmt = table.get("format")
    return settings, (str(fmt) if fmt is not None else None)


def relative_to_base(file: str, base: Path | None) -> str:
    path = Path(file).resolve()
    if base is not None:
        try:
            return path.relative_to(base.resolve()).as_posix()
        except ValueError:
            pass
    return Path(os.path.relpath(path)).as_posix()


def glob_match(file: str, pattern: str, base: Path | None) -> bool:
    rel = relative_to_base(file, base)
    return fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(Path(rel).name, pattern)


@cache
def gpu_specs() -> dict[str, Any]:
    data = _load_data_yaml("gpus.yaml")
    gpus: dict[str, Any] = data["gpus"]
    return gpus


@cache
def model_presets() -> dict[str, Any]:
    data = _load_data_yaml("models.yaml")
    models: dict[str, Any] = data["models"]
    return models


def _load_data_yaml(name: str) -> dict[str, Any]:
    path = Path(__file__).resolve().parent.parent / "data" / name
    with path.open(encoding="utf-8") as handle:
        data: dict[str, Any] = yaml.load(
            handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        )
    return data


def preset_key(name: str) -> str | None:
    """The preset a preset name, HF id (with or without its organisation) or alias names;
    None when no preset does."""
    key = name.strip().lower()
    models = model_presets()
    if key in models:
        return key
    for model_key, entry in models.items():
        names = {
            str(entry.get("hf_id", "")).lower(),
            *(str(a).lower() for a in entry.get("aliases") or []),
        }
        if key in names or key == str(entry.get("hf_id", "")).split("/")[-1].lower():
            return str(model_key)
    return None


def normalize_model(name: str, where: str, base: Path | None = None) -> str:
    """A preset key for a preset name / HF id / alias; else an HF ``config.json`` (or a model
    directory holding one) read now and named by its absolute path (hf_config.load)."""
    preset = preset_key(name)
    if preset is not None:
        return preset
    path = Path(name.strip()).expanduser()
    if base is not None and not path.is_absolute():
        path = base / path
    found = hf_config.find_config(path)
    if found is not None:
        resolved = str(found.resolve())
        hf_config.load(resolved)  # validate now: a bad config.json is one usage error
        return resolved
    if path.is_dir():
        raise UsageError(f"{where}: model directory {_shown(name)} has no config.json")
    if name.strip().endswith(".json") or "/" in name or os.sep in name:
        raise UsageError(
            f"{where}: no model preset or HF config.json {_shown(name)} (see `moe-lint models`)"
        )
    raise UsageError(f"{where}: unknown model preset {_shown(name)} (see `moe-lint models`)")


def beside_config(path: str) -> str | None:
    """The HF ``config.json`` next to a linted file (used when no model is set anywhere), as
    normalize_model names it; None when there is none or the file is stdin/unnamed."""
    folder = Path(path).parent
    if not Path(path).is_file() or Path(path).name == "config.json":
        return None
    candidate = folder / "config.json"
    if not candidate.is_file():
        return None
    resolved = str(candidate.resolve())
    if not hf_config.looks_like_hf(resolved):
        return None  # some other tool's config.json: not a model config, not ours to judge
    hf_config.load(resolved)
    return resolved


def model_entry(model: str) -> dict[str, Any]:
    """The models.yaml entry of a preset key, or the mapped entry of an HF config path."""
    entry = model_presets().get(model)
    if entry is not None:
        return dict(entry)
    if hf_config.is_hf_key(model):
        return hf_config.load(model)
    return {}


def default_gpus_per_node(gpu: str | None) -> int:
    if gpu is None:
        return 8
    spec = gpu_specs()[gpu]
    return int(spec.get("nvlink", {}).get("gpus_per_node") or 8)


#: Preset keys that are Megatron model fields (the rest is provenance and bookkeeping).
_PRESET_SKIP = {
    "display_name", "hf_id", "hf_architecture", "hf_model_type", "bridge", "aliases",
    "published_params", "sources", "dense_layer_indices", "n_shared_experts", "activation",
    "rope_scaling", "vocab_size_padded", "max_position_embeddings", "notes", "recipe_split",
}  # fmt: skip


def preset_fields(model: str) -> dict[str, Any]:
    """Model fields a preset supplies (values written in the config win over these)."""
    entry = model_entry(model)
    return {k: v for k, v in entry.items() if k not in _PRESET_SKIP and v is not None}
