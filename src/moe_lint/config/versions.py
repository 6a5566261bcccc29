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
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from packaging.version import InvalidVersion, Version

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


def package_key(name: str) -> str | None:
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    return key if key in PACKAGES else None


def parse_version(text: str) -> Version:
    """``"2.6.0dev0"`` -> ``Version('2.6.0.dev0')``; raises ValueError for a non-PEP 440 text."""
    try:
        return Version(str(text).strip())
    except InvalidVersion:
        raise ValueError(f"not a version: {text!r}") from None


def newest_released(package: str) -> Version:
    """The version assumed for ``package`` when the user states none."""
    key = package_key(package)
    if key is None:
        raise ValueError(f"unknown package {package!r}")
    return Version(NEWEST_RELEASED[key])


def effective_version(versions: Mapping[str, Version], package: str) -> Version:
    """The stated version of ``package``, else the newest release."""
    key = package_key(package)
    if key is None:
        raise ValueError(f"unknown package {package!r}")
    stated = versions.get(key)
    return stated if stated is not None else newest_released(key)


def stated_below(stated: Mapping[str, Version] | None, package: str, text: str) -> bool:
    """Is ``package`` as stated (else its newest release) older than the version ``text``?"""
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
        version = newest_released(package)
    for op, other in _clauses(spec):
        ok = {
            "<": version < other,
            "<=": version <= other,
            ">": version > other,
            ">=": version >= other,
            "==": version == other,
            "!=": version != other,
        }[op]
        if not ok:
            return False
    return True
