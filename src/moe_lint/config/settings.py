"""moe-lint's own settings: CLI > in-file directive > ``[tool.moe-lint]`` in pyproject.toml.

The cluster (GPU count and type) and the model preset can be given in all three places; rule
selection, fail-on and extra packs in the CLI and pyproject. ``per-file`` tables in pyproject
apply cluster/model settings and ``extra-fields`` to files matching a glob
(``[tool.moe-lint.per-file."dsv3/*.yaml"]``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moe_lint.bounds import (
    MAX_DEPTH,
    MAX_GPUS,
    MAX_REPR_CHARS,
    MAX_SETTING_CHARS,
    MAX_SETTING_VALUES,
    MAX_SETTINGS_BYTES,
    bounded_repr,
    bounded_str,
    number_too_long,
    too_large,
)
from moe_lint.config.memory_settings import memory_settings
from moe_lint.config.pyyaml import yaml
from moe_lint.config.regular_file import read_file
from moe_lint.config.versions import package_key, parse_version
from moe_lint.errors import InputError, UsageError
from moe_lint.globs import check_pattern, fnmatch_regex
from moe_lint.records import field, record, replace


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


@record
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
    #: Show info findings (``show-infos``, --show-infos); hidden by default.
    show_infos: bool = False
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
    """A positive GPU or node count up to ``bounds.MAX_GPUS``, from an int or its text (an int
    is judged without printing it: ``str()`` of a 5,000-digit int raises ValueError)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise UsageError(f"{where}: {key} must be a positive integer, got {_shown(value)}")
    if isinstance(value, int):
        number = int.__int__(value)
    else:
        text = value.replace("_", "")
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
        shown = f"{number:,}" if number.bit_length() < 256 else _shown(number)
        raise UsageError(
            f"{where}: {key} = {shown} is past moe-lint's bound of {MAX_GPUS:,} GPUs "
            "(bounds.MAX_GPUS)"
        )
    return number


def normalize_gpu(name: str, where: str) -> str:
    key = name.strip().lower()
    key = GPU_ALIASES.get(key, key)
    if key not in gpu_specs():
        # Lazy: the suggester (difflib) only for a usage error.
        from moe_lint.config.suggest import did_you_mean

        choices = ", ".join(GPU_ALIASES)
        hint = did_you_mean(key, [*GPU_ALIASES, *gpu_specs()])
        raise UsageError(f"{where}: unknown GPU {_shown(name)}{hint} (choose from {choices})")
    return key


def _text(value: Any, key: str, where: str) -> str:
    """A cluster/model/version value as text: a string, or a number as TOML writes one
    (``bridge = 0.6``); a list, table or boolean is refused."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return bounded_str(value, MAX_REPR_CHARS)
    raise UsageError(f"{where}: {key} must be a string, got {_shown(value)}")


def apply_cluster(
    settings: Settings,
    values: Mapping[str, Any],
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
            out.gpu = normalize_gpu(_text(value, key, where), where)
        elif norm == "model":
            out.model = normalize_model(_text(value, key, where), where, base)
        elif norm == "extra-fields":
            out.extra_fields = (*out.extra_fields, *extra_fields(value, f"{where}: {key}"))
        elif norm in _VERSION_KEYS:
            try:
                out.versions = {**out.versions, norm: parse_version(_text(value, key, where))}
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
    if "moe-lint" not in text:  # most files: no line to look at
        return found
    for line in text.splitlines():
        if "moe-lint" not in line:  # what _DIRECTIVE needs, tested without the regex
            continue
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


def find_pyproject(start: Path, cache: dict[Path, Path | None] | None = None) -> Path | None:
    """The closest ``pyproject.toml`` at or above the folder ``start`` that has a
    ``[tool.moe-lint]`` table, as ruff finds its settings: a nested project's pyproject without
    the table does not hide its parent's. ``cache`` maps folders already searched to their
    answer (one walk per folder in a run of many files)."""
    seen: list[Path] = []
    found: Path | None = None
    for folder in [start, *start.parents]:
        if cache is not None and folder in cache:
            found = cache[folder]
            break
        seen.append(folder)
        candidate = folder / "pyproject.toml"
        if candidate.is_file() and has_settings_table(candidate):
            found = candidate
            break
    if cache is not None:
        for folder in seen:
            cache[folder] = found
    return found


def has_settings_table(path: Path) -> bool:
    """Whether ``path`` (a pyproject.toml) has a ``[tool.moe-lint]`` table; a file that
    cannot be read or parsed is one usage error, as when its settings are loaded."""
    return _pyproject_table(path) is not None


class SettingsFinder:
    """Each linted file's settings: ``--config``'s for every file, none with ``--isolated``,
    else those of the closest pyproject.toml with a ``[tool.moe-lint]`` table at or above the
    file (find_pyproject). ``adjust`` applies the command line's options to each loaded
    Settings; a file whose closest table is ``default_path`` gets ``default`` itself."""

    def __init__(
        self,
        fixed: bool,
        default: Settings,
        default_path: Path | None,
        adjust: Callable[[Settings], None],
    ) -> None:
        self.fixed = fixed
        self.default_path = default_path.resolve() if default_path is not None else None
        self._adjust = adjust
        self._folders: dict[Path, Path | None] = {}
        self._loaded: dict[Path | None, Settings] = {self.default_path: default}

    def pyproject_for(self, file: str) -> Path | None:
        """The settings file ``file`` is linted with (None: the defaults)."""
        if self.fixed:
            return self.default_path
        try:
            folder = Path(file).resolve().parent
        except (OSError, RuntimeError, ValueError):
            return self.default_path
        found = find_pyproject(folder, self._folders)
        return found.resolve() if found is not None else None

    def settings_for(self, file: str) -> Settings:
        path = self.pyproject_for(file)
        if path not in self._loaded:
            settings, _ = load_pyproject(path)
            self._adjust(settings)
            self._loaded[path] = settings
        return self._loaded[path]


_PYPROJECT_KEYS = {
    "gpus", "nodes", "gpus-per-node", "gpu", "model", "select", "extend-select", "ignore",
    "per-file-ignores", "per-file", "fail-on", "rules", "format", "megatron-core",
    "transformer-engine", "bridge", "memory", "extra-fields", "introspect-bridge",
    "exclude", "extend-exclude", "show-infos",
}  # fmt: skip


def load_pyproject(path: Path | None) -> tuple[Settings, str | None]:
    """Settings and default output format from ``[tool.moe-lint]``.

    The file is read as any input is (a regular file, at most ``bounds.MAX_SETTINGS_BYTES``),
    and nesting too deep for ``tomllib``'s recursive parser is one usage error.
    """
    settings = Settings()
    if path is None:
        return settings, None
    table = _pyproject_table(path)
    if table is None:
        return settings, None
    return settings_from_table(table, f"{path} [tool.moe-lint]", path.parent)


def _pyproject_table(path: Path) -> Any:
    """The ``[tool.moe-lint]`` table of a pyproject.toml (None when it has none), read under
    the settings bounds; a file that cannot be read or parsed is one usage error."""
    try:
        raw = read_file(str(path), MAX_SETTINGS_BYTES)
    except InputError as exc:
        raise UsageError(f"{path}: cannot read pyproject.toml: {exc.message}") from None
    too_big = too_large(len(raw), MAX_SETTINGS_BYTES, "MAX_SETTINGS_BYTES")
    if too_big:
        raise UsageError(f"{path}: cannot read pyproject.toml: {too_big}")
    if not _may_have_table(raw):  # no [tool.moe-lint] table: skip parsing TOML at all
        return None
    try:
        return _parsed_table(raw)
    except ValueError as exc:
        raise UsageError(f"{path}: cannot read pyproject.toml: {exc}") from None


@cache
def _table_forms() -> tuple[re.Pattern[bytes], ...]:
    """Each way TOML can write the ``[tool.moe-lint]`` table: a ``[tool.moe-lint...]`` or
    ``[[tool.moe-lint...]]`` header, a top-level dotted key ``tool.moe-lint.gpus = 8`` or an
    inline ``tool = {...}``, each name bare or quoted; then a bare ``[tool]`` header and a
    ``moe-lint`` key, which open it together."""
    q, ws = rb"""["']?""", rb"[ \t]*"
    tool = q + rb"tool" + q + ws
    moe = q + rb"moe-lint" + q
    return tuple(
        re.compile(pattern, re.MULTILINE)
        for pattern in (
            rb"^" + ws + rb"\[\[?" + ws + tool + rb"\." + ws + moe,
            rb"^" + ws + tool + rb"(?:\." + ws + moe + rb"|=)",
            rb"^" + ws + rb"\[" + ws + tool + rb"\]",
            rb"^" + ws + moe + ws + rb"[.=]",
        )
    )


def _may_have_table(raw: bytes) -> bool:
    """False only when the pyproject certainly has no ``[tool.moe-lint]`` table, so that the
    TOML parser (~4 ms with its import) runs only where one can be: a project that names
    moe-lint only as a dependency or a script, beside its ``[tool.ruff]``, is not parsed. A
    file with a ``\\u`` escape (a quoted key may spell the name with one) is parsed to be sure."""
    if b"\\u" in raw or b"\\U" in raw:
        return True
    if b"moe-lint" not in raw:
        return False
    header, root, bare_tool, key = _table_forms()
    if header.search(raw) or root.search(raw):
        return True
    return bool(bare_tool.search(raw) and key.search(raw))


@lru_cache(maxsize=16)
def _parsed_table(raw: bytes) -> Any:
    """The ``[tool.moe-lint]`` table of a pyproject's bytes, parsed once per content: a run
    finds its settings file by its table, then loads it (callers only read the table).
    ValueError with the reason when it is not TOML."""
    # Lazy: tomllib only when a pyproject.toml names moe-lint.
    import tomllib

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"invalid UTF-8 at byte {exc.start}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(bounded_str(str(exc), MAX_REPR_CHARS)) from None
    except RecursionError:
        raise ValueError("arrays or tables nested too deep to parse") from None
    tool = data.get("tool")
    return tool.get("moe-lint") if isinstance(tool, dict) else None


#: Output formats (``--format``, ``format`` in pyproject).
FORMATS = ("text", "concise", "json", "json-lines", "sarif", "github", "gitlab", "junit")


def check_table(table: Any, where: str) -> dict[str, Any]:
    """``table`` as plain TOML-shaped data (dicts with str keys, lists, str, int, float, bool),
    within moe-lint's bounds on settings: ``bounds.MAX_SETTING_VALUES`` values and
    ``bounds.MAX_SETTING_CHARS`` characters of keys and strings in all, ``bounds.MAX_DEPTH``
    levels. The Python API's ``settings`` mapping comes through here too: any ``Mapping`` is a
    table, a tuple a list, and other objects are refused by type, never by calling them."""
    if not isinstance(table, Mapping):
        raise UsageError(f"{where}: must be a table")
    budget = [MAX_SETTING_VALUES, MAX_SETTING_CHARS]

    def spend(values: int, chars: int) -> None:
        budget[0] -= values
        budget[1] -= chars
        if budget[0] < 0:
            raise UsageError(
                f"{where}: more than {MAX_SETTING_VALUES:,} values in the settings "
                "(bounds.MAX_SETTING_VALUES)"
            )
        if budget[1] < 0:
            raise UsageError(
                f"{where}: more than {MAX_SETTING_CHARS:,} characters of keys and strings in "
                "the settings (bounds.MAX_SETTING_CHARS)"
            )

    def plain(value: Any, path: str, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise UsageError(f"{where}: nesting deeper than {MAX_DEPTH} levels")
        if isinstance(value, str):
            spend(1, len(value))
            return value
        if isinstance(value, bool | int | float):
            spend(1, 0)
            return value
        if isinstance(value, Mapping):
            spend(1, 0)
            out: dict[str, Any] = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise UsageError(
                        f"{where}: {path or 'the table'} has a key that is not a string "
                        f"({bounded_repr(key, 60)})"
                    )
                spend(0, len(key))
                out[key] = plain(item, f"{path}.{key}" if path else key, depth + 1)
            return out
        if isinstance(value, list | tuple):
            spend(1, 0)
            return [plain(item, path, depth + 1) for item in value]
        raise UsageError(
            f"{where}: {_shown(path)} holds a {type(value).__name__}, not a string, number, "
            "boolean, list or table"
        )

    checked: dict[str, Any] = plain(table, "", 0)
    return checked


def _names(keys: Any) -> str:
    """Setting names for a message: each shown bounded, at most five, sorted."""
    shown = sorted(bounded_repr(k, 60) for k in list(keys)[:100])
    more = len(keys) - 5
    return ", ".join(shown[:5]) + (f" and {more:,} more" if more > 0 else "")


def settings_from_table(
    table: Any, where: str, base_dir: Path | None
) -> tuple[Settings, str | None]:
    """Settings and default output format from a ``[tool.moe-lint]`` table (pyproject.toml,
    or the ``settings`` mapping of the Python API); ``base_dir`` anchors globs and pack paths
    (None: the current directory). Every value is checked for its type and against moe-lint's
    bounds (check_table); anything else is one UsageError."""
    table = check_table(table, where)
    settings = Settings()
    unknown = set(table) - _PYPROJECT_KEYS
    if unknown:
        raise UsageError(f"{where}: unknown setting(s) {_names(unknown)}")
    settings = apply_cluster(
        settings, {k: v for k, v in table.items() if k in _CLUSTER_KEYS}, where, base_dir
    )
    settings.base_dir = base_dir

    def str_list(key: str, value: Any = None, patterns: bool = False) -> list[str]:
        value = table.get(key, []) if value is None else value
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{where}: {key} must be a list of strings")
        if patterns:
            for pattern in value:
                check_pattern(pattern, f"{where}: {key}")
        return list(value)

    if "select" in table:
        settings.select = str_list("select")
    settings.extend_select = str_list("extend-select")
    settings.ignore = str_list("ignore")
    try:
        settings.rules = [str(((base_dir or Path()) / p).resolve()) for p in str_list("rules")]
    except (OSError, RuntimeError, ValueError) as exc:
        raise UsageError(f"{where}: rules: cannot resolve a pack path ({exc})") from None
    if "exclude" in table:
        settings.exclude = str_list("exclude", patterns=True)
    settings.extend_exclude = str_list("extend-exclude", patterns=True)
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise UsageError(f"{where}: per-file-ignores must be a table of glob = [codes]")
    for glob, codes in pfi.items():
        check_pattern(glob, f"{where}: per-file-ignores")
        str_list(f"per-file-ignores.{bounded_repr(glob, 60)}", codes)
    settings.per_file_ignores = {k: list(v) for k, v in pfi.items()}
    per_file = table.get("per-file", {})
    if not isinstance(per_file, dict):
        raise UsageError(f"{where}: per-file must be a table of glob = {{settings}}")
    for glob, values in per_file.items():
        check_pattern(glob, f"{where}: per-file")
        if not isinstance(values, dict) or {k.replace("_", "-") for k in values} - _PER_FILE_KEYS:
            raise UsageError(
                f"{where}: per-file.{_shown(glob)} may only set {sorted(_PER_FILE_KEYS)}"
            )
        apply_cluster(Settings(), values, f"{where} per-file.{_shown(glob)}", base_dir)
    settings.per_file = {k: dict(v) for k, v in per_file.items()}
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
    show_infos = table.get("show-infos", False)
    if not isinstance(show_infos, bool):
        raise UsageError(f"{where}: show-infos must be true or false")
    settings.show_infos = show_infos
    memory = table.get("memory", {})
    if not isinstance(memory, dict):
        raise UsageError(f"{where}: memory must be a table of memory-model settings")
    memory_settings(memory, f"{where} memory")  # validate now
    settings.memory = dict(memory)
    fmt = table.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(
            f"{where}: format must be one of {', '.join(FORMATS)}, not {bounded_repr(fmt, 60)}"
        )
    return settings, fmt


def relative_to_base(file: str, base: Path | None) -> str:
    """``file`` relative to ``base`` (else the working directory), ``/``-separated; a name the
    OS cannot resolve (a NUL, a loop, ~nobody) is matched as written."""
    try:
        return _relative(file, base)
    except (OSError, RuntimeError, ValueError):
        return Path(file).as_posix()


def _relative(file: str, base: Path | None) -> str:
    path = Path(file).resolve()
    if base is not None:
        try:
            return path.relative_to(base.resolve()).as_posix()
        except ValueError:
            pass
    return Path(os.path.relpath(path)).as_posix()


def glob_match(file: str, pattern: str, base: Path | None) -> bool:
    """Whether a ``per-file`` / ``per-file-ignores`` glob matches ``file`` (relative to
    ``base``) or its name, as ``fnmatch.fnmatch`` would, in linear time (moe_lint.globs)."""
    rel = relative_to_base(file, base)
    regex = fnmatch_regex(pattern)
    return regex.fullmatch(rel) is not None or regex.fullmatch(Path(rel).name) is not None


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


#: The package's data folder (models.yaml, gpus.yaml and the generated tables).
DATA_DIR = Path(__file__).resolve().parent.parent / "data"


def _load_data_yaml(name: str) -> dict[str, Any]:
    """A data file's values: its JSON form in ``_compiled_data`` (0.3 ms) while that was made
    from these bytes, else the YAML itself (12 ms for models.yaml; tools/compile_data.py)."""
    raw = (DATA_DIR / name).read_bytes()
    # Lazy: the compiled tables, only for a run that reads a preset or GPU table.
    from moe_lint.config import _compiled_data

    stamp, text = _compiled_data.SOURCES.get(name, ("", ""))
    if stamp == data_stamp(raw):
        # Lazy: json, already imported by the field table on a lint run.
        import json

        data: dict[str, Any] = json.loads(text)
        return data
    return parse_data_yaml(raw)


def parse_data_yaml(raw: bytes) -> dict[str, Any]:
    """A data file's values read from its YAML bytes."""
    data: dict[str, Any] = yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return data


def data_stamp(raw: bytes) -> str:
    """What ties a compiled table to the YAML bytes it was made from."""
    # Lazy: binascii, already imported with PyYAML (base64); crc32 notices an edit.
    import binascii

    return f"crc32:{len(raw)}:{binascii.crc32(raw):08x}"


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
    # Lazy: the HF config.json reader, only for a model that is not a preset.
    from moe_lint.config import hf_config

    try:
        path = Path(name.strip()).expanduser()
        if base is not None and not path.is_absolute():
            path = base / path
        found = hf_config.find_config(path)
        resolved = str(found.resolve()) if found is not None else None
        is_dir = found is None and path.is_dir()
    except (OSError, RuntimeError, ValueError) as exc:
        # ~nosuchuser (RuntimeError), a NUL (ValueError), a name too long (OSError).
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(
            f"{where}: no model preset {_shown(name)}, and not a usable path "
            f"({bounded_str(why, MAX_REPR_CHARS)})"
        ) from None
    if resolved is not None:
        hf_config.load(resolved)  # validate now: a bad config.json is one usage error
        return resolved
    if is_dir:
        raise UsageError(f"{where}: model directory {_shown(name)} has no config.json")
    if name.strip().endswith(".json") or "/" in name or os.sep in name:
        raise UsageError(
            f"{where}: no model preset or HF config.json {_shown(name)} (see `moe-lint models`)"
        )
    # Lazy: the suggester (difflib) only for a usage error.
    from moe_lint.config.suggest import did_you_mean

    hint = did_you_mean(name.strip().lower(), list(model_presets()))
    raise UsageError(f"{where}: unknown model preset {_shown(name)}{hint} (see `moe-lint models`)")


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
    # Lazy: the HF config.json reader, only when a config.json sits beside the file.
    from moe_lint.config import hf_config

    if not hf_config.looks_like_hf(resolved):
        return None  # some other tool's config.json: not a model config, not ours to judge
    hf_config.load(resolved)
    return resolved


def model_entry(model: str) -> dict[str, Any]:
    """The models.yaml entry of a preset key, or the mapped entry of an HF config path."""
    entry = model_presets().get(model)
    if entry is not None:
        return dict(entry)
    # Lazy: the HF config.json reader, only for a model that is not a preset.
    from moe_lint.config import hf_config

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
