"""Run every generator whose output the tests compare with a fresh run (or --check them all).

Why: after editing a rule, a pack, an engine file or the memory model, several generated files
go stale and each has its own test; one command keeps "what adding a rule touches" a single
step that cannot fall out of date with the generators (tests/test_regenerate.py checks that
every generator a test runs with ``--check`` is listed here). The Bridge field and class
catalogues (tools/gen_bridge_fields.py, gen_bridge_classes.py) are not here: they read the
framework's installed source, which a fresh clone does not have; nor is the Megatron-LM flag
list (tools/gen_mlm_releases.py --mirror DIR), which reads a git mirror of Megatron-LM.

Usage:  python tools/regenerate.py          # rewrite every generated file
        python tools/regenerate.py --check  # exit 1 when any is stale, naming it
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent

#: In dependency order: the record methods and the data tables first (they change no other
#: output); the field table feeds the compiled catalogue's hash, the catalogue feeds the rule
#: pages, the rules feed the corpus table.
GENERATORS = (
    "records.py",
    "compile_data.py",
    "gen_bridge_fields.py",
    "compile_rules.py",
    "rule_docs.py",
    "error_rules.py",
    "coverage.py",
    "corpus_report.py",
    "memory_report.py",
    "fact_docs.py",
    "published_rows.py",
    "long_context_rows.py",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say which files are stale")
    args = parser.parse_args(argv)
    status = 0
    for script in GENERATORS:
        command = [sys.executable, str(TOOLS / script), *(["--check"] if args.check else [])]
        proc = subprocess.run(command, check=False)
        if proc.returncode != 0:
            status = 1
            print(f"tools/{script} {'is stale' if args.check else 'failed'}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
