"""Pipeline splits: the ``pipeline_model_parallel_layout`` grammar and per-stage layer counts.

Megatron-Core's layout string (``PipelineParallelLayerLayout``, domain 02 PP-07) lists virtual
pipeline stages separated by ``|``; inside a stage ``E`` is the embedding, ``t`` a transformer
layer, ``m`` an MTP layer, ``L`` the loss; ``x*n`` and ``(...)*n`` repeat, commas and spaces are
cosmetic. ``Et|(tt|)*30mL`` is 32 stages: ``Et``, thirty ``tt`` and ``mL``. Stage ``i`` of the
list belongs to pipeline rank ``i % PP`` (virtual chunk ``i // PP``).
"""

from __future__ import annotations

import re
from typing import NamedTuple

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


def layout_problems(layout: Layout, num_layers: int | None, mtp_layers: int | None) -> list[str]:
    """What ``PipelineParallelLayerLayout.validate_layer_layout`` would reject."""
    problems: list[str] = []
    flat = "".join(layout.stages)
    if flat.count("E") != 1 or not flat.startswith("E"):
        problems.append("the first layer must be the embedding 'E', exactly once")
    if flat.count("L") != 1 or not flat.endswith("L"):
        problems.append("the last layer must be the loss 'L', exactly once")
    if num_layers is not None and layout.count("t") != num_layers:
        problems.append(f"{layout.count('t')} transformer layers 't' but num_layers = {num_layers}")
    if mtp_layers is not None and layout.count("m") != (mtp_layers or 0):
        problems.append(f"{layout.count('m')} MTP layers 'm' but mtp_num_layers = {mtp_layers}")
    if "m" in flat and "t" in flat[flat.index("m") :]:
        problems.append("transformer layers must come before MTP layers")
    return problems


def even_split(
    num_layers: int, pp: int, vpp: int | None, embedding: bool, loss: bool
) -> tuple[list[int] | None, str | None]:
    """Transformer layers per pipeline rank for Megatron's default split, or why it fails."""
    total = num_layers + int(embedding) + int(loss)
    if total % pp:
        extra = " (+1 embedding)" * embedding + " (+1 loss)" * loss
        return None, f"num_layers {num_layers}{extra} = {total} is not divisible by PP = {pp}"
    per_rank = total // pp
    if vpp and per_rank % vpp:
        return None, f"{per_rank} layers per pipeline rank are not divisible by VPP = {vpp}"
    counts = [per_rank] * pp
    if embedding:
        counts[0] -= 1
    if loss:
        counts[-1] -= 1
    return counts, None
