"""A plan as the user can launch it: a Bridge override file naming the model, or (when the base
was a Bridge YAML or a recipe) that config with the plan's values written over it; or, for a plan
of a released Bridge recipe, the ``run_recipe.py --recipe NAME`` command with the plan as Hydra
overrides (``--emit-format hydra``)."""

from __future__ import annotations

import shlex
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


def header(cand: Candidate, rank: int | None, base: str | None = None) -> str:
    p, pred = cand.plan, cand.prediction
    name = f"plan {rank}" if rank else "plan"
    if base:
        name += f" of {base}"
    lower = f", lower bound {cand.lower_gib:.1f}" if cand.lower_gib is not None else ""
    return (
        f"# {name} from `moe-lint plan`: predicted {pred.tokens_per_s_per_gpu:.0f} tokens/s/GPU "
        f"({pred.step_s:.2f} s/step); memory {cand.memory_gib:.1f} GiB{lower} of "
        f"{cand.usable_gib:.1f} usable\n# TP {p.tp} PP {p.pp} VPP {p.vpp} CP {p.cp} EP {p.ep} "
        f"ETP {p.etp} DP {p.dp} EDP {p.edp} MBS {p.mbs} GBS {p.gbs}\n"
    )


def _written_values(req: Request, cand: Candidate) -> dict[str, Any]:
    """The dotted values every emitted form writes: the ``--set`` overrides, the plan's values
    over them, the precision-aware optimizer that offload needs (OPT002), and no expert field
    for a dense model."""
    dotted = {**req.written, **plan_values(req, cand.plan)}
    if cand.plan.offload > 0:
        dotted["optimizer.use_precision_aware_optimizer"] = True
    if not req.arch.is_moe:
        dotted = {k: v for k, v in dotted.items() if "expert" not in k}
    return dotted


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

    dotted = _written_values(req, cand)
    if not is_yaml:
        data = _nest(dotted, keep_none=False)
        if mixed:
            data["mixed_precision"] = mixed
        body = yaml.safe_dump(data, sort_keys=False, default_flow_style=False)
        return _directive(req, fs, model, cand.plan.world) + "\n" + header(cand, rank, model) + body
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
    return _directive(req, fs, preset, cand.plan.world) + "\n" + header(cand, rank, model) + body


def emit_hydra(
    req: Request, cand: Candidate, recipe: str, fs: Any, mixed: str | None, rank: int | None
) -> str:
    """The plan as a launch script: ``torchrun ... scripts/training/run_recipe.py --recipe NAME``
    with the plan's values as Hydra overrides of what the recipe sets (only those that differ),
    on ``W / gpus_per_node`` nodes. Every override reads back as the value it writes
    (config/overrides.py::parse_override)."""
    # Lazy: loaded only on the path that needs it (the planner itself is imported lazily).
    from moe_lint.config import bridge_recipes
    from moe_lint.config.overrides import parse_override
    from moe_lint.config.settings import default_gpus_per_node
    from moe_lint.engine.spans import render_scalar
    from moe_lint.errors import UsageError

    found = bridge_recipes.lookup(recipe)
    if found is None:
        raise UsageError(
            "--emit-format hydra writes run_recipe.py overrides of a released Bridge recipe: "
            "plan with --model RECIPE_NAME (e.g. deepseek_v3_pretrain_config)"
        )
    if mixed is not None and mixed != found.mixed_precision:
        raise UsageError(
            f"--precision changes recipe {recipe}'s mixed-precision config to {mixed}, which a "
            "Hydra override cannot replace: use the YAML form (--emit-format yaml)"
        )
    dotted = _written_values(req, cand)
    if "model.seq_length" in req.values or req.seq:
        dotted.setdefault("model.seq_length", req.seq)
        dotted.setdefault("dataset.seq_length", req.seq)
    dotted.setdefault("train.global_batch_size", cand.plan.gbs)
    dotted.setdefault("train.micro_batch_size", cand.plan.mbs)
    words = []
    for key, value in dotted.items():
        if found.values.get(key) == value or (value is None and key not in found.values):
            continue  # the recipe already sets it (or leaves it unset)
        text = f"{key}={render_scalar(value)}"  # Hydra reads the value as YAML does
        if parse_override(text).value != value:  # pragma: no cover - the grammar round-trips
            raise UsageError(f"cannot write {key} = {value!r} as a Hydra override")
        words.append(shlex.quote(text))  # one shell word, quoted only when it needs it
    world = cand.plan.world
    per_node = getattr(fs, "gpus_per_node", None) or default_gpus_per_node(req.gpu)
    per_node = per_node if world % per_node == 0 else world
    lines = [
        "#!/bin/bash",
        _directive(req, fs, None, world),
        header(cand, rank, f"recipe {recipe}").rstrip("\n"),
        f"torchrun --nnodes={world // per_node} --nproc_per_node={per_node} "
        f"scripts/training/run_recipe.py --recipe {recipe} \\",
    ]
    lines += [f"    {w} \\" for w in words[:-1]] + ([f"    {words[-1]}"] if words else [])
    if not words:
        lines[-1] = lines[-1].removesuffix(" \\")
    return "\n".join(lines) + "\n"
