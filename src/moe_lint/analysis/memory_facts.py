"""The one bridge from derived facts to the memory model (memory.py), and back.

It builds the model's inputs: :func:`config_values` (the config values, with the recipe
settings an override file leaves out) and :func:`model_inputs` (derive's sizes, batch shape and
pipeline placement, with the assumption the estimate makes where derive could not compute
one). It turns the estimate into facts for the rules, lazily: the estimate (and the levers,
which re-run it for each candidate change) only runs when a rule reads one of these facts, so
files without an architecture or a GPU type pay nothing. When the model cannot be built (no
preset, no sequence length, no --gpu), the facts are missing and the memory rules skip.
"""

from __future__ import annotations

from typing import Any

from moe_lint.analysis import facts as registry
from moe_lint.analysis.derive import Facts
from moe_lint.bounds import bounded_repr
from moe_lint.config.load import location
from moe_lint.config.memory_settings import memory_settings
from moe_lint.config.normalize import Config
from moe_lint.errors import InputError


def _shown(value: object) -> str:
    """A value from a file or command line, echoed bounded (bounds.MAX_REPR_CHARS)."""
    return bounded_repr(value)


#: Facts this module provides (declared in analysis/facts.py).
MEMORY_FACTS = registry.computed_by("memory_facts")


def _plain(facts: Facts) -> dict[str, Any]:
    return {name: fact.value for name, fact in facts.values.items()}


def model_inputs(plain: dict[str, Any]) -> dict[str, Any]:
    """The derived facts as the memory model reads them (memory.INPUTS), with the assumption
    the estimate makes where derive could not compute one, listed under ``assumed``.

    derive leaves DP / EDP out when the world does not divide, and MBS / microbatches when the
    file leaves the batch to the recipe; the estimate still runs: DP = EDP = 1 at least, MBS 1,
    GBS // (MBS·DP) microbatches, or PP·VPP (enough to fill the pipeline) without a GBS.
    The parallel sizes, the world and the sequence length are never assumed
    (:func:`_missing_inputs` skips the memory facts without them).
    """
    out = dict(plain)
    if any(out.get(n) is None for n in ("tp", "pp", "cp", "ep", "etp", "world")):
        return out  # memory.estimate names what is missing
    tp, pp, cp, ep, etp, world = (int(out[n]) for n in ("tp", "pp", "cp", "ep", "etp", "world"))
    notes: list[str] = []
    if not out.get("dp"):
        out["dp"] = max(1, world // (tp * pp * cp))
    if not out.get("edp"):
        out["edp"] = max(1, world // (etp * ep * pp))
    if out.get("sp") is None:
        out["sp"] = tp > 1  # what derive assumes for the token counts too
    out.setdefault("vpp", None)
    if not out.get("mbs"):
        out["mbs"] = 1
        notes.append("micro_batch_size unknown -> 1")
    if out.get("microbatches") is None:
        gbs = out.get("gbs")
        fill = pp * int(out["vpp"] or 1)
        out["microbatches"] = (
            max(1, int(gbs) // (int(out["mbs"]) * int(out["dp"]))) if gbs else fill
        )
        if not gbs:
            notes.append(
                f"global batch size unknown -> {out['microbatches']} micro-batches "
                "(enough to fill PP)"
            )
    out["assumed"] = tuple(notes)
    return out


class _Memory:
    """One file's memory facts: the estimate first, then each extra (levers, EDP 2, selective
    recompute) only when a rule reads it, since each re-runs the model. Each loader is given
    the facts (Facts.lazy), so that this object, which they hold, does not hold them."""

    def __init__(self, cfg: Config, raw_settings: dict[str, Any]) -> None:
        self.cfg, self.raw = cfg, raw_settings
        self.state: tuple[Any, ...] | None = None  # (settings, values, plain, estimate)

    def _miss_all(self, facts: Facts, reason: str) -> None:
        for name in MEMORY_FACTS:
            if name not in facts.values:
                facts.miss(name, f"memory model: {reason}")
        facts.lazy = {k: v for k, v in facts.lazy.items() if k not in MEMORY_FACTS}

    def base(self, facts: Facts) -> None:
        reason = _missing_inputs(facts, self.cfg)
        if reason is not None:
            self._miss_all(facts, reason)
            return
        settings, warn_fraction, margin = memory_settings(self.raw, "memory settings")
        state = _load(facts, self.cfg, settings, warn_fraction, margin)
        if state is None:
            self._miss_all(facts, "the estimate could not be built")
            return
        self.state = state

    def _ready(self, facts: Facts) -> bool:
        if self.state is None and "mem_peak_gib" in facts.lazy:
            facts.resolve("mem_peak_gib")
        return self.state is not None

    def levers(self, facts: Facts) -> None:
        if self._ready(facts):
            _levers(facts, *self.state)  # type: ignore[misc]

    def edp2(self, facts: Facts) -> None:
        if self._ready(facts):
            _edp2(facts, *self.state)  # type: ignore[misc]

    def selective(self, facts: Facts) -> None:
        if not self._ready(facts):
            return
        settings, values, plain, est, versions = self.state  # type: ignore[misc]
        if est.usable_gib is None:
            for name in ("selective_fits", "selective_needs_offload"):
                facts.miss(name, "no --gpu given: GPU memory unknown")
            return
        how = _selective_fits(values, plain, settings, est, versions)
        modules = ", ".join(
            selective_trial_modules(bool(values.get("model.multi_latent_attention")))
        )
        facts.put(
            "selective_fits",
            how is not None,
            f"selective recompute of [{modules}] "
            + {"selective": "fits", "offload": "fits with full optimizer CPU offload",
               None: "does not fit, even with full optimizer CPU offload"}[how],
        )  # fmt: skip
        facts.put("selective_needs_offload", how == "offload", "")


def attach(facts: Facts, cfg: Config, raw_settings: dict[str, Any]) -> None:
    """Register the lazy loaders of the memory facts (nothing is imported until one is read)."""
    memory = _Memory(cfg, raw_settings)
    # The registry names the function that puts each fact; its loader runs that function.
    loaders = {
        "memory_facts._load": memory.base,
        "memory_facts._levers": memory.levers,
        "memory_facts._edp2": memory.edp2,
        "memory_facts._Memory.selective": memory.selective,
    }
    for name in MEMORY_FACTS:
        facts.lazy[name] = loaders[registry.BY_NAME[name].computed_by]


#: Fields every Bridge pretrain/SFT recipe sets that an override file usually leaves out; the
#: MCore defaults would make the estimate far too pessimistic (no optimizer sharding at all).
RECIPE_ASSUMPTIONS = {
    "ddp.use_distributed_optimizer": True,
    "optimizer.use_distributed_optimizer": True,
}


def config_values(cfg: Config) -> dict[str, Any]:
    """Effective values for the memory model, recipe settings filled where the file is silent."""
    # Lazy: the memory model (~40 ms to import) loads only when a memory fact or estimate is needed.
    from moe_lint.analysis.memory import values_from_config

    values = values_from_config(cfg)
    if cfg.form != "full-dump":
        for dotted, value in RECIPE_ASSUMPTIONS.items():
            if not any(cfg.explicit(d) for d in RECIPE_ASSUMPTIONS):
                values[dotted] = value
    return values


def run_estimate(cfg: Config, facts: Facts, settings: Any) -> Any:
    """The memory estimate for a config (raises MemoryInputError when it cannot be built)."""
    # Lazy: the memory model (~40 ms to import) loads only when a memory fact or estimate is needed.
    from moe_lint.analysis.memory import estimate

    _refuse_type_problems(cfg)
    capacity = facts.values["gpu_hbm_gib"].value if "gpu_hbm_gib" in facts.values else None
    return estimate(
        config_values(cfg), model_inputs(_plain(facts)), settings, capacity, dict(cfg.versions)
    )


def _refuse_type_problems(cfg: Config) -> None:
    """A value Bridge would reject (TP = 0, a negative size, past a bound of bounds.py) is
    the file's input error here too, as ``moe-lint check`` reports it (SCH002, exit 2):
    the memory model must not divide by it."""
    if not cfg.type_problems:
        return
    first = cfg.type_problems[0]
    if first.path in cfg.override_text:
        where = f"override {bounded_repr(cfg.override_text[first.path])}: "
    else:
        line, column, _, _ = location(cfg.doc, cfg.physical(first.path))
        where = f"line {line}, column {column}: "
    more = len(cfg.type_problems) - 1
    raise InputError(
        f"{where}{first.path} = {bounded_repr(first.value)}: {first.message} [SCH002]"
        + (f" (and {more} more)" if more else "")
    )


def _missing_inputs(facts: Facts, cfg: Config) -> str | None:
    """Why the memory facts cannot be had, found without importing the model.

    Linting needs a verdict, so without a GPU type there is nothing to report and the model
    is not run (``moe-lint estimate`` runs it without one).
    """
    if "gpu_hbm_gib" not in facts.values:
        return "no --gpu given: GPU memory unknown"
    if "seq" not in facts.values:
        return "the sequence length is not set"
    for name in ("tp", "pp", "cp", "ep", "etp", "world"):
        if name not in facts.values:
            return f"{name} could not be derived ({facts.missing.get(name, 'unknown')})"
    for dotted in ("model.num_layers", "model.hidden_size"):
        if dotted in cfg.unknown or cfg.get(dotted) is None:
            return f"{dotted} is not set (pass --model)"
    return None


def _load(
    facts: Facts, cfg: Config, settings: Any, warn_fraction: float, margin: float
) -> tuple[Any, ...] | None:
    """Run the estimate and put the base facts; returns the state the extras re-use."""
    # Lazy: the memory model (~40 ms to import) loads only when a memory fact or estimate is needed.
    from moe_lint.analysis.memory import MemoryInputError, estimate
    from moe_lint.analysis.memory.verdict import judge

    try:
        values = config_values(cfg)
        plain = model_inputs(_plain(facts))
        capacity = facts.values["gpu_hbm_gib"].value if "gpu_hbm_gib" in facts.values else None
        est = estimate(values, plain, settings, capacity, dict(cfg.versions))
    except (MemoryInputError, KeyError, ValueError, TypeError, ZeroDivisionError):
        return None
    worst, lower, upper = est.worst, est.lower_worst, est.upper_worst
    top = sorted(worst.terms, key=lambda t: t.gib, reverse=True)[:3]
    top_text = ", ".join(f"{t.name} {t.gib:.1f} GiB" for t in top)
    facts.put("mem_peak_gib", worst.total_gib,
              f"central estimate of PP stage {worst.stage} = {worst.total_gib:.1f} GiB "
              f"({worst.peak_phase}; largest: {top_text})")  # fmt: skip
    facts.put("mem_lower_gib", lower.total_gib,
              f"lower bound of PP stage {lower.stage} = {lower.total_gib:.1f} GiB "
              "(only certain terms)")  # fmt: skip
    facts.put("mem_upper_gib", upper.total_gib,
              f"upper band of PP stage {upper.stage} = {upper.total_gib:.1f} GiB")  # fmt: skip
    facts.put("mem_stage", worst.stage, f"worst pipeline stage {worst.stage}")
    facts.put("mem_top_terms", top_text, "largest terms of the worst stage")
    if est.usable_gib is None:
        for name in ("mem_usable_gib", "mem_headroom_gib", "mem_verdict"):
            facts.miss(name, "no --gpu given: GPU memory unknown")
    else:
        usable = est.usable_gib
        facts.put("mem_usable_gib", usable,
                  f"usable = {est.capacity_gib:.1f} GiB ({facts.values['gpu_name'].value}) "
                  f"- headroom {settings.headroom_gib:g} GiB = {usable:.1f} GiB")  # fmt: skip
        facts.put("mem_headroom_gib", usable - worst.total_gib,
                  f"headroom = {usable:.1f} - {worst.total_gib:.1f} = "
                  f"{usable - worst.total_gib:.1f} GiB")  # fmt: skip
        verdict = judge(est, warn_fraction, margin)
        if verdict is not None:  # always, with a GPU
            facts.put("mem_verdict", verdict.label, verdict.text())
    return settings, values, plain, est, dict(cfg.versions)


def _levers(facts: Facts, settings: Any, values: Any, plain: Any, est: Any, versions: Any) -> None:
    # Lazy: the memory model (~40 ms to import) loads only when a memory fact or estimate is needed.
    from moe_lint.analysis.memory import MemoryInputError, levers

    try:
        found = levers(values, plain, settings, est.capacity_gib, versions, base=est)[:3]
    except (MemoryInputError, KeyError, ValueError, TypeError, ZeroDivisionError):
        found = []
    text = "; ".join(f"{lv.name}: {lv.delta_gib:+.1f} GiB ({lv.requires})" for lv in found)
    facts.put("mem_levers", text or "no single change found", "levers re-run the model")


def _edp2(facts: Facts, settings: Any, values: Any, plain: Any, est: Any, versions: Any) -> None:
    # Lazy: the memory model (~40 ms to import) loads only when a memory fact or estimate is needed.
    from moe_lint.analysis.memory import MemoryInputError, estimate

    derived = _plain(facts)
    if derived.get("edp") != 1 or (derived.get("ep") or 1) <= 1 or "world" not in derived:
        facts.miss("edp2_saving_gib", "EDP is not 1")
        return
    doubled = model_inputs(
        {**derived, "edp": 2, "world": 2 * derived["world"], "dp": 2 * (derived.get("dp") or 1)}
    )
    try:
        trial = estimate(values, doubled, settings, est.capacity_gib, versions, bounds=False)
    except (MemoryInputError, KeyError, ValueError, TypeError, ZeroDivisionError):
        facts.miss("edp2_saving_gib", "memory model could not re-run at EDP 2")
        return
    saving = est.worst.total_gib - trial.worst.total_gib
    facts.put("edp2_saving_gib", saving,
              f"EDP 1 -> 2 lowers the worst stage by {saving:.1f} GiB (memory model)")  # fmt: skip


#: The long-context guidance's selective set (the seed's "up_proj, norm, moe, mlp" for DSV3 at
#: 128K on H100, in Megatron-Core's labels); mla_up_proj only where MLA is on (RCP005).
SELECTIVE_TRIAL = ("mla_up_proj", "layernorm", "moe", "mlp")


def selective_trial_modules(mla: bool) -> list[str]:
    """The recompute set RCP001 tries (and names in its hint)."""
    return [m for m in SELECTIVE_TRIAL if mla or m != "mla_up_proj"]


def _selective_fits(
    values: dict[str, Any], plain: dict[str, Any], settings: Any, est: Any, versions: Any
) -> str | None:
    """Would the guidance's selective recompute fit where full recompute is used?

    "selective" when it fits as is, "offload" when it fits only with the whole optimizer state
    on the host (the seed pairs the two at DSV3 128K), None when neither fits. A trial that
    cannot be built counts as fitting (the rule then keeps its plain advice).
    """
    # Lazy: the memory model (~40 ms to import) loads only when a memory fact or estimate is needed.
    from moe_lint.analysis.memory import MemoryInputError, estimate

    if values.get("model.recompute_granularity") != "full":
        return "selective"
    modules = selective_trial_modules(bool(values.get("model.multi_latent_attention")))
    trial_values = {**values, "model.recompute_granularity": "selective",
                    "model.recompute_modules": modules, "model.recompute_method": None,
                    "model.recompute_num_layers": None}  # fmt: skip
    offload_values = {**trial_values, "optimizer.optimizer_cpu_offload": True,
                      "optimizer.optimizer_offload_fraction": 1.0}  # fmt: skip
    trials = [("selective", trial_values)]
    # Megatron-Core offloads optimizer state only with the distributed optimizer.
    if values.get("optimizer.use_distributed_optimizer") or values.get(
        "ddp.use_distributed_optimizer"
    ):
        trials.append(("offload", offload_values))
    for name, trial_input in trials:
        try:
            trial = estimate(trial_input, plain, settings, est.capacity_gib, versions, bounds=False)
        except (MemoryInputError, KeyError, ValueError, TypeError, ZeroDivisionError):
            return "selective"
        if trial.fits is None or trial.fits:
            return name
    return None
