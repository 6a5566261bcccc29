"""Framework versions a config targets, and version specifiers for version-dependent rules.

Megatron-Core, Transformer Engine and Bridge change their checks between releases (domain 02
§3). Users may state the versions they run (``--megatron-core 0.14``, pyproject or directive);
when they do not, moe-lint assumes the newest behaviour, so a rule gated ``<=0.14`` is skipped
and one gated ``>=0.15`` applies. Versions compare as tuples of their leading integers
(``2.6.0dev0`` -> ``(2, 6, 0)``); this is all a config linter needs, without a dependency.
"""

from __future__ import annotations

import re

#: Package keys accepted in settings and in a rule's ``versions:`` table.
PACKAGES = ("megatron-core", "transformer-engine", "bridge")
ALIASES = {
    "mcore": "megatron-core",
    "megatron_core": "megatron-core",
    "te": "transformer-engine",
    "transformer_engine": "transformer-engine",
    "megatron-bridge": "bridge",
}
Version = tuple[int, ...]
_SPEC = re.compile(r"^\s*(<=|>=|==|!=|<|>)\s*([0-9][0-9A-Za-z.\-+]*)\s*$")


def package_key(name: str) -> str | None:
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    return key if key in PACKAGES else None


def parse_version(text: str) -> Version:
    """``"2.6.0dev0"`` -> ``(2, 6, 0)``; raises ValueError when nothing numeric leads."""
    parts: list[int] = []
    for piece in str(text).strip().lstrip("vV").split("."):
        match = re.match(r"\d+", piece)
        if not match:
            break
        parts.append(int(match.group()))
        if match.end() != len(piece):
            break
    if not parts:
        raise ValueError(f"not a version: {text!r}")
    return tuple(parts)


def _cmp(a: Version, b: Version) -> int:
    width = max(len(a), len(b))
    pa, pb = a + (0,) * (width - len(a)), b + (0,) * (width - len(b))
    return (pa > pb) - (pa < pb)


def below(version: Version, other: Version) -> bool:
    """``version < other`` with missing trailing parts read as zero."""
    return _cmp(version, other) < 0


def check_spec(spec: str) -> None:
    """Validate a specifier such as ``">=0.15"`` or ``">=2.1, <2.8"``."""
    for clause in spec.split(","):
        match = _SPEC.match(clause)
        if not match:
            raise ValueError(f"bad version specifier {spec!r}")
        parse_version(match.group(2))


def satisfies(version: Version | None, spec: str) -> bool:
    """Does ``version`` (None = the newest release) satisfy every clause of ``spec``?"""
    if version is None:
        # The newest behaviour: satisfies lower bounds, fails upper bounds and pins.
        return all(m.group(1) in (">=", ">", "!=") for m in map(_SPEC.match, spec.split(",")) if m)
    for clause in spec.split(","):
        match = _SPEC.match(clause)
        if not match:
            raise ValueError(f"bad version specifier {spec!r}")
        op, other = match.group(1), parse_version(match.group(2))
        c = _cmp(version, other)
        ok = {"<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0, "==": c == 0, "!=": c != 0}[op]
        if not ok:
            return False
    return True
