"""What the memory model returns: named terms, per-stage peaks, the estimate with its bounds."""

from __future__ import annotations

from dataclasses import dataclass

GIB = float(2**30)
#: The upper band's term on top of the allocated peak (an allocated-memory model error).
BAND = "model band"


class MemoryInputError(ValueError):
    """The config lacks a value the estimate cannot do without (the message names it)."""


@dataclass(frozen=True)
class Term:
    """One named contribution to a stage's memory.

    kind: ``state`` (weights/grads/optimizer, alive all step), ``activation`` (forward/backward
    phase), ``step`` (optimizer-step transient, not concurrent with activations), ``fixed``
    (device memory outside PyTorch's allocator) or ``margin`` (fragmentation).
    """

    name: str
    gib: float
    derivation: str
    kind: str = "state"


@dataclass(frozen=True)
class StageEstimate:
    """Peak of one pipeline rank: allocated tensors and the device total incl. fixed costs.

    ``forward_backward_gib`` and ``step_gib`` are the allocated totals of the two phases
    (states plus activations, states plus optimizer-step transients); the peak is the larger.
    """

    stage: int
    terms: tuple[Term, ...]
    total_gib: float
    allocated_gib: float
    peak_phase: str
    forward_backward_gib: float = 0.0
    step_gib: float = 0.0
    #: What PyTorch's caching allocator reserves: allocated plus the fragmentation margin.
    reserved_gib: float = 0.0

    def term(self, name: str) -> Term | None:
        """The term called ``name``, if the stage has one."""
        return next((t for t in self.terms if t.name == name), None)


@dataclass(frozen=True)
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
        from moe_lint.analysis.memory.verdict import judge

        found = judge(self, warn_fraction, error_margin)
        return None if found is None else found.label


@dataclass(frozen=True)
class Lever:
    """A config change and what it does to the worst stage's peak (negative = saves)."""

    name: str
    delta_gib: float
    requires: str
