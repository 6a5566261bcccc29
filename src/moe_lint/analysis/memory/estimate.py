"""Putting a stage together: states, activations, buffers and margins into each pipeline rank's
peak, three ways (lower bound, central estimate, band)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from functools import cached_property, lru_cache
from typing import Any, Literal, TypeVar, cast

from moe_lint.analysis.memory.activations import _activation_terms, _rho
from moe_lint.analysis.memory.allocator import overhead
from moe_lint.analysis.memory.buffers import _fixed_terms, _graph_term
from moe_lint.analysis.memory.context import _context, _Ctx
from moe_lint.analysis.memory.placement import _placement, _Stage
from moe_lint.analysis.memory.results import ALLOCATOR, BAND, Estimate, StageEstimate, Term
from moe_lint.analysis.memory.states import (
    _Bytes,
    _peft_adapters,
    _rank_params,
    _state_bytes,
    _state_terms,
)
from moe_lint.analysis.params import Arch, LayerParams, count_params
from moe_lint.config.memory_settings import MemorySettings
from moe_lint.config.versions import Version
from moe_lint.records import record, replace

_T = TypeVar("_T")


@record
class Reuse:
    """What one caller shares between many estimates (the planner's thousands of layouts of
    one base config): a rank's state terms are computed once per ``states`` name, its
    activation terms once per ``activations`` name, its parameter counts once per ``params``
    name and the bytes per parameter once per ``bytes`` name (the terms and the bytes in
    each mode). The caller names what each depends on in its configs (the planner: the plan
    fields each reads, which also fix the pipeline placement); configs with the same name
    must have the same terms. ``terms`` holds them all under :meth:`key`. The notes a reused
    computation would add to the assumptions are not added again: a caller that reuses terms
    reads totals."""

    states: Hashable
    activations: Hashable
    params: Hashable
    bytes: Hashable
    terms: dict[tuple[Hashable, ...], Any]

    def key(self, kind: str, mode: str, rank: int) -> tuple[Hashable, ...]:
        """Where ``terms`` holds one kind (``state``, ``activation``, ``params`` or
        ``bytes``) of a rank (the counts do not depend on the mode, the bytes on the rank)."""
        if kind == "params":
            return (kind, self.params, rank)
        if kind == "bytes":
            return (kind, self.bytes, mode)
        return (kind, self.states if kind == "state" else self.activations, mode, rank)


def _reused(reuse: Reuse | None, kind: str, ctx: _Ctx, rank: int,
            compute: Callable[[], _T]) -> _T:  # fmt: skip
    """``compute()``, or what ``reuse`` holds of this kind for this rank (:class:`Reuse`)."""
    if reuse is None:
        return compute()
    key = reuse.key(kind, ctx.mode, rank)
    found = reuse.terms.get(key)
    if found is None:
        found = reuse.terms[key] = compute()
    return cast(_T, found)


#: One estimate's state terms in one mode, by what they are computed from (_rank_state_terms).
_StateMemo = dict[tuple[Any, ...], list[Term]]


class _Shared:
    """What every stage of one estimate shares, each computed when a stage first asks (in the
    order the first stage asks, so the context's notes keep their order): the bytes per
    parameter (asked only when a rank's state terms are not reused), the fixed terms and the
    allocator overhead, none of which depends on the stage."""

    def __init__(self, ctx: _Ctx, reuse: Reuse | None) -> None:
        self.ctx = ctx
        self.reuse = reuse
        #: State terms by (stage shape, adapters): :func:`_rank_state_terms`.
        self.states: _StateMemo = {}

    @cached_property
    def bytes(self) -> _Bytes:
        return _bytes(self.ctx, self.reuse)

    @cached_property
    def fixed(self) -> list[Term]:
        return _fixed_terms(self.ctx)

    @cached_property
    def overhead(self) -> tuple[float, str]:
        return overhead(self.ctx)


def _bytes(ctx: _Ctx, reuse: Reuse | None) -> _Bytes:
    """The bytes per parameter of the context (:func:`_state_bytes`), reused by name."""
    return _reused(reuse, "bytes", ctx, 0, lambda: _state_bytes(ctx))


def _stage_estimate(
    ctx: _Ctx,
    stage: _Stage,
    params: tuple[LayerParams, ...],
    shared: _Shared,
    reuse: Reuse | None = None,
) -> StageEstimate:
    """Terms of one rank; the allocated peak is states + max(activations, optimizer step,
    checkpoint load), or states + activations + step under full-iteration CUDA graphs (the
    graph's private pool is not released to the eager optimizer step; not in the lower bound).
    The load phase (a resumed run's optimizer-state load, before the first step) counts because
    the allocator's peak counter runs from process start (Bridge reports max_allocated)."""
    states = _reused(reuse, "state", ctx, stage.rank,
                     lambda: _rank_state_terms(ctx, stage, params, shared.bytes, reuse,
                                               shared.states))  # fmt: skip
    terms = states + _reused(reuse, "activation", ctx, stage.rank,
                             lambda: _activation_terms(ctx, stage))  # fmt: skip
    graph = _graph_term(ctx, stage)
    if graph is not None:
        terms.append(graph)
    by_kind: dict[str, list[float]] = {}  # each kind's GiB in term order, in one pass
    for t in terms:
        by_kind.setdefault(t.kind, []).append(t.gib)
    state = sum(by_kind.get("state", ()))
    act = sum(by_kind.get("activation", ()))
    step = sum(by_kind.get("step", ()))
    load = sum(by_kind.get("load", ()))
    pooled = (str(ctx.v.get("model.cuda_graph_impl", default="none")) == "full_iteration"
              and ctx.mode != "lower")  # fmt: skip
    phases = [("forward/backward", act), ("optimizer step", step)]
    if pooled:
        phases = [("forward/backward + optimizer step (full-iteration graph pool)", act + step)]
    if load:
        phases.append(("checkpoint load", load))
    phase, peak = max(phases, key=lambda item: item[1])
    allocated = state + peak
    fraction, why = shared.overhead
    margin = Term(
        ALLOCATOR,
        allocated * fraction,
        f"{fraction:.3g} × allocated peak {allocated:.2f} GiB: reserved − allocated ({why})",
        "margin",
    )
    terms += [*shared.fixed, margin]
    if ctx.mode == "upper":
        band = ctx.settings.band
        terms.append(
            Term(
                BAND,
                allocated * band,
                f"{band:g} × allocated peak {allocated:.2f} GiB (at least the largest "
                "under-prediction of the published measurements)",
                "margin",
            )
        )
    fixed = sum(t.gib for t in terms if t.kind in ("fixed", "margin"))
    return StageEstimate(
        stage.rank,
        tuple(terms),
        allocated + fixed,
        allocated,
        phase,
        state + act,
        state + step,
        allocated + margin.gib,
        state + load,
    )


def _rank_state_terms(ctx: _Ctx, stage: _Stage, params: tuple[LayerParams, ...], b: _Bytes,
                      reuse: Reuse | None = None, memo: _StateMemo | None = None,
                      ) -> list[Term]:  # fmt: skip
    """Weights, gradients and optimizer states of one rank (and its step/load copies).

    With ``memo`` (one estimate's, in one mode: :class:`_Shared`), a rank that holds the same
    layer kinds in the same order, the same embedding, head and MTP depths and the same
    adapters as a rank before it gets that rank's terms: they are computed from nothing else
    (the parameter counts are per layer kind, params.count_params; the terms name no rank),
    and the middle ranks of a pipeline are alike."""
    adapters = _peft_adapters(ctx, stage)

    def compute() -> list[Term]:
        rp = _reused(reuse, "params", ctx, stage.rank, lambda: _rank_params(ctx, stage, params))
        return _state_terms(ctx, rp, b, adapters)

    if memo is None:
        return compute()
    kinds = ctx.arch.layers
    key = (tuple([kinds[i] for i in stage.layers]), stage.embedding, stage.head, stage.mtp,
           adapters)  # fmt: skip
    found = memo.get(key)
    if found is None:
        found = memo[key] = compute()
    return found


def states_lower_bound(
    values: Mapping[str, Any],
    facts: Mapping[str, Any],
    settings: MemorySettings | None = None,
    versions: Mapping[str, Version] | None = None,
    *,
    rank: int = 0,
    arch: Arch | None = None,
    reuse: Reuse | None = None,
) -> float:
    """GiB of the weights, gradients and optimizer states (the "state" terms of the lower
    bound) on pipeline rank ``rank``: a floor under that rank's lower bound, whose peak adds
    activations, buffers and the allocator margin to it (:func:`_stage_estimate`). The
    planner rejects a layout on it without computing the activations, and, since it does not
    depend on the micro-batch size or the dispatcher, once for all of them. With ``reuse``
    the terms are those the lower bound of the same rank then reuses (:class:`Reuse`)."""
    settings = settings or MemorySettings()
    ctx = _context(values, facts, settings, versions, arch=arch, mode="lower")
    placement = _placement(ctx, facts)
    stage = next((s for s in placement if s.rank == rank), placement[0])
    params = _layer_params(ctx.arch, ctx.tp)
    terms = _reused(reuse, "state", ctx, stage.rank,
                    lambda: _rank_state_terms(ctx, stage, params, _bytes(ctx, reuse),
                                              reuse))  # fmt: skip
    return sum(t.gib for t in terms if t.kind == "state")


#: Values that are never a mapping: tested before the slower ``Mapping`` ABC check.
_PLAIN = (str, int, float, list, type(None))

_SECTIONS = ("model", "train", "optimizer", "ddp", "mixed_precision", "dist", "dataset",
             "env_vars", "peft", "checkpoint")  # fmt: skip


def values_from_config(cfg: Any) -> dict[str, Any]:
    """Dotted values for :func:`estimate` from a normalized ``moe_lint.config.normalize.Config``.

    The file's raw sections, under the normalized values (which hold the model preset
    ``normalize`` applied, typed fields and untyped architecture fields such as
    ``q_lora_rank`` alike). Duck-typed to keep this module free of pydantic.
    """
    out: dict[str, Any] = {}
    # A value normalize refused (wrong type, past a bound of bounds.py) is not read raw either.
    refused = {p.path for p in getattr(cfg, "type_problems", ())}
    for section in _SECTIONS:
        raw = cfg.raw.get(section)
        if isinstance(raw, Mapping):
            for k, v in raw.items():  # a dump's ~600 values: the plain ones tested first
                if not isinstance(v, _PLAIN) and isinstance(v, Mapping) and "_target_" not in v:
                    continue
                dotted = f"{section}.{k}"
                if dotted not in refused:
                    out[dotted] = v
        elif raw is not None:
            out[section] = raw
    out.update({k: v for k, v in cfg.values.items() if k not in cfg.unknown and v is not None})
    _index_share_from_hf(out)
    return out


#: IndexShare fields GLM5Bridge.provider_bridge reads from the HF config with these defaults
#: (models/glm_moe_dsa/glm5_bridge.py: getattr(hf_config, "index_topk_freq", 1), ...).
_INDEX_SHARE_DEFAULTS = {"dsa_indexer_topk_freq": 1, "dsa_indexer_skip_topk_offset": 0}


def _index_share_from_hf(out: dict[str, Any]) -> None:
    """A config dump written where the HF config lacked ``index_topk_freq`` shows the
    provider's default 1 (every layer computes top-k); the run reads the checkpoint's HF
    config (GLM5Bridge.provider_bridge), so the preset of ``model.hf_model_id`` (its HF config
    written down in data/models.yaml) decides IndexShare when the dump has the default."""
    hf_id = out.get("model.hf_model_id")
    if not hf_id or out.get("model.experimental_attention_variant") != "dsa":
        return
    if any(out.get(f"model.{k}", d) != d for k, d in _INDEX_SHARE_DEFAULTS.items()):
        return  # the file states IndexShare itself
    # Lazy: the preset table is read only for DSA dumps that name their checkpoint.
    from moe_lint.config.settings import model_presets

    target = str(hf_id).lower()
    for entry in model_presets().values():
        if str(entry.get("hf_id", "")).lower() == target:
            for key in _INDEX_SHARE_DEFAULTS:
                if entry.get(key) is not None:
                    out[f"model.{key}"] = entry[key]
            return


def estimate(
    values: Mapping[str, Any],
    facts: Mapping[str, Any],
    settings: MemorySettings | None = None,
    capacity_gib: float | None = None,
    versions: Mapping[str, Version] | None = None,
    *,
    bounds: bool | Literal["lower", "lower-only"] = True,
    ranks: frozenset[int] | None = None,
    arch: Arch | None = None,
    reuse: Reuse | None = None,
) -> Estimate:
    """Peak memory per pipeline rank of the config in ``values`` under the derived ``facts``.

    ``values`` are effective dotted config values (``model.*``, ``train.*``, ``optimizer.*``,
    ``ddp.*``, ``mixed_precision``, ``env_vars.*``); ``facts`` the derived sizes
    (:data:`INPUTS`, as memory_facts.model_inputs gives them) and optionally derive's
    ``placement``; ``versions`` the framework versions the user stated (package key ->
    Version; the newest release otherwise). ``bounds`` adds the lower bound and the band
    (levers compare central estimates only); ``"lower"`` adds the lower bound alone;
    ``"lower-only"`` computes only the lower bound (``stages`` then hold it too). ``ranks``
    limits the estimate to those pipeline ranks (the planner's search screens ranks 0, 1 and
    the last; a plan it shows gets every rank); ``arch`` is the architecture already read
    from ``values`` (the planner reads it once for thousands of estimates); ``reuse`` shares
    the ranks' state and activation terms with the caller's other estimates. Raises
    :class:`MemoryInputError` when a size, the model dimensions or the sequence length are
    missing.
    """
    settings = settings or MemorySettings()
    ctx = _context(values, facts, settings, versions, arch=arch,
                   mode="lower" if bounds == "lower-only" else "central")  # fmt: skip
    params = _layer_params(ctx.arch, ctx.tp)
    placement = _placement(ctx, facts)
    if ranks is not None:
        placement = [s for s in placement if s.rank in ranks] or placement
    stages = _stages(ctx, placement, params, reuse)
    worst = max(stages, key=lambda s: s.total_gib)
    lower: tuple[StageEstimate, ...] = ()
    upper: tuple[StageEstimate, ...] = ()
    if bounds == "lower-only":  # the bound alone (the planner's MEM001 screen)
        lower = stages
    elif bounds:
        for mode in ("lower",) if bounds == "lower" else ("lower", "upper"):
            other = replace(ctx, mode=mode, assumptions=[], layer_sizes={})
            result = _stages(other, placement, params, reuse)
            if mode == "lower":
                lower = result
            else:
                upper = result
    usable = None if capacity_gib is None else capacity_gib - ctx.settings.headroom_gib
    _standard_assumptions(ctx)
    return Estimate(stages, worst, capacity_gib, usable, tuple(ctx.assumptions), lower, upper)


@lru_cache(maxsize=64)
def _layer_params(arch: Arch, tp: int) -> tuple[LayerParams, ...]:
    return count_params(arch, tp).layers


def _stages(
    ctx: _Ctx, placement: list[_Stage], params: tuple[LayerParams, ...], reuse: Reuse | None
) -> tuple[StageEstimate, ...]:
    """Every pipeline rank's estimate in the context's mode."""
    shared = _Shared(ctx, reuse)
    return tuple(_stage_estimate(ctx, stage, params, shared, reuse) for stage in placement)


def _standard_assumptions(ctx: _Ctx) -> None:
    """Always-true caveats of the model, listed with every estimate."""
    if ctx.settings.flash_attention:
        ctx.note("flash/fused attention: no s² score tensors")
    if ctx.arch.is_moe:
        ctx.note(f"routed activations use {_rho(ctx)[1]}")
    if ctx.v.get("model.hidden_dropout") is None:
        ctx.note("hidden_dropout unset -> 0 (Bridge HF-imported MoE models train without it)")
    ctx.note("sequence_parallel " + ("on: norms/residual ÷TP" if ctx.sp else "off"))
