"""Hydra-style dotted overrides, as Megatron Bridge accepts them after the config file.

``model.context_parallel_size=16`` sets a key, ``+env_vars.X=1`` adds a new one, ``++a.b=c``
adds or sets, ``~a.b`` deletes. Values are read as YAML flow scalars/lists, so
``model.recompute_modules=[moe_act,layernorm]`` gives a list of strings, as in Hydra.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import yaml

from moe_lint.errors import InputError
from moe_lint.load import ConfigPath, parse_path

_OVERRIDE = re.compile(
    r"^(?P<prefix>\+\+|\+|~)?(?P<key>[A-Za-z_][\w\-]*(?:\.[A-Za-z_][\w\-]*)*)(?:=(?P<value>.*))?$",
    re.S,
)


class Override(NamedTuple):
    """One parsed override argument."""

    text: str
    prefix: str
    path: ConfigPath
    value: Any
    delete: bool


def looks_like_override(arg: str) -> bool:
    """True for ``key.path=value`` / ``+key=value`` / ``~key`` arguments (not file names)."""
    if arg.startswith(("+", "~")):
        return True
    head, sep, _ = arg.partition("=")
    return bool(sep) and bool(re.fullmatch(r"[A-Za-z_][\w\-]*(\.[A-Za-z_][\w\-]*)*", head))


def parse_override(arg: str) -> Override:
    """Parse one override; raise :class:`InputError` with one line on bad syntax."""
    match = _OVERRIDE.match(arg)
    if not match:
        raise InputError(f"bad override {arg!r}: expected key.path=value, +key=value or ~key")
    prefix = match.group("prefix") or ""
    raw = match.group("value")
    path = parse_path(match.group("key"))
    if prefix == "~":
        return Override(arg, prefix, path, None, True)
    if raw is None:
        raise InputError(f"bad override {arg!r}: missing '=value'")
    try:
        value = yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if raw else ""
    except yaml.YAMLError:
        raise InputError(f"bad override {arg!r}: value is not valid YAML") from None
    return Override(arg, prefix, path, value, False)


def apply_overrides(data: dict[str, Any], overrides: list[Override], root: ConfigPath) -> None:
    """Apply overrides in order onto ``data`` (in place), below the container ``root``."""
    for ov in overrides:
        target: Any = data
        for part in root:
            target = target.setdefault(part, {})
        *parents, leaf = ov.path
        for part in parents:
            nxt = target.get(part) if isinstance(target, dict) else None
            if not isinstance(nxt, dict):
                if ov.delete:
                    break
                nxt = {}
                target[part] = nxt
            target = nxt
        else:
            if ov.delete:
                if isinstance(target, dict):
                    target.pop(str(leaf), None)
            elif isinstance(target, dict):
                target[str(leaf)] = ov.value
