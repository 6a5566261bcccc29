"""Shared helpers: lint text with chosen rules and CLI-style cluster arguments."""

from __future__ import annotations

import importlib.util
import os
import shlex
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from moe_lint.config.settings import Settings
from moe_lint.engine.catalogue import Catalogue, load_catalogue
from moe_lint.engine.findings import Finding
from moe_lint.linting import FileResult, lint_text

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
CORPUS = DATA / "corpus"
DUMPS = CORPUS / "bridge-full-dumps"


def load_tool(name: str) -> ModuleType:
    """``tools/<name>.py`` as a module (tools are scripts, not a package), loaded once and
    registered in ``sys.modules`` so its dataclasses and pickling see it."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _verdicts() -> dict[str, dict[str, str]]:
    """VERDICTS.tsv: what the real Bridge 0.6.2 / Megatron-Core 0.19.2 code says per dump."""
    rows: dict[str, dict[str, str]] = {}
    columns: list[str] = []
    for line in (DUMPS / "VERDICTS.tsv").read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        cells = line.split("\t")
        if not columns:
            columns = cells
            continue
        rows[cells[0]] = dict(zip(columns, cells + [""] * (len(columns) - len(cells)), strict=True))
    # The seven dumps that predate VERDICTS.tsv pass Bridge's validation and run (corpus README).
    for path in DUMPS.glob("*.yaml"):
        rows.setdefault(path.name, {"file": path.name, "verdict": "ok", "message": ""})
    return rows


VERDICTS = _verdicts()

#: The root cause each framework message in VERDICTS.tsv names -> the rule that must report it.
ROOT_CAUSES = {
    "is not divisible by expert_tensor_model_pipeline_parallel size": "PAR002",
    "--data-cache-path must be provided when using --dataloader-fast-cache-load": "SEQ003",
    "MXFP8 needs compute capability": "FP005",
    "FP8 dot-product attention under NVFP4BlockScaling leaves no backend": "FP022",
}


@pytest.fixture(scope="session")
def catalogue() -> Catalogue:
    return load_catalogue(plugins=False)


def cluster_args(args: str | None) -> dict[str, object]:
    """``"--gpus 256 --gpu h100 --model deepseek-v3"`` -> the CLI cluster mapping (Hydra
    overrides among them are left to :func:`override_args`)."""
    from moe_lint.config.overrides import looks_like_override

    out: dict[str, object] = {}
    tokens = [t for t in shlex.split(args or "") if not looks_like_override(t)]
    while tokens:
        flag = tokens.pop(0)
        if not flag.startswith("--") or not tokens:
            raise ValueError(f"bad fixture args {args!r}")
        out[flag[2:]] = tokens.pop(0)
    return out


def override_args(args: str | None) -> list[Any]:
    """The Hydra overrides in fixture/docs args (``"--gpus 8 model.x=2"`` -> [model.x=2])."""
    from moe_lint.config.overrides import looks_like_override, parse_override

    return [parse_override(t) for t in shlex.split(args or "") if looks_like_override(t)]


def run_lint(
    catalogue: Catalogue,
    text: str,
    select: list[str] | None = None,
    args: str | None = None,
    overrides: list[Any] | None = None,
    path: str = "<fixture>",
) -> FileResult:
    settings = Settings(select=select) if select is not None else Settings()
    overrides = [*(overrides or []), *override_args(args)]
    return lint_text(text, catalogue, settings, overrides, cluster_args(args), path=path)


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


#: Whether the Megatron-LM argument parser (config/mlm_args.py, issue 13) is present: the MLM
#: rules' docs examples and fixtures are Megatron-LM input, which lints only with it.
MLM_INPUT = importlib.util.find_spec("moe_lint.config.mlm_args") is not None


def skip_without_mlm_input(code: str) -> None:
    """Skip a test of an MLM rule's Megatron-LM example while the parser is not there."""
    if code.startswith("MLM") and not MLM_INPUT:
        pytest.skip("Megatron-LM input needs moe_lint.config.mlm_args")
