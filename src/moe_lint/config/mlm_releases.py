"""The command-line flags of each released Megatron-LM, and the arguments a flag list gives.

``data/mlm_releases.json`` (tools/gen_mlm_releases.py, read statically from
``megatron/training/arguments.py`` of every ``core_vX.Y.Z`` tag) lists each flag with the
releases that have it and its argparse attributes (dest, action, type, default, choices).

A Megatron-LM release is named by the Megatron-Core version it tags (``--megatron-core``): the
flags of a version are those of the newest release at or below it (Megatron-Core 0.19.2 reads
core_v0.19.0's list: the 0.19.2 wheel's ``arguments.py`` is that tag's). A version older than
the oldest release in the table has no list (:func:`release_for` gives None).

:class:`MlmArgs` replays a flag list the way argparse does (the last occurrence of a dest wins,
``store_true`` / ``store_false`` set True / False, other flags take their value) over the
release's defaults, for the checks that re-state ``validate_args``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

from packaging.version import Version

#: A value the flag list cannot tell (an unexpanded ``$VAR``, a value of the wrong type).
UNSET: Any = type("Unset", (), {"__repr__": lambda self: "UNSET"})()


class FlagInfo(NamedTuple):
    """One flag in one release."""

    flag: str
    dest: str
    action: str | None
    type: str | None
    default: Any


@cache
def _table() -> dict[str, Any]:
    text = resources.files("moe_lint.data").joinpath("mlm_releases.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def releases() -> list[str]:
    """The Megatron-LM releases in the table, oldest first."""
    return sorted(_table()["releases"], key=Version)


def release_for(version: Version) -> str | None:
    """The newest release at or below ``version``, or None when it predates the table."""
    found = None
    for release in releases():
        if Version(release) <= version:
            found = release
    return found


def _present(entry: dict[str, Any], release: str) -> bool:
    v = Version(release)
    for run in entry["in"]:
        first, _, last = run.partition("..")
        if Version(first) <= v <= Version(last or first):
            return True
    return False


@cache
def flags_of(release: str) -> dict[str, FlagInfo]:
    """Flag -> its attributes in ``release`` (a key of :func:`releases`)."""
    out = {}
    for flag, entry in _table()["flags"].items():
        if not _present(entry, release):
            continue
        attrs = {**entry, **entry.get("was", {}).get(release, {})}
        out[flag] = FlagInfo(
            flag, attrs["dest"], attrs.get("action"), attrs.get("type"), attrs.get("default")
        )
    return out


def releases_with(flag: str) -> list[str]:
    """Every release that has ``flag`` (empty for a flag no release has)."""
    entry = _table()["flags"].get(flag)
    return [] if entry is None else [r for r in releases() if _present(entry, r)]


def flag_name(raw: str) -> str:
    """``--foo=1`` -> ``--foo`` (argparse splits a long option at ``=``)."""
    return raw.split("=", 1)[0] if raw.startswith("--") else raw


def _convert(info: FlagInfo, text: str | None) -> Any:
    if info.action in ("store_true", "store_false") or str(info.action).endswith(
        "BooleanOptionalAction"
    ):
        if text is not None:  # a switch given a value: a flag only some branch passes
            return UNSET
        if str(info.action).endswith("BooleanOptionalAction"):
            # argparse.BooleanOptionalAction: --x sets True, its --no-x twin False.
            return not (info.flag.startswith("--no-") and info.dest != _dest_of(info.flag))
        return info.action == "store_true"
    if text is None or "$" in text or "`" in text:
        return UNSET
    text = text.strip().strip("'\"")
    try:
        if info.type == "int":
            return int(text)
        if info.type == "float":
            return float(text)
    except ValueError:
        return UNSET
    return text


def _dest_of(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


class MlmArgs:
    """The argument values a Megatron-LM flag list gives, for one release."""

    def __init__(self, release: str, flags: Iterable[Any], *, incomplete: bool = False) -> None:
        self.release = release
        #: The reader could not expand some words: a flag left at its default may be in them.
        self.incomplete = incomplete
        self.table = flags_of(release)
        self.defaults: dict[str, Any] = {}
        for info in self.table.values():
            # argparse: the first action of a dest sets its default; a store_false twin
            # (--no-x) of a typed or store_true flag does not decide it.
            if info.dest not in self.defaults or self.defaults[info.dest][0]:
                self.defaults[info.dest] = (info.action == "store_false", info.default)
        #: dest -> (value, the MlmFlag that set it), in command-line order.
        self.given: dict[str, tuple[Any, Any]] = {}
        for item in flags:
            raw = str(item.name)
            name = flag_name(raw)
            found = self.table.get(name)
            if found is None:
                continue
            text = item.value if name == raw else raw.split("=", 1)[1]
            self.given[found.dest] = (_convert(found, text), item)

    def __getitem__(self, dest: str) -> Any:
        """The value of ``dest``: given on the command line, else the release's default."""
        if dest in self.given:
            return self.given[dest][0]
        if dest not in self.defaults:
            return UNSET
        default = self.defaults[dest][1]
        return UNSET if isinstance(default, str) and "(" in default else default

    def flag(self, dest: str) -> Any:
        """The MlmFlag that set ``dest`` (None when it keeps its default)."""
        found = self.given.get(dest)
        return None if found is None else found[1]

    def has(self, dest: str) -> bool:
        return dest in self.given
