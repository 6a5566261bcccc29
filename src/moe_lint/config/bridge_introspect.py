"""Read the config classes from an installed Megatron Bridge (``introspect-bridge = true``).

Opt-in: importing ``megatron.bridge.training.config`` imports torch (seconds), so moe-lint does
it only when ``[tool.moe-lint] introspect-bridge = true`` and
``importlib.util.find_spec("megatron.bridge")`` finds the package; it is never required. The
classes read are what ``_apply_overrides`` tests: ``dataclasses.fields()`` and the class
attributes of ConfigContainer's sections, of their loaded subclasses, and of a dump's
``_target_`` classes (imported only under ``megatron.`` without private segments, Bridge's own
allowlist rule). The result has the shape of the shipped class table's entries and is cached per
installed version (``$MOE_LINT_CACHE_DIR``), so later runs import nothing.

When the user states a ``--bridge`` version whose major.minor differs from the installed one,
the shipped class table for the stated release is used instead.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import os
import types
import typing
from typing import TYPE_CHECKING, Any

from moe_lint.config.bridge_classes import View, as_tuple
from moe_lint.config.versions import parse_version

if TYPE_CHECKING:
    from moe_lint.config.bridge_classes import Choice

_CONTAINER_MODULE = "megatron.bridge.training.config"
#: Mixins the recipes' model and dataset objects derive from (see gen_bridge_classes.ROOTS).
_ROOTS = {
    "model": (
        "megatron.bridge.models.model_provider.ModelProviderMixin",
        "megatron.bridge.models.distillation_provider.DistillationProvider",
    ),
    "dataset": ("megatron.bridge.data.base.DataloaderConfig",),
}


def _spec_origin() -> str | None:
    try:
        spec = importlib.util.find_spec("megatron.bridge")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    return str(spec.origin or (list(spec.submodule_search_locations or [""]) or [""])[0])


def installed_version() -> str | None:
    """The installed Megatron Bridge version (None: not installed)."""
    if _spec_origin() is None:
        return None
    # Lazy: importlib.metadata (~10 ms) only when Bridge or entry-point packs are looked up.
    from importlib import metadata

    try:
        return metadata.version("megatron-bridge")
    except metadata.PackageNotFoundError:
        pass
    try:
        module = importlib.import_module("megatron.bridge")
    except Exception:  # a broken install is "no Bridge", never a crash
        return None
    version = getattr(module, "__version__", None)
    return str(version) if version else None


class InstalledView(View):
    """A view whose classes come from the installed Bridge (shipped data for the rest)."""

    version: str = ""

    def _entry(self, qualname: str) -> tuple[dict[str, Any], int] | None:
        found = super()._entry(qualname)
        if found is None and qualname not in self.overlay and _importable(qualname):
            cls = _import_class(qualname)
            if cls is not None:
                _describe(cls, self.overlay)
                self._children = None
                found = super()._entry(qualname)
        return found


def installed_view(bridge: Choice, mcore: Choice) -> View | None:
    """The installed Bridge's classes, or None (not installed, broken, another release)."""
    origin = _spec_origin()
    if origin is None:
        return None
    version = installed_version()
    if version is None:
        return None
    try:
        parsed = as_tuple(parse_version(version))
    except ValueError:
        return None
    if parsed is None:
        return None
    if bridge.stated is not None and parsed[:2] != bridge.stated[:2]:
        return None
    overlay = _cached(version, origin)
    if overlay is None:
        try:
            overlay = introspect()
        except Exception:  # importing Bridge can fail in many ways; fall back
            return None
        _store(version, origin, overlay)
    view = InstalledView(bridge.release, mcore.release, overlay=dict(overlay))
    view.version = version
    return view


def introspect() -> dict[str, dict[str, Any]]:
    """Entries for ConfigContainer, its section classes and their loaded subclasses."""
    config = importlib.import_module(_CONTAINER_MODULE)
    container = config.ConfigContainer
    out: dict[str, dict[str, Any]] = {}
    _describe(container, out)
    for qualnames in _ROOTS.values():
        for qualname in qualnames:
            cls = _import_class(qualname)
            if cls is not None:
                _describe(cls, out)
    todo: list[str] = list(out)
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        cls = _import_class(name)
        if cls is None:
            continue
        for sub in _subclasses(cls):
            todo.append(_describe(sub, out))
        for refs in out.get(name, {}).get("n", {}).values():
            todo.extend(refs)
    return out


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _subclasses(cls: type) -> list[type]:
    found: list[type] = []
    todo: list[type] = list(cls.__subclasses__())
    while todo:
        sub = todo.pop()
        if sub in found:
            continue
        found.append(sub)
        todo.extend(sub.__subclasses__())
    return found


def _describe(cls: type, out: dict[str, dict[str, Any]]) -> str:
    """Add the entry for ``cls`` (and its config bases) to ``out``; return its name."""
    name = _qualname(cls)
    if name in out:
        return name
    out[name] = {}  # cycle guard
    names: set[str] = set()
    nested: dict[str, list[str]] = {}
    mappings: list[str] = []
    if dataclasses.is_dataclass(cls):
        names.update(f.name for f in dataclasses.fields(cls))
        try:
            hints = typing.get_type_hints(cls)
        except Exception:  # unresolvable forward references
            hints = {f.name: f.type for f in dataclasses.fields(cls)}
        for f in dataclasses.fields(cls):
            classes, mapping = _annotation(hints.get(f.name, f.type))
            if classes:
                nested[f.name] = [_describe(c, out) for c in classes]
                if mapping:
                    mappings.append(f.name)
    for attr in dir(cls):
        if attr.startswith("__"):
            continue
        value = getattr(cls, attr, None)
        if isinstance(value, property):
            if value.fset is not None:
                names.add(attr)
        elif not callable(value):
            names.add(attr)
    bases = {}
    for base in cls.__mro__[1:]:
        if base.__module__.startswith("megatron.") and (
            dataclasses.is_dataclass(base) or base.__module__.startswith("megatron.bridge.")
        ):
            bases[_describe(base, out)] = 1
    entry: dict[str, Any] = {"r": 1, "f": {"1": " ".join(sorted(names))}}
    if bases:
        entry["b"] = bases
    if nested:
        entry["n"] = nested
    if mappings:
        entry["d"] = " ".join(mappings)
    out[name] = entry
    return name


def _annotation(tp: Any) -> tuple[list[type], bool]:
    """Config dataclasses a type names, and whether it admits a plain mapping."""
    classes: list[type] = []
    mapping = False
    todo = [tp]
    while todo:
        current = todo.pop()
        origin = typing.get_origin(current)
        if current is typing.Any or current is dict or origin is dict:
            mapping = True
            continue
        if origin is not None:
            if origin in (typing.Union, types.UnionType):
                todo.extend(typing.get_args(current))
            continue
        if (
            isinstance(current, type)
            and dataclasses.is_dataclass(current)
            and current.__module__.startswith("megatron.")
        ):
            classes.append(current)
    return classes, mapping


def _importable(qualname: str) -> bool:
    parts = qualname.split(".")
    return parts[0] == "megatron" and len(parts) > 2 and not any(p.startswith("_") for p in parts)


def _import_class(qualname: str) -> type | None:
    module_name, _, attr = qualname.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except Exception:  # any import failure means "not importable"
        return None
    value = getattr(module, attr, None)
    return value if isinstance(value, type) else None


def _cache_name(version: str, origin: str) -> str:
    try:
        stamp = str(os.stat(origin).st_mtime_ns)
    except OSError:
        stamp = ""
    digest = hashlib.sha256(f"{version}\n{origin}\n{stamp}".encode()).hexdigest()[:24]
    return f"bridge-classes-{digest}.json"


def _cached(version: str, origin: str) -> dict[str, dict[str, Any]] | None:
    # Lazy: the per-user cache folder only for introspect-bridge / --no-cache.
    from moe_lint.config import user_cache as rulecache

    data = rulecache._load_json(_cache_name(version, origin))
    # A corrupt or wrong-shaped entry is ignored (and rewritten by _store), never half-used.
    return data if _overlay_shape(data) else None


def _overlay_shape(data: Any) -> bool:
    """``data`` has the shape _describe writes: qualname -> {"r", "f", optional "b"/"n"/"d"}."""

    def str_map(value: Any, kind: type) -> bool:
        return isinstance(value, dict) and all(
            isinstance(k, str) and isinstance(v, kind) for k, v in value.items()
        )

    if not isinstance(data, dict):
        return False
    for name, entry in data.items():
        if not isinstance(name, str) or not isinstance(entry, dict) or set(entry) - set("rfbnd"):
            return False
        if not isinstance(entry.get("r"), int) or not str_map(entry.get("f"), str):
            return False
        if not str_map(entry.get("b", {}), int) or not isinstance(entry.get("d", ""), str):
            return False
        nested = entry.get("n", {})
        if not str_map(nested, list) or not all(
            isinstance(c, str) for classes in nested.values() for c in classes
        ):
            return False
    return True


def _store(version: str, origin: str, overlay: dict[str, dict[str, Any]]) -> None:
    # Lazy: the per-user cache folder only for introspect-bridge / --no-cache.
    from moe_lint.config import user_cache as rulecache

    rulecache._store_json(_cache_name(version, origin), overlay)
