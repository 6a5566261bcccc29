"""Hostile ``moe-lint plan`` arguments (issue 22): each is one usage line, exit 2, in bounds.

Before plan/args.py these ended in exit 3 (ZeroDivisionError on ``--set tp=0``, ValueError on
``--set offload=abc``, OverflowError on a 1000-digit range, OSError on ``-o /dev/full``) or ran
for 45 s (``--gpus 1-1e9``) and 127 s (``--top 1e9``). Every case runs the real CLI in its own
process (test_hostile.run_cli measures CPU time and peak RSS); the API gets the same checks.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from moe_lint.bounds import MAX_GPU_COUNTS, MAX_OVERRIDES, MAX_PLANS
from moe_lint.errors import UsageError
from moe_lint.plan import args as plan_args
from test_hostile import MAX_RSS_MB, MAX_SECONDS, run_cli

BASE = ["plan", "--model", "qwen3-30b-a3b", "--gpu", "h100"]
ONE = [*BASE, "--gpus", "8"]
NINES = "9" * 5000

CASES = {
    "tp=0": ([*ONE, "--set", "tp=0"], "--set tp 0: expected a whole number from 1"),
    "etp=0": ([*ONE, "--set", "etp=0"], "--set etp 0"),
    "mbs=0": ([*ONE, "--set", "mbs=0"], "--set mbs 0"),
    "tp=-1": ([*ONE, "--set", "tp=-1"], "--set tp '-1'"),
    "vpp=0": ([*ONE, "--set", "vpp=0"], "--set vpp 0"),
    "tp=nines": ([*ONE, "--set", f"tp={NINES}"], "expected a whole number from 1"),
    "offload=abc": ([*ONE, "--set", "offload=abc"], "offload fraction is a number from 0 to 1"),
    "offload=nan": ([*ONE, "--set", "offload=nan"], "offload fraction"),
    "offload=2": ([*ONE, "--set", "offload=2"], "offload fraction"),
    "recompute=bogus": ([*ONE, "--set", "recompute=bogus"], "'bogus' is not a recompute module"),
    "seq=-4096": ([*ONE, "--seq=-4096"], "--seq -4,096: expected a whole number from 1"),
    "seq=0": ([*ONE, "--seq=0"], "--seq 0"),
    "gbs=0": ([*ONE, "--gbs", "0"], "--gbs 0"),
    "tokens-per-step=0": ([*ONE, "--tokens-per-step", "0"], "--tokens-per-step 0"),
    "max-ep=0": ([*ONE, "--max-ep", "0"], "--max-ep 0"),
    "nodes=0": ([*BASE, "--nodes", "0", "--gpus-per-node", "8"], "--nodes 0"),
    "gpus=1000 digits": ([*BASE, "--gpus", "9" * 1000], "--gpus"),
    "gpus range 1000 digits": ([*BASE, "--gpus", "1-" + "9" * 1000], "--gpus"),
    "gpus 1-1e9": ([*BASE, "--gpus", "1-1000000000"], "bounds.MAX_GPUS"),
    "gpus many": ([*BASE, "--gpus", "1-65536"], "bounds.MAX_GPU_COUNTS"),
    "gpus list": ([*BASE, "--gpus", ",".join(str(8 * k) for k in range(1, 40))], "MAX_GPU_COUNTS"),
    "gpus reversed": ([*BASE, "--gpus", "64-8"], "low end is above its high end"),
    "gpus empty range": ([*BASE, "--gpus", "5-7"], "no power of two"),
    "compare nines": ([*ONE, "--compare", f"tp={NINES}"], "--compare tp"),
    "compare tp=0": ([*ONE, "--compare", "tp=0"], "--compare tp 0"),
    "compare twice": ([*ONE, "--compare", "tp=1,tp=2"], "expected NAME=N pairs"),
    "top=1e9": ([*ONE, "--top", "1000000000"], "bounds.MAX_PLANS"),
    "top=0": ([*ONE, "--top", "0"], "--top 0"),
    "emit=0": ([*ONE, "--emit", "0"], "--emit 0"),
    "emit=1e9": ([*ONE, "--emit", "1000000000"], "bounds.MAX_PLANS"),
    "emit to /dev/full": ([*ONE, "--emit", "1", "-o", "/dev/full"], "not a regular file"),
    "emit to a folder": ([*ONE, "--emit", "1", "-o", "."], "not a regular file"),
    "emit to no folder": ([*ONE, "--emit", "1", "-o", "no/such/dir/x.yaml"], "no such folder"),
    "-o without --emit": ([*ONE, "-o", "x.yaml"], "-o names the file for --emit N"),
    "html to /dev/full": ([*ONE, "--format", "html", "-o", "/dev/full"], "not a regular file"),
    "html to no folder": ([*ONE, "--format", "html", "-o", "no/dir/p.html"], "no such folder"),
    "too many --set": (
        [*ONE, *(a for i in range(MAX_OVERRIDES + 1) for a in ("--set", f"model.x{i}=1"))],
        "bounds.MAX_OVERRIDES",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_a_bad_plan_argument_is_one_usage_line(tmp_path: Path, name: str) -> None:
    args, needle = CASES[name]
    code, out, err, seconds, rss = run_cli(args, tmp_path)
    lines = err.strip().splitlines()
    assert code == 2, (name, code, out[-300:], err)
    assert len(lines) == 1 and lines[0].startswith("moe-lint: error: "), (name, err)
    assert needle in lines[0], (name, lines[0])
    assert len(lines[0]) < 400, lines[0]
    assert seconds < MAX_SECONDS and rss < MAX_RSS_MB, (name, seconds, rss)
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.slow
def test_emit_never_overwrites_a_read_only_file(tmp_path: Path) -> None:
    """Also as root, who may write any file: a file without write bits is left alone."""
    target = tmp_path / "plan.yaml"
    target.write_text("keep\n")
    os.chmod(target, 0o444)
    code, _, err, _, _ = run_cli([*ONE, "--emit", "1", "-o", str(target)], tmp_path)
    assert code == 2 and "read-only" in err and err.count("\n") == 1
    assert target.read_text() == "keep\n"


@pytest.mark.slow
def test_emit_writes_the_plan_to_a_new_file(tmp_path: Path) -> None:
    target = tmp_path / "plan.yaml"
    code, out, err, _, _ = run_cli([*ONE, "--emit", "1", "-o", str(target)], tmp_path)
    assert code == 0, err
    assert out == "" and target.read_text().count("tensor_model_parallel_size") >= 1


@pytest.mark.parametrize(
    ("text", "counts"),
    [("8", (8,)), ("64,8,64", (8, 64)), ("100-1024", (128, 256, 512, 1024)), ("1-1", (1,))],
)
def test_gpu_counts_read(text: str, counts: tuple[int, ...]) -> None:
    assert plan_args.gpu_counts(text) == counts


def test_the_api_options_are_checked_too() -> None:
    """plan.run.run checks an Options built in Python the same way (no ZeroDivisionError)."""
    from moe_lint.plan.run import Options, run

    bad = [
        Options(model="qwen3-30b-a3b", gpu="h100", gpus=(8,), fixed={"tp": 0}),
        Options(model="qwen3-30b-a3b", gpu="h100", gpus=(0,)),
        Options(model="qwen3-30b-a3b", gpu="h100", gpus=(8,), seq=-1),
        Options(model="qwen3-30b-a3b", gpu="h100", gpus=(8,), top=MAX_PLANS + 1),
        Options(model="qwen3-30b-a3b", gpu="h100", gpus=tuple(range(1, MAX_GPU_COUNTS + 2))),
        Options(model="qwen3-30b-a3b", gpu="h100", gpus=(8,), fixed={"offload": float("inf")}),
        Options(model="qwen3-30b-a3b", gpu="h100", gpus=(8,), fixed={"recompute": ("x",)}),
        Options(model="qwen3-30b-a3b", gpu="h100", gpus=(8,), compare={"ep": 0}),
    ]
    for opts in bad:
        with pytest.raises(UsageError):
            run(opts)
