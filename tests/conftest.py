"""Shared helpers: lint text with chosen rules and CLI-style cluster arguments."""

from __future__ import annotations

import os
import shlex
import tempfile
from pathlib import Path
from typing import Any

import pytest

from moe_lint.catalogue import Catalogue, load_catalogue
from moe_lint.findings import Finding
from moe_lint.lint import FileResult, lint_text
from moe_lint.settings import Settings

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
CORPUS = DATA / "corpus"


@pytest.fixture(scope="session")
def catalogue() -> Catalogue:
    return load_catalogue(plugins=False)


def cluster_args(args: str | None) -> dict[str, object]:
    """``"--gpus 256 --gpu h100 --model deepseek-v3"`` -> the CLI cluster mapping."""
    out: dict[str, object] = {}
    tokens = shlex.split(args or "")
    while tokens:
        flag = tokens.pop(0)
        if not flag.startswith("--") or not tokens:
            raise ValueError(f"bad fixture args {args!r}")
        out[flag[2:]] = tokens.pop(0)
    return out


def run_lint(
    catalogue: Catalogue,
    text: str,
    select: list[str] | None = None,
    args: str | None = None,
    overrides: list[Any] | None = None,
    path: str = "<fixture>",
) -> FileResult:
    settings = Settings(select=select) if select is not None else Settings()
    return lint_text(text, catalogue, settings, overrides or [], cluster_args(args), path=path)


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run the CLI in-process; (exit code, stdout, stderr)."""
    from moe_lint.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def assert_tool_current(script: str) -> None:
    """A generated file is up to date: ``tools/<script> --check`` exits 0."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / script), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def codes(findings: list[Finding]) -> list[str]:
    return [f.code for f in findings]


# Rule expressions that fail on data are skipped in normal runs; in tests they must surface.
os.environ.setdefault("MOE_LINT_STRICT", "1")

# The compiled-catalogue cache goes to a throwaway folder, not the user's ~/.cache.
os.environ.setdefault("MOE_LINT_CACHE_DIR", tempfile.mkdtemp(prefix="moe-lint-test-cache-"))
