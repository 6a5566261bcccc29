"""What the memory model returns: named terms, per-stage peaks, the estimate with its bounds."""

from __future__ import annotations

from moe_lint.analysis.memory.verdict import judge
from moe_lint.records import record

GIB = float(2**30)
#: The upper band's term on top of the allocated peak (an allocated-memory model error).
BAND = "model band"
#: The term for what the caching allocator reserves above the allocated peak (allocator.py).
ALLOCATOR = "allocator overhead"


class MemoryInputError(ValueError):
    """The config lacks a value the estimate cannot do without (the message names it)."""


@record(frozen=True)
class Term:
    """One named contribution to a stage's memory.

    kind: ``state`` (weights/grads/optimizer, alive all step), ``activation`` (forward/backward
    phase), ``step`` (optimizer-step transient, not concurrent with activations), ``load``
    (checkpoint-load transient before the first step), ``fixed`` (device memory outside
    PyTorch's allocator) or ``margin`` (allocator overhead, the band's model error).
    """

    name: str
    gib: float
    derivation: str
    kind: str = "state"


@record(frozen=True)
class StageEstimate:
    """Peak of one pipeline rank: allocated tensors and the device total incl. fixed costs.

    ``forward_backward_gib``, ``step_gib`` and ``load_gib`` are the allocated totals of the
    phases (states plus activations, plus optimizer-step transients, plus checkpoint-load
    transients); the peak is the largest, named by ``peak_phase``.
    """

    stage: int
    terms: tuple[Term, ...]
    total_gib: float
    allocated_gib: float
    peak_phase: str
    forward_backward_gib: float = 0.0
    step_gib: float = 0.0
    #: What PyTorch's caching allocator reserves: allocated plus the allocator overhead.
    reserved_gib: float = 0.0
    #: States plus the checkpoint-load transients (equal to the states without a load).
    load_gib: float = 0.0

    def term(self, name: str) -> Term | None:
        """The term called ``name``, if the stage has one."""
        return next((t for t in self.terms if t.name == name), None)


@record(frozen=True)
class Estimate:
    """All stages, the worst one, the capacity it is judged against and the assumptions.

    ``stages`` / ``worst`` are the central estimate. ``lower`` holds the same stages with only
    what is certain (correct sharding, balanced routing, no fragmentation, no optional
    buffers, only certain transients): MEM001 fires only when its worst stage exceeds usable
    memory. ``upper`` is the band: pessimistic readings of the uncertain terms plus the
    validation set's largest under-prediction.
    """

    stages: tuple[StageEstimate, ...]
    worst: StageEstimate
    capacity_gib: float | None
    usable_gib: float | None
    assumptions: tuple[str, ...]
    lower: tuple[StageEstimate, ...] = ()
    upper: tuple[StageEstimate, ...] = ()

    @property
    def lower_worst(self) -> StageEstimate:
        """The lower bound's worst stage (the central worst when no bound was computed)."""
        return max(self.lower, key=lambda s: s.total_gib) if self.lower else self.worst

    @property
    def upper_worst(self) -> StageEstimate:
        """The band's worst stage (the central worst when no band was computed)."""
        return max(self.upper, key=lambda s: s.total_gib) if self.upper else self.worst

    @property
    def fits(self) -> bool | None:
        """True/False: the central estimate against the usable capacity (None without a GPU)."""
        return None if self.usable_gib is None else self.worst.total_gib <= self.usable_gib

    def verdict(self, warn_fraction: float, error_margin: float) -> str | None:
        """The label of the one verdict (verdict.judge) ``check`` (MEM001 / MEM002),
        ``estimate`` and the API share; None without a GPU."""
        found = judge(self, warn_fraction, error_margin)
        return None if found is None else found.label


#: The quantities the estimate bounds, as ``moe-lint estimate`` labels them: what PyTorch's
#: caching allocator has allocated (Bridge's max_allocated), what it has reserved (its
#: max_reserved), and the device total an nvidia-smi-style reading shows (reserved plus the
#: CUDA context, NCCL and DeepEP/HybridEP buffers the allocator never sees).
QUANTITIES = ("allocated", "reserved", "device")


@record(frozen=True)
class Bounds:
    """Lower bound, central estimate and band of one quantity of one pipeline stage, GiB."""

    lower: float
    central: float
    band: float


def stage_bounds(est: Estimate, stage: int) -> dict[str, Bounds]:
    """Lower / central / band of the allocated peak, the reserved peak and the device total of
    one stage, side by side. The band's model error (BAND) is on the allocated peak, so it is
    in all three; the lower bound has no allocator overhead (reserved = allocated there)."""
    central = next(s for s in est.stages if s.stage == stage)
    lower = next((s for s in est.lower if s.stage == stage), central)
    upper = next((s for s in est.upper if s.stage == stage), central)
    band_term = upper.term(BAND)
    error = band_term.gib if band_term is not None else 0.0
    return {
        "allocated": Bounds(lower.allocated_gib, central.allocated_gib,
                            upper.allocated_gib + error),
        "reserved": Bounds(lower.reserved_gib, central.reserved_gib, upper.reserved_gib + error),
        "device": Bounds(lower.total_gib, central.total_gib, upper.total_gib),
    }  # fmt: skip


@record(frozen=True)
class Lever:
    """A config change and what it does to the worst stage's peak (negative = saves)."""

    name: str
    delta_gib: float
    requires: str
