"""docs/coverage.md cannot drift: every catalogue ID is covered by a rule or has a reason."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO


def test_coverage_table_is_complete_and_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / "coverage.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_new_rule_names_its_source_check() -> None:
    from moe_lint.catalogue import load_catalogue

    for rule in load_catalogue(plugins=False).rules:
        assert "::" in rule.source or rule.source.startswith("moe-lint"), (rule.code, rule.source)


def test_rule_pages_are_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / "rule_docs.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
