"""docs/coverage.md cannot drift: every catalogue ID is covered by a rule or has a reason."""

from __future__ import annotations

from conftest import assert_tool_current


def test_coverage_table_is_complete_and_current() -> None:
    assert_tool_current("coverage.py")


def test_every_new_rule_names_its_source_check() -> None:
    from moe_lint.engine.catalogue import load_catalogue

    for rule in load_catalogue(plugins=False).rules:
        assert "::" in rule.source or rule.source.startswith("moe-lint"), (rule.code, rule.source)


def test_rule_pages_are_current() -> None:
    assert_tool_current("rule_docs.py")
