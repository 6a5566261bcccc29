"""Many files in one run (issue 25): what a batch keeps per file, and what it costs to load one.

A batch keeps each file's findings and, for the text format, only the lines their code frames
show (linting.slim / frame_text); the report is the same as with the whole text. Long texts are
not event-scanned before composing when their indicator characters already bound their nodes
(config/load.py::_indicator_bound): the bound must hold for every text YAML parses.
"""

from __future__ import annotations

import gc
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import DUMPS, REPO, run_main
from moe_lint.config import load
from moe_lint.config.settings import Settings
from moe_lint.engine.catalogue import Catalogue
from moe_lint.errors import InputError
from moe_lint.linting import frame_text, lint_path, lint_text, slim
from moe_lint.output import text as report


def _nodes_and_depth(text: str) -> tuple[int, int]:
    count = depth = deepest = 0
    for event in yaml.parse(text, Loader=load._Loader):
        if isinstance(event, load._NODE_EVENTS):
            count += 1
            if isinstance(event, load._OPEN_EVENTS):
                depth += 1
                deepest = max(deepest, depth)
        elif isinstance(event, load._CLOSE_EVENTS):
            depth -= 1
    return count, deepest


_PIECES = [*":?-,[{}]*&!|>'\"#. \n\t\rab1", "\n- ", ": ", "\n...\n", "\n---\n", "? ", "*a", "&a ",
           "\x85", "\u2028", "{a, b}", "[? a]", "[a: b]"]  # fmt: skip


def test_indicator_bound_holds_for_what_yaml_parses() -> None:
    """Nodes <= _NODES_PER_INDICATOR x the bound, and depth <= the bound, for random texts of
    YAML's indicators and for every corpus and example config."""
    rng = random.Random(25)
    texts = ["".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 24))) for _ in range(20_000)]
    texts += [p.read_text(encoding="utf-8") for p in sorted(DUMPS.glob("*.yaml"))]
    texts += [p.read_text(encoding="utf-8") for p in sorted((REPO / "examples").glob("*.yaml"))]
    texts += ["{a}", "{?}", "[?]", "[a, b: c, ? d]", "- - - [x]", "--- a\n...\nb\n...\n---\n"]
    parsed = 0
    for text in texts:
        try:
            nodes, depth = _nodes_and_depth(text)
        except yaml.YAMLError:
            continue
        parsed += 1
        bound = load._indicator_bound(text)
        assert nodes <= load._NODES_PER_INDICATOR * bound, text
        assert depth <= bound, text
    assert parsed > 3_000


def test_real_dumps_skip_the_event_scan() -> None:
    """A full dump is long enough to be scanned, and its bound is far under MAX_NODES."""
    for path in sorted(DUMPS.glob("*.yaml"))[:20]:
        text = path.read_text(encoding="utf-8")
        assert len(text) > load._UNCOUNTED_CHARS
        assert load._indicator_bound(text) * load._NODES_PER_INDICATOR <= load.MAX_NODES


def test_long_texts_with_many_nodes_are_still_counted() -> None:
    text = "model:\n  x: [" + ",".join(["1"] * 30_000) + "]\n"
    with pytest.raises(InputError, match="more than 20,000 YAML nodes"):
        load.parse_text(text, "many.yaml")
    deep = "model:\n  x: " + "[" * 6_000 + "]" * 6_000 + "\n"  # past SAFE_C_DEPTH: not the C path
    with pytest.raises(InputError, match="nesting"):
        load.parse_text(deep, "deep.yaml")


@pytest.mark.parametrize(
    "text",
    [
        "a\nb\n\n\nc\n\n",
        "a\r\nb\rc\x85d\u2028e\n",
        "",
        "\n",
        "only\n",
        "x\n" * 50,
    ],
)
def test_frame_text_keeps_every_frame_line_and_the_count(text: str) -> None:
    lines = text.splitlines()

    class At:
        def __init__(self, line: int) -> None:
            self.line = line

    for picked in ([], [1], [len(lines)], [2, len(lines) + 3, 0], list(range(1, len(lines) + 1))):
        kept = frame_text(text, [At(n) for n in picked]).splitlines()  # type: ignore[misc]
        assert len(kept) == len(lines)
        for n in picked:
            for i in (n - 2, n - 1):
                if 0 <= i < len(lines):
                    assert kept[i] == lines[i]


def test_slim_result_renders_the_same_text_report(catalogue: Catalogue) -> None:
    path = DUMPS / "glm51_sft_416gpu_h100_bf16_config.yaml"
    result = lint_path(str(path), catalogue, Settings(), [], {"gpus": 256, "gpu": "h100"})
    assert result.findings and result.doc is not None
    full = result.doc.lines
    rows = [report.text_segments(f, full) for f in result.findings]
    slimmed = slim(result)
    assert slimmed.doc is not None
    assert len(slimmed.doc.text) < len(path.read_text(encoding="utf-8")) // 4
    assert [report.text_segments(f, slimmed.doc.lines) for f in slimmed.findings] == rows


def test_slim_without_text_drops_the_document(catalogue: Catalogue) -> None:
    result = slim(lint_text("model:\n  num_layers: 2\n", catalogue), keep_text=False)
    assert result.doc is None


def test_a_linted_file_is_freed_by_reference_counting(catalogue: Catalogue) -> None:
    """A file's config, facts, rule evaluators and YAML nodes hold no reference cycle, so they
    go when its result does, without the cyclic collector: in a batch it scanned each file's
    ~10,000 objects several times before finding them (a tenth of the CPU). This dump reads
    every lazy memory fact (the estimate, levers, EDP 2, selective recompute)."""
    path = str(DUMPS / "glm51_sft_416gpu_h100_bf16_config.yaml")
    cluster: dict[str, object] = {"gpus": 416, "gpu": "h100"}
    lint_path(path, catalogue, Settings(), [], cluster)  # first-use imports and caches
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        result = lint_path(path, catalogue, Settings(), [], cluster)
        assert {"MEM002", "RCP001"} <= {f.code for f in result.findings}
        del result
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()


def _dump_copies(tmp_path: Path, count: int) -> list[str]:
    dumps = [p for p in sorted(DUMPS.glob("*.yaml")) if "_config" in p.name][:count]
    paths = []
    for i, source in enumerate(dumps * (count // len(dumps) + 1)):
        if i == count:
            break
        path = tmp_path / f"d{i:03d}_{source.name}"
        path.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
        paths.append(str(path))
    return paths


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["text", "concise", "github", "sarif"])
def test_worker_batch_equals_each_file_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    """One batch over the workers (more than MIN_FILES dumps) prints what each file prints
    alone, in file order: for text, each file's findings with their code frames (the summary
    line aside); for the others, the whole report equals the one-process run's."""
    paths = _dump_copies(tmp_path, 56)
    env = {**os.environ, "MOE_LINT_JOBS": "2", "NO_COLOR": "1"}
    env.pop("MOE_LINT_STRICT", None)
    batch = subprocess.run(
        [sys.executable, "-m", "moe_lint", "--format", fmt, "--gpus", "256", "--gpu", "h100",
         *paths],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert batch.returncode == 1, batch.stderr
    if fmt != "text":
        one = subprocess.run(
            [sys.executable, "-m", "moe_lint", "--format", fmt, "--gpus", "256", "--gpu", "h100",
             *paths],
            capture_output=True, text=True, env={**env, "MOE_LINT_JOBS": "1"}, check=False,
        )  # fmt: skip
        assert (one.stdout, one.stderr, one.returncode) == (
            batch.stdout, batch.stderr, batch.returncode)  # fmt: skip
        return
    alone = []
    for path in paths:
        code, out, _ = run_main(capsys, "--format", fmt, "--gpus", "256", "--gpu", "h100", path)
        *body, summary = out.rstrip("\n").split("\n")
        assert summary.startswith("Found " if code == 1 else "All checks passed")
        alone.append("\n".join(body) + "\n" if body else "")
    *batch_body, batch_summary = batch.stdout.rstrip("\n").split("\n")
    assert batch_summary.startswith("Found ") and "in 56 files" in batch_summary
    assert "\n".join(batch_body) + "\n" == "".join(alone)
