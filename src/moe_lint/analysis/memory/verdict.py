"""The one memory verdict: MEM001 / MEM002 (through the ``mem_verdict`` fact), ``moe-lint
estimate`` and ``moe_lint.estimate`` all call :func:`judge`, so the thresholds live here only.

What is compared with usable memory, and why (docs/memory-model.md, *Bounds and verdict*):

* "does NOT fit" (MEM001, an error) when the **lower bound of the device total** exceeds usable
  memory · (1 + error-margin): the lower bound holds only what is certain, so an error is true
  whenever the model's sharding and saved-tensor counts are;
* "may not fit" (MEM002, a warning) when the **central device total** exceeds usable memory ·
  (1 − warn-headroom): the model's best reading leaves too little to spare;
* "fits" otherwise; the band is printed next to it, as the most the run may need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from moe_lint.records import record

if TYPE_CHECKING:
    from moe_lint.analysis.memory.results import Estimate

Label = Literal["does NOT fit", "may not fit", "fits"]


@record(frozen=True)
class Verdict:
    """The verdict, the quantity it compared with usable memory and the threshold it used."""

    label: Label
    #: "lower bound of the device total" or "central device total".
    quantity: str
    compared_gib: float
    threshold_gib: float
    usable_gib: float
    #: The worst stage's device total three ways (lower bound, central, band).
    lower_gib: float
    central_gib: float
    band_gib: float
    #: The threshold as a phrase ("usable memory + error-margin 0%", "95% of usable memory").
    threshold: str
    why: str

    def text(self) -> str:
        """One sentence: the label, what was compared with what, and why that quantity."""
        side = "above" if self.compared_gib > self.threshold_gib else "within"
        if self.label == "fits":
            side = "below"
        return (
            f"{self.label}: the {self.quantity}, {self.compared_gib:.1f} GiB, is {side} "
            f"{self.threshold} ({self.threshold_gib:.1f} of {self.usable_gib:.1f} GiB); "
            f"{self.why} (device total: lower bound {self.lower_gib:.1f}, central "
            f"{self.central_gib:.1f}, band up to {self.band_gib:.1f} GiB)"
        )


def judge(est: Estimate, warn_fraction: float, error_margin: float) -> Verdict | None:
    """The verdict for ``est`` under the lint settings (None without a GPU)."""
    usable = est.usable_gib
    if usable is None:
        return None
    lower, central = est.lower_worst.total_gib, est.worst.total_gib
    band = est.upper_worst.total_gib
    three = (lower, central, band)
    error_at = usable * (1 + error_margin)
    if lower > error_at:
        return Verdict("does NOT fit", "lower bound of the device total", lower, error_at,
                       usable, *three, f"usable memory + error-margin {100 * error_margin:g}%",
                       "the lower bound is compared because it holds only what is certain, "
                       "so the error is true")  # fmt: skip
    warn_at = usable * (1 - warn_fraction)
    kept = f"{100 * (1 - warn_fraction):g}% of usable memory"
    if central > warn_at:
        return Verdict("may not fit", "central device total", central, warn_at, usable, *three,
                       kept, "the central estimate is compared because it is the best reading; "
                       "the lower bound fits")  # fmt: skip
    return Verdict("fits", "central device total", central, warn_at, usable, *three, kept,
                   "the central estimate is compared because it is the best reading")  # fmt: skip
