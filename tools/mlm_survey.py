#!/usr/bin/env python3
"""Count what moe-lint makes of Megatron-LM inputs (launch scripts, MODEL_ARGS files): how many
parse, findings by severity and code, how many exit 2 and why.

Usage:
  python tools/mlm_survey.py DIR [--gpus N]   every *.sh and model_config.yaml under DIR
  python tools/mlm_survey.py --ci             the functional tests Megatron-LM's CI runs green
                                              (tests/data/megatron-lm/ci/INDEX.tsv), each at the
                                              world size its CI recipe gives it (the recipe's
                                              GPUS_PER_NODE yields to a checkpoint-consistency
                                              test's own, as run_ci_test.sh exports it) and the
                                              megatron-core version it runs
  python tools/mlm_survey.py --examples       tests/data/megatron-lm/examples/**/*.sh
Add --errors to list every error finding (file:line code message). Nothing is written.
"""

from __future__ import annotations

import argparse
import collections
import csv
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data" / "megatron-lm"


def ci_cases() -> list[tuple[Path, Any, dict[str, str]]]:
    """(model_config.yaml, base settings, command-line cluster) per green CI row, as its CI runs
    it: the recipe's SLURM allocation gives the nodes (a command-line setting); its
    GPUS_PER_NODE is the harness's default, below what the file's runs set (MODEL_ENV_VARS of
    a checkpoint-consistency test, as run_ci_test.sh exports it): a base setting."""
    from moe_lint.config.settings import Settings

    index = DATA / "ci" / "INDEX.tsv"
    with index.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader((line for line in handle if not line.startswith("#")),
                                   delimiter="\t"))  # fmt: skip
    out = []
    for row in rows:
        path = DATA / "ci" / row["model"] / row["test_case"] / "model_config.yaml"
        base = Settings(gpus_per_node=int(row["gpus_per_node"]))
        out.append((path, base, {"nodes": row["nodes"], "megatron-core": row["megatron_core"]}))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", type=Path, nargs="?")
    ap.add_argument("--gpus", default=None)
    ap.add_argument("--ci", action="store_true")
    ap.add_argument("--examples", action="store_true")
    ap.add_argument("--errors", action="store_true", help="list every error finding")
    ns = ap.parse_args()
    from moe_lint.config.settings import Settings
    from moe_lint.engine.catalogue import load_catalogue
    from moe_lint.linting import as_input_error as _as_input_error
    from moe_lint.linting import lint_path

    catalogue = load_catalogue()
    if ns.ci:
        cases = ci_cases()
    else:
        root = DATA / "examples" if ns.examples else ns.dir
        if root is None:
            ap.error("give DIR, --ci or --examples")
        cluster = {"gpus": ns.gpus} if ns.gpus else {}
        wanted = [p for p in sorted(root.rglob("*")) if p.is_file()]
        cases = [(p, Settings(), dict(cluster)) for p in wanted
                 if p.suffix == ".sh" or p.name == "model_config.yaml"]  # fmt: skip
    kinds: collections.Counter[str] = collections.Counter()
    severities: collections.Counter[str] = collections.Counter()
    codes: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()
    with_findings: collections.Counter[str] = collections.Counter()
    errors: list[str] = []
    for path, base, cluster in cases:
        kind = "script" if path.suffix == ".sh" else "model_config"
        result = _as_input_error(lint_path(str(path), catalogue, base, [], dict(cluster)))
        if result.error is not None:
            kinds[f"{kind}: exit 2"] += 1
            reasons[re.sub(r"\d+", "N", result.error)[:90]] += 1
            errors.append(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}: "
                          f"exit 2: {result.error}")  # fmt: skip
        elif result.notice is not None:
            kinds[f"{kind}: skipped"] += 1
            reasons["skipped: " + result.notice[:80]] += 1
        else:
            kinds[f"{kind}: parsed"] += 1
            worst = {f.severity for f in result.findings}
            with_findings[f"{kind}: " + ("error" if "error" in worst else "warning" if
                                          "warning" in worst else "info" if worst else
                                          "clean")] += 1  # fmt: skip
            for f in result.findings:
                severities[f.severity] += 1
                codes[f"{f.code} ({f.severity})"] += 1
                if f.severity == "error":
                    shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
                    errors.append(f"{shown}:{f.line} {f.code} {f.message[:160]}")
    print(f"inputs: {len(cases)}")
    for title, counter in (("outcome", kinds), ("worst severity per parsed file", with_findings),
                           ("findings by severity", severities), ("top codes", codes),
                           ("exit 2 / skip reasons", reasons)):  # fmt: skip
        print(f"\n{title}:")
        for key, n in counter.most_common(25):
            print(f"  {n:5d}  {key}")
    if ns.errors:
        print("\nerrors:")
        for line in errors:
            print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
