"""Inline suppressions: same line, line above, whole block, whole file; unused/unknown reported."""

from __future__ import annotations

from conftest import codes, run_lint
from moe_lint.engine.catalogue import Catalogue

BAD_CP = "model:\n  context_parallel_size: 24{c}\n"


def test_same_line(catalogue: Catalogue) -> None:
    text = BAD_CP.format(c="  # moe-lint: disable=CP001 -- tuning sweep")
    assert codes(run_lint(catalogue, text, ["CP001", "SUP001", "SUP002"]).findings) == []


def test_by_rule_name(catalogue: Catalogue) -> None:
    text = BAD_CP.format(c="  # moe-lint: disable=cp-not-power-of-two")
    assert codes(run_lint(catalogue, text, ["CP001", "SUP001", "SUP002"]).findings) == []


def test_line_above_and_block(catalogue: Catalogue) -> None:
    text = "# moe-lint: disable=CP001\nmodel:\n  context_parallel_size: 24\n"
    assert codes(run_lint(catalogue, text, ["CP001", "SUP001"]).findings) == []
    text = (
        "model:\n  # moe-lint: disable=CP001 -- comment lines in between are skipped\n"
        "  # note\n  context_parallel_size: 24\n"
    )
    assert codes(run_lint(catalogue, text, ["CP001", "SUP001"]).findings) == []


def test_disable_file(catalogue: Catalogue) -> None:
    text = "# moe-lint: disable-file=CP001\n" + BAD_CP.format(c="")
    assert codes(run_lint(catalogue, text, ["CP001", "SUP001"]).findings) == []


def test_other_line_not_suppressed(catalogue: Catalogue) -> None:
    text = (
        "model:\n  tensor_model_parallel_size: 1  # moe-lint: disable=CP001\n"
        "  context_parallel_size: 24\n"
    )
    result = run_lint(catalogue, text, ["CP001", "SUP001"])
    assert sorted(codes(result.findings)) == ["CP001", "SUP001"]
    sup = next(f for f in result.findings if f.code == "SUP001")
    assert (sup.line, sup.column) == (2, 34)


def test_unknown_code(catalogue: Catalogue) -> None:
    text = BAD_CP.format(c="  # moe-lint: disable=CP01")
    result = run_lint(catalogue, text, ["CP001", "SUP001", "SUP002"])
    assert sorted(codes(result.findings)) == ["CP001", "SUP002"]
    assert "did you mean CP001?" in next(f for f in result.findings if f.code == "SUP002").message


def test_a_split_code_is_still_covered_by_the_code_it_was_split_from(catalogue: Catalogue) -> None:
    """PP016/PP017 were part of PP002 (uneven-pipeline-split-invalid) before issue 11."""
    bad = "model:\n  pipeline_model_parallel_size: 8\n  num_layers_in_first_pipeline_stage: 0{c}\n"
    select = ["PP002", "PP016", "SUP001", "SUP002"]
    assert codes(run_lint(catalogue, bad.format(c=""), select).findings) == ["PP016"]
    for name in ("PP002", "uneven-pipeline-split-invalid", "PP016"):
        text = bad.format(c=f"  # moe-lint: disable={name}")
        assert codes(run_lint(catalogue, text, select).findings) == [], name
    # The older code does not cover the codes it was not split into.
    other = "model:\n  context_parallel_size: 24  # moe-lint: disable=PP002\n"
    assert codes(run_lint(catalogue, other, ["CP001", "SUP001"]).findings) == ["CP001", "SUP001"]
