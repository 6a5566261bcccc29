"""NVIDIA's published MoE performance rows ran, so moe-lint must not call them out of memory.

tests/data/published-performance.tsv lists every MoE row of Megatron Bridge's performance
summary (releases 25.09 .. 26.08); tools/published_rows.py reconstructs each row's config in
tests/data/published-rows/ (from the full Bridge dump of its recipe, or from the recipe source at
the release tag) or lists it with the reason in SKIPPED.tsv. Each of those configs trained on
NVIDIA's clusters at the printed throughput, so a MEM001 (error: "the run will OOM") on any of
them is a false error, and a usage error (exit 2) means the file cannot be checked at all.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import json
import re
from pathlib import Path

import pytest

from conftest import DATA, assert_tool_current
from moe_lint.cli import main

TSV = DATA / "published-performance.tsv"
ROWS = DATA / "published-rows"
_ROW_LINE = re.compile(r"^# Row: tests/data/published-performance\.tsv line (\d+) ", re.M)


def _data_lines() -> list[int]:
    lines = TSV.read_text(encoding="utf-8").splitlines()
    body = [n for n, line in enumerate(lines, 1) if not line.startswith("#")]
    return body[1:]  # the first non-comment line is the column header


def _row_files() -> list[Path]:
    return sorted(ROWS.glob("*.yaml"))


def _skipped() -> dict[int, str]:
    text = (ROWS / "SKIPPED.tsv").read_text(encoding="utf-8")
    rows = csv.DictReader(
        (line for line in text.splitlines() if not line.startswith("#")), delimiter="\t"
    )
    return {int(row["line"]): row["reason"] for row in rows}


def _lint(path: Path) -> tuple[int, list[dict[str, object]], str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(path), "--format", "json"])
        except SystemExit as exc:  # pragma: no cover - main returns its exit code
            code = int(exc.code or 0)
    findings = json.loads(out.getvalue()) if out.getvalue().strip() else []
    return code, findings, err.getvalue().strip()


@pytest.mark.slow
def test_generated_rows_are_current() -> None:
    assert_tool_current("published_rows.py")


def test_every_row_is_a_file_or_skipped() -> None:
    rows = _data_lines()
    stated = re.search(r"Row counts: (\d+) data lines", TSV.read_text(encoding="utf-8"))
    assert stated and int(stated.group(1)) == len(rows), (
        "the TSV's own row count disagrees with its rows"
    )
    covered: dict[int, list[str]] = {}
    for path in _row_files():
        found = _ROW_LINE.findall(path.read_text(encoding="utf-8"))
        assert len(found) == 1, f"{path.name}: names {len(found)} source rows"
        covered.setdefault(int(found[0]), []).append(path.name)
    for line in _skipped():
        covered.setdefault(line, []).append("SKIPPED.tsv")
    doubled = {line: where for line, where in covered.items() if len(where) > 1}
    assert not doubled, doubled
    assert sorted(covered) == rows, {
        "rows with no file and not skipped": sorted(set(rows) - set(covered)),
        "files or skips naming no data row": sorted(set(covered) - set(rows)),
    }


@functools.cache
def _lint_all() -> list[tuple[Path, int, list[dict[str, object]], str]]:
    files = _row_files()
    assert files, "no reconstructed rows: run python tools/published_rows.py"
    return [(path, *_lint(path)) for path in files]


def _messages(findings: list[dict[str, object]], code: str) -> list[str]:
    return [str(f["message"]).split(" [")[0] for f in findings if f["code"] == code]


@pytest.mark.slow
def test_every_published_row_can_be_linted() -> None:
    results = _lint_all()
    unusable = [f"  {path.name}: {err.splitlines()[-1].split(': ')[-1] if err else '(no message)'}"
                for path, code, _, err in results if code == 2]  # fmt: skip
    if unusable:
        pytest.fail(
            f"{len(unusable)} of {len(results)} published rows stop with exit 2:\n"
            + "\n".join(unusable)
        )


@pytest.mark.slow
def test_no_published_row_gets_mem001() -> None:
    results = _lint_all()
    linted = [(path, findings) for path, code, findings, _ in results if code != 2]
    errors = [
        f"  {path.name}: {message}"
        for path, findings in linted
        for message in _messages(findings, "MEM001")
    ]
    warned = sum(bool(_messages(findings, "MEM002")) for _, findings in linted)
    if errors:
        pytest.fail(
            f"{len(errors)} of {len(linted)} linted published rows get MEM001, though each ran on "
            f"NVIDIA's clusters ({warned} get MEM002):\n" + "\n".join(errors)
        )
