"""moe-lint plan: the performance model against published rows, the search, the emitted YAML."""

from __future__ import annotations

import itertools
import json
import statistics
from dataclasses import replace
from typing import Any

import pytest

from conftest import load_tool, run_main
from moe_lint.analysis.pp_layout import parse_layout
from moe_lint.config.load import parse_text
from moe_lint.plan.run import Options, run, seed_cp
from moe_lint.plan.search import layout_string, recompute_ladder


@pytest.fixture(scope="module")
def published():  # type: ignore[no-untyped-def]
    return load_tool("planner_report")


def test_flops_match_bridge_model_tflops(published) -> None:  # type: ignore[no-untyped-def]
    """Model FLOPs per token = published TFLOP/s ÷ tokens/s (Bridge's flop_utils), within 3 %
    on DeepSeek-V3 and Qwen3 rows (GPT-OSS and Nemotron-H differ: sliding window / Mamba)."""
    checked = 0
    for i, row in enumerate(published.rows()):
        if row.published_tflops and row.model in ("DeepSeek-V3", "Qwen3-235B-A22B", "Kimi-K2"):
            ratio = row.published_tflops * 1e12 / row.published / published._model(i).flops_token
            assert abs(ratio - 1) < 0.05, (row.file, ratio)
            checked += 1
    assert checked > 20


def test_median_error_within_issue_target(published) -> None:  # type: ignore[no-untyped-def]
    errors = published.errors()
    assert len(errors) >= 180
    assert statistics.median(abs(e) for e in errors) <= 0.25


@pytest.mark.parametrize(("layers", "mtp", "pp", "vpp"),
                         [(61, 1, 8, 4), (61, 1, 16, 1), (94, 0, 4, 12), (94, 0, 8, 1),
                          (61, 1, 2, 8), (27, 0, 4, 1)])  # fmt: skip
def test_layout_string_places_every_layer(layers: int, mtp: int, pp: int, vpp: int) -> None:
    text = layout_string(layers, mtp, pp, vpp)
    assert text is not None
    layout = parse_layout(text)
    assert layout.num_stages == pp * vpp
    assert layout.count("t") == layers
    assert layout.count("m") == mtp
    assert layout.stages[0].startswith("E") and layout.stages[-1].endswith("L")


def test_even_split_needs_no_layout() -> None:
    assert layout_string(48, 0, 4, 1) is None
    assert layout_string(61, 1, 1, 1) is None


def test_dsv3_layout_is_bridges() -> None:
    """PP 8 × VPP 4 gives Bridge's own DeepSeek-V3 H100 layout (deepseek_v3.py layout_map)."""
    assert layout_string(61, 1, 8, 4) == "Et|(tt|)*30mL"


def test_seed_cp_prior() -> None:
    assert seed_cp(131072) == 32
    assert seed_cp(262144) == 64
    assert seed_cp(4096) == 1
    assert seed_cp(2048) == 1


def test_ladder_orders_selective_before_full() -> None:
    from moe_lint.analysis.params import Arch

    ladder = recompute_ladder(Arch.from_preset("deepseek-v3"), "fp8", "blockwise")
    assert ladder[0] == ()
    assert ladder[-1] == ("full",)
    assert ("mla_up_proj", "moe_act", "layernorm") in ladder
    delayed = recompute_ladder(Arch.from_preset("deepseek-v3"), "fp8", "delayed")
    assert not any("moe_act" in r for r in delayed)  # RCP010


@pytest.fixture(scope="module")
def small():  # type: ignore[no-untyped-def]
    return run(Options(model="qwen3-30b-a3b", gpu="h100", gpus=(16,), seq=8192, gbs=256))


def test_plans_ranked_fit_and_lint_clean(small) -> None:  # type: ignore[no-untyped-def]
    from moe_lint.engine.catalogue import load_catalogue
    from moe_lint.linting import lint_text
    from moe_lint.plan.emit import emit_text
    from moe_lint.plan.run import build

    assert len(small.shown) == 10
    speeds = [c.prediction.tokens_per_s_per_gpu for c in small.shown]
    # best first; plans within 0.1 % of each other rank the simpler first
    assert all(a >= b * 0.998 for a, b in itertools.pairwise(speeds))
    _, fs, is_yaml, mixed = build(Options(model="qwen3-30b-a3b", gpu="h100", gpus=(16,),
                                          seq=8192, gbs=256))  # fmt: skip
    catalogue = load_catalogue()
    for rank, c in enumerate(small.shown[:3], 1):
        assert c.memory_gib <= c.usable_gib
        p = c.plan
        assert 16 % (p.tp * p.cp * p.pp) == 0 and 16 % (p.etp * p.ep * p.pp) == 0
        text = emit_text(small.request, c, "qwen3-30b-a3b", fs, is_yaml, mixed, "", rank)
        result = lint_text(text, catalogue, path="plan.yaml")
        assert result.error is None
        assert not [f for f in result.findings if str(f.severity).endswith("error")], text


def test_pruned_values_name_the_rule(small) -> None:  # type: ignore[no-untyped-def]
    from moe_lint.plan.report import pruned_lines

    pruned = pruned_lines(small)
    # 128 experts on 16 GPUs: EP 32+ cannot fold onto 16 GPUs (PAR002)
    assert "PAR002" in pruned["ep"]["32"]
    assert "PAR002" in pruned["ep"]["128"]


@pytest.mark.slow
def test_cli_json_and_emit(capsys, tmp_path) -> None:  # type: ignore[no-untyped-def]
    args = ["plan", "--model", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "16", "--seq",
            "8192", "--gbs", "256"]  # fmt: skip
    code, out, err = run_main(capsys, *args, "--format", "json", "--top", "3")
    assert code == 0, err
    payload = json.loads(out)
    assert len(payload["plans"]) == 3
    first = payload["plans"][0]
    assert first["memory_gib"]["central"] <= first["memory_gib"]["usable"]
    assert set(first["breakdown_s"]) >= {"compute", "ep", "bubble", "dp"}
    target = tmp_path / "plan.yaml"
    code, out, err = run_main(capsys, *args, "--emit", "2", "-o", str(target))
    assert code == 0, err
    doc = parse_text(target.read_text(), str(target))
    assert doc.data["train"]["global_batch_size"] == 256
    code, out, err = run_main(capsys, str(target))
    assert code == 0, out + err  # the emitted plan lints clean


@pytest.mark.parametrize("bad", [["--gpus", "x"], ["--gpus", "0"], []])
def test_cli_bad_input_is_one_line_exit_2(capsys, bad) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run_main(capsys, "plan", "--model", "qwen3-30b-a3b", "--gpu", "h100", *bad)
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.slow
def test_compare_places_a_layout_and_says_why(capsys) -> None:  # type: ignore[no-untyped-def]
    args = ["plan", "--model", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "16", "--seq",
            "8192", "--gbs", "256", "--top", "3"]  # fmt: skip
    code, out, err = run_main(capsys, *args, "--compare", "tp=1,cp=1,ep=16,pp=1")
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("--compare"))
    assert "tokens/s/GPU" in line and ("rank " in line or "below the" in line)
    code, out, err = run_main(capsys, *args, "--compare", "tp=1,cp=1,ep=32,pp=1", "--format",
                              "json")  # fmt: skip
    assert code == 0, err
    compared = json.loads(out)["compared"]
    assert compared["plan"] is None and compared["why_not"].startswith("PAR002")


def test_fixed_values_off_the_grid_are_tried_or_pruned_with_a_rule() -> None:
    from moe_lint.plan.run import build
    from moe_lint.plan.search import _feasible_layouts, _Pruned

    req, *_ = build(Options(model="qwen3-30b-a3b", gpu="h100", gpus=(16,), seq=8192, gbs=256))
    req.fixed = {"mbs": 16, "tp": 1, "pp": 1, "cp": 1}  # MBS 16 is off the grid
    assert {lay["mbs"] for lay in _feasible_layouts(req, 16, _Pruned())} == {16}
    pruned = _Pruned()
    req.fixed = {"pp": 1, "vpp": 2}
    assert not list(_feasible_layouts(req, 16, pruned))
    assert any(reason.startswith("PP008") for (_, _, reason) in pruned.flat)


def test_dispatchers_bridge_rejects_are_pruned_with_their_code() -> None:
    from moe_lint.plan.run import build
    from moe_lint.plan.search import _dispatchers, _Pruned

    req, *_ = build(Options(model="qwen3-235b-a22b", gpu="gb200", gpus=(64,), seq=4096, gbs=512))
    pruned = _Pruned()
    assert "deepep" not in _dispatchers(req, 16, 1, pruned)  # DeepEP on NVL72
    assert any(reason.startswith("DSP010") for (_, _, reason) in pruned.flat)
    assert _dispatchers(req, 1, 1, _Pruned()) == ["alltoall"]  # DSP005: one-rank group


def test_seq_not_divisible_by_two_is_fine_without_cp() -> None:
    """SEQ001 fires only with CP > 1 (rules/sequence.yaml: cp > 1 and seq % (2·CP) != 0)."""
    from moe_lint.plan.run import build
    from moe_lint.plan.search import _feasible_layouts, _Pruned

    req, *_ = build(Options(model="qwen3-30b-a3b", gpu="h100", gpus=(8,), seq=4095, gbs=64))
    lays = list(_feasible_layouts(req, 8, _Pruned()))
    assert lays and {lay["cp"] for lay in lays} == {1}


@pytest.mark.slow
def test_validation_doc_is_current(published) -> None:  # type: ignore[no-untyped-def]
    """docs/planner-validation.md is what tools/planner_report.py writes from this code (the
    published rows, the searches and the seed families, ~1 min)."""
    text = published.render() + published.render_search() + published.render_seed()
    current = (published.OUT).read_text(encoding="utf-8")
    assert current == text, "stale: run python tools/planner_report.py"


@pytest.mark.slow
def test_models_whose_cp_needs_another_transport_get_it_or_no_cp() -> None:
    """GPT-OSS (sliding windows, sinks) runs CP only with a2a (ATT016 / ATT017), so its CP > 1
    plans carry a2a and only where the a2a group divides the KV heads per TP rank (ATT015),
    and they lint clean; GLM-5's DSA needs all-gather (ATT020), which the planner does not
    offer (its full-sequence K/V gather is not priced), so CP > 1 is pruned under the rule."""
    from moe_lint.engine.catalogue import load_catalogue
    from moe_lint.linting import lint_text
    from moe_lint.plan.emit import emit_text
    from moe_lint.plan.report import pruned_lines
    from moe_lint.plan.run import build
    from moe_lint.plan.search import cp_transports

    opts = Options(model="gpt-oss-120b", gpu="gb200", gpus=(64,), seq=32768, top=10,
                   fixed={"cp": 2})  # fmt: skip
    req, fs, is_yaml, mixed = build(opts)
    assert cp_transports(req, 1, 2) == [("a2a", 1)]
    assert cp_transports(req, 8, 2) == []  # 8 KV heads over TP 8: one per rank
    result = run(opts)
    assert result.shown and all(c.plan.cp_comm == "a2a" for c in result.shown)
    text = emit_text(req, result.shown[0], "gpt-oss-120b", fs, is_yaml, mixed, "", 1)
    assert "cp_comm_type: a2a" in text
    linted = lint_text(text, load_catalogue(), path="plan.yaml")
    assert linted.error is None
    assert not [f for f in linted.findings if str(f.severity).endswith("error")], text
    glm = run(Options(model="glm-5", gpu="gb200", gpus=(64,), seq=32768, top=2))
    assert glm.shown and all(c.plan.cp == 1 for c in glm.shown)
    assert "ATT020" in pruned_lines(glm)["cp"]["2"]


def test_cp_transports_are_priced_as_te_moves_them() -> None:
    """Each cp_comm_type's bytes as TE 2.17's context_parallel.py sends them: p2p a ring of
    K/V hidden behind attention, a2a the Q/K/V/O (and their gradients) all-to-alls, allgather
    K/V gathered twice and dK/dV reduce-scattered, a2a+p2p the all-to-alls inside the inner
    group and the ring over the outer ones (DeepSeek-V3, MLA: 40,960 K/V elements a token)."""

    from moe_lint.plan.perf import Model, Plan, _bw, _inside, constants
    from moe_lint.plan.run import build

    req, *_ = build(Options(model="deepseek-v3", gpu="h100", gpus=(256,), seq=131072))
    model = Model.build(req.arch, req.hardware, req.seq, req.values)
    c = next(c for c in model.costs if c.has_attention)
    assert (c.kv_elems, c.qo_elems) == (40960, 40960)
    p = Plan(tp=1, pp=8, cp=32, ep=32, etp=1, vpp=4, world=256, mbs=1, gbs=64, seq=131072)
    hw, tokens = req.hardware, 131072 / 32
    kv, qkvo = tokens * c.kv_elems * 2, tokens * (c.kv_elems + c.qo_elems) * 2
    step = float(constants()["calibrated"]["cp_step_us"]) * 1e-6
    a2a = model._cp(c, replace(p, cp_comm="a2a"), tokens, 0.0)
    assert a2a == pytest.approx(2 * qkvo * 31 / 32 / _bw(hw, _inside(32, 1, 8), "a2a_nccl"))
    gather = model._cp(c, replace(p, cp_comm="allgather"), tokens, 1e9)  # nothing hides it
    assert gather == pytest.approx(3 * 31 * kv / _bw(hw, _inside(32, 1, 8), "ring"))
    ring = model._cp(c, p, tokens, 0.0)
    assert ring == pytest.approx(3 * 31 * kv / _bw(hw, _inside(32, 1, 8), "p2p") + 6 * 31 * step)
    hier = model._cp(c, replace(p, cp_comm="a2a+p2p", cp_a2a=8), tokens, 1e9)
    a2a_8 = 2 * qkvo * 7 / 8 / _bw(hw, _inside(8, 1, 8), "a2a_nccl")
    assert hier == pytest.approx(a2a_8 + 6 * 3 * step)  # the 4-rank ring hidden, its steps not


def test_a_stated_cp_transport_is_planned_with_and_written(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A base config's a2a+p2p with hierarchical sizes is timed as such and each plan writes
    sizes whose product is its CP (a stale list answered "no layout fits": every emitted plan
    failed the product check)."""
    from moe_lint.engine.catalogue import load_catalogue
    from moe_lint.linting import lint_text
    from moe_lint.plan.emit import emit_text
    from moe_lint.plan.run import build

    base = tmp_path / "base.yaml"
    base.write_text(
        "# moe-lint: model=qwen3-30b-a3b\nmodel:\n  context_parallel_size: 4\n"
        "  cp_comm_type: a2a+p2p\n  hierarchical_context_parallel_sizes: [2, 2]\n"
    )
    opts = Options(model=str(base), gpu="h100", gpus=(16,), seq=32768, gbs=64, top=3,
                   fixed={"cp": 4})  # fmt: skip
    result = run(opts)
    assert result.shown
    _, fs, is_yaml, mixed = build(opts)
    catalogue = load_catalogue()
    for rank, cand in enumerate(result.shown, 1):
        assert (cand.plan.cp, cand.plan.cp_comm, cand.plan.cp_a2a) == (4, "a2a+p2p", 2)
        text = emit_text(result.request, cand, "", fs, is_yaml, mixed, base.read_text(), rank)
        assert "hierarchical_context_parallel_sizes:\n  - 2\n  - 2" in text
        findings = lint_text(text, catalogue, path="plan.yaml").findings
        assert not [f for f in findings if f.severity == "error"], text


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["bf16", "fp8", "fp8-blockwise"])
def test_plan_memory_is_what_estimate_says_for_the_emitted_file(precision: str) -> None:
    """The plan's memory is the estimate of the file --emit writes, to the byte: with an FP8
    recipe the plan had dropped model.fp8 (which the recipe sets) and so the FP8 activation
    term, 1.5 GiB under `moe-lint estimate` on this run."""
    import moe_lint
    from moe_lint.plan.emit import emit_text
    from moe_lint.plan.run import build

    opts = Options(model="qwen3-30b-a3b", gpu="h100", gpus=(16,), seq=8192, gbs=256,
                   precision=precision, top=3)  # fmt: skip
    result = run(opts)
    _, fs, is_yaml, mixed = build(opts)
    assert result.shown
    for rank, cand in enumerate(result.shown, 1):
        text = emit_text(result.request, cand, "qwen3-30b-a3b", fs, is_yaml, mixed, "", rank)
        est = moe_lint.estimate(text=text, filename="plan.yaml")
        assert est.total_gib == pytest.approx(cand.memory_gib, abs=1e-9), (precision, rank)
        assert est.lower_bound_gib == pytest.approx(cand.lower_gib, abs=1e-9)


def test_terminal_table_fits_80_columns_and_marks_what_may_not_fit(small) -> None:  # type: ignore[no-untyped-def]
    """On an 80-column terminal every layout column is shown (rich had blanked TP/PP/CP/EP/DP
    below ~150 columns) and a plan that may not fit keeps its '!' (it was only coloured)."""
    import io

    from rich.console import Console

    from moe_lint.plan import report

    buf = io.StringIO()
    real = Console.__init__

    def narrow(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        real(self, *args, **{**kwargs, "width": 80})

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Console, "__init__", narrow)
        report.to_rich(small, buf)
    lines = buf.getvalue().splitlines()
    head = next(i for i, line in enumerate(lines) if line.lstrip().startswith("# TP "))
    rows = lines[head + 1 : head + 1 + len(small.shown)]
    assert all(len(line) <= 80 for line in lines[head : head + 1 + len(small.shown)])
    heads = lines[head].split()  # ETP (and GPUs) are columns only when the plans vary them
    for row, cand in zip(rows, small.shown, strict=True):
        cell = dict(zip(heads, row.split(), strict=False))
        p = cand.plan
        got = [cell["TP"], cell["PP×V"], cell["CP"], cell["EP"], cell.get("ETP", "1"), cell["DP"]]
        assert got == [str(p.tp), f"{p.pp}×{p.vpp}", str(p.cp), str(p.ep), str(p.etp), str(p.dp)]
        assert row.split()[-3].endswith("!") == (cand.verdict != "fits"), row


@pytest.mark.slow
def test_safe_shows_no_plan_that_may_not_fit_and_ties_go_to_headroom(small) -> None:  # type: ignore[no-untyped-def]
    """--safe keeps only plans MEM002 calls "fits" (the 16-GPU run's top three are "may not
    fit" without it); plans the model cannot tell apart rank fit first, then headroom."""
    from moe_lint.plan.search import rank_key

    assert any(c.verdict != "fits" for c in small.shown)
    safe = run(Options(model="qwen3-30b-a3b", gpu="h100", gpus=(16,), seq=8192, gbs=256,
                       safe=True))  # fmt: skip
    assert safe.shown and all(c.verdict == "fits" for c in safe.shown)
    for result in (small, safe):
        keys = [rank_key(result.request, c) for c in result.shown]
        assert keys == sorted(keys)
    ties = [(a, b) for a, b in itertools.pairwise(small.shown)
            if rank_key(small.request, a)[0] == rank_key(small.request, b)[0]]  # fmt: skip
    assert ties
    for a, b in ties:
        first, second = (
            (a.verdict != "fits", round(a.memory_gib)),
            (b.verdict != "fits", round(b.memory_gib)),
        )
        assert first <= second


def test_a_dp_1_plan_carries_the_linters_warning(capsys) -> None:  # type: ignore[no-untyped-def]
    """The linter's warnings on a shown plan's emitted YAML come with it (PAR004 when CP
    squeezes DP to 1), in the text and the JSON."""
    args = ["plan", "--model", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "8", "--seq",
            "32768", "--gbs", "64", "--set", "cp=8", "--set", "tp=1", "--set", "pp=1",
            "--top", "1"]  # fmt: skip
    code, out, err = run_main(capsys, *args, "--format", "json")
    assert code == 0, err
    plan = json.loads(out)["plans"][0]
    assert plan["layout"]["dp"] == 1
    assert [w["code"] for w in plan["warnings"]][:1] == ["PAR004"]
    assert plan["warnings"][0]["message"].startswith("DP = 1: TP·PP·CP = 1·1·8")
    code, out, err = run_main(capsys, *args)
    assert code == 0 and "   PAR004: DP = 1" in out


@pytest.mark.slow
@pytest.mark.parametrize("page", ["docs/commands/plan.md", "README.md"])
def test_docs_planner_run_is_a_real_run(capsys: pytest.CaptureFixture[str], page: str) -> None:
    """The planner example of docs/commands/plan.md, and its excerpt in the README, is this
    code's output: every line it shows (cut with '…') is a line of the same command's output,
    in the same order."""
    import re
    import shlex

    from conftest import REPO

    text = (REPO / page).read_text(encoding="utf-8")
    start = text.index("$ moe-lint plan --model deepseek-v3 --gpu h100 --gpus 256 --seq 131072 "
                       "--precision fp8-blockwise \\\n")  # fmt: skip
    block = text[start : text.index("\n```", start)].splitlines()
    command = shlex.split(block[0].removeprefix("$ ").removesuffix("\\") + block[1])

    def timeless(line: str) -> str:  # the search's own seconds differ run to run
        return re.sub(r" in \d+\.\d+ s;", " in N s;", line)

    shown = [timeless(line) for line in block[2:] if line.strip() != "…"]
    code, out, _ = run_main(capsys, *command[1:])
    assert code == 0
    assert not re.search(r"\bseed\b", out, re.IGNORECASE)  # it names the guidance (issue 26)
    lines = [timeless(line) for line in out.splitlines()]
    at = 0
    for line in shown:
        assert line in lines[at:], f"docs line not in the output (or out of order): {line!r}"
        at = lines.index(line, at) + 1


def test_step_time_splits_layers_as_the_memory_model_places_them() -> None:
    """perf.stage_layers is analysis/placement.py::place's split: account_for_embedding /
    account_for_loss take a layer's worth off the first and last ranks (Qwen3-235B's 94 layers
    at PP 8 × VPP 4: 11 on ranks 0 and 7, 12 elsewhere), first/last stage counts are honoured,
    and a layout's stages are read as written."""
    from moe_lint.analysis.placement import place
    from moe_lint.plan.perf import Plan, stage_layers

    base = Plan(tp=1, pp=8, cp=1, ep=1, etp=1, vpp=4, world=8, mbs=1, gbs=64, seq=4096)
    split = replace(base, split=(None, None, True, True))
    assert [len(r) for r in stage_layers(94, 0, split)] == [11, 12, 12, 12, 12, 12, 12, 11]
    assert [len(r) for r in stage_layers(94, 0, base)] == [12, 12, 12, 12, 12, 12, 11, 11]
    uneven = replace(base, vpp=1, split=(5, 5, False, False))
    ranks = stage_layers(62, 1, uneven)  # 61 layers + one MTP depth on the last rank
    placed = place(num_layers=61, mtp=1, pp=8, vpp=None, first=5, last=5).rank_layers()
    assert [len(r) for r in ranks[:-1]] == placed[:-1] and len(ranks[-1]) == placed[-1] + 1


@pytest.mark.slow
def test_a_recipe_plan_emits_its_run_recipe_command(capsys: pytest.CaptureFixture[str]) -> None:
    """--model RECIPE_NAME plans from what a released Bridge recipe sets (as the launch-script
    reader applies it); --emit-format hydra writes the plan as run_recipe.py --recipe NAME
    Hydra overrides (only what differs from the recipe) that lint without an error and read
    back as the plan's layout. A preset base, or a changed precision recipe, is one usage line."""
    from moe_lint.config.overrides import parse_override
    from moe_lint.engine.catalogue import load_catalogue
    from moe_lint.linting import lint_text

    args = ["plan", "--model", "deepseek_v3_pretrain_config", "--gpu", "h100", "--gpus", "256",
            "--seq", "32768", "--top", "2"]  # fmt: skip
    code, table, _ = run_main(capsys, *args)
    assert code == 0 and "deepseek_v3_pretrain_config on 256" in table
    code, text, _ = run_main(capsys, *args, "--emit", "1", "--emit-format", "hydra")
    assert code == 0
    lines = text.splitlines()
    assert lines[0] == "#!/bin/bash" and "gpus=256" in lines[1] and "of recipe" in lines[2]
    assert (
        "torchrun --nnodes=32 --nproc_per_node=8 scripts/training/run_recipe.py --recipe "
        "deepseek_v3_pretrain_config" in text
    )
    words = [line.strip().removesuffix(" \\").strip("'") for line in lines[5:]]
    got = {".".join(map(str, o.path)): o.value for o in map(parse_override, words)}
    result = run(Options(model="deepseek_v3_pretrain_config", gpu="h100", gpus=(256,),
                         seq=32768, top=2))  # fmt: skip
    p = result.shown[0].plan
    assert got["model.context_parallel_size"] == p.cp and got["model.seq_length"] == 32768
    from moe_lint.config import bridge_recipes

    own = bridge_recipes.lookup("deepseek_v3_pretrain_config").values  # type: ignore[union-attr]
    for key, value in (("model.tensor_model_parallel_size", p.tp),
                       ("model.pipeline_model_parallel_size", p.pp),
                       ("model.expert_model_parallel_size", p.ep)):  # fmt: skip
        assert got.get(key, own.get(key)) == value  # not written: the recipe's own value
    linted = lint_text(text, load_catalogue(), path="plan.sh")
    assert linted.error is None
    assert not [f for f in linted.findings if str(f.severity).endswith("error")], text
    for bad, why in (
        (["--model", "deepseek-v3"], "plan with --model RECIPE_NAME"),
        (["--model", "deepseek_v3_pretrain_config", "--precision", "fp8-blockwise"],
         "use the YAML form"),
    ):  # fmt: skip
        argv = ["plan", *bad, "--gpu", "h100", "--gpus", "256", "--top", "1", "--emit", "1",
                "--emit-format", "hydra"]  # fmt: skip
        code, _, err = run_main(capsys, *argv)
        assert code == 2 and why in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.slow
def test_json_plans_carry_their_cp_transport(capsys: pytest.CaptureFixture[str]) -> None:
    """A searched a2a+p2p plan's JSON names the transport and the hierarchical sizes its
    --emit writes (their product is its CP); other plans carry null sizes."""
    code, out, err = run_main(capsys, "plan", "--model", "deepseek-v3", "--gpu", "h100",
                              "--gpus", "256", "--seq", "131072", "--precision",
                              "fp8-blockwise", "--top", "3", "--format", "json")  # fmt: skip
    assert code == 0, err
    plans = json.loads(out)["plans"]
    assert any(p["cp_comm_type"] == "a2a+p2p" for p in plans)
    for p in plans:
        sizes = p["hierarchical_context_parallel_sizes"]
        if p["cp_comm_type"] == "a2a+p2p":
            assert sizes[0] * sizes[1] == p["layout"]["cp"] and sizes[0] > 1
        else:
            assert sizes is None


def test_long_context_configs_are_current_and_lint_without_an_error() -> None:
    """tests/data/published-long-context/ is what tools/long_context_rows.py writes from the
    TSV, one config per row, and the linter finds no error in any (they are NVIDIA's runs)."""
    from conftest import REPO, assert_tool_current
    from moe_lint.engine.catalogue import load_catalogue
    from moe_lint.linting import lint_text

    assert_tool_current("long_context_rows.py")
    folder = REPO / "tests" / "data" / "published-long-context"
    configs = sorted(folder.glob("*.yaml"))
    assert len(configs) == 9
    catalogue = load_catalogue()
    for path in configs:
        result = lint_text(path.read_text(encoding="utf-8"), catalogue, path=str(path))
        assert result.error is None, path.name
        errors = [f.code for f in result.findings if str(f.severity).endswith("error")]
        assert not errors, (path.name, errors)


def _mlm_form(model: str, gpu: str, gpus: int, seq: int) -> tuple[str, Any, Any]:
    """A plan's Megatron-LM launch script (plan/emit.py::emit_megatron_lm) and its plan."""
    from moe_lint.plan.emit import emit_megatron_lm, emit_text

    result = run(Options(model=model, gpu=gpu, gpus=(gpus,), seq=seq, top=1))
    cand, req = result.shown[0], result.request
    yaml_text = emit_text(req, cand, model, result.settings, False, None, "")
    return emit_megatron_lm(req, cand, model, result.settings, None, 1, yaml_text), cand, req


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "gpus", "seq"), [("deepseek-v3", 256, 4096), ("qwen3-235b-a22b", 64, 32768)]
)
def test_megatron_lm_form_reads_back_as_the_plan_and_lints_clean(
    capsys: pytest.CaptureFixture[str], tmp_path: Any, model: str, gpus: int, seq: int
) -> None:
    """Issue 24: --emit-format megatron-lm. The script spells the architecture from Megatron-LM's
    own parser table (no model= directive to lean on) and the plan's layout; moe-lint's
    Megatron-LM reader reads every planned value back, and the linter finds no error."""
    from moe_lint.config.load import mlm_document
    from moe_lint.config.mlm_args import parse_script
    from moe_lint.config.settings import Settings
    from moe_lint.linting import prepare

    script, cand, _ = _mlm_form(model, "h100", gpus, seq)
    assert "model=" not in script.splitlines()[1] and "pretrain_gpt.py" in script
    cfg, _, _ = prepare(mlm_document(parse_script(script, "plan.sh")), Settings(), [], {})
    p = cand.plan
    read = {
        "tensor_model_parallel_size": p.tp, "pipeline_model_parallel_size": p.pp,
        "context_parallel_size": p.cp, "expert_model_parallel_size": p.ep,
        "expert_tensor_parallel_size": p.etp,
        "virtual_pipeline_model_parallel_size": p.vpp if p.vpp > 1 else None,
    }  # fmt: skip
    assert {k: cfg.value(f"model.{k}") for k in read} == read
    assert cfg.value("train.micro_batch_size") == p.mbs
    assert cfg.value("train.global_batch_size") == p.gbs
    assert cfg.value("model.seq_length") == seq
    preset = {"deepseek-v3": (61, 256), "qwen3-235b-a22b": (94, 128)}[model]
    assert (cfg.value("model.num_layers"), cfg.value("model.num_moe_experts")) == preset
    if cfg.value("model.multi_latent_attention"):
        assert "--group-query-attention" not in script  # MLM009: GQA and MLA exclude each other
    if "--pipeline-model-parallel-layout" in script:
        assert "--num-virtual-stages-per-pipeline-rank" not in script  # MLM005
    path = tmp_path / "plan.sh"
    path.write_text(script)
    code, out, _ = run_main(capsys, str(path), "--isolated", "--format", "json")
    assert code in (0, 1) and [f for f in json.loads(out) if f["severity"] == "error"] == []


def test_megatron_lm_form_refuses_what_no_flag_says() -> None:
    """A field Megatron-LM's flags cannot give (GPT-OSS's sliding window, a hybrid Mamba
    layout) is a usage error naming it, never a script that trains another model."""
    from moe_lint.errors import UsageError

    with pytest.raises(UsageError, match=r"model\.sliding_window = 128"):
        _mlm_form("gpt-oss-120b", "h100", 64, 8192)


@pytest.mark.slow
def test_emit_format_megatron_lm_on_the_command_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    """``plan --emit 1 --emit-format megatron-lm -o FILE`` writes the script, which lints
    clean; a model it cannot spell is one usage line, exit 2, and nothing written."""
    target = tmp_path / "train.sh"
    code, _, err = run_main(capsys, "plan", "--model", "deepseek-v3", "--gpu", "h100",
                            "--gpus", "256", "--seq", "4096", "--emit", "1",
                            "--emit-format", "megatron-lm", "-o", str(target))  # fmt: skip
    assert code == 0, err
    script = target.read_text(encoding="utf-8")
    assert "pretrain_gpt.py" in script and "--multi-latent-attention" in script
    code, out, _ = run_main(capsys, str(target), "--isolated", "--format", "json")
    assert code in (0, 1) and all(f["severity"] != "error" for f in json.loads(out))
    refused = tmp_path / "oss.sh"
    code, _, err = run_main(capsys, "plan", "--model", "gpt-oss-120b", "--gpu", "h100",
                            "--gpus", "64", "--seq", "8192", "--emit", "1",
                            "--emit-format", "megatron-lm", "-o", str(refused))  # fmt: skip
    assert code == 2 and "model.sliding_window" in err and not refused.exists()


def test_the_states_screen_is_a_floor_and_keeps_the_same_plans(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The planner rejects a layout on rank 0's states alone (weights, gradients, optimizer),
    and by dominance on them: each such need is under the layout's own lower bound, and the
    kept plans are those the search finds without the screen."""
    import math

    from moe_lint.plan import search as search_module
    from moe_lint.plan.run import build

    req, *_ = build(Options(model="qwen3-235b-a22b", gpu="h200", gpus=(16,), seq=4096, gbs=64,
                            fixed={"mbs": 1, "etp": 1, "vpp": 1}))  # fmt: skip
    screened = search_module.search(req)
    floors: list[tuple[float, float]] = []
    real_states = search_module._Memory.states

    def states(self: Any, p: Any) -> float:
        value = real_states(self, p)
        floors.append((value, self.lower(p, first_rank=True)))
        return -math.inf  # never over: the search as it was without the screen

    monkeypatch.setattr(search_module._Memory, "states", states)
    unscreened = search_module.search(req)
    assert floors and all(states <= lower for states, lower in floors)
    hard = search_module._usable(req) * (1 + req.margin)
    over = sum(states > hard for states, _ in floors)
    assert over > 0, "the case no longer exercises the screen"
    assert [c.plan for c in screened.kept] == [c.plan for c in unscreened.kept]
    assert screened.memory_checks < unscreened.memory_checks


def test_counting_many_prunes_at_once_is_counting_them_one_by_one() -> None:
    """_Pruned.add_all (the layouts ranked below the kept plans) keeps what one add per row
    keeps: the counts and, per dimension, the order of values and reasons (the report's)."""
    from moe_lint.plan.search import _Pruned

    grid = itertools.product((4, 1, 2), (2, 1), ("deepep", "alltoall"))
    rows = [{"tp": t, "cp": c, "dispatcher": d} for t, c, d in grid]
    one, many = _Pruned(), _Pruned()
    for pruned in (one, many):  # earlier prunes, some with the same values
        pruned.add({"tp": 2, "cp": 1}, "SEQ002: seq % (TP·CP) != 0")
        pruned.add({"tp": 1, "dispatcher": "alltoall"}, "ranked below the kept plans")
    for row in rows:
        one.add(row, "ranked below the kept plans")
    many.add_all(rows, "ranked below the kept plans")
    many.add_all([], "nothing")
    assert one.events == many.events
    assert [(d, [(v, list(c.items())) for v, c in by.items()]) for d, by in one.by.items()] == [
        (d, [(v, list(c.items())) for v, c in by.items()]) for d, by in many.by.items()
    ]


def test_the_dispatcher_choice_times_what_the_layers_time() -> None:
    """Model.ep_time (the search's dispatcher choice) computes only the layers' EP terms: the
    same seconds as the EP terms of the full layer times, for every dispatcher, precision,
    EP/ETP group and overlap."""
    from moe_lint.plan.perf import Plan
    from moe_lint.plan.run import build
    from moe_lint.plan.search import request_model

    req, *_ = build(Options(model="deepseek-v3", gpu="h100", gpus=(256,), seq=4096))
    model = request_model(req)
    grid = itertools.product(("alltoall", "deepep", "hybridep"), ("bf16", "fp8"),
                             ((1, 1), (8, 1), (32, 2), (64, 4)), (False, True), (False, True),
                             ("balanced", "dropless"))  # fmt: skip
    for dispatcher, precision, (ep, etp), ep_overlap, shared, routing in grid:
        p = Plan(tp=4, pp=8, cp=2, ep=ep, etp=etp, vpp=1, world=256 * etp, mbs=2, gbs=1024,
                 seq=4096, precision=precision, dispatcher=dispatcher, ep_overlap=ep_overlap,
                 shared_expert_overlap=shared, routing=routing)  # fmt: skip
        assert model.ep_time(p) == sum(model._layer(c, p)[4] for c in model.kinds), p


def test_the_bound_times_what_predict_times() -> None:
    """Model.tokens_per_s_per_gpu (the search's optimistic bound, without the breakdown) is
    predict's throughput to the last bit, on every layout the search bounds."""
    from moe_lint.plan import search as search_module
    from moe_lint.plan.run import build

    req, *_ = build(Options(model="deepseek-v3", gpu="h100", gpus=(128,), seq=4096, gbs=512))
    model = search_module.request_model(req)
    layouts = list(search_module._feasible_layouts(req, 128, search_module._Pruned()))
    assert len(layouts) > 1000 and {lay["pp"] for lay in layouts} > {1, 2}
    plans = [search_module._plan(req, lay, 128) for lay in layouts]  # the bound's plans
    plans += [search_module._plan(req, lay, 128, recompute=("full",), offload=0.5)
              for lay in layouts[::7]]  # fmt: skip
    for p in plans:
        assert model.tokens_per_s_per_gpu(p) == model.predict(p).tokens_per_s_per_gpu, p


def _outcome_record(outcome: Any) -> tuple[Any, ...]:
    """Everything a search reports but its time: the kept plans with every number, in order,
    the prune reasons and the counts."""
    return (
        [repr(c) for c in outcome.kept],
        repr(outcome.pruned),
        outcome.visited,
        outcome.prunes,
        outcome.timed,
        outcome.memory_checks,
        outcome.inferred,
    )


@pytest.mark.parametrize(
    "opts",
    [
        Options(model="qwen3-235b-a22b", gpu="h200", gpus=(16,), seq=4096, gbs=64,
                fixed={"mbs": 1, "etp": 1, "vpp": 1}),
        Options(model="deepseek-v3", gpu="h100", gpus=(128,), seq=4096, gbs=512,
                fixed={"mbs": 1}),
    ],
    ids=["qwen3-16", "dsv3-128"],
)  # fmt: skip
def test_reused_memory_terms_keep_the_search_identical(
    opts: Options, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The planner shares the memory model's state terms between a layout's micro-batch
    sizes, recompute sets and dispatchers, and its activation terms between its offload
    levels and dispatchers (_Memory.reuse): the search finds the same plans, with the same
    numbers, the same prunes and the same counts as one that computes every term afresh."""
    import importlib

    from moe_lint.plan import search as search_module
    from moe_lint.plan.run import build

    estimate_module = importlib.import_module("moe_lint.analysis.memory.estimate")
    computed: list[str] = []
    real_activations = estimate_module._activation_terms

    def activations(ctx: Any, stage: Any) -> Any:
        computed.append("activation")
        return real_activations(ctx, stage)

    monkeypatch.setattr(estimate_module, "_activation_terms", activations)
    req, *_ = build(opts)
    reused = _outcome_record(search_module.search(req))
    with_reuse = len(computed)
    computed.clear()
    monkeypatch.setattr(search_module._Memory, "reuse", lambda self, p: None)
    req, *_ = build(opts)
    fresh = _outcome_record(search_module.search(req))
    assert reused == fresh
    assert with_reuse < len(computed), "the case no longer reuses any term"
