"""Every real Bridge YAML in the corpus runs through moe-lint without a crash."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from conftest import CORPUS, REPO, assert_tool_current
from moe_lint.cli import main

_spec = importlib.util.spec_from_file_location("corpus_report", REPO / "tools" / "corpus_report.py")
assert _spec and _spec.loader
corpus_report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus_report)
FILES = corpus_report.corpus_files()


@pytest.mark.parametrize(
    ("path", "cluster"), FILES, ids=lambda v: v.name if isinstance(v, Path) else ""
)
def test_corpus_file_lints_without_crash(
    path: Path, cluster: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    args = [str(path), "--format", "json"]
    for key, value in cluster.items():
        args += [f"--{key}", str(value)]
    code = main(args)
    _, err = capsys.readouterr()
    assert code in (0, 1, 2), err
    assert "Traceback" not in err and "internal error" not in err
    if code == 2:
        assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("path", "cluster"),
    [f for f in FILES if "bridge-full-dumps" in str(f[0])],
    ids=lambda v: v.name if isinstance(v, Path) else "",
)
def test_full_dumps_have_no_error(
    path: Path, cluster: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # These NVIDIA recipes pass Bridge's validation and run at the size in their names.
    code = main(
        [
            str(path),
            "--gpus",
            str(cluster["gpus"]),
            "--gpu",
            str(cluster["gpu"]),
            "--format",
            "concise",
            "--fail-on",
            "error",
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 0, out


def test_readme_corpus_report_is_current() -> None:
    assert_tool_current("corpus_report.py")


def test_corpus_is_complete() -> None:
    assert len([f for f in FILES if "megatron-bridge" in str(f[0])]) >= 60
    assert (CORPUS / "megatron-bridge" / "SOURCES.tsv").is_file()
