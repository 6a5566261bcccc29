"""Search the layouts of one run: feasibility rules first, then memory, then the ranking.

1. **Enumerate** TP, CP, PP, VPP, EP, ETP and MBS for every GPU count, pruning with the
   arithmetic of the linter's own rules (each pruned candidate is counted under the rule code
   that would reject it: ATT001, ATT002, ATT016/ATT017/ATT020 (CP > 1 on models whose CP needs
   another transport than the p2p ring the model times), SEQ001, SEQ002, PAR001, PAR002,
   PP007, PP008, PP009, BAT001, MOE001 (only for an EP fixed with --set: the grid runs over the
   divisors of the expert count); dispatchers under DSP005, DSP010, DSP011).
2. **Bound**: every surviving layout gets its optimistic time (no recompute, no offload, the
   fastest allowed dispatcher); layouts are visited best first.
3. **Knobs**: per layout, the recompute and offload ladder is tried in order of predicted
   cost; the layout's plan is the cheapest rung whose central memory estimate fits
   (analysis/memory/, memoized on what memory depends on), else the cheapest whose lower
   bound fits (MEM001's criterion), marked "may not fit". Visiting stops when the next
   layout's optimistic time cannot enter the kept set.
4. The caller (:func:`plan`) lints the top plans' emitted configs with the full rule set and
   drops any with an error finding, under that finding's code.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from moe_lint.analysis.cp_groups import a2a_group, per_tp_rank
from moe_lint.analysis.params import Arch
from moe_lint.analysis.pp_layout import LayoutError, parse_layout
from moe_lint.plan.perf import Hardware, Model, Plan, Prediction, stage_layers, windows_of
from moe_lint.plan.space import cp_transport_of, layout_counts

#: The dimensions the search varies, in report order.
DIMENSIONS = ("tp", "cp", "pp", "vpp", "ep", "etp", "mbs", "dispatcher", "recompute", "offload")


@dataclass
class Request:
    """What the user asks: the model and cluster, the batch, constraints and the objective."""

    arch: Arch
    values: dict[str, Any]  # the base config's effective values (memory_facts.config_values)
    facts: dict[str, Any]  # its derived sizes (memory_facts.model_inputs)
    gpu: str
    hardware: Hardware
    gpus: tuple[int, ...]
    seq: int
    gbs: int
    precision: str  # bf16 | fp8 | fp4
    fp8_recipe: str | None
    capacity_gib: float
    memory_settings: Any
    versions: dict[str, Any]
    dispatchers: tuple[str, ...] = ("alltoall", "deepep", "hybridep")
    fixed: dict[str, Any] = field(default_factory=dict)
    max_ep: int | None = None
    max_tp: int = 8
    mbs_choices: tuple[int, ...] = (1, 2, 4, 8)
    objective: str = "throughput"  # or "gpus"
    keep: int = 10
    exclude: frozenset[tuple[int, ...]] = frozenset()  # plan keys the linter already dropped
    base_flags: dict[str, bool] = field(default_factory=dict)
    #: the base config's routing (space.routing_of): every plan keeps it
    routing: tuple[str, float, bool] = ("balanced", 0.0, False)
    #: the transport chosen per (TP, CP, MBS) when the base states none (search._transport)
    transports: dict[tuple[int, int, int], tuple[str, int]] = field(
        default_factory=dict, compare=False, repr=False
    )
    #: the step-time model of this request, built once (request_model): the search and the
    #: transport choice share its memoized layer times
    model: Model | None = field(default=None, compare=False, repr=False)
    margin: float = 0.0  # MEM001's error margin (memory_settings; fraction of usable)
    warn: float = 0.05  # MEM002's warning fraction
    written: dict[str, Any] = field(default_factory=dict)  # --set overrides emit writes
    safe: bool = False  # only plans whose central estimate fits (no "may not fit")


@dataclass
class Candidate:
    plan: Plan
    prediction: Prediction
    memory_gib: float  # central, worst stage
    lower_gib: float | None = None
    usable_gib: float = 0.0
    layout_text: str | None = None
    verdict: str = "fits"  # or "may not fit": the central estimate is over, the lower bound not
    #: The linter's warnings on the emitted YAML (code, message), for the plans shown.
    warnings: tuple[tuple[str, str], ...] = ()


@dataclass
class Outcome:
    kept: list[Candidate]
    pruned: dict[str, dict[str, Counter[str]]]  # dimension -> value -> reason counts
    visited: int = 0  # layouts past the rule filters (each timed once for its bound)
    prunes: int = 0  # rule prunes (each cuts a subtree of the enumeration)
    timed: int = 0  # plans timed
    memory_checks: int = 0
    seconds: float = 0.0
    model: Model | None = None
    inferred: int = 0  # layouts rejected by memory dominance without an estimate


def _pow2_upto(n: int) -> list[int]:
    out, v = [], 1
    while v <= n:
        out.append(v)
        v *= 2
    return out


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted({*small, *(n // d for d in small)})


class _Pruned:
    """Reason counts per dimension value (what the report lists as pruned)."""

    def __init__(self) -> None:
        self.flat: dict[tuple[str, Any, str], int] = {}
        self.events = 0  # prunes (one stands for the whole subtree it cuts), for the report
        self.need: dict[tuple[str, Any, str], float] = {}

    def add(self, dims: Mapping[str, Any], reason: str, need: float | None = None) -> None:
        """Count a prune; ``need`` fills a ``{need}`` in the reason with the least memory any
        layout with that value needs (one line per reason, not one per figure)."""
        self.events += 1
        flat = self.flat
        for name, value in dims.items():
            key = (name, value, reason)
            flat[key] = flat.get(key, 0) + 1
            if need is not None:
                self.need[key] = min(need, self.need.get(key, math.inf))

    def add_all(self, rows: Sequence[Mapping[str, Any]], reason: str) -> None:
        """:meth:`add` of each row (rows with the same dimensions), one pass per dimension
        (the search counts thousands at once): the same counts as one call per row and, per
        dimension, the same order of values and reasons, which is all :attr:`by` keeps."""
        self.events += len(rows)
        flat = self.flat
        for name in rows[0] if rows else ():
            for value, n in Counter(row[name] for row in rows).items():
                key = (name, value, reason)
                flat[key] = flat.get(key, 0) + n

    @property
    def by(self) -> dict[str, dict[str, Counter[str]]]:
        out: dict[str, dict[str, Counter[str]]] = {d: {} for d in DIMENSIONS}
        for key, n in self.flat.items():
            name, value, reason = key
            if key in self.need:
                reason = reason.replace("{need}", f"{self.need[key]:.1f}")
            out[name].setdefault(str(value), Counter())[reason] += n
        return out


@cache
def layout_string(num_layers: int, mtp: int, pp: int, vpp: int) -> str | None:
    """A ``pipeline_model_parallel_layout`` for PP·VPP stages: the embedding on the first stage,
    the loss (and MTP) on the last, transformer layers spread evenly with the first and last
    stages lighter (the shape of Bridge's DeepSeek-V3 layouts, ``Et|(tt|)*30mL``). None when
    the default even split already works (layers divide and no MTP)."""
    stages = pp * vpp
    if stages == 1:
        return None
    if num_layers % stages == 0 and not mtp:
        return None
    # the embedding and the head (+ each MTP depth) count as a layer's worth of work each;
    # cumulative rounding spreads the units evenly, then the extras are taken off again
    units = num_layers + 2 + mtp
    edges = [round(units * i / stages) for i in range(stages + 1)]
    counts = [edges[i + 1] - edges[i] for i in range(stages)]
    counts[0] -= 1
    counts[-1] -= 1 + mtp
    counts = [max(0, c) for c in counts]
    i = 0
    while sum(counts) != num_layers:  # clamping moved layers: put them back in the middle
        j = 1 + i % max(1, stages - 2) if stages > 2 else i % stages
        counts[j] += 1 if sum(counts) < num_layers else (-1 if counts[j] > 0 else 0)
        i += 1
    parts = ["E" + "t" * counts[0]]
    parts += ["t" * c for c in counts[1:-1]]
    parts.append("t" * counts[-1] + "m" * mtp + "L")
    return _compress(parts)


def _compress(stages: list[str]) -> str:
    """Run-length form Megatron parses: ``Et|(tt|)*30mL``, ``Et*4|(t*4|)*14tmL``."""
    # Lazy: loaded only on the path that needs it (the planner itself is imported lazily).
    import re

    stages = [re.sub(r"t{4,}", lambda m: f"t*{len(m.group())}", s) for s in stages]
    out: list[str] = []
    i = 0
    while i < len(stages):
        j = i
        while j + 1 < len(stages) and stages[j + 1] == stages[i]:
            j += 1
        run = j - i + 1
        out.append(f"({stages[i]}|)*{run}" if run > 1 else stages[i] + "|")
        i = j + 1
    text = "".join(out)
    return text[:-1] if text.endswith("|") else text


def layout_for(req: Request, pp: int, vpp: int) -> str | None:
    """The base config's own ``pipeline_model_parallel_layout`` when it has PP·VPP stages and
    places every layer (a recipe's hand-balanced split, e.g. Bridge's DeepSeek-V3 maps), else
    :func:`layout_string`."""
    own = req.values.get("model.pipeline_model_parallel_layout")
    if isinstance(own, str) and _fits_layout(own, pp * vpp, req.arch.num_layers,
                                             req.arch.mtp_num_layers):  # fmt: skip
        return own
    return layout_string(req.arch.num_layers, req.arch.mtp_num_layers, pp, vpp)


@cache
def _fits_layout(text: str, stages: int, layers: int, mtp: int) -> bool:
    try:
        parsed = parse_layout(text)
    except LayoutError:
        return False
    return parsed.num_stages == stages and parsed.count("t") == layers and parsed.count("m") == mtp


# ------------------------------------------------------------------------------ knob ladder


def recompute_ladder(arch: Arch, precision: str, fp8_recipe: str | None) -> list[tuple[str, ...]]:
    """Recompute sets from cheapest to most memory-saving (the seed: selective before full).

    ``moe_act`` / ``layernorm`` are left out under FP8 delayed scaling (RCP010); ``mla_up_proj``
    only on MLA models (RCP005).
    """
    mla = any(m in ("mla", "dsa") for m, _ in arch.layers)
    light: list[str] = []
    if not (precision == "fp8" and fp8_recipe == "delayed"):
        light = ["moe_act", "layernorm"] if arch.is_moe else ["layernorm"]
    up = ["mla_up_proj"] if mla else []
    out: list[tuple[str, ...]] = [()]
    if "moe_act" in light:
        out.append(("moe_act",))  # the cheapest label alone (Bridge's Nemotron recipes use it)
    if light:
        out.append(tuple(light))
    if up or light:
        out.append(tuple(up + light))
    heavy = [*up, *(["layernorm"] if light else []), *(["moe"] if arch.is_moe else []), "mlp"]
    out.append(tuple(heavy))
    out.append(("full",))
    seen: list[tuple[str, ...]] = []
    for item in out:
        if item not in seen:
            seen.append(item)
    return seen


OFFLOAD_LADDER = (0.0, 0.5, 1.0)

#: The search tries MBS > 1 only while a micro-batch stays within this many tokens: past it the
#: GEMMs are long saturated (g(m) ≈ 1) and a bigger micro-batch only multiplies activations.
MAX_MICROBATCH_TOKENS = 65536


# ------------------------------------------------------------------------------ the search


def _feasible_layouts(req: Request, world: int, pruned: _Pruned) -> Iterator[dict[str, int]]:
    """Layouts of ``world`` GPUs that no divisibility rule rejects (rejections counted)."""
    a = req.arch
    hw = req.hardware
    experts = a.num_moe_experts or 0
    fx = req.fixed
    # a value fixed with --set is tried even off the grid
    tps = [int(fx["tp"])] if "tp" in fx else [t for t in _pow2_upto(req.max_tp) if t <= world]
    cps = [int(fx["cp"])] if "cp" in fx else [c for c in _pow2_upto(256) if c <= world]
    for tp in tps:
        if a.num_attention_heads % tp:
            pruned.add({"tp": tp}, "ATT001: num_attention_heads % TP != 0")
            continue
        groups = a.num_query_groups
        if not any(m in ("mla", "dsa") for m, _ in a.layers) and groups % tp and tp % groups:
            pruned.add(
                {"tp": tp}, "ATT002: num_query_groups neither divides nor is a multiple of TP"
            )
            continue
        cp_block = _cp_transport_rule(req)
        for cp in cps:
            if cp > 1 and cp_block:
                pruned.add({"cp": cp}, cp_block)
                continue
            if (
                cp > 1
                and req.values.get("model.cp_comm_type") is None
                and not cp_transports(req, tp, cp)
            ):
                pruned.add({"tp": tp, "cp": cp}, _no_transport(req))
                continue
            if cp > 1 and req.seq % (2 * cp):
                pruned.add({"cp": cp}, f"SEQ001: seq {req.seq} % (2·CP) != 0")
                continue
            if tp > 1 and req.seq % (tp * cp):
                pruned.add({"tp": tp, "cp": cp}, "SEQ002: seq % (TP·CP) != 0")
                continue
            if world % (tp * cp):
                pruned.add({"tp": tp, "cp": cp}, f"PAR001: {world} GPUs % (TP·CP) != 0")
                continue
            pps = _divisors(world // (tp * cp))
            if "pp" in fx:
                pp0 = int(fx["pp"])
                if pp0 not in pps:
                    pruned.add({"pp": pp0}, f"PAR001: {world} GPUs % (TP·CP·PP) != 0")
                pps = [pp0] if pp0 in pps else []
            for pp in pps:
                if pp > a.num_layers:
                    pruned.add({"pp": pp}, f"PP007: PP > {a.num_layers} layers")
                    continue
                dp = world // (tp * cp * pp)
                for vpp in _vpps(req, pp):
                    if pp == 1 and vpp > 1:
                        pruned.add({"vpp": vpp}, "PP008: virtual stages with PP = 1")
                        continue
                    if pp * vpp > a.num_layers + 1:
                        pruned.add({"vpp": vpp}, "PP007: more stages than layers")
                        continue
                    yield from _expert_layouts(req, world, tp, cp, pp, vpp, dp, experts, pruned, hw)


def _cp_transport_rule(req: Request) -> str | None:
    """Why no CP > 1 plan can be searched from this base config, or None: DSA needs the
    all-gather transport (ATT020), whose full-sequence K/V gather per layer the memory model
    does not price, so the planner does not offer it."""
    if req.values.get("model.cp_comm_type") is not None:
        return None
    if any(m == "dsa" for m, _ in req.arch.layers):
        return "ATT020: DSA with CP needs cp_comm_type allgather (its K/V gather is not priced)"
    return None


def _no_transport(req: Request) -> str:
    """Why no CP transport is allowed at some (TP, CP): the rules that leave only a2a, whose
    group there does not divide the heads per TP rank."""
    if str(req.arch.softmax_type) not in ("vanilla", "None"):
        return "ATT017/ATT015: attention sinks need a2a, whose group must divide heads/TP"
    return "ATT016/ATT015: sliding windows need a2a, whose group must divide heads/TP"


def cp_transports(req: Request, tp: int, cp: int) -> list[tuple[str, int]]:
    """The CP transports the search tries at (TP, CP) when the base config states none, each as
    (cp_comm_type, a2a group): p2p, a2a when its group (all of CP) divides the heads and KV heads
    per TP rank (ATT015), and a2a+p2p with the largest such group inside the NVLink domain
    (TP·group ranks) that is smaller than CP. Sliding windows rule out p2p and a2a+p2p
    (ATT016), attention sinks leave only a2a (ATT017). A base config that states a transport
    keeps it (space.cp_transport_of)."""
    if cp <= 1:
        return [("p2p", 1)]
    a = req.arch
    mla = any(m in ("mla", "dsa") for m, _ in a.layers)
    heads = a.num_attention_heads
    heads_tp, kv_tp = per_tp_rank(heads, heads if mla else a.num_query_groups or heads, tp)
    a2a_ok = heads_tp % cp == 0 and kv_tp % cp == 0
    if str(a.softmax_type) not in ("vanilla", "None"):
        return [("a2a", 1)] if a2a_ok else []
    windows = bool(windows_of(req.values, a.num_layers))
    out = [] if windows else [("p2p", 1)]
    if a2a_ok:
        out.append(("a2a", 1))
    inner = a2a_group(heads_tp, kv_tp, cp, max(1, req.hardware.domain // tp))
    if not windows and 1 < inner < cp:
        out.append(("a2a+p2p", inner))
    return out


def _transport(req: Request, lay: Mapping[str, int], world: int) -> tuple[str, int]:
    """The CP transport of a plan: the base config's, or the fastest the search may try
    (:func:`cp_transports`), timed once per (TP, CP, MBS) on every layer kind (only the CP
    exchange and the attention kernels' length depend on it)."""
    tp, cp = lay["tp"], lay["cp"]
    if req.values.get("model.cp_comm_type") is not None or cp <= 1:
        return cp_transport_of(req.values, cp)
    key = (tp, cp, lay["mbs"])
    found = req.transports.get(key)
    if found is None:
        options = cp_transports(req, tp, cp) or [("p2p", 1)]
        if len(options) == 1:
            found = options[0]
        else:
            model = request_model(req)
            base = _plan_with(req, lay, world, ("p2p", 1))
            found = min(
                options,
                key=lambda o: model.cp_cost(replace(base, cp_comm=o[0], cp_a2a=o[1])),
            )
        req.transports[key] = found
    return found


def request_model(req: Request) -> Model:
    """The request's step-time model, built on first use (a derived request from
    ``replace(req, ...)`` keeps it: the architecture, GPU, sequence and values are the same)."""
    if req.model is None:
        req.model = Model.build(req.arch, req.hardware, req.seq, req.values)
    return req.model


def _vpps(req: Request, pp: int) -> list[int]:
    if "vpp" in req.fixed:
        return [int(req.fixed["vpp"] or 1)]
    if pp == 1:
        return [1]
    layers = req.arch.num_layers
    # powers of two (uneven chunks take a layout string), every even split of the layers, and
    # every even split once the embedding and the loss (and MTP) count as a layer each (the
    # balance layout_string writes, and account_for_*_in_pipeline_split's: Qwen3-235B's 94
    # layers run as PP 4 × VPP 12, two units a stage)
    units = layers + 2 + req.arch.mtp_num_layers
    even = [v for v in range(3, layers // pp + 1) if layers % (pp * v) == 0]
    balanced = [v for v in range(3, units // pp + 1) if units % (pp * v) == 0]
    return sorted({1, 2, 3, 4, 6, 8, *even, *balanced})


def _expert_layouts(
    req: Request,
    world: int,
    tp: int,
    cp: int,
    pp: int,
    vpp: int,
    dp: int,
    experts: int,
    pruned: _Pruned,
    hw: Hardware,
) -> Iterator[dict[str, int]]:
    fx = req.fixed
    eps = _divisors(experts) if experts else [1]
    if req.max_ep:
        eps = [e for e in eps if e <= req.max_ep]
    if "ep" in fx:
        eps = [int(fx["ep"])]
    for ep in eps:
        if experts and experts % ep:
            pruned.add({"ep": ep}, f"MOE001: {experts} experts % EP != 0")
            continue
        for etp in [int(fx["etp"])] if "etp" in fx else sorted({1, tp}):
            if world % (etp * ep * pp):
                pruned.add(
                    {"ep": ep, "etp": etp},
                    f"PAR002: needs a multiple of ETP·EP·PP = {etp * ep * pp} GPUs",
                )
                continue
            for mbs in [int(fx["mbs"])] if "mbs" in fx else req.mbs_choices:
                if mbs > 1 and mbs * req.seq > MAX_MICROBATCH_TOKENS and "mbs" not in fx:
                    pruned.add({"mbs": mbs}, f"planner bound: MBS·seq > {MAX_MICROBATCH_TOKENS}")
                    continue
                if req.gbs % (mbs * dp):
                    pruned.add({"mbs": mbs}, f"BAT001: GBS {req.gbs} % (MBS·DP = {mbs * dp}) != 0")
                    continue
                m = req.gbs // (mbs * dp)
                if vpp > 1 and m % pp:
                    pruned.add(
                        {"vpp": vpp}, "PP009: interleaved schedule needs micro-batches % PP == 0"
                    )
                    continue
                yield {
                    "tp": tp,
                    "cp": cp,
                    "pp": pp,
                    "vpp": vpp,
                    "ep": ep,
                    "etp": etp,
                    "mbs": mbs,
                    "dp": dp,
                }


def _dispatchers(req: Request, ep: int, etp: int, pruned: _Pruned | None = None) -> list[str]:
    """Dispatchers Bridge accepts for this group (DSP005, DSP010, DSP011)."""
    out = []
    for d in req.dispatchers:
        why = None
        if d in ("deepep", "hybridep") and ep * etp == 1:
            why = "DSP005: DeepEP/HybridEP with a dispatch group of one rank"
        elif d == "deepep" and req.hardware.domain > 8:
            why = "DSP010: DeepEP on GB200/GB300 NVL72"
        elif d == "deepep" and (ep * etp > 160 or (ep * etp) % 8):
            why = "DSP011: DeepEP needs a dispatch group of 8..160 ranks, a multiple of 8"
        if why is None:
            out.append(d)
        elif pruned is not None:
            pruned.add({"dispatcher": d}, why)
    return out or ["alltoall"]


def _plan(req: Request, lay: Mapping[str, int], world: int, **knobs: Any) -> Plan:
    return _plan_with(req, lay, world, _transport(req, lay, world), **knobs)


def _plan_with(
    req: Request, lay: Mapping[str, int], world: int, transport: tuple[str, int], **knobs: Any
) -> Plan:
    flags = req.base_flags
    layout = layout_for(req, lay["pp"], lay["vpp"])
    cp_comm, cp_a2a = transport
    routing, capacity, padded = req.routing
    return Plan(
        tp=lay["tp"],
        pp=lay["pp"],
        cp=lay["cp"],
        ep=lay["ep"],
        etp=lay["etp"],
        vpp=lay["vpp"],
        world=world,
        mbs=lay["mbs"],
        gbs=req.gbs,
        seq=req.seq,
        precision=req.precision,
        fp8_recipe=req.fp8_recipe,
        tp_overlap=flags.get("tp_overlap", False) and lay["tp"] > 1,
        ep_overlap=flags.get("ep_overlap", False),
        shared_expert_overlap=flags.get("shared_expert_overlap", False),
        dp_overlap=flags.get("dp_overlap", True),
        cuda_graphs=flags.get("cuda_graphs", False),
        cp_comm=cp_comm,
        cp_a2a=cp_a2a,
        routing=routing,
        capacity=capacity,
        padded=padded,
        grad_fp32=flags.get("grad_fp32", False),
        param_gather_bytes=1.0
        if flags.get("fp8_param_gather") and req.precision != "bf16"
        else 2.0,
        layout=layout_counts(layout),
        **knobs,
    )


class _Memory:
    """Central worst-stage memory per plan, memoized on what the memory model reads."""

    def __init__(self, req: Request) -> None:
        self.req = req
        self.cache: dict[tuple[Any, ...], float] = {}
        self.lower_cache: dict[tuple[Any, ...], float] = {}
        self.states_cache: dict[tuple[Any, ...], float] = {}
        self.ranks: dict[tuple[Any, ...], frozenset[int]] = {}
        self.terms: dict[Any, Any] = {}  # the memory model's reused terms (_Memory.reuse)
        self.checks = 0

    def key(self, p: Plan) -> tuple[Any, ...]:
        return (
            p.tp,
            p.pp,
            p.cp,
            p.ep,
            p.etp,
            p.vpp,
            p.mbs,
            p.world,
            p.recompute,
            p.offload,
            p.dispatcher,
            _in_flight_cap(p),
        )

    @staticmethod
    def states_key(p: Plan) -> tuple[Any, ...]:
        """What the states (weights, gradients, optimizer) of a plan's ranks depend on: the
        sizes, their shard groups (the world) and the offload; not the micro-batch size, the
        recompute set or the dispatcher."""
        return (p.tp, p.pp, p.cp, p.ep, p.etp, p.vpp, p.world, p.offload)

    def reuse(self, p: Plan) -> Any:
        """The memory model's term reuse for a plan (analysis/memory/estimate.py::Reuse):
        a rank's activations depend on the sizes, the micro-batch size, the recompute set and
        the micro-batches in flight, not on the offload or the dispatcher (nor the world
        beyond the micro-batch count); a layout's rungs share them, and its states. A rank's
        parameter counts depend only on the sizes that split them and the pipeline split,
        the bytes per parameter on the optimizer's shard groups (DP·CP, EDP) and the offload."""
        # Lazy: the memory model (~40 ms to import) loads only when a plan is estimated.
        from moe_lint.analysis.memory.estimate import Reuse

        activations = (p.tp, p.pp, p.cp, p.ep, p.etp, p.vpp, p.mbs, p.recompute,
                       _in_flight_cap(p))  # fmt: skip
        params = (p.tp, p.ep, p.etp, p.pp, p.vpp)
        return Reuse(self.states_key(p), activations, params, (p.dp * p.cp, p.edp, p.offload),
                     self.terms)  # fmt: skip

    def screened(self, p: Plan) -> frozenset[int]:
        """The pipeline ranks the search estimates (run() re-checks every rank): the first two
        (most micro-batches in flight), the last (the output layer and loss), and the first
        rank holding the most MoE layers and the first holding the most layers: the states
        follow the layers, and a model whose first layers are dense (DeepSeek-V3's three)
        peaks on the first rank whose layers are all MoE (rank 2 of PP 16 × VPP 2). The split
        is the step-time model's (perf.stage_layers), memoized on what it reads."""
        key = (p.pp, p.vpp, p.layout, p.split)
        found = self.ranks.get(key)
        if found is None:
            ranks = {0, 1, p.pp - 1}
            if p.pp > 2:
                kinds = [ffn == "moe" for _, ffn in self.req.arch.layers]
                per_rank = stage_layers(len(kinds), 0, p)
                layers = [len(r) for r in per_rank]
                moe = [sum(kinds[i] for i in r) for r in per_rank]
                ranks.add(layers.index(max(layers)))
                ranks.add(moe.index(max(moe)))
            found = self.ranks[key] = frozenset(ranks)
        return found

    def central(self, p: Plan) -> float:
        k = self.key(p)
        if k not in self.cache:
            self.checks += 1
            ranks = self.screened(p)  # screening: run() re-checks every rank
            self.cache[k] = self.estimate(p, bounds=False, ranks=ranks).worst.total_gib
        return self.cache[k]

    def lower(self, p: Plan, first_rank: bool = False) -> float:
        """The lower bound MEM001 judges (what the plan needs at least) on the screened ranks,
        or on rank 0 alone (``first_rank``: enough to reject, since the worst is no less)."""
        ranks = frozenset({0}) if first_rank else self.screened(p)
        k = ("lower", ranks, *self.key(p))
        if k not in self.lower_cache:
            self.checks += 1
            est = self.estimate(p, bounds="lower-only", ranks=ranks)
            self.lower_cache[k] = est.lower_worst.total_gib
        return self.lower_cache[k]

    def states(self, p: Plan) -> float:
        """Rank 0's weights, gradients and optimizer states (lower-bound mode): a floor
        under :meth:`lower` that skips the activations, shared by every micro-batch size and
        dispatcher (neither changes the states)."""
        k = self.states_key(p)
        found = self.states_cache.get(k)
        if found is None:
            # Lazy: the memory model (~40 ms to import) loads only when a plan is estimated.
            from moe_lint.analysis.memory.estimate import states_lower_bound

            self.checks += 1
            values, facts = plan_inputs(self.req, p)
            found = self.states_cache[k] = states_lower_bound(
                values,
                facts,
                self.req.memory_settings,
                self.req.versions,
                arch=self.req.arch,
                reuse=self.reuse(p),
            )
        return found

    def estimate(self, p: Plan, bounds: Any, ranks: frozenset[int] | None = None) -> Any:
        # Lazy: the memory model (~40 ms to import) loads only when a plan is estimated.
        from moe_lint.analysis.memory import estimate

        values, facts = plan_inputs(self.req, p)
        return estimate(
            values,
            facts,
            self.req.memory_settings,
            self.req.capacity_gib,
            self.req.versions,
            bounds=bounds,
            ranks=ranks,
            arch=self.req.arch,
            reuse=self.reuse(p),
        )


def _in_flight_cap(p: Plan) -> int:
    """The plan's micro-batches, capped where no rank holds more in flight (1F1B holds at most
    PP, the interleaved schedule under 2·PP): what the memory model reads of the count."""
    return min(p.microbatches, p.pp * p.vpp * 2)


def plan_values(req: Request, p: Plan) -> dict[str, Any]:
    """The config values a plan changes (dotted), as emit writes them."""
    a = req.arch
    layout = layout_for(req, p.pp, p.vpp)
    out: dict[str, Any] = {
        "model.tensor_model_parallel_size": p.tp,
        "model.pipeline_model_parallel_size": p.pp,
        "model.virtual_pipeline_model_parallel_size": p.vpp if p.vpp > 1 else None,
        "model.pipeline_model_parallel_layout": layout,
        "model.num_layers_in_first_pipeline_stage": None,
        "model.num_layers_in_last_pipeline_stage": None,
        "model.account_for_embedding_in_pipeline_split": False,
        "model.account_for_loss_in_pipeline_split": False,
        "model.context_parallel_size": p.cp,
        "model.expert_model_parallel_size": p.ep,
        "model.expert_tensor_parallel_size": p.etp,
        "model.sequence_parallel": p.tp > 1,
        "model.seq_length": p.seq,
        "dataset.seq_length": p.seq,
        "train.micro_batch_size": p.mbs,
        "train.global_batch_size": p.gbs,
    }
    if "full" in p.recompute:
        out.update(
            {
                "model.recompute_granularity": "full",
                "model.recompute_method": "uniform",
                "model.recompute_num_layers": 1,
                "model.recompute_modules": None,
            }
        )
    elif p.recompute:
        out.update(
            {
                "model.recompute_granularity": "selective",
                "model.recompute_modules": list(p.recompute),
                "model.recompute_method": None,
                "model.recompute_num_layers": None,
            }
        )
    else:
        out.update(
            {
                "model.recompute_granularity": None,
                "model.recompute_modules": None,
                "model.recompute_method": None,
                "model.recompute_num_layers": None,
            }
        )
    if a.is_moe:
        if p.dispatcher in ("deepep", "hybridep"):
            out["model.moe_token_dispatcher_type"] = "flex"
            out["model.moe_flex_dispatcher_backend"] = p.dispatcher
        else:
            out["model.moe_token_dispatcher_type"] = p.dispatcher
            out["model.moe_flex_dispatcher_backend"] = None
    if p.cp > 1 and req.values.get("model.cp_comm_type") is None and p.cp_comm != "p2p":
        out["model.cp_comm_type"] = p.cp_comm  # the transport the search chose
    if p.cp_comm == "a2a+p2p":
        # the stated sizes, re-split for this CP (a stale product is ATT rule's startup error)
        out["model.hierarchical_context_parallel_sizes"] = p.hierarchical_sizes
    out["optimizer.optimizer_cpu_offload"] = p.offload > 0
    out["optimizer.optimizer_offload_fraction"] = p.offload if p.offload > 0 else 1.0
    return out


def plan_inputs(req: Request, p: Plan) -> tuple[dict[str, Any], dict[str, Any]]:
    """The memory model's values and facts for a plan (the base config with the plan's changes)."""
    values = {**req.values, **plan_values(req, p)}
    if p.offload > 0:
        values["optimizer.use_precision_aware_optimizer"] = True  # Bridge requires it (OPT002)
    facts = {
        k: v
        for k, v in req.facts.items()
        if k not in ("placement", "layout_error", "layout_stages")
    }
    facts.update(
        tp=p.tp,
        pp=p.pp,
        cp=p.cp,
        ep=p.ep,
        etp=p.etp,
        world=p.world,
        dp=p.dp,
        edp=p.edp,
        sp=p.tp > 1,
        vpp=p.vpp if p.vpp > 1 else None,
        seq=p.seq,
        mbs=p.mbs,
        microbatches=p.microbatches,
        gbs=p.gbs,
    )
    return values, facts


def _usable(req: Request) -> float:
    return float(req.capacity_gib - req.memory_settings.headroom_gib)


def search(req: Request) -> Outcome:
    """Every feasible layout of every GPU count, ranked (module docstring)."""
    start = time.perf_counter()
    pruned = _Pruned()
    model = request_model(req)
    memory = _Memory(req)
    hard = _usable(req) * (1.0 + req.margin)  # the lower bound over it: MEM001 ("does NOT fit")
    # the central estimate within it: "fits"; --safe wants MEM002's "fits" (under the warning
    # headroom), so that no plan it keeps is one the full check then marks "may not fit"
    usable = _usable(req) * (1.0 - req.warn) if req.safe else _usable(req)
    ladder = recompute_ladder(req.arch, req.precision, req.fp8_recipe)
    if "recompute" in req.fixed:
        ladder = [tuple(req.fixed["recompute"])]
    offloads = (float(req.fixed["offload"]),) if "offload" in req.fixed else OFFLOAD_LADDER
    bounds: list[tuple[float, int, dict[str, int], str]] = []
    chosen: dict[tuple[int, ...], str] = {}
    visited = 0
    for world in req.gpus:
        for lay in _feasible_layouts(req, world, pruned):
            visited += 1
            # the dispatcher changes only the all-to-all time: the fastest allowed one
            dkey = (lay["tp"], lay["cp"], lay["ep"], lay["etp"], lay["mbs"])
            disp = chosen.get(dkey, "")
            if not disp:
                allowed = _dispatchers(req, lay["ep"], lay["etp"], pruned)
                disp = chosen[dkey] = min(
                    allowed, key=lambda d: model.ep_time(_plan(req, lay, world, dispatcher=d))
                )
            optimistic = model.tokens_per_s_per_gpu(_plan(req, lay, world, dispatcher=disp))
            bounds.append((_score_tput(req, optimistic, world), world, lay, disp))
    bounds.sort(key=lambda b: -b[0])
    saving = (ladder[-1], offloads[-1])
    kept: list[Candidate] = []
    rejected: dict[tuple[Any, ...], list[tuple[tuple[int, ...], float]]] = {}
    states_over: dict[tuple[int, int, int], list[tuple[tuple[int, ...], float]]] = {}
    inferred = 0
    timed = 0
    for i, (score, world, lay, disp) in enumerate(bounds):
        if _excluded(req, lay):
            continue
        if len(kept) >= req.keep and score <= _score(req, kept[-1]):
            # the kept plans no longer change: every later layout, no faster, ranks below too
            _count_ranked_below(req, pruned, bounds[i:])
            break
        found = None
        slower = False
        dims = {k: lay[k] for k in ("tp", "cp", "pp", "vpp", "ep", "etp", "mbs")}
        # (the optimistic score above is the cheapest rung's: it can enter the kept set)
        floor: tuple[float, float | None] | None = None
        dominated = False
        # dominance: memory falls as TP, CP, EP or ETP grow with PP, VPP, MBS and the
        # world fixed (weights, grads and activations shard further; optimizer shards
        # keep their DP·CP / EDP product; a full pipeline keeps PP·VPP micro-batches in
        # flight). A layout no bigger in any of them than one that is over even with the
        # most-saving rung is over too.
        # The states alone (weights, gradients, optimizer) depend on neither the micro-batch
        # size nor the dispatcher, nor on whether the pipeline is full: states_over holds the
        # layouts whose states are over, per (PP, VPP, world), for the same dominance.
        group = (lay["pp"], lay["vpp"], lay["mbs"], disp, world)
        states_group = (lay["pp"], lay["vpp"], world)
        full = req.gbs // (lay["mbs"] * lay["dp"]) >= lay["pp"] * lay["vpp"]
        sizes = (lay["tp"], lay["cp"], lay["ep"], lay["etp"])
        over = _dominated(rejected.get(group, ()), sizes) if full else None
        if over is None:
            over = _dominated(states_over.get(states_group, ()), sizes)
        most = None if over is not None else _plan(
            req, lay, world, dispatcher=disp, recompute=ladder[-1], offload=offloads[-1]
        )  # fmt: skip
        if most is None:
            floor = (math.inf, over)
            inferred += 1
            dominated = True
        elif (states := memory.states(most)) > hard:
            # over on the states alone: no rung, micro-batch size or dispatcher fits
            floor = (math.inf, states)
            states_over.setdefault(states_group, []).append((sizes, states))
            if full:
                rejected.setdefault(group, []).append((sizes, states))
        else:
            # the most memory-saving rung, checked once: if even its lower bound is over,
            # MEM001 rejects every rung; if its central estimate is over, no rung fits
            # centrally and the layout can only pass as "may not fit" (MEM002)
            low = memory.lower(most, first_rank=True)  # enough to reject
            central = memory.central(most) if low <= hard else math.inf
            if usable < central < math.inf and most.pp > 1:
                low = memory.lower(most)  # every screened rank: the may-not-fit judge
            if low > hard:
                floor = (math.inf, low)
                if full:
                    rejected.setdefault(group, []).append((sizes, low))
            else:
                # a central estimate within usable bounds the lower bound too
                floor = (central, low if central > usable else None)
                if floor[1] is None or not req.safe:
                    found, slower, n = _choose_rung(
                        req, model, memory, lay, world, disp, ladder, offloads, kept,
                        central_fit=floor[1] is None, usable=usable, hard=hard,
                    )  # fmt: skip
                    timed += n
        if found is None and floor is not None and floor[1] is not None and floor[1] > hard:
            pruned.add(
                {**dims, "dispatcher": disp},
                f"MEM001: needs ≥ {{need}} GiB of {hard:.1f} usable even with {_rung(saving)}"
                + (" (by dominance: a layout with no smaller TP, CP, EP, ETP needs it)"
                   if dominated else ""),
                need=floor[1],
            )  # fmt: skip
            continue
        if found is None:
            why = "--safe: no rung fits centrally" if req.safe else "MEM001: no rung fits"
            pruned.add({**dims, "dispatcher": disp}, "ranked below the kept plans" if slower
                       else why)  # fmt: skip
            continue
        kept.append(found)
        kept.sort(key=lambda c: rank_key(req, c))
        if len(kept) > req.keep:
            drop = kept.pop()
            _count_kept_out(pruned, drop)
    out = Outcome(
        kept,
        pruned.by,
        visited,
        pruned.events,
        timed,
        memory.checks,
        time.perf_counter() - start,
        model,
        inferred,
    )
    for c in kept:
        p = c.plan
        c.layout_text = layout_for(req, p.pp, p.vpp)
    return out


def _excluded(req: Request, lay: Mapping[str, int]) -> bool:
    """The layout is one the linter already dropped (``req.exclude``)."""
    return bool(req.exclude) and (lay["tp"], lay["pp"], lay["cp"], lay["ep"], lay["etp"],
                                  lay["vpp"], lay["mbs"]) in req.exclude  # fmt: skip


def _count_ranked_below(
    req: Request, pruned: _Pruned, rest: Sequence[tuple[float, int, dict[str, int], str]]
) -> None:
    """Count the layouts of ``rest`` (but the excluded) as ranked below the kept plans."""
    rows = [{**{k: lay[k] for k in LAYOUT_DIMS}, "dispatcher": disp}
            for _, _, lay, disp in rest if not _excluded(req, lay)]  # fmt: skip
    pruned.add_all(rows, "ranked below the kept plans (optimistic time)")


def _dominated(
    over: Sequence[tuple[tuple[int, ...], float]], sizes: tuple[int, ...]
) -> float | None:
    """The need of the first layout in ``over`` whose TP, CP, EP and ETP are each at least
    ``sizes``' (so this layout, no bigger in any, needs as much), or None."""
    tp, cp, ep, etp = sizes
    for (big_tp, big_cp, big_ep, big_etp), need in over:
        if tp <= big_tp and cp <= big_cp and ep <= big_ep and etp <= big_etp:
            return need
    return None


def _rung(ro: tuple[tuple[str, ...], float]) -> str:
    rec = (
        "full recompute"
        if "full" in ro[0]
        else ("recompute " + ",".join(ro[0]) if ro[0] else "no recompute")
    )
    return f"{rec} and optimizer offload {ro[1]:g}" if ro[1] else rec


def _choose_rung(
    req: Request,
    model: Model,
    memory: _Memory,
    lay: Mapping[str, int],
    world: int,
    disp: str,
    ladder: list[tuple[str, ...]],
    offloads: tuple[float, ...],
    kept: list[Candidate],
    *,
    central_fit: bool,
    usable: float,
    hard: float,
) -> tuple[Candidate | None, bool, int]:
    """The layout's fastest fitting (recompute, offload) rung, the "slower than every kept
    plan" flag and the plans timed. Memory falls along the recompute ladder and with more
    offload, so per offload level a binary search finds the least recompute that fits
    (``central_fit``: the central estimate within ``usable``; else the lower bound within
    ``hard``: "may not fit"); the fastest of those (at most one per level) is the plan."""
    timed = 0
    best: Candidate | None = None
    bar = _score(req, kept[-1]) if len(kept) >= req.keep else -math.inf

    def fits(rec: tuple[str, ...], off: float) -> bool:
        q = _plan(req, lay, world, dispatcher=disp, recompute=rec, offload=off)
        return memory.central(q) <= usable if central_fit else memory.lower(q) <= hard

    for off in offloads:
        cheapest = _plan(req, lay, world, dispatcher=disp, recompute=ladder[0], offload=off)
        timed += 1
        if _score_tput(req, model.tokens_per_s_per_gpu(cheapest), world) <= max(
            bar, _best(req, best)
        ):
            break  # more offload only adds time
        if not fits(ladder[-1], off):
            continue
        lo, hi = 0, len(ladder) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if fits(ladder[mid], off):
                hi = mid
            else:
                lo = mid + 1
        p = _plan(req, lay, world, dispatcher=disp, recompute=ladder[lo], offload=off)
        timed += 1
        cand = Candidate(p, model.predict(p), memory.central(p), usable_gib=_usable(req))
        if not central_fit:
            cand.verdict = "may not fit"
        if _score(req, cand) > max(bar, _best(req, best)):
            best = cand
        if lo == 0:
            break  # fits without recompute: more offload would only add time
    return best, best is None, timed


def _best(req: Request, c: Candidate | None) -> float:
    return -math.inf if c is None else _score(req, c)


def _score_of(req: Request, pred: Prediction, world: int) -> float:
    """Higher is better: tokens/s/GPU, or (objective ``gpus``) fewest GPUs, then tokens/s/GPU."""
    return _score_tput(req, pred.tokens_per_s_per_gpu, world)


def _score_tput(req: Request, tput: float, world: int) -> float:
    """:func:`_score_of` of a throughput (tokens/s/GPU)."""
    return tput if req.objective == "throughput" else -world + tput * 1e-9


def _count_kept_out(pruned: _Pruned, c: Candidate) -> None:
    p = c.plan
    dims = {
        "tp": p.tp,
        "cp": p.cp,
        "pp": p.pp,
        "vpp": p.vpp,
        "ep": p.ep,
        "etp": p.etp,
        "mbs": p.mbs,
        "dispatcher": p.dispatcher,
    }
    pruned.add(dims, "fits, ranked below the kept plans")


def rank_key(req: Request, c: Candidate) -> tuple[float, ...]:
    """Best score first; between plans the model cannot tell apart (within 0.1 %), one that
    fits before one that may not, then more memory headroom (whole GiB), then the simpler
    one: smaller CP, TP, PP, VPP, MBS, EP, then less recompute and offload."""
    p = c.plan
    score = _score(req, c)
    coarse = round(math.log(max(score, 1e-9)) / math.log(1.001)) if score > 0 else score
    return (-coarse, c.verdict != "fits", round(c.memory_gib), p.cp, p.tp, p.pp, p.vpp, p.mbs,
            p.ep, len(p.recompute), p.offload)  # fmt: skip


def _score(req: Request, c: Candidate) -> float:
    return _score_of(req, c.prediction, c.plan.world)


LAYOUT_DIMS = ("tp", "cp", "pp", "vpp", "ep", "etp", "mbs")


def fitting_rungs(req: Request, p: Plan) -> list[tuple[tuple[str, ...], float]]:
    """The recompute/offload rungs with which the plan's layout fits (central estimate)."""
    memory = _Memory(req)
    ladder = recompute_ladder(req.arch, req.precision, req.fp8_recipe)
    if "recompute" in req.fixed:
        ladder = [tuple(req.fixed["recompute"])]
    offloads = (float(req.fixed["offload"]),) if "offload" in req.fixed else OFFLOAD_LADDER
    usable = _usable(req)
    out = []
    for off in offloads:
        for rec in ladder:
            if memory.central(replace(p, recompute=rec, offload=off)) <= usable:
                out.append((rec, off))
    return out


def best_for(
    req: Request, layout: Mapping[str, int], world: int, defaults: bool = True
) -> tuple[Candidate | None, str]:
    """The fastest plan with the ``layout`` values fixed (knobs and any unfixed size free), or
    why there is none: the rule that rejects it, or the memory it needs. ``defaults`` fixes
    what a written layout leaves out as Bridge does (ETP 1, VPP 1) and MBS 1."""
    fixed = {**req.fixed, **{k: int(v) for k, v in layout.items() if k in LAYOUT_DIMS}}
    if defaults:
        for name in ("etp", "mbs", "vpp"):
            fixed.setdefault(name, 1)
    sub = replace(req, fixed=fixed, gpus=(world,), keep=1)
    pruned = _Pruned()
    lays = list(_feasible_layouts(sub, world, pruned))
    if not lays:
        reasons = Counter({reason: n for (_, _, reason), n in pruned.flat.items()})
        return None, reasons.most_common(1)[0][0] if reasons else "no such layout"
    outcome = search(sub)
    if outcome.kept:
        return outcome.kept[0], ""
    reasons = Counter()
    for values in outcome.pruned.get("tp", {}).values():
        reasons.update(values)
    return None, reasons.most_common(1)[0][0] if reasons else "does not fit"
