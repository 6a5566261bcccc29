"""Python checks: the few rules whose logic needs code (walking keys, per-item fixes).

Each check is registered by name in a CHECKS table (here and in the family modules listed in
:data:`MODULES`); a rule pack entry refers to it with
``check: <name>`` and supplies the code, severity, docs and message template as data. Checks
yield :class:`~moe_lint.engine.evaluate.Violation` objects carrying the template parameters.
"""

from __future__ import annotations

#: Modules whose CHECKS tables make up the built-in registry.
MODULES = (
    "moe_lint.engine.checks.general", "moe_lint.engine.checks.pipeline",
    "moe_lint.engine.checks.attention", "moe_lint.engine.checks.dispatch",
    "moe_lint.engine.checks.runtime", "moe_lint.engine.checks.schema",
    "moe_lint.engine.checks.overrides", "moe_lint.engine.checks.cudagraph",
    "moe_lint.engine.checks.batch", "moe_lint.engine.checks.context_parallel",
    "moe_lint.engine.checks.misc", "moe_lint.engine.checks.sequence",
    "moe_lint.engine.checks.suppressions",
)  # fmt: skip


def check_index() -> dict[str, str]:
    """Check name -> the module that defines it (imports every module; cached by rulecache)."""
    import importlib

    index: dict[str, str] = {}
    for module_name in MODULES:
        for name in importlib.import_module(module_name).CHECKS:
            if name in index:
                raise RuntimeError(f"Python check {name!r} is registered twice")
            index[name] = module_name
    return index
