"""PyYAML, imported through here so that its import skips a regex moe-lint does not use.

Why: ``yaml/reader.py`` compiles, while ``import yaml`` runs, one character class spanning
all of Unicode (``Reader.NON_PRINTABLE``), which costs 4-5 ms -- the largest single item of
a pre-commit run on a short file after the interpreter itself. Only PyYAML's pure-Python
reader searches it; moe-lint reads with libyaml's (``CSafeLoader``). So the first import
gives that one pattern a stand-in that compiles it the first time anything uses it (the
pure-Python loaders, where libyaml is missing, work unchanged), and every other pattern is
compiled as usual. Import ``yaml`` from this module (``from moe_lint.config.pyyaml import
yaml``) wherever moe-lint can import it first; once imported, this changes nothing.
"""

from __future__ import annotations

import re
import sys
from typing import Any

#: ``yaml.reader.Reader.NON_PRINTABLE``'s text, as PyYAML 5.1 to 6.0.x writes it.
READER_CHARSET = "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"


class OnFirstUse:
    """A pattern that is compiled when it is first used, then behaves as the real one."""

    def __init__(self, compile: Any, pattern: str, flags: int) -> None:
        self._compile = compile
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            self._compiled = self._compile(*self._args)
        return getattr(self._compiled, name)


def _first_import() -> None:
    if "yaml" in sys.modules:
        return
    real = re.compile

    def compile(pattern: Any, flags: Any = 0) -> Any:
        if pattern == READER_CHARSET and flags == 0:
            return OnFirstUse(real, pattern, flags)
        return real(pattern, flags)

    re.compile = compile
    try:
        # Lazy: the point of this module: PyYAML imports while the stand-in is in place.
        import yaml  # noqa: F401
    finally:
        re.compile = real


_first_import()

import yaml  # noqa: E402

__all__ = ["yaml"]
