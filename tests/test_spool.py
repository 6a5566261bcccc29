"""A big batch keeps its results on disk and reports them a file at a time (issue 25).

From ``spool.SPOOL_AFTER`` files on, each slim result is encoded (JSON) into an anonymous
temporary file, and the report reads results back as it needs them, writing every format in
pieces. What must hold: a result reads back equal to what was written, a spooled run prints
exactly what an in-memory run prints in every format, and while a spooled report is written
only about one file's findings are alive at a time.
"""

from __future__ import annotations

import gc
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DUMPS, REPO, run_main
from moe_lint import workers
from moe_lint.config.settings import Settings
from moe_lint.engine.catalogue import Catalogue
from moe_lint.engine.findings import Argument, Edit, Finding, InputProblem
from moe_lint.linting import FileResult, lint_path, slim
from moe_lint.output import escape
from moe_lint.output import text as report
from moe_lint.spool import Spilled, Spool, decode, encode, load

_TEXT = st.text(st.characters(codec=None), max_size=30)  # lone surrogates included
_MAYBE = st.none() | _TEXT
_INT = st.integers(min_value=0, max_value=10**6)
_EDIT = st.builds(Edit, _INT, _INT, _TEXT, _INT, _INT, _INT, _INT)
_ARGUMENT = st.none() | st.builds(Argument, st.none() | _INT, _TEXT)
_FINDING = st.builds(
    Finding,
    _TEXT, _TEXT, st.sampled_from(["error", "warning", "info"]), _TEXT, _TEXT, _TEXT,
    _INT, _INT, _INT, _INT, _MAYBE, _MAYBE, st.sampled_from([None, "safe", "unsafe"]),
    st.lists(_EDIT, max_size=3), _MAYBE, _ARGUMENT,
)  # fmt: skip


@given(_TEXT, st.lists(_FINDING, max_size=4), _MAYBE, _MAYBE)
@settings(max_examples=300, deadline=None)
def test_any_result_reads_back_equal(
    path: str, findings: list[Finding], error: str | None, notice: str | None
) -> None:
    result = FileResult(path, findings, error, notice)
    assert decode(encode(result)) == result


def test_linted_dumps_read_back_equal(catalogue: Catalogue) -> None:
    """Real results, with and without the text a code frame reads."""
    seen = 0
    for source in sorted(DUMPS.glob("*_config.yaml"))[:16]:
        for keep_text in (True, False):
            cluster = {"gpus": 256, "gpu": "h100"}
            kept = slim(lint_path(str(source), catalogue, Settings(), [], cluster), keep_text)
            back = decode(encode(kept))
            assert back == kept
            assert (back.doc is None) is (not keep_text)
            seen += len(back.findings)
    assert seen > 50


@pytest.mark.parametrize("on_disk", [True, False])
def test_spool_returns_each_result_in_any_order(
    monkeypatch: pytest.MonkeyPatch, on_disk: bool
) -> None:
    if not on_disk:  # no temporary directory: the bytes stay in memory
        monkeypatch.setattr(tempfile, "TemporaryFile", _no_temporary_file)
    spool = Spool()
    results = [FileResult(f"f{i}.yaml", error="e" * i) for i in range(40)]
    handles = [spool.put(encode(r)) for r in results[:20]]
    assert load(handles[3]) == results[3]  # a read between writes
    handles += [spool.put(encode(r)) for r in results[20:]]
    assert all(isinstance(h, Spilled) for h in handles)
    assert [load(h) for h in reversed(handles)] == results[::-1]
    assert load(results[0]) is results[0]
    spool.close()


def _no_temporary_file(*args: Any, **kwargs: Any) -> Any:
    raise OSError("no temporary directory")


def test_lint_many_spools_only_past_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from moe_lint.engine.catalogue import load_catalogue

    paths = [str(p) for p in sorted(DUMPS.glob("*_config.yaml"))[:3]]
    args = (load_catalogue(), Settings(), [], {"gpus": "256"}, lambda r: r, False)
    monkeypatch.setenv("MOE_LINT_JOBS", "1")
    kept = workers.lint_many(paths, *args)
    assert all(isinstance(r, FileResult) for r in kept)
    monkeypatch.setattr(workers, "SPOOL_AFTER", 2)
    spooled = workers.lint_many(paths, *args)
    assert all(isinstance(r, Spilled) for r in spooled)
    assert [load(r) for r in spooled] == kept


def _inputs(tmp_path: Path) -> list[str]:
    """Dumps and examples in an order that is not the sorted one, a file that fails, one that
    is skipped, and a baseline that covers part of the findings and has stale entries."""
    files = [str(p) for p in sorted(DUMPS.glob("*_config.yaml"))[:8]]
    files += [str(p) for p in sorted((REPO / "examples").glob("*.yaml"))]
    bad = tmp_path / "bad.yaml"
    bad.write_text("model:\n  num_layers: 2\n  num_layers: 3\n", encoding="utf-8")
    other = tmp_path / "other.yaml"
    other.write_text("foo: 1\n", encoding="utf-8")
    return [*files[::-1], str(bad), str(other)]


_RUNS = [
    ["--format", "text"],
    ["--format", "text", "--show-infos", "--baseline", "BASELINE"],
    ["--format", "concise", "--fail-on", "warning"],
    ["--format", "json", "--baseline", "BASELINE"],
    ["--format", "json-lines", "--show-infos"],
    ["--format", "github", "--summary", "SUMMARY"],
    ["--format", "sarif"],
    ["--format", "gitlab", "--show-infos"],
    ["--format", "junit", "--baseline", "BASELINE"],
    ["--statistics"],
]


@pytest.mark.parametrize("args", _RUNS, ids=lambda a: "-".join(x.strip("-") for x in a))
def test_a_spooled_run_prints_what_an_in_memory_run_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    args: list[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("MOE_LINT_JOBS", "1")
    monkeypatch.setenv("NO_COLOR", "1")
    files = _inputs(tmp_path)
    baseline = tmp_path / "baseline.json"
    code, _, _ = run_main(capsys, "--write-baseline", str(baseline), *files[:5])
    assert code == 0
    data = json.loads(baseline.read_text(encoding="utf-8"))
    data["findings"] += [{"code": "PAR001", "file": data["findings"][0]["file"], "path": "x"}]
    baseline.write_text(json.dumps(data), encoding="utf-8")
    args = [str(baseline) if a == "BASELINE" else a for a in args]
    outputs = []
    for limit in (10_000, 0):
        monkeypatch.setattr(workers, "SPOOL_AFTER", limit)
        summary = tmp_path / f"summary-{limit}.md"
        run = [str(summary) if a == "SUMMARY" else a for a in args]
        code, out, err = run_main(capsys, *run, "model.contxt_parallel_size=16", *files)
        extra = summary.read_text(encoding="utf-8") if summary.exists() else None
        outputs.append((code, out, err, extra))
    assert outputs[0] == outputs[1]
    code, out, err, _ = outputs[0]
    assert code == 2 and out and "appears more than once" in err
    if "--baseline" in args:
        assert "stale baseline entry: PAR001" in err


def test_a_spooled_report_holds_about_one_file_of_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the report is written, the live findings are one file's (plus the one being
    written), not the run's: the count is taken at every 5th line of a concise report."""
    monkeypatch.setenv("MOE_LINT_JOBS", "1")
    monkeypatch.setattr(workers, "SPOOL_AFTER", 0)
    files = [str(p) for p in sorted(DUMPS.glob("*_config.yaml"))[:24]]
    before = _live_findings()
    live: list[int] = []
    concise = report.concise

    def counted(findings: Any) -> Iterator[str]:
        for n, line in enumerate(concise(findings)):
            if n % 5 == 0:
                live.append(_live_findings() - before)
            yield line

    monkeypatch.setattr(report, "concise", counted)
    args = ["--format", "concise", "--show-infos", "--gpus", "256", "--gpu", "h100"]
    code, out, _ = run_main(capsys, *args, *files)
    assert code == 1
    lines = out.splitlines()
    per_file = max(sum(1 for line in lines if line.startswith(f"{f}:")) for f in files)
    assert len(lines) > 5 * per_file  # a run of many files' findings
    assert live and max(live) <= per_file + 1, (max(live), per_file, len(lines))


def _live_findings() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is Finding)


@given(st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=12,
), st.integers(min_value=0, max_value=3))  # fmt: skip
@settings(max_examples=300, deadline=None)
def test_a_list_written_in_pieces_is_the_list_written_whole(item: Any, depth: int) -> None:
    """At the top (json, gitlab) and nested 3·depth levels deep (SARIF's results are 3)."""
    items = [item] * (1 + depth % 2) if item is not None else []

    def nest(inner: Any) -> Any:
        for _ in range(depth):
            inner = {"a": [{"b": inner}]}
        return inner

    pieces = "".join(escape.dumps_list(items, indent=2, level=3 * depth))
    stand_in = escape.dumps(nest("\x00"), indent=2).replace(escape.dumps("\x00"), pieces)
    assert stand_in == escape.dumps(nest(items), indent=2)


def test_input_errors_follow_their_files_findings() -> None:
    """JSON records: a stable sort of the findings (sorted by file) then the input errors."""
    findings = [
        Finding(c, "n", "error", "m", "p", file, 1, 1, 1, 2)
        for c, file in [("A", "a.yaml"), ("B", "b.yaml"), ("C", "b.yaml"), ("D", "d.yaml")]
    ]
    problems = [
        InputProblem("c.yaml", "x"),
        InputProblem("b.yaml", "y"),
        InputProblem("a.yaml", "z"),
    ]
    records = list(report.json_records(findings, problems))
    got = [(r["file"], r["code"], r["message"]) for r in records]
    assert got == [
        ("a.yaml", "A", "m"), ("a.yaml", "E000", "z"), ("b.yaml", "B", "m"),
        ("b.yaml", "C", "m"), ("b.yaml", "E000", "y"), ("c.yaml", "E000", "x"),
        ("d.yaml", "D", "m"),
    ]  # fmt: skip
