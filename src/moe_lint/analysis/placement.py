"""The pipeline placement: which decoder layers, MTP layers, embedding and output head each
pipeline rank and virtual stage holds, and what Megatron-Core rejects about the split.

One implementation for the whole package: ``derive`` computes it once (the ``placement``
fact), the pipeline checks read its verdicts and the memory model reads its stages. It follows
Megatron-Core 0.19.2:

- a ``pipeline_model_parallel_layout`` (string, parsed by :mod:`moe_lint.analysis.pp_layout`,
  or list of lists) places every layer itself; virtual stage ``i`` runs on rank ``i % PP`` as
  chunk ``i // PP`` and VPP is stages / PP
  (megatron/core/transformer/pipeline_parallel_layer_layout.py::PipelineParallelLayerLayout.__init__,
  ::get_num_layers_to_build, ::get_layer_offset);
- ``num_layers_in_first/last_pipeline_stage`` fix the first/last rank and the middle ranks
  share the rest, each rank's layers split evenly over its VPP chunks
  (megatron/core/transformer/transformer_block.py::get_num_layers_to_build,
  megatron/core/transformer/transformer_layer.py::get_transformer_layer_offset);
- otherwise the even split: ``num_layers`` (+1 with account_for_embedding, +1 with
  account_for_loss) over PP ranks, then over VPP chunks, and the embedding (loss) takes one
  layer's place in the first (last) virtual stage (the same two functions).

Layer indices run in virtual-stage order (chunk 0 of every rank, then chunk 1, ...). The MTP
layers and the head sit in the last virtual stage, the embedding in the first, unless a layout
says otherwise. A split Megatron-Core rejects still gets stages (the memory model estimates it):
the rest is spread as evenly as possible and :attr:`Placement.error` says what would fail
(megatron/core/transformer/transformer_config.py::TransformerConfig.__post_init__ raises it).
"""

from __future__ import annotations

from typing import Any

from moe_lint.analysis.pp_layout import LayoutError, parse_layout
from moe_lint.config.fields import UNKNOWN
from moe_lint.records import NamedTuple, record

#: Layer names MCore accepts in the list form of a layout (``LayerType`` members) -> symbols.
LIST_NAMES = {"embedding": "E", "decoder": "t", "mtp": "m", "loss": "L", "encoder": "x"}

FIRST = "model.num_layers_in_first_pipeline_stage"
LAST = "model.num_layers_in_last_pipeline_stage"
PP_PATH = "model.pipeline_model_parallel_size"
VPP_PATH = "model.virtual_pipeline_model_parallel_size"
LAYOUT_PATH = "model.pipeline_model_parallel_layout"


# --------------------------------------------------------------------------- layouts


@record(frozen=True)
class LayoutInfo:
    """A layout as one string of E/t/m/L symbols per virtual stage, or why it is unusable.

    ``parsed`` is what moe-lint's tolerant parser reads (spaces ignored) so an estimate can
    still be made; ``stages`` is None whenever Megatron-Core would reject the text.
    """

    parsed: tuple[str, ...] | None
    error: str | None
    form: str  # "string" or "list"

    @property
    def stages(self) -> tuple[str, ...] | None:
        return self.parsed if self.error is None else None


def read_layout(raw: Any) -> LayoutInfo | None:
    """A configured layout (string or list of lists); None when none is set."""
    if isinstance(raw, str):
        try:
            parsed: tuple[str, ...] | None = parse_layout(raw).stages
            error = None
        except LayoutError as exc:
            parsed, error = None, str(exc)
        if error is None and any(ch.isspace() for ch in raw):
            # moe-lint's parser tolerates spaces; Megatron-Core drops only commas
            # (PipelineParallelLayerLayout.parse_str_to_list: "Invalid layer character").
            error = "it contains spaces (Megatron-Core ignores only commas)"
        return LayoutInfo(parsed, error, "string")
    if isinstance(raw, list):
        stages: list[str] = []
        for row in raw:
            if not isinstance(row, list):
                return LayoutInfo(None, "every stage of a list layout must be a list", "list")
            symbols = []
            for item in row:
                name = str(item).strip().lower()
                if name not in LIST_NAMES:
                    allowed = ", ".join(sorted(LIST_NAMES))
                    return LayoutInfo(None, f"unknown layer type {item!r} (use {allowed})", "list")
                symbols.append(LIST_NAMES[name])
            stages.append("".join(symbols))
        return LayoutInfo(tuple(stages), None, "list")
    return None


def layout_problems(
    stages: tuple[str, ...], pp: int | None, num_layers: Any, mtp: Any
) -> list[str]:
    """Everything ``PipelineParallelLayerLayout.validate_layer_layout`` would reject.

    ``pp`` is None when the real PP is not known (the MTP placement checks need it);
    ``num_layers``/``mtp`` are :data:`UNKNOWN` when the recipe decides.
    """
    flat = "".join(stages)
    problems: list[str] = []
    if not flat.startswith("E"):
        problems.append(f"the first layer must be the embedding 'E', not {flat[:1] or 'nothing'!r}")
    if not flat.endswith("L"):
        problems.append(f"the last layer must be the loss 'L', not {flat[-1:] or 'nothing'!r}")
    if flat.count("E") > 1:
        problems.append(f"the embedding 'E' appears {flat.count('E')} times (exactly once)")
    if flat.count("L") > 1:
        problems.append(f"the loss 'L' appears {flat.count('L')} times (exactly once)")
    decoders = flat.count("t")
    if num_layers is not UNKNOWN and num_layers is not None and decoders != num_layers:
        problems.append(f"{decoders} transformer layers 't' but num_layers = {num_layers}")
    mtps = flat.count("m")
    if mtp is not UNKNOWN and not (mtps == (mtp or 0) and (mtp is not None or mtps == 0)):
        problems.append(f"{mtps} MTP layers 'm' but mtp_num_layers = {mtp}")
    if "m" in flat and "t" in flat[flat.index("m") :]:
        problems.append("transformer layers 't' must all come before the MTP layers 'm'")
    if "x" in flat:
        problems.append("encoder layers are not supported in a flexible pipeline layout")
    if pp and len(stages) % pp == 0 and "m" in flat:
        vpp = len(stages) // pp
        for index, stage in enumerate(stages):
            if "m" not in stage:
                continue
            rank, chunk = index % pp, index // pp
            if chunk != vpp - 1:
                problems.append(
                    f"MTP sits in virtual stage {index} (PP rank {rank}, chunk {chunk}); MTP must "
                    f"be in the last chunk ({vpp - 1}) of its pipeline rank"
                )
            elif mtp not in (UNKNOWN, None) and stage.count("m") != mtp:
                problems.append(
                    f"only {stage.count('m')} of the {mtp} MTP layers are in virtual stage "
                    f"{index}; all MTP layers must share one stage"
                )
    return problems


# --------------------------------------------------------------------------- verdicts


class SplitError(NamedTuple):
    """What Megatron-Core rejects about a split: a kind, the problem in words, the field."""

    #: "counts-with-flags", "uneven-count", "uneven-vpp", "uneven-middle", "even-pp",
    #: "even-vpp", "layout" (does not parse), "layout-stages" (not a multiple of PP).
    kind: str
    problem: str
    path: str
    #: The numbers behind the problem (a rule's message template reads them).
    params: dict[str, Any] = {}  # noqa: RUF012 - never mutated


def even_problem(
    num_layers: int, pp: int, vpp: int | None, emb: bool, loss: bool
) -> SplitError | None:
    """Why Megatron-Core's even split fails, else None.

    transformer_block.py::get_num_layers_to_build asserts ``num_layers % PP == 0`` (embedding
    and loss counted with the account_for_* flags) and, with VPP and PP > 1, that the layers
    per rank divide by VPP; TransformerConfig.__post_init__ raises the same with the flags;
    Bridge's GPTModelProvider.provide asserts ``(num_layers // PP) % VPP == 0``.
    """
    total = num_layers + emb + loss
    counted = f"num_layers {num_layers}" + " + 1 (embedding)" * emb + " + 1 (loss)" * loss
    if emb or loss:
        counted += f" = {total}"
    if total % pp:
        return SplitError("even-pp", f"{counted} is not divisible by PP = {pp}", PP_PATH)
    if vpp and (total // pp) % vpp:
        return SplitError(
            "even-vpp",
            f"{counted} gives {total // pp} layers per pipeline rank, which VPP = {vpp} "
            "virtual stages cannot share equally",
            VPP_PATH,
        )
    return None


def uneven_problem(
    num_layers: int | None, pp: int, vpp: int | None, first: int | None, last: int | None
) -> SplitError | None:
    """Why TransformerConfig.__post_init__ rejects num_layers_in_first/last_pipeline_stage.

    In its order: a count <= 0 ("... must be larger than 0"), a count not divisible by VPP
    ("number of layers at first stage: ... must be divisible by virtual pipeline parallel
    degree"), middle layers without middle ranks or the reverse ("Mismatch: ... middle layers
    remaining but ... middle PP stages available."), middle layers not dividing over the middle
    ranks ("number of layers at middle stage: ... must be divisible by the middle pipeline model
    parallel size"), layers per middle rank not divisible by VPP ("number of layers on each
    middle pipeline rank: ... must be divisible by virtual pipeline parallel degree").
    """
    for name, count, where in (("first", first, FIRST), ("last", last, LAST)):
        if count is None:
            continue
        if count <= 0:
            return SplitError(
                "uneven-count",
                f"num_layers_in_{name}_pipeline_stage = {count} must be > 0",
                where,
                {"stage": name, "count": count},
            )
        if vpp and count % vpp:
            return SplitError(
                "uneven-vpp",
                f"num_layers_in_{name}_pipeline_stage = {count} is not divisible by VPP = {vpp} "
                "(each virtual stage of that rank needs the same number of layers)",
                where,
                {"layers": count, "where": f"the {name} pipeline rank "
                 f"(num_layers_in_{name}_pipeline_stage)", "vpp": vpp},
            )  # fmt: skip
    if num_layers is None:
        return None
    rest = num_layers - (first or 0) - (last or 0)
    middle = pp - (first is not None) - (last is not None)
    given = " + ".join(
        f"{name} {count}" for name, count in (("first", first), ("last", last)) if count is not None
    )
    where = FIRST if first is not None else LAST
    params = {"num_layers": num_layers, "given": given, "rest": rest, "middle": middle}
    if bool(rest) != bool(middle) or rest < 0:
        return SplitError(
            "uneven-middle",
            f"num_layers {num_layers} - ({given}) leaves {rest} layers for {middle} middle "
            "pipeline stages",
            where,
            params,
        )
    if middle and rest % middle:
        return SplitError(
            "uneven-middle",
            f"num_layers {num_layers} - ({given}) = {rest} middle layers do not divide over "
            f"{middle} middle pipeline stages",
            where,
            params,
        )
    if middle and vpp and (rest // middle) % vpp:
        return SplitError(
            "uneven-vpp",
            f"{rest // middle} layers per middle pipeline rank are not divisible by VPP = {vpp}",
            VPP_PATH,
            {"layers": rest // middle, "where": "each middle pipeline rank", "vpp": vpp},
        )
    return None


# --------------------------------------------------------------------------- placement


@record(frozen=True)
class VirtualStage:
    """One virtual pipeline stage: ``index`` = chunk·PP + rank in the layer order."""

    index: int
    rank: int
    chunk: int
    #: Decoder layer indices it builds (consecutive; empty for an embedding- or loss-only stage).
    layers: range
    mtp: int
    embedding: bool
    head: bool


@record(frozen=True)
class Placement:
    """Layers per PP rank and virtual stage, and the split's verdict."""

    #: "layout", "uneven" (first/last counts) or "even".
    method: str
    pp: int
    #: Virtual chunks per rank (1 without interleaving; a layout's stages / PP).
    vpp: int
    #: In layer order; empty when no stage can be placed (num_layers unknown, a layout that
    #: does not parse or whose stages do not divide by PP).
    stages: tuple[VirtualStage, ...]
    #: What Megatron-Core rejects (None: it builds this split).
    error: SplitError | None
    #: How moe-lint placed a split Megatron-Core rejects (or derived VPP), for the estimate.
    notes: tuple[str, ...]
    layout: LayoutInfo | None

    def rank_stages(self, rank: int) -> list[VirtualStage]:
        """The virtual stages of one PP rank, chunk order."""
        return [s for s in self.stages if s.rank == rank]

    def rank_layers(self) -> list[int]:
        """Transformer layers per PP rank."""
        counts = [0] * self.pp
        for stage in self.stages:
            counts[stage.rank] += len(stage.layers)
        return counts


def _stages(pp: int, counts: list[int], marks: list[str], mtp: int) -> tuple[VirtualStage, ...]:
    out, start = [], 0
    for index, count in enumerate(counts):
        chunk, rank = divmod(index, pp)
        out.append(
            VirtualStage(
                index, rank, chunk, range(start, start + count),
                mtp if "m" in marks[index] else 0, "E" in marks[index], "L" in marks[index],
            )
        )  # fmt: skip
        start += count
    return tuple(out)


def place(
    *,
    num_layers: int | None,
    mtp: int,
    pp: int,
    vpp: int | None,
    first: int | None = None,
    last: int | None = None,
    emb: bool = False,
    loss: bool = False,
    layout: Any = None,
) -> Placement:
    """The placement of a split given as field values (``layout`` raw: string, list or None).

    ``vpp`` is the configured virtual_pipeline_model_parallel_size (None when unset); ``mtp``
    the MTP depth (0 without MTP). With a layout, ``num_layers`` only labels nothing: the
    layout places every layer (its count is checked by :func:`layout_problems`).
    """
    if layout is not None:
        return _place_layout(read_layout(layout), pp, mtp)
    chunks = vpp or 1
    notes: list[str] = []
    if first is not None or last is not None:
        error = (
            SplitError(
                "counts-with-flags",
                "num_layers_in_first/last_pipeline_stage cannot be combined with the "
                "account_for_*_in_pipeline_split flags",
                FIRST if first is not None else LAST,
            )
            if emb or loss
            else uneven_problem(num_layers, pp, vpp, first, last)
        )
        if num_layers is None:
            return Placement("uneven", pp, chunks, (), error, (), None)
        counts = _uneven_counts(num_layers, pp, chunks, first, last)
        if counts is None:
            return Placement("uneven", pp, chunks, (), error, (), None)
        marks = ["" for _ in counts]
        marks[0] += "E"
        marks[-1] += "L" + ("m" if mtp else "")
        return Placement("uneven", pp, chunks, _stages(pp, counts, marks, mtp), error, (), None)
    error = (
        None
        if num_layers is None or pp < 1
        else even_problem(num_layers, pp, vpp if pp > 1 else None, emb, loss)
    )
    if num_layers is None:
        return Placement("even", pp, chunks, (), error, (), None)
    stages = pp * chunks
    total = num_layers + int(emb) + int(loss)
    base, extra = divmod(total, stages)
    if extra:
        notes.append(
            f"{num_layers} layers do not split evenly over {stages} virtual stages; spread unevenly"
        )
    counts = [base + (1 if i < extra else 0) for i in range(stages)]
    counts[0] -= int(emb)
    counts[-1] -= int(loss)
    marks = ["" for _ in counts]
    marks[0] += "E"
    marks[-1] += "L" + ("m" if mtp else "")
    return Placement("even", pp, chunks, _stages(pp, counts, marks, mtp), error, tuple(notes), None)


def _uneven_counts(
    num_layers: int, pp: int, vpp: int, first: int | None, last: int | None
) -> list[int] | None:
    """Layers per virtual stage: first/last ranks as given, the middle ranks share the rest
    (evenly when Megatron-Core accepts the split, else as evenly as possible); each rank's
    layers over its chunks. None when the counts leave a negative rest or layers no rank holds.
    """
    middle = [r for r in range(pp) if not (r == 0 and first is not None)
              and not (r == pp - 1 and last is not None)]  # fmt: skip
    rest = num_layers - int(first or 0) - int(last or 0)
    if rest < 0 or (rest and not middle):
        return None
    per_rank = [0] * pp
    if first is not None:
        per_rank[0] = int(first)
    if last is not None:
        per_rank[-1] = int(last)
    for j, r in enumerate(middle):
        per_rank[r] = rest // len(middle) + (1 if j < rest % len(middle) else 0)
    counts = [0] * (pp * vpp)
    for r, total in enumerate(per_rank):
        for c in range(vpp):
            counts[c * pp + r] = total // vpp + (1 if c < total % vpp else 0)
    return counts


def _place_layout(info: LayoutInfo | None, pp: int, mtp: int) -> Placement:
    assert info is not None  # place() only calls it for a string or list layout
    stages = info.parsed
    if stages is None:
        unparsed = SplitError("layout", info.error or "it does not parse", LAYOUT_PATH)
        return Placement("layout", pp, 1, (), unparsed, (), info)
    error = None if info.error is None else SplitError("layout", info.error, LAYOUT_PATH)
    if pp < 1 or len(stages) % pp:
        stage_error = SplitError(
            "layout-stages",
            f"pipeline_model_parallel_layout has {len(stages)} stages, which is not a multiple "
            f"of PP = {pp}",
            LAYOUT_PATH,
        )
        return Placement("layout", pp, 1, (), error or stage_error, (), info)
    counts = [stage.count("t") for stage in stages]
    marks = [stage for stage in stages]
    return Placement(
        "layout", pp, len(stages) // pp, _stages(pp, counts, marks, mtp), error, (), info
    )
