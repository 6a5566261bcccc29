#!/usr/bin/env python3
"""Count what moe-lint makes of a directory of Megatron-LM inputs (launch scripts, MODEL_ARGS
files): how many parse, findings by severity and code, how many exit 2 and why.

Usage: python tools/mlm_survey.py DIR [--gpus N]  (DIR e.g. a `git archive` of Megatron-LM's
examples/ and tests/functional_tests/test_cases/, extracted to /tmp; nothing is written).
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", type=Path)
    ap.add_argument("--gpus", default=None)
    ns = ap.parse_args()
    from moe_lint.cli import _as_input_error
    from moe_lint.config.settings import Settings
    from moe_lint.engine.catalogue import load_catalogue
    from moe_lint.linting import lint_path

    catalogue = load_catalogue()
    cluster = {"gpus": ns.gpus} if ns.gpus else {}
    files = sorted(
        p for p in ns.dir.rglob("*")
        if p.is_file() and (p.suffix == ".sh" or p.name == "model_config.yaml")
    )  # fmt: skip
    kinds: collections.Counter[str] = collections.Counter()
    severities: collections.Counter[str] = collections.Counter()
    codes: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()
    with_findings = collections.Counter()
    for path in files:
        kind = "script" if path.suffix == ".sh" else "model_config"
        result = _as_input_error(lint_path(str(path), catalogue, Settings(), [], dict(cluster)))
        if result.error is not None:
            kinds[f"{kind}: exit 2"] += 1
            reasons[re.sub(r"\d+", "N", result.error)[:90]] += 1
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
                codes[f.code] += 1
    print(f"files: {len(files)}")
    for title, counter in (("outcome", kinds), ("worst severity per parsed file", with_findings),
                           ("findings by severity", severities), ("top codes", codes),
                           ("exit 2 / skip reasons", reasons)):  # fmt: skip
        print(f"\n{title}:")
        for key, n in counter.most_common(15):
            print(f"  {n:5d}  {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
