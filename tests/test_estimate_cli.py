"""`moe-lint estimate` and the memory rules wired into `moe-lint check`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO
from conftest import run_main as run

DSV3 = REPO / "examples" / "dsv3_128k_h100.yaml"
QWEN = REPO / "examples" / "qwen3_235b_128k_gb200.yaml"


def test_estimate_json_per_stage(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "estimate", str(DSV3), "--format", "json")
    (report,) = json.loads(out)
    assert code == 0 and report["fits"] is True
    assert len(report["stages"]) == 8  # PP = 8
    assert report["usable_gib"] == pytest.approx(79.19, abs=0.01)
    worst = max(report["stages"], key=lambda s: s["total_gib"])
    assert worst["stage"] == report["worst_stage"]
    for stage in report["stages"]:
        total = sum(
            t["gib"]
            for t in stage["terms"]
            if t["kind"] != "step" or stage["peak_phase"] != "forward/backward"
        )
        names = {t["name"] for t in stage["terms"]}
        assert {"weights", "gradients", "activations", "CUDA context"} <= names
        assert all(t["derivation"] for t in stage["terms"])
        assert total >= stage["allocated_gib"] - 0.01
    assert report["levers"] and report["levers"][0]["delta_gib"] < 0
    assert report["assumptions"]
    assert report["verdict_compares"] == "central device total"
    assert report["verdict_text"].startswith(report["verdict"] + ": the central device total")
    for stage in report["stages"]:
        bounds = stage["bounds"]
        assert list(bounds) == ["allocated", "reserved", "device"]
        assert bounds["device"]["central"] == stage["total_gib"]
        assert bounds["allocated"]["central"] == stage["allocated_gib"]
        for quantity in bounds.values():
            assert quantity["lower"] <= quantity["central"] <= quantity["band"]
    assert report["worst_bounds"] == next(
        s["bounds"] for s in report["stages"] if s["stage"] == report["worst_stage"]
    )


def test_estimate_text_has_bars_verdict_levers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "estimate", str(DSV3))
    assert code == 0
    assert "PP stage 7" in out and "█" in out
    # The verdict names the quantity it compares and why; each stage shows lower / central /
    # band of the allocated peak, the reserved peak and the device total side by side.
    assert (
        "Worst stage 7 (peak in forward/backward) -> may not fit: the central device total, "
        "75.5 GiB, is above 95% of usable memory (75.2 of 79.2 GiB)" in out
    )
    assert "allocated (PyTorch max_allocated)" in out and "lower   63.58  central   67.77" in out
    assert "device total (reserved + CUDA context, NCCL, DeepEP)  lower   66.33" in out
    assert "Levers (each re-runs the model):" in out and "CP ×2" in out


def test_estimate_over_capacity_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "estimate", str(DSV3), "model.context_parallel_size=8", "--gpus", "64"
    )
    assert code == 1 and "does NOT fit" in out


def test_estimate_needs_architecture(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "override.yaml"
    path.write_text("model:\n  context_parallel_size: 8\n")
    code, _, err = run(capsys, "estimate", str(path), "--gpu", "h100")
    assert code == 2 and err.count("\n") == 1 and "cannot estimate memory" in err


def test_memory_settings_change_the_estimate(capsys: pytest.CaptureFixture[str]) -> None:
    _, base, _ = run(capsys, "estimate", str(QWEN), "--format", "json")
    _, skewed, _ = run(
        capsys, "estimate", str(QWEN), "--format", "json", "--memory", "routing_imbalance=2.0"
    )
    assert json.loads(skewed)[0]["worst_total_gib"] > json.loads(base)[0]["worst_total_gib"] + 10
    code, _, err = run(capsys, "estimate", str(QWEN), "--memory", "imbalance=2")
    assert code == 2 and "unknown memory setting" in err


def test_check_reports_memory_with_levers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        str(DSV3),
        "model.context_parallel_size=8",
        "--format",
        "json",
        "--select",
        "MEM,PAR005",
    )
    findings = {f["code"]: f for f in json.loads(out)}
    assert code == 1
    mem = findings["MEM001"]
    assert "levers, biggest first:" in mem["fix"] and mem["fix"].count("GiB") >= 3
    assert "central estimate of PP stage" in mem["derivation"]
    assert "needs at least" in mem["message"]
    assert "EDP = 2 would save about" in findings["PAR005"]["message"]


def test_pyproject_memory_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.moe-lint.memory]\nwarn-headroom = 0.2\nrouting_imbalance = 1.0\n"
    )
    (tmp_path / "dsv3.yaml").write_text(DSV3.read_text())
    monkeypatch.chdir(tmp_path)
    _, out, _ = run(capsys, "dsv3.yaml", "--format", "json", "--select", "MEM")
    assert [f["code"] for f in json.loads(out)] == ["MEM002"]  # 73 GiB is within 20% of 79
    (tmp_path / "pyproject.toml").write_text("[tool.moe-lint.memory]\nwarn = 1\n")
    assert run(capsys, "dsv3.yaml")[0] == 2


def test_a_gpu_without_memory_data_is_named_not_called_missing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """vr200's memory is not sourced in data/gpus.yaml: the header names the GPU and why there
    is no verdict (it printed "(no --gpu)" though --gpu was given)."""
    code, out, _ = run(capsys, "estimate", str(DSV3), "--gpu", "vr200")
    assert code == 0
    assert out.splitlines()[0].endswith(
        "(vr200-nvl72: its memory is not in moe-lint's GPU table, no verdict)"
    )
    # and the verdict line does not ask for the --gpu that was given
    assert "pass --gpu" not in out
    assert "(no verdict: vr200-nvl72's memory is not in moe-lint's GPU table)" in out


def test_estimate_honours_output_and_refuses_other_formats(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``estimate -o FILE`` writes what stdout gets (text or JSON) and prints nothing; a check
    format estimate does not write (sarif, github, ...) is one usage line, exit 2."""
    example = str(DSV3)
    for fmt in ("text", "json"):
        code, out, _ = run(capsys, "estimate", example, "--format", fmt, "--color", "never")
        target = tmp_path / f"est.{fmt}"
        code_o, out_o, _ = run(capsys, "estimate", example, "--format", fmt, "-o", str(target))
        assert (code_o, out_o) == (code, "") and target.read_text(encoding="utf-8") == out
    code, _, err = run(capsys, "estimate", example, "--format", "sarif")
    assert code == 2 and "estimate writes --format text, json or html" in err
    code, _, err = run(capsys, "estimate", example, "-o", str(tmp_path / "no" / "x"))
    assert code == 2 and "no such folder" in err and len(err.strip().splitlines()) == 1


def test_quiet_estimate_prints_each_files_verdict_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 26: estimate honours -q as check does (findings only): per file its header and
    verdict line, no stage tables, levers or assumptions."""
    from conftest import REPO, run_main

    files = [str(REPO / "examples" / n) for n in ("dsv3_128k_h100.yaml", "dsv3_256k_h100.yaml")]
    code, full, _ = run_main(capsys, "estimate", *files, "--isolated", "--color", "never")
    code_q, quiet, _ = run_main(capsys, "estimate", *files, "-q", "--isolated", "--color", "never")
    assert code == code_q
    lines = [line for line in quiet.splitlines() if line]
    assert len(lines) == 4 and all(line in full.splitlines() for line in lines)
    assert [line.split()[0] for line in lines[::2]] == files
    assert all(line.startswith("Worst stage ") for line in lines[1::2])
    assert "PP stage" not in quiet and "Levers" not in quiet
