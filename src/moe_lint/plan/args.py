"""``moe-lint plan``'s arguments, read and checked before any search starts.

Every value the planner divides by, takes a root of, loops over or writes to is checked here,
so a bad one is one usage line (exit 2) and never an exception deep in the search: ``--set
tp=0`` used to end in a ZeroDivisionError, ``--gpus 1-1e9`` in a 45 s search and ``--top 1e9``
in 127 s. The bounds (bounds.MAX_GPUS, MAX_SIZE, MAX_COUNT, MAX_OVERRIDES and the planner's
MAX_PLANS, MAX_GPU_COUNTS) are those of a config file, so nothing the planner is asked
for is more than a config may say. :func:`check` runs on an :class:`~moe_lint.plan.run.Options`
from the CLI or from Python alike.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from moe_lint.bounds import (
    MAX_COUNT,
    MAX_GPU_COUNTS,
    MAX_GPUS,
    MAX_OVERRIDES,
    MAX_PLANS,
    MAX_SIZE,
    bounded_repr,
)
from moe_lint.errors import UsageError

if TYPE_CHECKING:
    from moe_lint.plan.run import Options

#: The searched sizes ``--set`` and ``--compare`` take by their short names.
SIZES = {
    "tp": "tensor_model_parallel_size",
    "pp": "pipeline_model_parallel_size",
    "vpp": "virtual_pipeline_model_parallel_size",
    "cp": "context_parallel_size",
    "ep": "expert_model_parallel_size",
    "etp": "expert_tensor_parallel_size",
    "mbs": "micro_batch_size",
}
#: Megatron-Core's recompute modules (megatron/core/transformer/transformer_config.py::
#: TransformerConfig.__post_init__, allowed_modules, core_v0.19.2), and the planner's ``full``.
RECOMPUTE_MODULES = ("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe",
                     "shared_experts", "gdn_norm_out")  # fmt: skip
#: A count moe-lint reads at all: up to 10 digits (MAX_GPUS and MAX_COUNT have 8 and 10).
_DIGITS = re.compile(r"\d{1,10}")


def _count(text: str, what: str, limit: int, bound: str) -> int:
    """A whole number 1..limit written in ``text`` (digits only), else one usage line."""
    text = text.strip()
    if not _DIGITS.fullmatch(text):
        raise UsageError(f"{what} {bounded_repr(text, 40)}: expected a whole number from 1")
    value = int(text)
    if value < 1:
        raise UsageError(f"{what} {value}: expected a whole number from 1")
    if value > limit:
        raise UsageError(f"{what} {value:,} is past moe-lint's bound of {limit:,} ({bound})")
    return value


def gpu_counts(text: str) -> tuple[int, ...]:
    """``256``, ``128,256,512`` or a range ``128-1024`` (the powers of two in it)."""
    what = "--gpus"
    out: set[int] = set()
    parts = text.split(",")
    if len(parts) > MAX_GPU_COUNTS:
        raise UsageError(f"--gpus: more than {MAX_GPU_COUNTS} GPU counts (bounds.MAX_GPU_COUNTS)")
    for part in parts:
        lo, sep, hi = part.strip().partition("-")
        if not sep:
            out.add(_count(lo, what, MAX_GPUS, "bounds.MAX_GPUS"))
            continue
        a = _count(lo, what, MAX_GPUS, "bounds.MAX_GPUS")
        b = _count(hi, what, MAX_GPUS, "bounds.MAX_GPUS")
        if a > b:
            raise UsageError(
                f"--gpus {bounded_repr(part, 40)}: the range's low end is above its high end"
            )
        found = [1 << k for k in range(b.bit_length()) if a <= 1 << k <= b]
        if not found:
            raise UsageError(f"--gpus {bounded_repr(part, 40)}: no power of two in the range")
        out.update(found)
    if len(out) > MAX_GPU_COUNTS:
        raise UsageError(f"--gpus: more than {MAX_GPU_COUNTS} GPU counts (bounds.MAX_GPU_COUNTS)")
    return tuple(sorted(out))


def layout(text: str | None) -> dict[str, int] | None:
    """``--compare tp=1,cp=32,ep=32,pp=8,vpp=4`` (sizes by their short names, gpus=N)."""
    if text is None:
        return None
    usage = (
        f"--compare {bounded_repr(text, 60)}: expected NAME=N pairs with NAME one of "
        f"{', '.join(SIZES)}, gpus"
    )
    items = text.split(",")
    if len(items) > len(SIZES) + 1:
        raise UsageError(usage)
    out: dict[str, int] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        if not sep or key not in (*SIZES, "gpus") or key in out:
            raise UsageError(usage)
        if key == "gpus":
            out[key] = _count(value, "--compare gpus", MAX_GPUS, "bounds.MAX_GPUS")
        else:
            out[key] = _count(value, f"--compare {key}", _size_limit(key), _size_bound(key))
    return out


def _size_limit(key: str) -> int:
    return MAX_COUNT if key == "mbs" else MAX_SIZE


def _size_bound(key: str) -> str:
    return "bounds.MAX_COUNT" if key == "mbs" else "bounds.MAX_SIZE"


def fixed(items: list[str]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``--set tp=8`` / ``--set model.context_parallel_size=16`` / ``--set recompute=full``
    fix a searched value; any other ``section.field=value`` overrides the base config."""
    if len(items) > MAX_OVERRIDES:
        raise UsageError(f"--set: more than {MAX_OVERRIDES:,} values (bounds.MAX_OVERRIDES)")
    names = {v: k for k, v in SIZES.items()}
    out: dict[str, Any] = {}
    others: list[str] = []
    for item in items:
        key, sep, value = item.partition("=")
        dotted = key.strip()
        key = names.get(dotted.rsplit(".", 1)[-1], dotted.rsplit(".", 1)[-1])
        shown = bounded_repr(item, 80)
        if not sep:
            raise UsageError(f"--set {shown}: expected NAME=VALUE")
        knobs = (*SIZES, "recompute", "recompute_modules", "offload", "optimizer_offload_fraction")
        if key not in knobs and "." in dotted:
            others.append(item)
            continue
        if key in SIZES:
            out[key] = _count(value, f"--set {key}", _size_limit(key), _size_bound(key))
        elif key in ("recompute", "recompute_modules"):
            out["recompute"] = recompute(value, shown)
        elif key in ("offload", "optimizer_offload_fraction"):
            out["offload"] = offload(value, shown)
        else:
            raise UsageError(
                f"--set {shown}: the planner fixes {', '.join(SIZES)}, recompute or "
                "offload; other fields go as section.field=value"
            )
    return out, tuple(others)


def recompute(value: str, shown: str) -> tuple[str, ...]:
    """``full``, ``none`` or Megatron-Core recompute modules, comma-separated."""
    modules = tuple(m.strip() for m in value.split(",") if m.strip() and m.strip() != "none")
    if modules == ("full",):
        return modules
    bad = [m for m in modules if m not in RECOMPUTE_MODULES]
    if bad:
        raise UsageError(
            f"--set {shown}: {bounded_repr(bad[0], 40)} is not a recompute module; expected "
            f"full, none or {', '.join(RECOMPUTE_MODULES)} (Megatron-Core's allowed_modules)"
        )
    return modules


def offload(value: str, shown: str) -> float:
    """The optimizer's CPU-offload fraction: a number from 0 to 1."""
    try:
        fraction = float(value) if len(value) <= 64 else math.nan
    except ValueError:
        fraction = math.nan
    if not 0.0 <= fraction <= 1.0:
        raise UsageError(f"--set {shown}: the offload fraction is a number from 0 to 1")
    return fraction


def check(opts: Options) -> None:
    """Refuse, in one line, any value of ``opts`` the search cannot take (CLI and API)."""
    if not opts.gpus or len(opts.gpus) > MAX_GPU_COUNTS:
        raise UsageError(f"plan needs 1 to {MAX_GPU_COUNTS} GPU counts (bounds.MAX_GPU_COUNTS)")
    numbers: list[tuple[str, Any, int, str]] = [
        ("gpus", g, MAX_GPUS, "bounds.MAX_GPUS") for g in opts.gpus
    ]
    numbers += [
        ("seq", opts.seq, MAX_COUNT, "bounds.MAX_COUNT"),
        ("gbs", opts.gbs, MAX_COUNT, "bounds.MAX_COUNT"),
        ("tokens-per-step", opts.tokens_per_step, MAX_COUNT, "bounds.MAX_COUNT"),
        ("max-ep", opts.max_ep, MAX_SIZE, "bounds.MAX_SIZE"),
        ("gpus-per-node", opts.gpus_per_node, MAX_GPUS, "bounds.MAX_GPUS"),
        ("top", opts.top, MAX_PLANS, "bounds.MAX_PLANS"),
    ]
    for name, value, limit, bound in numbers:
        if value is None:
            continue
        number(f"--{name}", value, limit, bound)
    for key, value in opts.fixed.items():
        if key in SIZES:
            number(f"--set {key}", value, _size_limit(key), _size_bound(key))
        elif key == "offload":
            offload(str(value), f"offload={bounded_repr(value, 40)}")
        elif key == "recompute":
            if isinstance(value, str) or not all(isinstance(m, str) for m in value):
                raise UsageError("--set recompute: expected a list of recompute modules")
            recompute(",".join(value), f"recompute={bounded_repr(value, 40)}")
        else:
            raise UsageError(f"--set {bounded_repr(key, 40)}: not a value the planner fixes")
    if len(opts.overrides) > MAX_OVERRIDES:
        raise UsageError(f"--set: more than {MAX_OVERRIDES:,} values (bounds.MAX_OVERRIDES)")
    if opts.compare is not None:
        layout(",".join(f"{k}={v}" for k, v in opts.compare.items()))


def number(what: str, value: Any, limit: int, bound: str) -> int:
    """``value`` when it is a whole number from 1 to ``limit``, else one usage line."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{what} {bounded_repr(value, 40)}: expected a whole number")
    if not 1 <= value <= limit:
        shown = f"{value:,}" if abs(value) < 10**12 else bounded_repr(value, 40)
        raise UsageError(f"{what} {shown}: expected a whole number from 1 to {limit:,} ({bound})")
    return value
