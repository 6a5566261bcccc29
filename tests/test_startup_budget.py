"""The start-up import budget of a pre-commit run: one short override file, from a cold process.

A hook starts ``moe-lint FILE`` on every commit, so what it imports is what users wait for
(issue 25: 205 modules after start-up before, 178 after; issue 26 split the CLI into a package
of one module per command, and its options, check and report modules make it 181; then 170,
with argparse's formatter kept from importing shutil (and bz2, lzma, zlib), difflib only for a
name to suggest, and neither threading nor the Megatron-LM language for a YAML file; 166
once a pyproject that only names moe-lint is no longer parsed by tomllib). The count
is of modules imported after interpreter start-up (a bare interpreter's own modules, which vary
with the environment, are not counted), taken inside the real entry point (moe_lint.cli.run)
just before it exits, so modules loaded through importlib.import_module (check modules, the
compiled catalogue) count too. Counts cannot be moved by machine load, unlike timings
(bench/bench.py times the same run against yamllint).
"""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO

#: A real ~40-line Bridge override file (NVIDIA's example).
SHORT = (
    REPO / "tests/data/corpus/megatron-bridge/examples/quantization/conf/"
    "quantized_llama3_8b_pretrain_override_example.yaml"
)

#: Measured at 152 after issue 25 (with PyYAML's C loader), plus a small margin; raise it only
#: with a reason, and prefer a lazy import.
BUDGET = 158

#: Imported for features a YAML override file does not use.
NOT_FOR_A_YAML_FILE = (
    "multiprocessing",  # workers: only from workers.MIN_FILES files on
    "moe_lint.config.mlm_args",  # the Megatron-LM reader
    "moe_lint.config.shell",
    "moe_lint.config.mlm_releases",  # the Megatron-LM release table
    "moe_lint.config.bridge_launch",
    "moe_lint.analysis.memory",  # the memory model: no GPU given
    "moe_lint.output.formats",  # machine formats
    "moe_lint.output.html",  # the HTML reports: estimate and plan --format html only
    "moe_lint.output.estimate_html",
    "moe_lint.plan",
    "importlib.metadata",
    "moe_lint.engine.mlm_language",  # Megatron-LM's flags and wording in messages
    "moe_lint.engine.checks.mlm",  # its rules apply_to megatron-lm only (rules/mlm.yaml)
    "shutil",  # argparse's HelpFormatter imports it for the terminal width (cli/options.py)
    "difflib",  # did-you-mean, only for a name that is not known
    "threading",  # workers.time_limit asks signal.signal whether this is the main thread
    "tomllib",  # this repository's pyproject names moe-lint, with no [tool.moe-lint] table
    "moe_lint.cli.estimate",  # the other commands: the dispatch imports only the one that runs
    "moe_lint.cli.plan",
    "moe_lint.cli.rules",
    "moe_lint.cli.models",
    "moe_lint.cli.server",  # the language server and its protocol library
    "moe_lint.server",
    "pygls",
    "lsprotocol",
    "moe_lint.config.hf_config",  # only for a model named by its HF config.json
    "packaging",  # config/versions.py: unstated versions gate as plain releases
    "moe_lint.engine.expr_compiler",  # the shipped catalogue comes compiled (and with it ast)
    "ast",
    "dataclasses",  # moe_lint.records: the record classes' methods are written at build time
    "inspect",  # dataclasses imported it (with ast, dis, tokenize)
)

#: A full Bridge dump with a GPU: every stage, the memory model and its records load.
DUMP = (
    REPO / "tests/data/corpus/bridge-full-dumps/deepseek_v3_pretrain_1024gpu_h100_fp8sc_config.yaml"
)

HARNESS = """
import os, sys
before = set(sys.modules)
real_exit = os._exit
def counted(code):
    new = sorted(set(sys.modules) - before)
    sys.stderr.write("MODULES " + " ".join(new) + "\\n")
    sys.stderr.flush()
    real_exit(code)
os._exit = counted
from moe_lint import cli
sys.argv = ["moe-lint", *sys.argv[1:]]
cli.run()
"""


def _modules(*args: str) -> tuple[int, list[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOE_LINT")}
    proc = subprocess.run(
        [sys.executable, "-c", HARNESS, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    head, _, tail = proc.stderr.rpartition("MODULES ")
    assert head == "" and tail, proc.stderr
    return proc.returncode, tail.split(), proc.stdout


def test_short_override_stays_inside_the_module_budget() -> None:
    code, modules, out = _modules(str(SHORT))
    # It linted and reported through run(): the file's findings, or the summary that counts it.
    assert code in (0, 1) and (str(SHORT.name) in out or "(1 file" in out), out
    assert len(modules) <= BUDGET, f"{len(modules)} modules imported (budget {BUDGET})"


def test_nothing_imported_for_features_a_yaml_file_does_not_use() -> None:
    _, modules, _ = _modules(str(SHORT))
    loaded = [
        m for m in NOT_FOR_A_YAML_FILE if any(x == m or x.startswith(m + ".") for x in modules)
    ]
    assert loaded == []


def test_a_full_dump_with_the_memory_model_defines_its_records_without_dataclasses() -> None:
    code, modules, out = _modules(str(DUMP), "--gpus", "1024", "--gpu", "h100")
    assert code in (0, 1) and "(1 file" in out, out
    assert "moe_lint.analysis.memory" in modules  # the memory model ran: its records are built
    # (inspect is not asked here: on Python 3.13 packaging.version's @deprecated imports it.)
    assert "dataclasses" not in modules
