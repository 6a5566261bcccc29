"""Framework versions a config targets, and version specifiers for version-dependent rules.

Megatron-Core, Transformer Engine and Bridge change their checks between releases (domain 02
§3). Users may state the versions they run (``--megatron-core 0.14``, pyproject or directive).
When they do not, moe-lint assumes the newest *released* versions (``NEWEST_RELEASED``, never a
main branch): a gate is evaluated against those concrete versions, so ``<2.12`` is false and
``>=0.6`` is true.

Versions are PEP 440 versions (``packaging.version``). A development or release-candidate build
sorts *before* its release (``2.12.0.dev0 < 2.12.0rc0 < 2.12``), so it falls on the older side
of every gate: Transformer Engine ``2.12.0.dev0`` satisfies ``<2.12`` and not ``>=2.12``, which
is the conservative reading for a build cut before the release (NGC containers ship such
versions). A local suffix (``2.12.0+cu13``) sorts after its release. Specifiers are compared
version against version, not with ``packaging.specifiers``, whose ``<2.12`` deliberately
excludes ``2.12`` pre-releases.

``packaging`` (2-2.5 ms to import) loads only for a version that is neither a plain release
nor one's ``.devN`` build: with no version stated, every gate compares such versions
(``NEWEST_RELEASED`` against a rule's ``>=0.18`` or ``>=0.20.0.dev0``), whose PEP 440 order is
that of (numbers with trailing zeros dropped, dev before final, dev number): ``2.18 == 2.18.0
< 2.18.1.dev0 < 2.18.1``. So those comparisons need no ``Version`` (tests/test_versions.py
checks the order against packaging's).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from packaging.version import Version

#: Package keys accepted in settings and in a rule's ``versions:`` table.
PACKAGES = ("megatron-core", "transformer-engine", "bridge")
ALIASES = {
    "mcore": "megatron-core",
    "megatron_core": "megatron-core",
    "te": "transformer-engine",
    "transformer_engine": "transformer-engine",
    "megatron-bridge": "bridge",
}
#: What moe-lint assumes when the user states no version: the newest releases on PyPI that the
#: rules were checked against (update together with the rules and README "Framework versions").
NEWEST_RELEASED = {"megatron-core": "0.19.2", "transformer-engine": "2.18", "bridge": "0.6.2"}
_SPEC = re.compile(r"^\s*(<=|>=|==|!=|<|>)\s*([0-9][0-9A-Za-z.\-+]*)\s*$")
#: A plain release, or its ``.devN`` build, written in PEP 440's normal form.
_PLAIN = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)*)(?:\.dev([0-9]+))?\s*$")
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}

__all__ = [
    "NEWEST_RELEASED",
    "PACKAGES",
    "Version",
    "below",
    "check_spec",
    "effective_version",
    "newest_released",
    "package_key",
    "parse_version",
    "satisfies",
]


def __getattr__(name: str) -> Any:
    """``Version`` (``from moe_lint.config.versions import Version``) loads ``packaging``."""
    if name == "Version":
        # Lazy: packaging, only for a module that makes versions of its own.
        from packaging.version import Version

        return Version
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def release_key(text: str) -> tuple[tuple[int, ...], int, int] | None:
    """The PEP 440 sort key of a plain release or its ``.devN`` build: (numbers with trailing
    zeros dropped, 0 for a dev build / 1 for the release, N); None for any other text (epoch,
    pre- or post-release, local part, a dev suffix in another spelling, not a version)."""
    match = _PLAIN.match(text)
    if match is None:
        return None
    numbers = [int(part) for part in match.group(1).split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    dev = match.group(2)
    return (tuple(numbers), 1, 0) if dev is None else (tuple(numbers), 0, int(dev))


def package_key(name: str) -> str | None:
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    return key if key in PACKAGES else None


def parse_version(text: str) -> Version:
    """``"2.6.0dev0"`` -> ``Version('2.6.0.dev0')``; raises ValueError for a non-PEP 440 text."""
    # Lazy: packaging, only where a Version is made (see the module docstring).
    from packaging.version import InvalidVersion, Version

    try:
        return Version(str(text).strip())
    except InvalidVersion:
        raise ValueError(f"not a version: {text!r}") from None


def newest_released(package: str) -> Version:
    """The version assumed for ``package`` when the user states none."""
    key = package_key(package)
    if key is None:
        raise ValueError(f"unknown package {package!r}")
    return parse_version(NEWEST_RELEASED[key])


def effective_version(versions: Mapping[str, Version], package: str) -> Version:
    """The stated version of ``package``, else the newest release."""
    key = package_key(package)
    if key is None:
        raise ValueError(f"unknown package {package!r}")
    stated = versions.get(key)
    return stated if stated is not None else newest_released(key)


def stated_below(stated: Mapping[str, Version] | None, package: str, text: str) -> bool:
    """Is ``package`` as stated (else its newest release) older than the version ``text``?"""
    key = package_key(package)
    if key is not None and (not stated or stated.get(key) is None):
        newest, other = release_key(NEWEST_RELEASED[key]), release_key(text)
        if newest is not None and other is not None:
            return newest < other
    return below(effective_version(stated or {}, package), parse_version(text))


def below(version: Version, other: Version) -> bool:
    """``version < other`` (PEP 440: ``2.12.0.dev0`` is below ``2.12``)."""
    return version < other


def _clauses(spec: str) -> list[tuple[str, Version]]:
    out = []
    for clause in spec.split(","):
        match = _SPEC.match(clause)
        if not match:
            raise ValueError(f"bad version specifier {spec!r}")
        out.append((match.group(1), parse_version(match.group(2))))
    return out


def check_spec(spec: str) -> None:
    """Validate a specifier such as ``">=0.15"`` or ``">=2.1, <2.8"``."""
    _clauses(spec)


def satisfies(version: Version | None, spec: str, package: str | None = None) -> bool:
    """Does ``version`` satisfy every clause of ``spec``?

    ``None`` means "not stated": the spec is evaluated against the newest release of
    ``package`` (``NEWEST_RELEASED``), which must then be given.
    """
    if version is None:
        if package is None:
            raise ValueError("satisfies(None, ...) needs the package to pick its newest release")
        known = _UNSTATED.get((package, spec))
        if known is None:
            known = _UNSTATED[(package, spec)] = _newest_satisfies(package, spec)
        return known
    return all(_OPS[op](version, other) for op, other in _clauses(spec))


#: :func:`satisfies` with no version stated, by (package, spec): the answer depends on the
#: release table alone, and every file asks it again of each version-gated rule (a catalogue
#: has a few dozen gates, so this stays small).
_UNSTATED: dict[tuple[str, str], bool] = {}


def _newest_satisfies(package: str, spec: str) -> bool:
    key = package_key(package)
    if key is not None:
        plain = _release_satisfies(NEWEST_RELEASED[key], spec)
        if plain is not None:
            return plain
    version = newest_released(package)
    return all(_OPS[op](version, other) for op, other in _clauses(spec))


def _release_satisfies(release: str, spec: str) -> bool | None:
    """:func:`satisfies` for a plain release (or dev build) against a spec of them; None when
    any text is not one (or the spec is malformed: :func:`_clauses` then says how)."""
    mine = release_key(release)
    if mine is None:
        return None
    results = []
    for clause in spec.split(","):
        match = _SPEC.match(clause)
        other = release_key(match.group(2)) if match else None
        if match is None or other is None:
            return None
        results.append(_OPS[match.group(1)](mine, other))
    return all(results)
