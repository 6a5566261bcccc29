"""Python checks: the few rules whose logic needs code (walking keys, per-item fixes).

Each check is registered by name in a CHECKS table (here and in the family modules listed in
:data:`MODULES`); a rule pack entry refers to it with
``check: <name>`` and supplies the code, severity, docs and message template as data. Checks
yield :class:`~moe_lint.engine.evaluate.Violation` objects carrying the template parameters.
"""

from __future__ import annotations

import importlib

#: Modules whose CHECKS tables make up the built-in registry.
MODULES = tuple(
    f"moe_lint.engine.checks.{family}"
    for family in (
        "attention", "batch", "context_parallel", "cudagraph", "dispatch", "misc", "mlm", "moe",
        "optimizer", "overlap", "overrides", "parallel", "pipeline", "precision", "recompute",
        "runtime", "schema", "sequence", "suppressions",
    )
)  # fmt: skip


def check_index() -> dict[str, str]:
    """Check name -> the module that defines it (imports every module; cached by rulecache)."""
    index: dict[str, str] = {}
    for module_name in MODULES:
        for name in importlib.import_module(module_name).CHECKS:
            if name in index:
                raise RuntimeError(f"Python check {name!r} is registered twice")
            index[name] = module_name
    return index
