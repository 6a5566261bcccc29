"""Python checks for the pipeline rule family (listed in moe_lint.engine.checks.MODULES).

Most rules are pure data in rules/*.yaml; put a check here only when a condition truly needs
code. Each entry maps a check name (used as `check: <name>` in a pack) to a PythonCheck whose
params are the template placeholders its violations provide.

The pipeline checks need code for three reasons: ``pipeline_model_parallel_layout`` may be a
list of lists (full dumps write it that way) as well as a string, the layout's MTP placement
rules depend on which pipeline rank each virtual stage lands on, and a useful fix for a split
that does not divide is a concrete alternative (a layout string, uneven first/last counts,
``account_for_*`` flags) computed from the model's layer counts. Megatron-Core's own checks
(docs/domain/02 §2.B) are restated here in our words, not copied.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from moe_lint.analysis import placement
from moe_lint.analysis.placement import LayoutInfo, layout_problems
from moe_lint.config.fields import UNKNOWN
from moe_lint.config.settings import model_presets
from moe_lint.engine.catalogue import PythonCheck
from moe_lint.engine.checks.reads import derived as _fact
from moe_lint.engine.checks.reads import int_or_none as _int
from moe_lint.engine.evaluate import Violation
from moe_lint.engine.expr import SectionView
from moe_lint.engine.spans import set_value_edit
from moe_lint.records import record

if TYPE_CHECKING:
    from moe_lint.config.normalize import Config
    from moe_lint.engine.evaluate import Context, Violation


def _violation(path: str, derivation: str | None = None, **params: Any) -> Violation:
    return Violation(path=path, params=params, derivation=derivation)


def _derived(ctx: Context, *names: str) -> str | None:
    """The derivation lines of some facts, joined (for a Python check's finding)."""
    parts = [ctx.facts.values[n].derivation for n in names if n in ctx.facts.values]
    return "; ".join(parts) or None


def _layer_note(cfg: Config) -> str:
    num_layers = cfg.get("model.num_layers")
    origin = cfg.origin.get("model.num_layers", "file")
    where = origin
    if origin == "preset" and cfg.preset:
        known = cfg.preset in model_presets()
        where = f"preset {cfg.preset}" if known else f"HF config {cfg.preset}"
    return f"num_layers = {num_layers} ({where})"


def _value(cfg: Config, dotted: str, default: Any = None) -> Any:
    """The effective value, ``UNKNOWN`` when the recipe decides, ``default`` when unset."""
    if dotted in cfg.unknown:
        return UNKNOWN
    value = cfg.get(dotted)
    return default if value is None else value


def _pp_is_real(cfg: Config) -> bool:
    """True when PP comes from the file (or an override), not from the schema default of 1."""
    return cfg.explicit("model.pipeline_model_parallel_size") or cfg.form == "full-dump"


# --------------------------------------------------------------------------- layouts


def read_layout(cfg: Config) -> LayoutInfo | None:
    """The configured layout (string or list of lists), or None when none is set."""
    if "model.pipeline_model_parallel_layout" in cfg.unknown:
        return None
    return placement.read_layout(cfg.get("model.pipeline_model_parallel_layout"))


def effective_vpp(cfg: Config, pp: int) -> int | None:
    """VPP as Megatron-Core ends up using it: explicit, else derived from a layout (if > 1)."""
    explicit = _int(cfg.get("model.virtual_pipeline_model_parallel_size"))
    if explicit is not None:
        return explicit
    layout = read_layout(cfg)
    if layout is None or layout.stages is None or pp < 1 or len(layout.stages) % pp:
        return None
    derived = len(layout.stages) // pp
    return derived if derived > 1 else None


def _compress_stage(stage: str) -> str:
    out, i = [], 0
    while i < len(stage):
        j = i
        while j < len(stage) and stage[j] == stage[i]:
            j += 1
        run = j - i
        out.append(stage[i] * run if run < 3 else f"{stage[i]}*{run}")
        i = j
    return "".join(out)


def format_layout(stages: list[str]) -> str:
    """Stage strings -> a compact layout string (``Et|(tt|)*30mL``)."""
    groups: list[tuple[str, int]] = []
    for stage in stages:
        if groups and groups[-1][0] == stage:
            groups[-1] = (stage, groups[-1][1] + 1)
        else:
            groups.append((stage, 1))
    parts = []
    for i, (stage, count) in enumerate(groups):
        text = _compress_stage(stage)
        last = i == len(groups) - 1
        if count == 1:
            parts.append(text if last else text + "|")
        elif last:
            parts.append(f"({text}|)*{count - 1}{text}")
        else:
            parts.append(f"({text}|)*{count}")
    return "".join(parts)


def suggest_layout(num_layers: int, mtp: int, stages: int) -> str | None:
    """A balanced layout: E, the t layers and the MTP+loss tail cut into ``stages`` pieces."""
    items = ["E"] + ["t"] * num_layers + ["m" * mtp + "L"]
    weights = [1] * (num_layers + 1) + [mtp + 1]
    total = sum(weights)
    if stages < 1 or stages > total:
        return None
    chunks = [""] * stages
    start = 0
    for item, weight in zip(items, weights, strict=True):
        chunks[min(stages - 1, start * stages // total)] += item
        start += weight
    return format_layout(chunks)


def suggest_uneven(num_layers: int, pp: int, vpp: int | None, mtp: int) -> tuple[int, int] | None:
    """First/last stage layer counts that make an uneven split valid and balanced.

    The best (first, last) over every valid pair: loads first+1, last+1+MTP and the middle
    ranks' layers, scored by (spread, largest load), ties to the smaller first then last.
    The middle load is a multiple of VPP, and for each one the score is piecewise linear in
    ``first`` with three breakpoints, so only the grid points around them can win:
    O(num_layers / VPP) instead of the O(num_layers²) of trying every pair.
    """
    step = vpp or 1
    middle = pp - 2
    if middle < 0 or num_layers < 2 * step:
        return None
    best: tuple[int, int, int, int] | None = None  # (spread, largest load, first, last)

    def consider(first: int, last: int, per: int | None) -> None:
        nonlocal best
        loads = (first + 1, last + 1 + mtp) if per is None else (first + 1, last + 1 + mtp, per)
        high = max(loads)
        candidate = (high - min(loads), high, first, last)
        if best is None or candidate < best:
            best = candidate

    if middle == 0:
        for first in range(step, num_layers - step + 1, step):
            if (num_layers - first) % step == 0:
                consider(first, num_layers - first, None)
    elif num_layers % step == 0:  # first, last and the middle ranks are all multiples of VPP
        for per in range(step, (num_layers - 2 * step) // middle + 1, step):
            total = num_layers - middle * per  # first + last
            low, high = step, total - step  # first's range on the grid
            if high < low:
                break
            points = {low, high}
            for x in ((total + mtp) // 2, per - 1, total + 1 + mtp - per):
                below = x - x % step
                points.update((below, below + step))
            for first in points:
                if low <= first <= high:
                    consider(first, total - first, per)
    return None if best is None else (best[2], best[3])


# --------------------------------------------------------------------------- splits


def _layers(cfg: Config) -> tuple[int | None, int]:
    """(num_layers or None when unknown, MTP layers counted as 0 when unknown)."""
    num_layers = _int(_value(cfg, "model.num_layers"))
    mtp = _value(cfg, "model.mtp_num_layers", 0)
    return num_layers, (_int(mtp) or 0)


@record(frozen=True)
class RecipeSplit:
    """How the Bridge recipes of one model preset split the pipeline (models.yaml recipe_split)."""

    model: str
    #: PP·VPP stage counts of the layouts they set; empty when they never set one.
    layout_stages: tuple[int, ...]
    #: The value they give both account_for_*_in_pipeline_split flags.
    account_for: bool

    def describe(self) -> str:
        if self.layout_stages:
            counts = ", ".join(map(str, self.layout_stages))
            return f"the {self.model} recipes in Bridge 0.6.2 use layouts of {counts} stages"
        flags = "both account_for_* flags" if self.account_for else "no account_for_* flags"
        return f"the {self.model} recipes in Bridge 0.6.2 set no layout and {flags}"


#: Architecture fields that identify a preset when the file gives no --model.
_MATCH_FIELDS = ("num_layers", "hidden_size", "num_attention_heads", "num_moe_experts")


def recipe_split(cfg: Config) -> RecipeSplit | None:
    """The recipe split data of the file's model: its --model preset, else a dims match."""
    catalogue = model_presets()
    name = cfg.preset if cfg.preset in catalogue else None  # an HF config.json: match its dims
    if name is None:
        dims = {}
        for field_name in _MATCH_FIELDS:
            dotted = f"model.{field_name}"
            value = None if dotted in cfg.unknown else cfg.get(dotted)
            if value is None:
                return None
            dims[field_name] = value
        hits = [
            key
            for key, entry in catalogue.items()
            if all(entry.get(f) == v for f, v in dims.items())
        ]
        name = hits[0] if len(hits) == 1 else None
    entry = catalogue.get(name) if name else None
    data = entry.get("recipe_split") if entry else None
    if not isinstance(data, dict):
        return None
    return RecipeSplit(
        str(entry.get("display_name") or name),  # type: ignore[union-attr]
        tuple(int(n) for n in data.get("layout_stages") or ()),
        bool(data.get("account_for")),
    )


def _split_suggestion(num_layers: int, mtp: int, pp: int, vpp: int | None, emb: bool,
                      loss: bool) -> str:  # fmt: skip
    total = num_layers + emb + loss
    ideas: list[str] = []
    for e, lo in ((True, True), (True, False), (False, True)):
        if (e, lo) == (emb, loss):
            continue
        n = num_layers + e + lo
        if n % pp == 0 and (not vpp or (n // pp) % vpp == 0):
            flags = " and ".join(
                name
                for name, on in (
                    ("account_for_embedding_in_pipeline_split", e),
                    ("account_for_loss_in_pipeline_split", lo),
                )
                if on
            )
            ideas.append(f"set {flags}: true ({n} / {pp} = {n // pp} per rank)")
            break
    layout = suggest_layout(num_layers, mtp, pp * (vpp or 1))
    if layout:
        note = " and drop the account_for_* flags" if emb or loss else ""
        ideas.append(f'pipeline_model_parallel_layout: "{layout}"{note}')
    if not (emb or loss):
        uneven = suggest_uneven(num_layers, pp, vpp, mtp)
        if uneven:
            ideas.append(
                f"num_layers_in_first_pipeline_stage: {uneven[0]} with "
                f"num_layers_in_last_pipeline_stage: {uneven[1]}"
            )
    if total % pp == 0 and vpp:
        valid = [d for d in range(2, total // pp + 1) if (total // pp) % d == 0]
        if valid:
            ideas.append(f"VPP in {{{', '.join(map(str, valid))}}}")
    return "; or ".join(ideas) or f"pick PP dividing {total}"


def _split_verdict(ctx: Context) -> tuple[str, Violation] | None:
    """("error" | "layout", violation) when no split a recipe could supply works, else None.

    A full dump states every split field. In an override file the recipe supplies the fields
    the file leaves out: the account_for_* flags take the values the model's recipes use
    (models.yaml recipe_split; both values for a model without data), and an unstated layout
    may be the recipe's. Only when none of these works is the split reported: as an error when
    the model's recipes never set a layout (PP001), else as "valid only if the recipe supplies
    a PP·VPP-stage layout" (PP015). First/last-stage counts are not tried: no Bridge 0.6.2
    recipe of a preset model sets them (only GLM-5's GB200 recipes do).
    """
    cfg = ctx.config
    layout_path = "model.pipeline_model_parallel_layout"
    if read_layout(cfg) is not None or cfg.get(layout_path) is not None:
        return None
    if (
        cfg.get("model.num_layers_in_first_pipeline_stage") is not None
        or cfg.get("model.num_layers_in_last_pipeline_stage") is not None
    ):
        return None
    pp = _int(_fact(ctx, "pp"))
    num_layers, mtp = _layers(cfg)
    if pp is None or pp <= 1 or num_layers is None:
        return None
    mlm = cfg.form == "megatron-lm"
    if mlm and _mlm_split_elsewhere(cfg):
        return None
    vpp = _int(cfg.get("model.virtual_pipeline_model_parallel_size"))
    # A full dump states every split field, and so does a Megatron-LM command line: no recipe
    # supplies a layout or account_for_* flags there, a flag not given has its argparse default.
    full = cfg.form == "full-dump" or mlm

    def stated(dotted: str) -> bool:
        return full or (cfg.explicit(dotted) and dotted not in cfg.unknown)

    data = None if full else recipe_split(cfg)
    options: list[list[bool]] = []
    for name in ("embedding", "loss"):
        dotted = f"model.account_for_{name}_in_pipeline_split"
        if stated(dotted):
            options.append([bool(cfg.get(dotted))])
        else:
            options.append([data.account_for] if data else [False, True])
    failures: list[tuple[tuple[str, str], bool, bool]] = []
    for emb in options[0]:
        for loss in options[1]:
            failed = placement.even_problem(num_layers, pp, vpp, emb, loss)
            if failed is None:
                return None
            failures.append(((failed.problem, failed.path), emb, loss))
    (problem, path), emb, loss = failures[0]
    notes = []
    if len(failures) > 1:
        notes.append("with or without the account_for_* flags")
    kind = "error"
    params: dict[str, Any] = {}
    if not stated(layout_path):
        # Megatron-Core takes VPP from a layout (and asserts that an explicit VPP matches it).
        if vpp:
            need, fits = f"PP·VPP = {pp}·{vpp} = {pp * vpp} stages", pp * vpp
        else:
            need, fits = f"a multiple of PP = {pp} stages", 0
        stages = data.layout_stages if data else ()
        if any(s == fits if fits else s % pp == 0 for s in stages):
            return None  # a layout the model's recipes use has this many stages
        if (data is None or stages) and suggest_layout(num_layers, mtp, fits or pp):
            kind = "layout"
            params = {"need": need, "known": f"; {data.describe()}" if data else ""}
    flag_paths = [f"model.account_for_{n}_in_pipeline_split" for n in ("embedding", "loss")]
    from_recipe = not all(stated(d) for d in (layout_path, *flag_paths))
    if kind == "error" and data is not None and from_recipe:
        notes.append(data.describe())
    if mlm and path == placement.PP_PATH and not cfg.explicit(placement.VPP_PATH):
        # (with --num-virtual-stages-per-pipeline-rank validate_args skips the check, and the
        # model build's get_num_layers_to_build asserts it instead)
        notes.append(_MLM_SPLIT_ASSERT)
    if notes:
        problem += " (" + "; ".join(notes) + ")"
    return kind, _violation(
        path,
        derivation=f"{_layer_note(cfg)}; PP = {pp}" + (f", VPP = {vpp}" if vpp else ""),
        problem=problem,
        suggestion=_split_suggestion(num_layers, mtp, pp, vpp, emb, loss),
        **params,
    )


#: megatron/training/arguments.py::validate_args (core_v0.14.0 to core_v0.19.0): without a
#: layout, first/last-stage counts or virtual-stage flags, num_layers (plus one for each
#: account_for_* flag) must divide by PP, before any model is built.
_MLM_SPLIT_ASSERT = (
    "Megatron-LM's validate_args asserts \"Number of layers should be divisible by the "
    'pipeline-model-parallel size" at startup'
)


def _mlm_split_elsewhere(cfg: Config) -> bool:
    """Megatron-LM input whose split validate_args does not check here: a hybrid layer pattern
    places the layers itself (the check is skipped), and --num-layers-per-virtual-pipeline-stage
    has asserts of its own (MLM005)."""
    if cfg.get("model.hybrid_layer_pattern") or cfg.get("model.hybrid_override_pattern"):
        return True
    flags = getattr(cfg.doc, "mlm_flags", None) or ()
    return any(str(f.name).split("=", 1)[0] == "--num-layers-per-virtual-pipeline-stage"
               for f in flags)  # fmt: skip


def pipeline_split(ctx: Context) -> Iterator[Violation]:
    """Default split (optionally counting embedding/loss as layers) that does not divide."""
    verdict = _split_verdict(ctx)
    if verdict is not None and verdict[0] == "error":
        yield verdict[1]


def pipeline_split_needs_layout(ctx: Context) -> Iterator[Violation]:
    """An override whose split works only with a recipe layout of the right stage count."""
    verdict = _split_verdict(ctx)
    if verdict is not None and verdict[0] == "layout":
        yield verdict[1]


def _uneven(ctx: Context, kinds: tuple[str, ...]) -> Iterator[Violation]:
    """The placement's uneven-split verdict when it is one of ``kinds`` (Megatron-Core raises
    the first problem it finds, so one file gets at most one of PP002, PP016 and PP017)."""
    cfg = ctx.config
    placed = _fact(ctx, "placement")
    pp = _int(_fact(ctx, "pp"))
    if not isinstance(placed, placement.Placement) or placed.method != "uneven" or pp is None:
        return
    error = placed.error
    if error is None or error.kind not in kinds:
        return  # counts-with-flags: PP003 (the flags and the counts cannot be combined at all)
    num_layers, mtp = _layers(cfg)
    vpp = _int(cfg.get("model.virtual_pipeline_model_parallel_size"))
    suggestion = "adjust the first/last counts so the rest divides over the middle ranks"
    if num_layers is not None and pp >= 2:
        uneven = suggest_uneven(num_layers, pp, vpp, mtp)
        if uneven:
            middle_count = pp - 2
            per = (num_layers - sum(uneven)) // middle_count if middle_count else 0
            suggestion = (
                f"num_layers_in_first_pipeline_stage: {uneven[0]} and "
                f"num_layers_in_last_pipeline_stage: {uneven[1]}"
                + (f" ({per} on each of the {middle_count} middle ranks)" if middle_count else "")
            )
    derivation = (_layer_note(cfg) + "; " if num_layers is not None else "") + f"PP = {pp}"
    yield _violation(error.path, derivation=derivation, suggestion=suggestion, **error.params)


def uneven_split(ctx: Context) -> Iterator[Violation]:
    """First/last counts that leave middle layers the middle ranks cannot share (PP002)."""
    yield from _uneven(ctx, ("uneven-middle",))


def uneven_count(ctx: Context) -> Iterator[Violation]:
    """A first/last-stage layer count that is not positive (PP016)."""
    yield from _uneven(ctx, ("uneven-count",))


def uneven_vpp(ctx: Context) -> Iterator[Violation]:
    """First/last counts or layers per middle rank that VPP does not divide (PP017)."""
    yield from _uneven(ctx, ("uneven-vpp",))


def layout_invalid(ctx: Context) -> Iterator[Violation]:
    """A layout string/list that does not parse or that MCore's layout validation rejects."""
    cfg = ctx.config
    layout = read_layout(cfg)
    if layout is None:
        return
    path = "model.pipeline_model_parallel_layout"
    if layout.stages is None:
        reason = layout.error or ""
        text = reason if reason.startswith("it ") else f"it does not parse: {reason}"
        yield _violation(path, problems=text)
        return
    pp = _int(_fact(ctx, "pp"))
    real_pp = pp if pp and _pp_is_real(cfg) else None
    num_layers = _value(cfg, "model.num_layers")
    mtp_raw = cfg.get("model.mtp_num_layers")
    if "model.mtp_num_layers" in cfg.unknown:
        mtp: Any = UNKNOWN
    elif mtp_raw is None and not cfg.explicit("model.mtp_num_layers"):
        mtp = UNKNOWN  # unset in an override file: the recipe decides
    else:
        mtp = mtp_raw
    problems = layout_problems(layout.stages, real_pp, num_layers, mtp)
    if problems:
        yield _violation(path, problems="; ".join(problems))


def layout_not_divisible(ctx: Context) -> Iterator[Violation]:
    """The number of layout stages must be a multiple of PP."""
    cfg = ctx.config
    layout = read_layout(cfg)
    pp = _int(_fact(ctx, "pp"))
    if layout is None or layout.stages is None or not pp or len(layout.stages) % pp == 0:
        return
    stages = len(layout.stages)
    options = [d for d in range(1, stages + 1) if stages % d == 0 and d != pp]
    near = sorted(options, key=lambda d: (abs(d - pp), d))[:2]
    yield _violation(
        "model.pipeline_model_parallel_layout",
        stages=stages,
        pp=pp,
        options=" or ".join(str(d) for d in sorted(near)) or "1",
    )


def layout_vpp_conflict(ctx: Context) -> Iterator[Violation]:
    """An explicit VPP that disagrees with the VPP the layout implies (stages / PP)."""
    cfg = ctx.config
    layout = read_layout(cfg)
    vpp = _int(cfg.get("model.virtual_pipeline_model_parallel_size"))
    pp = _int(_fact(ctx, "pp"))
    if layout is None or layout.stages is None or vpp is None or not pp or not _pp_is_real(cfg):
        return
    stages = len(layout.stages)
    if stages % pp:
        return  # PP005 reports the layout itself
    implied = stages // pp
    if implied == vpp:
        return
    path = "model.virtual_pipeline_model_parallel_size"
    edits = []
    edit = set_value_edit(cfg.doc, cfg.physical(path), implied)
    if edit is not None:
        edits.append(edit)
    yield Violation(
        path=path,
        params={
            "vpp_set": vpp,
            "stages": stages,
            "pp": pp,
            "implied": implied,
            "wanted": pp * vpp,
        },
        edits=edits,
    )


# --------------------------------------------------------------------------- schedules


def _valid_microbatches(m: int, pp: int, group: int | None) -> bool:
    n = group or pp
    if n < pp or n > m:
        return False
    rest = m % n
    return rest == 0 or rest >= pp


def _nearest_valid_microbatches(m: int, pp: int, n: int) -> tuple[int | None, int | None]:
    """The largest valid microbatch count below ``m`` and the smallest above it, for group
    size ``n >= pp``, in O(1): a search counted up to ``m`` or ``4·n`` (a group size of 1e12
    never ended). Valid: ``k >= n`` and ``k % n`` is 0 or at least PP (_valid_microbatches).
    """
    below: int | None = None
    if m - 1 >= n:
        rest = (m - 1) % n
        below = m - 1 if rest == 0 or rest >= pp else m - 1 - rest
    k = max(m + 1, n)
    rest = k % n
    if rest == 0 or rest >= pp:
        above = k
    elif pp < n:
        above = k + (pp - rest)
    else:
        above = k + (n - rest)
    return below, above


def interleaved_microbatches(ctx: Context) -> Iterator[Violation]:
    """The interleaved 1F1B schedule's limits on the number of microbatches per step."""
    cfg = ctx.config
    pp = _int(_fact(ctx, "pp"))
    gbs, mbs, dp = (_int(_fact(ctx, n)) for n in ("gbs", "mbs", "dp"))
    if not pp or pp <= 1 or not gbs or not mbs or not dp:
        return
    vpp = effective_vpp(cfg, pp)
    if vpp is None:
        return
    unit = mbs * dp
    decrease = bool(cfg.get("train.decrease_batch_size_if_needed"))
    if gbs % unit and not decrease:
        return  # BAT001: the batch does not even divide
    m = gbs // unit
    if m < 1:
        return  # BAT002
    group = _int(cfg.get("model.microbatch_group_size_per_vp_stage"))
    n = group or pp
    if _valid_microbatches(m, pp, group):
        return
    n_text = f"microbatch_group_size_per_vp_stage = {n}" + ("" if group else " (default PP)")
    if n < pp or n > m:
        problem = f"{n_text} must lie in [PP, M] = [{pp}, {m}]"
    else:
        problem = (
            f"M % {n} = {m % n} leaves a last group of {m % n} microbatches, fewer than PP = {pp}"
        )
    m_text = f"{gbs} // ({mbs}·{dp})" if decrease and gbs % unit else f"{gbs} / ({mbs}·{dp})"
    if group is not None and group < pp:
        advice = (
            f"set microbatch_group_size_per_vp_stage between PP = {pp} and M = {m}, or remove it "
            "(it defaults to PP)"
        )
    else:
        below, above = _nearest_valid_microbatches(m, pp, n)
        choices = " or ".join(
            f"{k * unit} ({k} microbatches)" for k in sorted({k for k in (below, above) if k})
        )
        note = "" if group else f", a multiple of PP = {pp} microbatches with the default group"
        advice = f"use global_batch_size {choices} (MBS·DP = {unit}{note})"
    yield _violation(
        "train.global_batch_size",
        derivation=_derived(ctx, "dp", "microbatches"),
        pp=pp,
        vpp=vpp,
        m=m,
        m_text=m_text,
        problem=problem,
        advice=advice,
    )


# --------------------------------------------------------------------------- split arguments
#
# What an expression rule reads, restated: ``model.x`` is the effective value (NotDerivable when
# the recipe decides, which skips the rule), ``value(d, default)`` the value or ``default``
# when unset or recipe-decided, ``known(d)`` set to a value in the file, ``explicit(d)`` written.

_FIRST_NAME = "num_layers_in_first_pipeline_stage"
_LAST_NAME = "num_layers_in_last_pipeline_stage"
_EMB_NAME = "account_for_embedding_in_pipeline_split"
_LOSS_NAME = "account_for_loss_in_pipeline_split"


def _val(cfg: Config, dotted: str, default: Any = None) -> Any:
    if dotted in cfg.unknown:
        return default
    result = cfg.get(dotted, default)
    return default if result is None else result


def _known(cfg: Config, dotted: str) -> bool:
    return dotted not in cfg.unknown and cfg.get(dotted) is not None


def _need(ctx: Context, name: str) -> Any:
    """A derived fact the rule cannot do without (missing: the rule does not apply)."""
    return ctx.facts.require(name)


def counts_with_flags(ctx: Context) -> Iterator[Violation]:
    """First/last-stage counts together with the account_for_* flags (PP003).

    TransformerConfig.__post_init__ raises "num_layers_in_first_pipeline_stage and
    num_layers_in_last_pipeline_stage cannot be set at the same time with
    account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split".
    """
    model = SectionView(ctx.config, "model")
    counts = [n for n in (_FIRST_NAME, _LAST_NAME) if model._read(n) is not None]
    flags = [n for n in (_EMB_NAME, _LOSS_NAME) if model._read(n)]
    if counts and flags:
        yield _violation(
            f"model.{_EMB_NAME}", counts=" and ".join(counts), flags=" and ".join(flags)
        )


def layout_with_split_args(ctx: Context) -> Iterator[Violation]:
    """A layout together with first/last counts or account_for_* flags (PP004).

    TransformerConfig.__post_init__ raises "pipeline_model_parallel_layout cannot be set with
    other pipeline layout arguments."; counts together with flags are PP003's finding (checked
    first there).
    """
    model = SectionView(ctx.config, "model")
    has_counts = model._read(_FIRST_NAME) is not None or model._read(_LAST_NAME) is not None
    has_flags = bool(model._read(_EMB_NAME) or model._read(_LOSS_NAME))
    if model._read("pipeline_model_parallel_layout") is None:
        return
    if not (has_counts or has_flags) or (has_counts and has_flags):
        return
    set_ = [
        (_FIRST_NAME, model._read(_FIRST_NAME) is not None),
        (_LAST_NAME, model._read(_LAST_NAME) is not None),
        (_EMB_NAME, model._read(_EMB_NAME)),
        (_LOSS_NAME, model._read(_LOSS_NAME)),
    ]
    others = ", ".join(n for n, on in set_ if on)
    yield _violation("model.pipeline_model_parallel_layout", others=others)


def _bridge_p2p(cfg: Config, pp: int) -> tuple[bool, bool]:
    """overlap_p2p_comm / batch_p2p_comm as Bridge's CommOverlapConfig writes them into the
    model: values set under comm_overlap, else overlap on and batch off with VPP > 1 and the
    reverse without
    (megatron/bridge/training/comm_overlap.py::CommOverlapConfig._get_model_comm_overlap_cfgs)."""
    setup_vpp = _val(cfg, "model.virtual_pipeline_model_parallel_size", 1)
    overlap = _val(cfg, "comm_overlap.overlap_p2p_comm", pp > 1 and setup_vpp > 1)
    batch = _val(cfg, "comm_overlap.batch_p2p_comm", pp > 1 and setup_vpp <= 1)
    return bool(overlap), bool(batch)


def p2p_overlap_with_batch(ctx: Context) -> Iterator[Violation]:
    """overlap_p2p_comm and batch_p2p_comm both on for an interleaved pipeline (PP010).

    forward_backward_pipelining_with_interleaving raises "Can not use both overlap_p2p_comm
    and batch_p2p_comm". Interleaved: PP > 1 with a VPP, or a valid layout with more stages
    than PP (Megatron-Core derives VPP from it). Bridge's defaults depend on VPP, which a
    recipe may set: without VPP in the file only values written under comm_overlap count.
    """
    cfg = ctx.config
    pp = _need(ctx, "pp")
    vpp = _fact(ctx, "vpp")
    placed = _fact(ctx, "placement")
    layout = placed.layout if isinstance(placed, placement.Placement) else None
    layout_stages = len(layout.stages) if layout is not None and layout.stages else 0
    interleaved = pp > 1 and (vpp is not None or layout_stages // pp > 1)
    overlap, batch = _bridge_p2p(cfg, pp)
    co_overlap = "comm_overlap.overlap_p2p_comm"
    co_batch = "comm_overlap.batch_p2p_comm"
    if not (cfg.explicit("comm_overlap") and interleaved and overlap and batch):
        return
    if not (
        cfg.explicit("model.virtual_pipeline_model_parallel_size")
        or (_known(cfg, co_overlap) and _known(cfg, co_batch))
    ):
        return
    path = "comm_overlap.batch_p2p_comm"
    edit = set_value_edit(cfg.doc, cfg.physical(path), False)
    yield _violation_with_edits(
        path,
        [edit] if edit is not None else [],
        pp=pp,
        overlap_note="" if _known(cfg, co_overlap) else " (Bridge default for VPP > 1)",
        batch_note="" if _known(cfg, co_batch) else " (Bridge default without VPP)",
    )


def p2p_warmup_flush(ctx: Context) -> Iterator[Violation]:
    """overlap_p2p_comm_warmup_flush without overlapped, unbatched p2p (PP011).

    ModelParallelConfig.__post_init__ raises a ValueError when overlap_p2p_comm_warmup_flush is
    set and overlap_p2p_comm is off or batch_p2p_comm on. Without a comm_overlap section the
    recipe decides whether Bridge's defaults or the model's own fields apply: report only when
    both would be rejected. Bridge's defaults depend on PP and VPP, so both must be in the
    file unless both comm_overlap values are.
    """
    cfg = ctx.config
    pp = _need(ctx, "pp")
    co = cfg.explicit("comm_overlap")
    co_overlap, co_batch = _bridge_p2p(cfg, pp)
    m_overlap = bool(_val(cfg, "model.overlap_p2p_comm", False))
    m_batch = bool(_val(cfg, "model.batch_p2p_comm", True))
    if not _val(cfg, "model.overlap_p2p_comm_warmup_flush", False):
        return
    bridge_rejects = not co_overlap or co_batch
    if not (bridge_rejects if co else bridge_rejects and (not m_overlap or m_batch)):
        return
    stated_sizes = cfg.explicit("model.pipeline_model_parallel_size") and cfg.explicit(
        "model.virtual_pipeline_model_parallel_size"
    )
    stated_values = (
        co
        and _known(cfg, "comm_overlap.overlap_p2p_comm")
        and _known(cfg, "comm_overlap.batch_p2p_comm")
    )
    if not (stated_sizes or stated_values):
        return
    yield _violation(
        "model.overlap_p2p_comm_warmup_flush",
        eff_overlap="true" if (co_overlap if co else m_overlap) else "false",
        eff_batch="true" if (co_batch if co else m_batch) else "false",
    )


def _violation_with_edits(path: str, edits: list[Any], **params: Any) -> Violation:
    return Violation(path=path, params=params, edits=edits)


CHECKS: dict[str, PythonCheck] = {
    "uneven-split-with-account-for": PythonCheck(counts_with_flags, frozenset({"counts", "flags"})),
    "layout-with-split-args": PythonCheck(layout_with_split_args, frozenset({"others"})),
    "p2p-overlap-with-batch": PythonCheck(
        p2p_overlap_with_batch, frozenset({"pp", "overlap_note", "batch_note"})
    ),
    "p2p-warmup-flush": PythonCheck(p2p_warmup_flush, frozenset({"eff_overlap", "eff_batch"})),
    "pipeline-split": PythonCheck(pipeline_split, frozenset({"problem", "suggestion"})),
    "pipeline-split-needs-layout": PythonCheck(
        pipeline_split_needs_layout, frozenset({"problem", "suggestion", "need", "known"})
    ),
    "uneven-pipeline-split": PythonCheck(
        uneven_split, frozenset({"num_layers", "given", "rest", "middle", "suggestion"})
    ),
    "uneven-stage-count": PythonCheck(uneven_count, frozenset({"stage", "count", "suggestion"})),
    "uneven-split-vpp": PythonCheck(
        uneven_vpp, frozenset({"layers", "where", "vpp", "suggestion"})
    ),
    "pipeline-layout-invalid": PythonCheck(layout_invalid, frozenset({"problems"})),
    "pipeline-layout-stages": PythonCheck(
        layout_not_divisible, frozenset({"stages", "pp", "options"})
    ),
    "pipeline-layout-vpp": PythonCheck(
        layout_vpp_conflict, frozenset({"vpp_set", "stages", "pp", "implied", "wanted"})
    ),
    "interleaved-microbatches": PythonCheck(
        interleaved_microbatches,
        frozenset({"pp", "vpp", "m", "m_text", "problem", "advice"}),
    ),
}
