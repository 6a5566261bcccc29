"""Reading the config: dotted values, dtypes, the sizes and batch shape the terms need, and the
mixed-precision fields as Bridge applies them."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import repeat
from typing import Any, cast

from moe_lint.analysis.memory.results import MemoryInputError
from moe_lint.analysis.params import Arch
from moe_lint.config.memory_settings import MemorySettings
from moe_lint.config.mixed_precision import MP_DEFAULTS, recipe_values
from moe_lint.config.versions import Version, effective_version
from moe_lint.records import field, record

_DTYPE_BYTES = {
    "float32": 4, "fp32": 4, "float": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2,
    "half": 2, "uint8": 1, "fp8": 1, "float8": 1, "float8_e4m3fn": 1, "int16": 2,
}  # fmt: skip


def _dtype_bytes(value: Any, default: int) -> int:
    """Bytes per element of a dtype written as ``torch.bfloat16``, ``bf16``, ``fp32``..."""
    if value is None:
        return default
    if isinstance(value, Mapping):  # full dumps write dtypes as {_target_: torch.float32}
        value = value.get("_target_", "")
    key = str(value).lower().replace("torch.", "").strip()
    return _DTYPE_BYTES.get(key, default)


class _Values:
    """Dotted-key access that tolerates the same field living in several sections."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = values
        self._sections: dict[str, bool] = {}

    def has_section(self, name: str) -> bool:
        """Any ``name.*`` key is set (``name`` has no dot).

        Asked per stage, of two sections, and every estimate (a file's levers make a dozen)
        has new values: each answer is one scan of the keys in C, kept for the other stages;
        a set of every key's section, built in Python, cost a tenth of a lever's estimate."""
        found = self._sections.get(name)
        if found is None:
            found = self._sections[name] = any(map(str.startswith, self.values, repeat(name + ".")))
        return found

    def get(self, key: str, *more: str, default: Any = None) -> Any:
        """The first of the keys with a value (not None), else ``default``. Asked about a
        hundred times per stage of every estimate, so the usual single key is looked up
        without a loop."""
        value = self.values.get(key)
        if value is not None:
            return value
        for other in more:
            value = self.values.get(other)
            if value is not None:
                return value
        return default

    def flag(self, key: str, *more: str, default: bool = False) -> bool:
        """:meth:`get` as a truth value."""
        value = self.values.get(key)
        if value is None:
            value = self.get(*more, default=default) if more else default
        return bool(value)


@record
class _Ctx:
    """Everything the terms need, resolved once (sizes, dtypes, recompute, schedule)."""

    arch: Arch
    v: _Values
    settings: MemorySettings
    tp: int
    pp: int
    cp: int
    ep: int
    etp: int
    dp: int
    edp: int
    vpp: int
    sp: bool
    seq: int
    mbs: int
    microbatches: int
    world: int
    #: Transformer Engine / Megatron-Core versions (stated, else the newest release) and
    #: whether the user stated TE (terms that depend on an unstated version widen the band).
    te: Version = field(default_factory=lambda: effective_version({}, "transformer-engine"))
    te_stated: bool = False
    #: "central" (the estimate), "lower" (only what is certain: MEM001) or "upper" (the band).
    mode: str = "central"
    assumptions: list[str] = field(default_factory=list)
    #: The GPU type (data/gpus.yaml key, derive's gpu_name) when known: the allocator overhead
    #: is fitted per GPU (allocator.py).
    gpu: str | None = None
    #: Per-layer sizes by layer kind, shared by every stage of one mode (activations.py:
    #: ``(mixer, ffn)``, or ``(mixer, ffn, True)`` for a layer kept in bf16).
    layer_sizes: dict[tuple[Any, ...], tuple[float, float, float]] = field(default_factory=dict)

    def note(self, text: str) -> None:
        if text not in self.assumptions:
            self.assumptions.append(text)

    @property
    def tokens(self) -> float:
        """N: tokens of one micro-batch on one CP rank (TP regions hold all of them)."""
        return self.seq * self.mbs / self.cp

    @property
    def sp_tokens(self) -> float:
        """Tokens per rank in sequence-parallel regions (norms, residual, router)."""
        return self.tokens / self.tp if self.sp else self.tokens


#: The sizes and batch shape the model reads from the derived facts
#: (analysis/memory_facts.py:model_inputs fills the ones derive could not compute).
INPUTS = ("tp", "pp", "cp", "ep", "etp", "world", "dp", "edp", "sp", "vpp", "seq", "mbs",
          "microbatches")  # fmt: skip


def _context(
    values: Mapping[str, Any],
    facts: Mapping[str, Any],
    s: MemorySettings,
    versions: Mapping[str, Version] | None = None,
    mode: str = "central",
    arch: Arch | None = None,
) -> _Ctx:
    """Parallel sizes and batch shape from the facts (the model derives none of them)."""
    v = _Values(values)
    try:
        arch = arch or Arch.from_mapping(values)
    except (KeyError, ValueError) as exc:
        raise MemoryInputError(str(exc).strip("'\"")) from None
    if facts.get("seq") is None:
        raise MemoryInputError("the sequence length (model.seq_length) is needed")
    missing = [name for name in INPUTS if name not in facts or (
        facts[name] is None and name != "vpp")]  # fmt: skip
    if missing:
        raise MemoryInputError(f"the derived sizes are missing: {', '.join(missing)}")
    tp, pp, cp, ep, etp, world, dp, edp = (int(facts[n]) for n in (
        "tp", "pp", "cp", "ep", "etp", "world", "dp", "edp"))  # fmt: skip
    vpp = int(facts["vpp"] or 1)
    stated = dict(versions or {})
    ctx = _Ctx(arch, v, s, tp, pp, cp, ep, etp, dp, edp, vpp, bool(facts["sp"] and tp > 1),
               int(facts["seq"]), int(facts["mbs"]), int(facts["microbatches"]), world,
               te=effective_version(stated, "transformer-engine"),
               te_stated="transformer-engine" in stated, mode=mode)  # fmt: skip
    gpu = facts.get("gpu_name")
    ctx.gpu = str(gpu) if gpu else None
    for text in (*facts.get("assumed", ()), *arch.assumed):
        ctx.note(text)
    return ctx


def _mixed_block(ctx: _Ctx) -> bool:
    """The file writes a mixed_precision block (its unset fields take the class defaults)."""
    return ctx.v.has_section("mixed_precision")


def _mixed(ctx: _Ctx, name: str, default: Any = None) -> Any:
    """A mixed-precision field as Bridge applies it (MixedPrecisionConfig.setup overwrites the
    model's and the optimizer's): the file's mixed_precision block, else the
    MixedPrecisionConfig default when the file writes a block, else its named recipe
    (config/mixed_precision.py), else the model field."""
    v = ctx.v
    block = v.get(f"mixed_precision.{name}")
    if block is not None:
        return block
    recipe = v.get("mixed_precision")
    if isinstance(recipe, str):
        values = recipe_values(recipe)
        if values is not None and values.get(name) is not None:
            return values[name]
    elif _mixed_block(ctx) and name in MP_DEFAULTS:
        return MP_DEFAULTS[name] if MP_DEFAULTS[name] is not None else default
    return v.get(f"model.{name}", default=default)


def mixed_value(values: Mapping[str, Any], name: str, default: Any = None) -> Any:
    """A mixed-precision field of effective ``values`` as Bridge applies it (see :func:`_mixed`),
    for readers outside the memory model (the planner)."""
    return _mixed(cast(_Ctx, _ValuesOnly(_Values(values))), name, default)


@record
class _ValuesOnly:
    """What :func:`_mixed` reads of a context: the values."""

    v: _Values


def loads_optimizer_state(v: _Values) -> bool:
    """A resumed run: Bridge loads the optimizer state of ``checkpoint.load`` unless
    ``finetune`` or ``load_optim: false`` (training/checkpointing.py::_load_checkpoint_from_path:
    ``not release and not cfg.checkpoint.finetune and cfg.checkpoint.load_optim``). A
    ``pretrained_checkpoint`` alone loads model weights only (SFT sets ``finetune``)."""
    load = v.get("checkpoint.load")
    if not load or str(load).lower() in ("none", "null"):
        return False
    return not v.flag("checkpoint.finetune") and v.flag("checkpoint.load_optim", default=True)


def resume_is_certain(v: _Values) -> bool:
    """The load surely happens (the lower bound counts it): ``checkpoint.ckpt_step`` names the
    step to load, or ``checkpoint.load`` is not the directory the run saves to (a run whose
    load directory is its own save directory, Bridge's recipe default, resumes only after a
    restart: only the band counts that load; the central estimate and the lower bound do not)."""
    if not loads_optimizer_state(v):
        return False
    if v.get("checkpoint.ckpt_step") is not None:
        return True
    save = v.get("checkpoint.save")
    return bool(save) and str(save) != str(v.get("checkpoint.load"))


def loads_checkpoint(v: _Values) -> str | None:
    """What a run loads before its first step: "resume" (model and optimizer state),
    "weights" (a pretrained checkpoint or a finetune resume: model weights only) or None."""
    if loads_optimizer_state(v):
        return "resume"
    for key in ("checkpoint.load", "checkpoint.pretrained_checkpoint"):
        found = v.get(key)
        if found and str(found).lower() not in ("none", "null"):
            return "weights"
    return None
