"""Wheel build hook: compile the shipped rule packs into ``moe_lint/engine/_compiled_rules.py``.

The wheel always carries a module generated from exactly the packs and engine files it ships
(tools/compile_rules.py), so an installed moe-lint never parses or compiles its own catalogue
and keeps no cache of it. The module is written to a temporary folder and force-included; the
source tree is not modified (the committed copy is checked for drift by the tests instead).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

TARGET = "moe_lint/engine/_compiled_rules.py"


class CompileRulesHook(BuildHookInterface):  # type: ignore[misc]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return  # an editable install runs the checkout's own (drift-checked) module
        self._tmp = tempfile.TemporaryDirectory(prefix="moe-lint-build-")
        output = Path(self._tmp.name) / "_compiled_rules.py"
        root = Path(self.root)
        proc = subprocess.run(
            [sys.executable, str(root / "tools" / "compile_rules.py"), "--output", str(output)],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"tools/compile_rules.py failed:\n{proc.stdout}{proc.stderr}")
        build_data["force_include"][str(output)] = TARGET

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            tmp.cleanup()
