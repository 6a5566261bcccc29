"""Python checks for the dispatch rule family (registered into moe_lint.checks.REGISTRY).

Most rules are pure data in rules/*.yaml; put a check here only when a condition truly needs
code. Each entry maps a check name (used as `check: <name>` in a pack) to a PythonCheck whose
params are the template placeholders its violations provide.
"""

from __future__ import annotations

from moe_lint.catalogue import PythonCheck

CHECKS: dict[str, PythonCheck] = {}
