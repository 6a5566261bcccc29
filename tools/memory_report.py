"""Run the memory model on every published measurement and write docs/memory-validation.md.

Usage::

    python tools/memory_report.py            # rewrite docs/memory-validation.md
    python tools/memory_report.py --check    # exit 1 when the file is out of date

The measurements (tests/data/memory-measurements.yaml) state model, GPU count, parallel sizes
and what was swept; everything else comes from the Megatron Bridge recipe the source used.
Those recipe settings are written out below (``RECIPES``) with the file they come from, so the
table can be re-derived by hand. Nothing here is fitted per run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from moe_lint.analysis.memory import GIB, Estimate, MemorySettings, estimate  # noqa: E402
from moe_lint.config.settings import gpu_specs, preset_fields  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _generated import write_or_check  # noqa: E402

MEASUREMENTS = REPO / "tests" / "data" / "memory-measurements.yaml"
OUTPUT = REPO / "docs" / "memory-validation.md"

#: Measurement GPU names -> keys of data/gpus.yaml.
GPUS = {"h100-80gb": "h100-sxm-80gb"}

_BRIDGE = "NVIDIA-NeMo/Megatron-Bridge"

#: Recipe settings each run inherits, with the recipe that sets them (Bridge 067f987 and the
#: recipe versions the skill cards cite). Keys are effective config fields.
RECIPES: dict[str, dict[str, Any]] = {
    "moonlight16b-8gpu": {
        "source": f"{_BRIDGE} recipes/moonlight/h100/moonlight_16b.py "
        "(moonlight_16b_pretrain_8gpu_h100_bf16_config)",
        "values": {
            "model.sequence_parallel": True,
            "model.moe_token_dispatcher_type": "alltoall",
            "model.moe_grouped_gemm": True,
            "model.cross_entropy_loss_fusion": True,
            "model.cross_entropy_fusion_impl": "te",
            "model.recompute_granularity": "selective",
            "model.cuda_graph_impl": "none",
            "mixed_precision": "bf16_mixed",
            "ddp.grad_reduce_in_fp32": False,
            "ddp.use_distributed_optimizer": True,
            "optimizer.use_precision_aware_optimizer": True,
            "optimizer.main_params_dtype": "fp32",
            "optimizer.main_grads_dtype": "bf16",
            "optimizer.exp_avg_dtype": "bf16",
            "optimizer.exp_avg_sq_dtype": "bf16",
        },
        "batch": {"seq": 4096, "mbs": 1, "gbs": 4},
    },
    "qwen3-30b-8gpu": {
        "source": f"{_BRIDGE} recipes/qwen/h100/qwen3_moe.py "
        "(qwen3_30b_a3b_pretrain_config; GBS 8 / MBS 1 from the cpu-offloading skill's command)",
        "values": {
            "model.sequence_parallel": True,
            "model.moe_token_dispatcher_type": "alltoall",
            "model.moe_grouped_gemm": True,
            "model.cross_entropy_loss_fusion": True,
            "model.cross_entropy_fusion_impl": "te",
            "model.recompute_granularity": "full",
            "model.recompute_method": "uniform",
            "model.recompute_num_layers": 1,
            "model.cuda_graph_impl": "none",
            "mixed_precision": "bf16_mixed",
            "ddp.grad_reduce_in_fp32": True,
            "ddp.use_distributed_optimizer": True,
            "optimizer.use_precision_aware_optimizer": False,
        },
        "batch": {"seq": 4096, "mbs": 1, "gbs": 8},
    },
    "qwen3-30b-16gpu": {
        "source": f"{_BRIDGE} recipes/qwen/h100/qwen3_moe.py "
        "(qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config; dispatcher as measured: alltoall)",
        "values": {
            "model.sequence_parallel": False,
            "model.moe_token_dispatcher_type": "alltoall",
            "model.moe_grouped_gemm": True,
            "model.moe_router_fusion": True,
            "model.bias_activation_fusion": True,
            "model.cross_entropy_loss_fusion": True,
            "model.cross_entropy_fusion_impl": "te",
            "model.recompute_granularity": None,
            "model.cuda_graph_impl": "transformer_engine",
            "model.cuda_graph_modules": ["moe_router", "moe_preprocess"],
            "mixed_precision": "bf16_mixed",
            "ddp.grad_reduce_in_fp32": False,
            "ddp.use_distributed_optimizer": True,
            "optimizer.use_precision_aware_optimizer": False,
        },
        "batch": {"seq": 4096, "mbs": 1, "gbs": 1024},
    },
}

#: Which recipe each run (or the run it copies) used.
RUN_RECIPE = {
    "moonlight16b-recompute-control": "moonlight16b-8gpu",
    "qwen3-30b-offload-0": "qwen3-30b-8gpu",
    "qwen3-30b-ep16-alltoall": "qwen3-30b-16gpu",
}


@dataclass
class Row:
    """One measurement and the model's prediction for it."""

    run: dict[str, Any]
    est: Estimate
    recipe: str

    @property
    def predicted_gb(self) -> float:
        """Allocated peak in GB (1e9 B), the unit and quantity the sources report."""
        return self.est.worst.allocated_gib * GIB / 1e9

    @property
    def measured_gb(self) -> float:
        return float(self.run["peak_gb"])

    @property
    def error(self) -> float:
        return self.predicted_gb / self.measured_gb - 1

    @property
    def predicted_outcome(self) -> str:
        return "fits" if self.est.fits else "oom"

    @property
    def matches(self) -> bool:
        return self.predicted_outcome == self.run["outcome"]


def load_runs(path: Path = MEASUREMENTS) -> list[dict[str, Any]]:
    """Runs with ``same_as`` resolved (a run copies its base, then overrides)."""
    import yaml

    raw = yaml.safe_load(path.read_text(encoding="utf-8"))["runs"]
    by_id: dict[str, dict[str, Any]] = {}
    out = []
    for run in raw:
        base = by_id.get(run.get("same_as", ""), {})
        merged = {**base, **run}
        merged["recipe"] = RUN_RECIPE.get(run["id"]) or base.get("recipe")
        by_id[run["id"]] = merged
        out.append(merged)
    return out


def run_config(run: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Effective config values and derived facts for one run (preset + recipe + run)."""
    recipe = RECIPES[run["recipe"]]
    values: dict[str, Any] = {f"model.{k}": v for k, v in preset_fields(run["model"]).items()}
    values.update(recipe["values"])
    par = run["parallel"]
    tp, pp, cp, ep = par["tp"], par["pp"], par["cp"], par["ep"]
    etp = par["etp"] if par.get("etp") is not None else (1 if ep > 1 else tp)
    world = int(run["gpus"])
    batch = recipe["batch"]
    seq = run.get("seq_length") or batch["seq"]
    mbs = run.get("micro_batch_size") or batch["mbs"]
    gbs = run.get("global_batch_size") or batch["gbs"]
    dp = world // (tp * pp * cp)
    values.update(_run_overrides(run))
    if pp == 1 and run.get("cpu_offloading"):
        values["model.recompute_granularity"] = None  # activation offload forbids recompute
    facts = {
        "tp": tp, "pp": pp, "cp": cp, "ep": ep, "etp": etp, "world": world, "dp": dp,
        "edp": world // (etp * ep * pp), "vpp": None, "sp": bool(values["model.sequence_parallel"]
        and tp > 1), "seq": seq, "mbs": mbs, "gbs": gbs, "microbatches": gbs // (mbs * dp),
    }  # fmt: skip
    return values, facts


def _run_overrides(run: dict[str, Any]) -> dict[str, Any]:
    """Fields the run itself sweeps: recompute modules, optimizer offload, activation offload."""
    out: dict[str, Any] = {}
    if "recompute_modules" in run:
        out["model.recompute_granularity"] = "selective"
        out["model.recompute_modules"] = list(run["recompute_modules"])
    if run.get("optimizer_cpu_offload"):
        out["optimizer.optimizer_cpu_offload"] = True
        out["optimizer.optimizer_offload_fraction"] = float(run["optimizer_offload_fraction"])
    if run.get("cpu_offloading"):
        out["model.cpu_offloading"] = True
        out["model.cpu_offloading_num_layers"] = int(run["cpu_offloading_num_layers"])
    return out


def capacity_gib(gpu: str) -> float:
    """CUDA-visible memory of the measurement's GPU (data/gpus.yaml cuda_total_mib)."""
    spec = gpu_specs()[GPUS.get(gpu, gpu)]
    return float(spec["memory"]["cuda_total_mib"]) / 1024


def predict(settings: MemorySettings | None = None) -> list[Row]:
    """The model's estimate for every run."""
    rows = []
    for run in load_runs():
        values, facts = run_config(run)
        est = estimate(values, facts, settings or MemorySettings(), capacity_gib(run["gpu"]))
        rows.append(Row(run, est, run["recipe"]))
    return rows


# --------------------------------------------------------------------------------------------
# Accuracy figures
# --------------------------------------------------------------------------------------------


def fitting_rows(rows: list[Row]) -> list[Row]:
    """Runs that completed: their peak is a real peak (an OOM run's figure is a lower bound)."""
    return [r for r in rows if r.run["outcome"] == "fits"]


def median_abs_error(rows: list[Row]) -> float:
    """Median |predicted/measured − 1| over the runs that completed."""
    return statistics.median(abs(r.error) for r in fitting_rows(rows))


def offload_slope(rows: list[Row]) -> tuple[float, float]:
    """GB saved per 25% of optimizer offload (predicted, measured): least squares over the sweep."""
    sweep = [r for r in rows if r.run["id"].startswith("qwen3-30b-offload-")]
    xs = [float(r.run.get("optimizer_offload_fraction") or 0.0) for r in sweep]

    def slope(ys: list[float]) -> float:
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        num = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
        return -num / sum((x - mx) ** 2 for x in xs) * 0.25

    return slope([r.predicted_gb for r in sweep]), slope([r.measured_gb for r in sweep])


def recompute_deltas(rows: list[Row]) -> list[tuple[str, float, float, float]]:
    """Moonlight sweep vs the control, GB: (modules, peak Δ, forward/backward Δ, measured Δ)."""
    sweep = [r for r in rows if r.run["id"].startswith("moonlight16b-recompute-")]
    control = next(r for r in sweep if r.run["id"].endswith("control"))

    def fwd_bwd(row: Row) -> float:
        return row.est.worst.forward_backward_gib * GIB / 1e9

    return [
        ("+".join(r.run["recompute_modules"]), r.predicted_gb - control.predicted_gb,
         fwd_bwd(r) - fwd_bwd(control), r.measured_gb - control.measured_gb)
        for r in sweep if r is not control
    ]  # fmt: skip


# --------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------


def _parallel(run: dict[str, Any]) -> str:
    """Parallel sizes as the table shows them (* = Bridge's ETP default)."""
    par = run["parallel"]
    etp = par.get("etp")
    shown = etp if etp is not None else (f"{1 if par['ep'] > 1 else par['tp']}*")
    return f"TP{par['tp']} PP{par['pp']} CP{par['cp']} EP{par['ep']} ETP{shown}"


def _sweep(run: dict[str, Any]) -> str:
    """What the run varies against its sweep's baseline."""
    if "recompute_modules" in run:
        return "recompute " + (", ".join(run["recompute_modules"]) or "[] (control)")
    if run.get("cpu_offloading"):
        return f"activation offload {run['cpu_offloading_num_layers']} layers (PP1)"
    if run["id"].startswith("qwen3-30b-offload"):
        return f"optimizer offload {float(run.get('optimizer_offload_fraction') or 0):.0%}"
    return run.get("dispatcher", "")


def render(rows: list[Row]) -> str:
    """The whole validation page (deterministic: the --check mode compares it byte for byte)."""
    pred, meas = offload_slope(rows)
    lines = [
        "# Memory model validation (generated)",
        "",
        "<!-- Generated by tools/memory_report.py from tests/data/memory-measurements.yaml. "
        "Do not edit by hand; run `python tools/memory_report.py`. -->",
        "",
        "Predicted peak **allocated** memory of the worst pipeline stage (what "
        "`torch.cuda.max_memory_allocated` reports; GB = 10^9 B) against the published figure, "
        "and the fit/OOM verdict from the device total (allocated + fragmentation margin + CUDA "
        "context, NCCL and dispatcher buffers) against the GPU's CUDA-visible memory. Default "
        "`MemorySettings`; the model and every constant are described in "
        "[memory-model.md](memory-model.md). ETP marked * is Bridge's default for an unset "
        "ETP (1 when EP > 1).",
        "",
        "| run | model | parallel (GPUs) | swept | measured GB | predicted GB | error | "
        "device total GiB / capacity | verdict (pred / real) |",
        "|---|---|---|---|---:|---:|---:|---|---|",
    ]
    for r in rows:
        est = r.est
        lower = " (at OOM)" if r.run["outcome"] == "oom" else ""
        lines.append(
            f"| {r.run['id']} | {r.run['model']} | {_parallel(r.run)} ({r.run['gpus']}) | "
            f"{_sweep(r.run)} | {r.measured_gb:.3f}{lower} | {r.predicted_gb:.2f} | "
            f"{r.error:+.1%} | {est.worst.total_gib:.1f} / {est.capacity_gib:.1f} | "
            f"{r.predicted_outcome} / {r.run['outcome']} {'✓' if r.matches else '✗'} |"
        )
    fits = fitting_rows(rows)
    matched = sum(r.matches for r in rows)
    lines += [
        "",
        "## Accuracy",
        "",
        f"- Fit/OOM verdict matches: **{matched}/{len(rows)}**.",
        f"- Median absolute error of the predicted peak over the {len(fits)} completed runs: "
        f"**{median_abs_error(rows):.1%}** (the OOM run's figure is the allocation at the "
        "failure, a lower bound, so it is checked as `predicted > measured` instead).",
        f"- Optimizer-offload sweep slope: predicted **{pred:.2f} GB** saved per 25% of "
        f"offload, measured **{meas:.2f} GB** (least squares over 0-100%), error "
        f"**{pred / meas - 1:+.1%}**.",
        "",
        "### Moonlight-16B recompute sweep: change against the empty-list control",
        "",
        "| recompute modules | predicted Δ peak | predicted Δ forward/backward | measured Δ |",
        "|---|---:|---:|---:|",
    ]
    for modules, peak, fwd, m in recompute_deltas(rows):
        lines.append(f"| {modules} | {peak:+.3f} | {fwd:+.3f} | {m:+.3f} |")
    lines += _notes(rows) + _recipes() + _stage_detail(rows)
    return "\n".join(lines) + "\n"


def _notes(rows: list[Row]) -> list[str]:
    """Why the Moonlight recompute deltas are not validated (figures computed, not typed)."""
    control = next(r for r in rows if r.run["id"] == "moonlight16b-recompute-control")
    fwd = control.est.worst.forward_backward_gib * GIB / 1e9
    step = control.est.worst.step_gib * GIB / 1e9
    return [
        "",
        "Every Moonlight run's predicted peak is the optimizer step (Transformer Engine's "
        "FusedAdam makes fp32 copies of the bf16 Adam moments of the whole expert parameter "
        f"group): {step:.2f} GB, against {fwd:.2f} GB for forward/backward, so recompute does "
        "not move the predicted peak. The measured recompute runs cluster at 35.90-35.95 GB "
        "whatever they recompute, the signature of such a floor (the model places it 2.4% "
        "high). The control's measured 36.62 GB lies above that floor, i.e. in "
        f"forward/backward, where the model predicts only {fwd:.2f} GB: this run's "
        "activations are under-predicted by at least "
        f"{control.measured_gb - fwd:.1f} GB (see *Known gaps* in memory-model.md).",
    ]


def _recipes() -> list[str]:
    """The recipe settings each run inherits, so the table can be re-derived by hand."""
    lines = ["", "## Recipe settings assumed per run", ""]
    for name, recipe in RECIPES.items():
        settings = ", ".join(f"`{k}={v}`" for k, v in recipe["values"].items())
        batch = recipe["batch"]
        lines.append(
            f"- **{name}** — {recipe['source']}: seq {batch['seq']}, MBS {batch['mbs']}, "
            f"GBS {batch['gbs']}; {settings}."
        )
    return lines


def _stage_detail(rows: list[Row]) -> list[str]:
    """Term breakdown of the worst stage for one run of each recipe (derivations included)."""
    lines = ["", "## Term breakdown (worst stage, GiB)", ""]
    seen: set[str] = set()
    for r in rows:
        if r.recipe in seen:
            continue
        seen.add(r.recipe)
        worst = r.est.worst
        lines += [f"### {r.run['id']} (stage {worst.stage}, peak in {worst.peak_phase})", ""]
        lines += ["| term | GiB | derivation |", "|---|---:|---|"]
        for t in worst.terms:
            lines.append(f"| {t.name} | {t.gib:.2f} | {t.derivation} |")
        lines.append("")
    return lines[:-1]


def main(argv: list[str] | None = None) -> int:
    """Write the page, or with --check return 1 when it differs from a fresh render."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    text = render(predict())
    code = write_or_check(
        args.output, text, check=args.check, command="python tools/memory_report.py"
    )
    if not args.check:
        print(f"wrote {args.output}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
