"""Every real Bridge YAML in the corpus runs through moe-lint without a crash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    CORPUS,
    DUMPS,
    ROOT_CAUSES,
    VERDICTS,
    assert_tool_current,
    load_tool,
)
from moe_lint.cli import main

corpus_report = load_tool("corpus_report")
FILES = corpus_report.corpus_files()


@pytest.mark.slow
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


def _lint_dump(name: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, Any]]]:
    match = corpus_report._DUMP.search(name)
    assert match, name
    code = main(
        [str(DUMPS / name), "--gpus", match.group(1), "--gpu", match.group(2), "--format", "json"]
    )
    out, err = capsys.readouterr()
    assert code in (0, 1), f"exit {code}: {err}"
    return code, json.loads(out)


def test_every_dump_has_a_verdict() -> None:
    assert len(VERDICTS) >= 95
    assert {r["verdict"] for r in VERDICTS.values()} <= {"ok", "rejected", "runtime"}
    assert all((DUMPS / name).is_file() for name in VERDICTS)


@pytest.mark.parametrize("name", sorted(n for n, r in VERDICTS.items() if r["verdict"] == "ok"))
def test_accepted_dump_has_no_error(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, findings = _lint_dump(name, capsys)
    errors = [f for f in findings if f["severity"] == "error"]
    assert not errors, [(f["code"], f["message"]) for f in errors]


@pytest.mark.parametrize(
    "name", sorted(n for n, r in VERDICTS.items() if r["verdict"] in ("rejected", "runtime"))
)
def test_failing_dump_gets_an_error_for_its_root_cause(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    row = VERDICTS[name]
    expected = [code for text, code in ROOT_CAUSES.items() if text in row["message"]]
    assert len(expected) == 1, f"no root-cause rule known for {row['message']!r}"
    code, findings = _lint_dump(name, capsys)
    assert code == 1
    errors = {f["code"] for f in findings if f["severity"] == "error"}
    assert expected[0] in errors, (row["message"], sorted(errors))


def test_fp8_attention_under_nvfp4_is_an_error_only_on_te_2_15_and_newer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """DeepSeek-V3's VR200 NVFP4 recipe sets fp8_dot_product_attention: accepted at config time
    and by TE 2.14, refused at the first forward from TE 2.15 (VERDICTS.tsv's note)."""
    name = "deepseek_v3_pretrain_256gpu_vr200_nvfp4_config.yaml"
    base = [str(DUMPS / name), "--gpus", "256", "--gpu", "vr200", "--format", "json"]
    severities = {}
    for te in (None, "2.14", "2.15"):
        code = main(base + (["--transformer-engine", te] if te else []))
        out, _ = capsys.readouterr()
        found = {f["severity"] for f in json.loads(out) if f["code"] == "FP022"}
        severities[te] = (code, found)
    assert severities == {None: (0, {"warning"}), "2.14": (0, set()), "2.15": (1, {"error"})}


@pytest.mark.slow
def test_docs_corpus_report_is_current() -> None:
    assert_tool_current("corpus_report.py")


def test_corpus_is_complete() -> None:
    assert len([f for f in FILES if "megatron-bridge" in str(f[0])]) >= 60
    assert (CORPUS / "megatron-bridge" / "SOURCES.tsv").is_file()
