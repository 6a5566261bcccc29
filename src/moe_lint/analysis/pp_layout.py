"""The ``pipeline_model_parallel_layout`` string grammar (placement.py places the layers).

Megatron-Core's layout string (``PipelineParallelLayerLayout``, domain 02 PP-07) lists virtual
pipeline stages separated by ``|``; inside a stage ``E`` is the embedding, ``t`` a transformer
layer, ``m`` an MTP layer, ``L`` the loss; ``x*n`` and ``(...)*n`` repeat, commas and spaces are
cosmetic. ``Et|(tt|)*30mL`` is 32 stages: ``Et``, thirty ``tt`` and ``mL``. Stage ``i`` of the
list belongs to pipeline rank ``i % PP`` (virtual chunk ``i // PP``).
"""

from __future__ import annotations

import re

from moe_lint.records import NamedTuple

_MAX_EXPANDED = 100_000


class LayoutError(ValueError):
    """The layout string does not parse (the message says where)."""


class Layout(NamedTuple):
    """A parsed layout: one string of ``E``/``t``/``m``/``L`` per virtual stage."""

    stages: tuple[str, ...]

    @property
    def num_stages(self) -> int:
        return len(self.stages)

    def count(self, kind: str) -> int:
        return sum(stage.count(kind) for stage in self.stages)

    def per_stage(self, kind: str = "t") -> list[int]:
        return [stage.count(kind) for stage in self.stages]


def _expand(text: str) -> str:
    """Expand ``(...)*n`` groups and ``x*n`` repeats into a flat string."""
    out = text
    group = re.compile(r"\(([^()]*)\)\*(\d+)")
    for _ in range(100):
        new = group.sub(lambda m: m.group(1) * int(m.group(2)), out)
        if len(new) > _MAX_EXPANDED:
            raise LayoutError("layout expands to more than 100,000 symbols")
        if new == out:
            break
        out = new
    if "(" in out or ")" in out:
        raise LayoutError("unbalanced parentheses or a group without '*count'")
    out = re.sub(r"([EtmL|])\*(\d+)", lambda m: m.group(1) * int(m.group(2)), out)
    if len(out) > _MAX_EXPANDED:
        raise LayoutError("layout expands to more than 100,000 symbols")
    return out


def parse_layout(text: str) -> Layout:
    """Parse a layout string; raise :class:`LayoutError` with a readable reason."""
    cleaned = re.sub(r"[\s,]", "", text)
    if not cleaned:
        raise LayoutError("empty layout")
    flat = _expand(cleaned)
    bad = sorted(set(flat) - set("EtmL|"))
    if bad:
        raise LayoutError(f"unknown symbol(s) {''.join(bad)!r}; use E, t, m, L and |")
    return Layout(tuple(flat.split("|")))
