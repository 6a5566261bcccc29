"""Pipeline placement: the layers, embedding, head and MTP depths each PP rank holds."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property, lru_cache
from typing import Any

from moe_lint.analysis.memory.context import _Ctx
from moe_lint.analysis.memory.results import MemoryInputError
from moe_lint.analysis.placement import Placement, place
from moe_lint.records import field, record


@record
class _Stage:
    """What one PP rank holds: layer indices per virtual chunk, embedding, head, MTP depths."""

    rank: int
    chunks: list[list[int]] = field(default_factory=list)
    embedding: bool = False
    head: bool = False
    mtp: int = 0

    @cached_property
    def layers(self) -> list[int]:
        """Every layer of the rank, chunk by chunk. Kept on the instance once read (the memory
        model reads it several times a stage, and the stages of a split are shared between
        estimates): :func:`_rank_stages` fills ``chunks`` before anything reads it, and nothing
        changes them after."""
        return [i for chunk in self.chunks for i in chunk]


def _split(ctx: _Ctx, facts: Mapping[str, Any]) -> tuple[Placement, list[_Stage] | None]:
    """The ``placement`` fact derive computed (analysis/placement.py); a caller that passes
    plain sizes (tests, tools/memory_report.py) gets the same placement from the values. With
    it, the ranks' stages when they are memoized with it (:func:`_placed`), else None."""
    placed = facts.get("placement")
    if isinstance(placed, Placement):
        return placed, None
    v = ctx.v
    first = v.get("model.num_layers_in_first_pipeline_stage")
    last = v.get("model.num_layers_in_last_pipeline_stage")
    layout = v.get("model.pipeline_model_parallel_layout") or None
    args = (ctx.arch.num_layers, ctx.arch.mtp_num_layers, ctx.pp, ctx.vpp,
            None if first is None else int(first), None if last is None else int(last),
            v.flag("model.account_for_embedding_in_pipeline_split"),
            v.flag("model.account_for_loss_in_pipeline_split"))  # fmt: skip
    if layout is None or isinstance(layout, str):
        placed, stages = _placed(*args, layout)
        return placed, list(stages)
    return _place(*args, layout), None


def _place(num_layers: int, mtp: int, pp: int, vpp: int, first: int | None, last: int | None,
           emb: bool, loss: bool, layout: Any) -> Placement:  # fmt: skip
    return place(num_layers=num_layers, mtp=mtp, pp=pp, vpp=vpp, first=first, last=last,
                 emb=emb, loss=loss, layout=layout)  # fmt: skip


@lru_cache(maxsize=256)
def _placed(*args: Any) -> tuple[Placement, tuple[_Stage, ...]]:
    """``place`` of a split written as scalars (a string layout or none) and its ranks'
    stages, memoized: the planner estimates many candidates that share their pipeline split.
    The stages are shared between those estimates, which only read them."""
    placed = _place(*args)
    return placed, tuple(_rank_stages(placed, args[2]))


def _placement(ctx: _Ctx, facts: Mapping[str, Any] | None = None) -> list[_Stage]:
    """Layer indices per rank and virtual chunk; embedding, head and MTP, from the placement."""
    placed, stages = _split(ctx, facts or {})
    if not placed.stages:
        if placed.method == "uneven":
            first = ctx.v.get("model.num_layers_in_first_pipeline_stage")
            last = ctx.v.get("model.num_layers_in_last_pipeline_stage")
            rest = ctx.arch.num_layers - int(first or 0) - int(last or 0)
            middle = ctx.pp - (first is not None) - (last is not None)
            raise MemoryInputError(f"first/last stage layers leave {rest} for {middle} ranks")
        reason = placed.error.problem if placed.error else "the split places no stage"
        raise MemoryInputError(f"pipeline_model_parallel_layout: {reason}")
    if placed.method == "layout" and placed.vpp != ctx.vpp:
        ctx.vpp = placed.vpp
        ctx.note(
            f"VPP taken from the layout: {len(placed.stages)} stages / PP {ctx.pp} = {ctx.vpp}"
        )
    for text in placed.notes:
        ctx.note(text)
    placed_layers = sum(len(s.layers) for s in placed.stages)
    if placed_layers != ctx.arch.num_layers:
        raise MemoryInputError(
            f"the pipeline split places {placed_layers} layers but the model has "
            f"{ctx.arch.num_layers}"
        )
    return _rank_stages(placed, ctx.pp) if stages is None else stages


def _rank_stages(placed: Placement, pp: int) -> list[_Stage]:
    """What each of the ``pp`` ranks holds, from the placement's virtual stages."""
    stages = [_Stage(r, [[] for _ in range(placed.vpp)]) for r in range(pp)]
    for vs in placed.stages:
        stage = stages[vs.rank]
        stage.chunks[vs.chunk] = list(vs.layers)
        stage.embedding |= vs.embedding
        stage.head |= vs.head
        if vs.mtp:
            stage.mtp = vs.mtp
    return stages
