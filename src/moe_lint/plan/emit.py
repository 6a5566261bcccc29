"""A plan as the user can launch it: a Bridge override file naming the model, or (when the base
was a Bridge YAML or a recipe) that config with the plan's values written over it; or, for a plan
of a released Bridge recipe, the ``run_recipe.py --recipe NAME`` command with the plan as Hydra
overrides (``--emit-format hydra``); or a Megatron-LM launch script whose flags read back as the
plan (``--emit-format megatron-lm``)."""

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


#: The Megatron-LM flag preferred for a field several flags set (the others are aliases or
#: set more than the field: --bf16 also sets the optimizer's).
_MLM_PREFERRED = {
    "model.virtual_pipeline_model_parallel_size": "--num-virtual-stages-per-pipeline-rank"
}
#: Fields a Megatron-LM argument list leaves to the run (data, tokenizer, logging, checkpoints)
#: and Bridge-only sections with no Megatron-LM flag: not compared in the round trip.
#: Fields validate_args / TransformerConfig derive from others when no flag gives them.
_MLM_DERIVED = frozenset({"model.num_query_groups", "model.kv_channels", "model.ffn_hidden_size"})
#: Flags Megatron-LM reads only together with another (core_transformer_config_from_args
#: drops num_query_groups without --group-query-attention).
_MLM_NEEDS = {"--num-query-groups": "--group-query-attention"}
_MLM_RUN_SECTIONS = ("dataset.", "tokenizer.", "logger.", "checkpoint.", "comm_overlap.", "rng.")
_MLM_ROUNDS = 5


def emit_megatron_lm(
    req: Request, cand: Candidate, model: str, fs: Any, mixed: str | None, rank: int | None,
    yaml_text: str,
) -> str:  # fmt: skip
    """The plan as a Megatron-LM launch script: ``torchrun ... pretrain_gpt.py`` with the model's
    architecture (``MODEL_ARGS``) and the plan (``PLAN_ARGS``) as Megatron-LM flags, each
    spelled from Megatron-LM's own parser table (data/mlm_flags.json) with its defaults.

    The script is written only when it reads back as the plan: moe-lint's Megatron-LM reader
    (validate_args' derivations included) must give every architecture field and every value
    the plan writes exactly as the Bridge form (``yaml_text``) has them; a field no flag can
    say is a usage error naming it, never a silently different run."""
    # Lazy: loaded only on the path that needs it (the planner itself is imported lazily).
    from moe_lint.config.load import parse_text
    from moe_lint.config.mlm_args import flag_table
    from moe_lint.config.settings import Settings, default_gpus_per_node, preset_fields
    from moe_lint.errors import UsageError
    from moe_lint.linting import prepare

    cfg, _, _ = prepare(parse_text(yaml_text, "<plan>.yaml"), Settings(), [], {})
    # What the Bridge form says of every value the plan writes and every architecture field.
    keys = [k for k, v in _written_values(req, cand).items() if v is not None]
    keys += [f"model.{k}" for k in preset_fields(model)]
    want = {k: cfg.value(k) for k in keys if not k.startswith(_MLM_RUN_SECTIONS)}
    want.update(_mlm_assumed(req))
    flags = _mlm_flags_by_path(flag_table()["flags"])
    world = cand.plan.world
    per_node = getattr(fs, "gpus_per_node", None) or default_gpus_per_node(req.gpu)
    per_node = per_node if world % per_node == 0 else world
    chosen: dict[str, list[str]] = {}  # flag -> its words, in the order first needed
    # The layout always says itself; with a pipeline layout Megatron-LM derives the virtual
    # size from it and rejects both together (validate_args, MLM005).
    layout = want.get("model.pipeline_model_parallel_layout") is not None
    for key in plan_values(req, cand.plan):
        if layout and key == "model.virtual_pipeline_model_parallel_size":
            continue
        written = _mlm_words(key, want.get(key), flags) if key in want else None
        if written is not None:
            chosen.setdefault(written[0], written[1])
    unwritable: dict[str, str] = {}
    for _ in range(_MLM_ROUNDS):
        script = _mlm_script(req, cand, fs, model, rank, chosen, want, world, per_node)
        read = _mlm_read(script)
        got = read[1]
        wrong = {k: v for k, v in want.items() if not _mlm_same(k, got.value(k), v, want)}
        if not wrong:
            return _mlm_checked(script, cand, read)
        progress = False
        # What Megatron-LM derives from other flags (num_query_groups from the head count,
        # kv_channels, ffn_hidden_size) is written only when it is still wrong once the rest
        # is right: --group-query-attention with MLA is an error (MLM009).
        first = {k: v for k, v in wrong.items() if k not in _MLM_DERIVED}
        for key, value in (first or wrong).items():
            written = _mlm_words(key, value, flags)
            if written is None:
                unwritable[key] = f"{value!r} (Megatron-LM reads {got.value(key)!r})"
                continue
            flag, words = written
            if chosen.get(flag) != words:
                if flag in _MLM_NEEDS:
                    chosen.setdefault(_MLM_NEEDS[flag], [_MLM_NEEDS[flag]])
                chosen[flag] = words
                progress = True
        if not progress:
            break
    missing = unwritable or {
        k: f"{v!r} (Megatron-LM reads {got.value(k)!r})" for k, v in wrong.items()
    }
    shown = "; ".join(f"{k} = {why}" for k, why in list(missing.items())[:4])
    raise UsageError(
        f"--emit-format megatron-lm: no Megatron-LM argument list says this plan exactly "
        f"({shown}); use the Bridge YAML form (--emit-format yaml)"
    )


def _mlm_checked(script: str, cand: Candidate, read: tuple[Any, Any, Any, Any]) -> str:
    """The script as linted: an error is a usage error naming it (never a script that fails
    at startup); the memory line is what ``moe-lint estimate`` says of this script, whose
    Megatron-LM defaults (fusions, dropout) can differ from the Bridge form's. ``read``: the
    script as :func:`_mlm_read` made it (document, config, facts, settings)."""
    # Lazy: loaded only on the path that needs it (the planner itself is imported lazily).
    from moe_lint.analysis.memory_facts import run_estimate
    from moe_lint.config.memory_settings import memory_settings
    from moe_lint.config.settings import Settings
    from moe_lint.engine.catalogue import shipped_catalogue
    from moe_lint.errors import UsageError
    from moe_lint.linting import lint_document

    doc, cfg, facts, fs = read
    result = lint_document(doc, shipped_catalogue(), Settings(), [], {})
    errors = [f for f in result.findings if f.severity == "error"]
    if errors:
        raise UsageError(
            f"--emit-format megatron-lm: Megatron-LM would reject this plan's arguments "
            f"({errors[0].code}: {errors[0].message}); use the Bridge YAML form"
        )
    est = run_estimate(cfg, facts, memory_settings(fs.memory, "memory settings")[0])
    central, lower = est.worst.total_gib, est.lower_worst.total_gib
    if abs(central - cand.memory_gib) < 0.05:
        return script
    line = (
        f"# memory as Megatron-LM reads these arguments: {central:.1f} GiB, lower bound "
        f"{lower:.1f} (the Bridge form: {cand.memory_gib:.1f}; its defaults differ, "
        "`moe-lint estimate` shows each term)"
    )
    head, sep, rest = script.partition("\n# Megatron-LM arguments:")
    return head + "\n" + line + sep + rest


def _mlm_assumed(req: Request) -> dict[str, Any]:
    """What the step-time model assumes that Megatron-LM's defaults do not give: bf16 (or the
    FP8 / FP4 recipe planned for) and, for MoE, grouped-GEMM experts (the kernels its expert
    GEMM efficiency is of, which moe_act recompute also needs: RCP004)."""
    out: dict[str, Any] = {"model.bf16": True}
    if req.precision == "fp8":
        out.update({"model.fp8": "e4m3", "model.fp8_recipe": req.fp8_recipe or "delayed"})
    elif req.precision == "fp4":
        out.update({"model.fp4": "e2m1", "model.fp4_recipe": req.fp8_recipe or "nvfp4"})
    if req.arch.is_moe:
        out["model.moe_grouped_gemm"] = True
    return out


def _mlm_flags_by_path(table: dict[str, Any]) -> dict[str, list[tuple[str, dict[str, Any], bool]]]:
    """Each config path and the flags that set it (negated for a ``!path``), the preferred
    flag first, then those named like the field, then the rest in table order."""
    out: dict[str, list[tuple[str, dict[str, Any], bool]]] = {}
    for flag, entry in table.items():
        for raw in entry.get("paths", ()):
            out.setdefault(raw.lstrip("!"), []).append((flag, entry, raw.startswith("!")))
    for path, options in out.items():
        name = path.rsplit(".", 1)[-1]
        options.sort(key=lambda o: (o[0] != _MLM_PREFERRED.get(path), o[1].get("dest") != name))
    return out


def _mlm_words(
    path: str, value: Any, flags: dict[str, list[tuple[str, dict[str, Any], bool]]]
) -> tuple[str, list[str]] | None:
    """The flag and words that set ``path`` to ``value`` (None: no flag can)."""
    for flag, entry, negate in flags.get(path, ()):
        kind = entry["kind"]
        if kind in ("store_true", "store_false"):
            sets = (kind == "store_true") != negate
            if isinstance(value, bool) and value == sets:
                return flag, [flag]
            continue
        if kind == "store_const":
            if entry.get("const") == value:
                return flag, [flag]
            continue
        if kind != "store" or isinstance(value, bool) or value is None:
            continue
        if entry.get("nargs") in ("+", "*"):
            items = value if isinstance(value, list) else [value]
            return flag, [flag, *(str(v) for v in items)]
        if isinstance(value, list):  # a pattern (moe_layer_freq): Megatron-LM evaluates it
            return flag, [flag, "[" + ",".join(str(v) for v in value) + "]"]
        if entry.get("choices") and value not in entry["choices"]:
            continue
        return flag, [flag, str(value)]
    return None


def _mlm_script(
    req: Request, cand: Candidate, fs: Any, model: str, rank: int | None,
    chosen: dict[str, list[str]], want: dict[str, Any], world: int, per_node: int,
) -> str:  # fmt: skip
    plan_paths = set(_written_values(req, cand))
    arch: list[str] = []
    layout: list[str] = []
    # Lazy: the Megatron-LM flag table (read once per process, mlm_args.flag_table caches it).
    from moe_lint.config.mlm_args import flag_table

    table = flag_table()["flags"]
    for flag, words in chosen.items():
        paths = {p.lstrip("!") for p in table[flag].get("paths", ())}
        (layout if paths & plan_paths else arch).append(
            "    " + " ".join(shlex.quote(w) for w in words)
        )
    lines = [
        "#!/bin/bash",
        # No model= here: the flags alone say the architecture, as Megatron-LM reads them.
        _directive(req, fs, None, world),
        header(cand, rank, model).rstrip("\n"),
        "# Megatron-LM arguments: the model's architecture (MODEL_ARGS) and the plan's layout",
        "# (PLAN_ARGS), spelled from Megatron-LM's parser; add the data, tokenizer, optimizer",
        "# and checkpoint arguments of your run.",
        "MODEL_ARGS=(",
        *arch,
        ")",
        "PLAN_ARGS=(",
        *layout,
        ")",
        f"torchrun --nnodes {world // per_node} --nproc_per_node {per_node} pretrain_gpt.py \\",
        '    "${MODEL_ARGS[@]}" "${PLAN_ARGS[@]}"',
    ]
    return "\n".join(lines) + "\n"


def _mlm_read(script: str) -> tuple[Any, Any, Any, Any]:
    """The document, config (its defaults applied), facts and settings moe-lint's Megatron-LM
    reader makes of ``script``."""
    # Lazy: loaded only on the path that needs it (the planner itself is imported lazily).
    from moe_lint.config.load import mlm_document
    from moe_lint.config.mlm_args import parse_script
    from moe_lint.config.settings import Settings
    from moe_lint.linting import prepare

    doc = mlm_document(parse_script(script, "<plan>.sh"))
    return (doc, *prepare(doc, Settings(), [], {}))


def _mlm_same(path: str, got: Any, want: Any, values: dict[str, Any]) -> bool:
    """Whether the read-back value is the plan's (a layer-frequency pattern compares by the
    layers it marks)."""
    if got == want:
        return True
    if path == "model.moe_layer_freq":
        # Lazy: the parameter counter's pattern reader, only for this comparison.
        from moe_lint.analysis.params import PatternError, moe_layer_pattern

        layers = values.get("model.num_layers") or 0
        try:
            return moe_layer_pattern(got, layers) == moe_layer_pattern(want, layers)
        except (PatternError, TypeError, ValueError):
            return False
    return False
