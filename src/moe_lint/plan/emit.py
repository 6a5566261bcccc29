"""A plan as YAML the user can launch from: a Bridge override file naming the model, or (when the
base was a Bridge YAML) that file with the plan's values written over it."""

from __future__ import annotations

from typing import Any

from moe_lint.plan.search import Candidate, Request, plan_values


def _nest(dotted: dict[str, Any], keep_none: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in dotted.items():
        if value is None and not keep_none:
            continue
        section, _, name = key.partition(".")
        out.setdefault(section, {})[name] = value
    return out


def _directive(req: Request, fs: Any, model: str | None, world: int) -> str:
    parts = [f"gpus={world}", f"gpu={req.gpu}"]
    if model:
        parts.append(f"model={model}")
    if getattr(fs, "gpus_per_node", None):
        parts.append(f"gpus-per-node={fs.gpus_per_node}")
    return "# moe-lint: " + " ".join(parts)


def header(cand: Candidate, rank: int | None) -> str:
    p, pred = cand.plan, cand.prediction
    name = f"plan {rank}" if rank else "plan"
    lower = f", lower bound {cand.lower_gib:.1f}" if cand.lower_gib is not None else ""
    return (
        f"# {name} from `moe-lint plan`: predicted {pred.tokens_per_s_per_gpu:.0f} tokens/s/GPU "
        f"({pred.step_s:.2f} s/step); memory {cand.memory_gib:.1f} GiB{lower} of "
        f"{cand.usable_gib:.1f} usable\n# TP {p.tp} PP {p.pp} VPP {p.vpp} CP {p.cp} EP {p.ep} "
        f"ETP {p.etp} DP {p.dp} EDP {p.edp} MBS {p.mbs} GBS {p.gbs}\n"
    )


def emit_text(
    req: Request,
    cand: Candidate,
    model: str,
    fs: Any,
    is_yaml: bool,
    mixed: str | None,
    base_text: str,
    rank: int | None = None,
) -> str:
    """The YAML of one plan (lints clean: run() dropped the plans that do not)."""
    # Lazy: loaded only on the path that needs it (the planner itself is imported lazily).
    import yaml

    dotted = {**req.written, **plan_values(req, cand.plan)}
    if cand.plan.offload > 0:
        dotted["optimizer.use_precision_aware_optimizer"] = True
    if not req.arch.is_moe:
        dotted = {k: v for k, v in dotted.items() if "expert" not in k}
    if not is_yaml:
        data = _nest(dotted, keep_none=False)
        if mixed:
            data["mixed_precision"] = mixed
        body = yaml.safe_dump(data, sort_keys=False, default_flow_style=False)
        return _directive(req, fs, model, cand.plan.world) + "\n" + header(cand, rank) + body
    base = yaml.safe_load(base_text) or {}
    for key, value in dotted.items():
        section, _, name = key.partition(".")
        block = base.setdefault(section, {})
        if isinstance(block, dict) and (value is not None or name in block):
            block[name] = value
    if mixed:
        base["mixed_precision"] = mixed
    body = yaml.safe_dump(base, sort_keys=False, default_flow_style=False)
    preset = getattr(fs, "model", None)
    return _directive(req, fs, preset, cand.plan.world) + "\n" + header(cand, rank) + body
