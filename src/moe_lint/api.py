"""The Python API: ``moe_lint.lint()`` and ``moe_lint.estimate()`` (docs/python-api.md).

A launcher checks a config before it submits the job, with the findings ``moe-lint FILE``
reports and the memory verdict ``moe-lint estimate FILE`` gives, without a subprocess. The
functions run the CLI's data path (:mod:`moe_lint.linting`) on one config and return typed,
frozen records; they never print, never exit, never read ``sys.argv`` or the environment's
pyproject.toml unless given one and start no process; the only signal handler they install is
the per-call time limit's, restored before they return.

Inputs. ``config`` is a file path (``str`` or ``os.PathLike``; a ``str`` is always a path,
never YAML text) or a ``Mapping`` (a dict, ``OmegaConf.to_container(cfg)``); in-memory YAML is
``text=``. ``filename`` names a mapping or text for messages and ``per-file`` settings.
A mapping has no source text, so its findings carry no line or column (``None``): they are
located by config path (``Finding.path``) alone, and it cannot hold ``# moe-lint:``
directives or suppression comments.

Settings. ``settings=None`` is moe-lint's defaults plus the file's own directives, whatever
the current directory holds (``moe-lint --isolated``); a path reads that pyproject.toml's
``[tool.moe-lint]`` (``--config PATH``); a mapping is such a table in Python
(``{"ignore": ["PAR005"], "memory": {"routing_imbalance": 1.5}}``; ``_`` and ``-`` both work
in its top-level keys). Layers as in the CLI: settings < in-file directive < ``gpus`` /
``gpu`` / ``model``.

Errors. Bad input raises :class:`~moe_lint.errors.InputError` (``exc.file``, ``exc.message``:
the one line the CLI prints as ``FILE: error: MESSAGE``, exit code 2), a config that is not a
Bridge config :class:`~moe_lint.errors.NotAConfigError` (the CLI skips it with a notice), bad
options :class:`~moe_lint.errors.UsageError` (``moe-lint: error: MESSAGE``), a bad rule pack
:class:`~moe_lint.errors.RulePackError`. A call of the wrong shape (no config, both ``config``
and ``text``, a config of another type) is :class:`~moe_lint.errors.ArgumentError`, also a
``TypeError``; anything unforeseen :class:`~moe_lint.errors.InternalError`. All are
:class:`~moe_lint.errors.Error`, with one bounded line as their message.

Bounds. A call gets the CLI's bounds on its input (bounds.py) and, where a ``SIGALRM`` timer
cannot disturb the caller (the main thread, no ``ITIMER_REAL`` timer running), its per-file
time limit (``MOE_LINT_FILE_TIMEOUT``): see :func:`_guarded`.
"""

from __future__ import annotations

import functools
import os
import re
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar, cast

from moe_lint.bounds import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_NAME_CHARS,
    MAX_NODES,
    MAX_REPR_CHARS,
    bounded_repr,
    bounded_str,
)
from moe_lint.config.forms import NotBridgeConfig
from moe_lint.config.load import Document, SpanMap, decode, format_path, load_file, parse_text
from moe_lint.config.memory_settings import memory_settings
from moe_lint.config.overrides import Override, parse_override
from moe_lint.config.overrides import check_count as check_override_count
from moe_lint.config.settings import Settings, apply_cluster, load_pyproject, settings_from_table
from moe_lint.engine.catalogue import Catalogue, load_catalogue, shipped_catalogue
from moe_lint.engine.findings import Finding as _EngineFinding
from moe_lint.errors import (
    ArgumentError,
    Error,
    InputError,
    InternalError,
    NotAConfigError,
    UsageError,
)
from moe_lint.linting import as_input_error, check_selectors, lint_document, prepare

Severity = Literal["error", "warning", "info"]
Applicability = Literal["safe", "unsafe", "display-only"]
Verdict = Literal["does NOT fit", "may not fit", "fits"]
#: What ``config`` may be: a path or a mapping (YAML text goes in ``text=``).
ConfigInput = Mapping[str, Any] | str | os.PathLike[str]
#: What ``settings`` may be: a pyproject.toml path or a ``[tool.moe-lint]``-shaped mapping.
SettingsInput = Mapping[str, Any] | str | os.PathLike[str]

#: The ``line N, column M: `` prefix of a located input error (meaningless for a mapping).
_POSITION = re.compile(r"^line \d+(?:, column \d+)?: ")

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _guarded(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Every failure of an API call is a :class:`~moe_lint.errors.Error` with a bounded
    message, within the CLI's per-file time limit.

    The limit (``MOE_LINT_FILE_TIMEOUT``, default 30 s) is a ``SIGALRM`` timer, as in the CLI's
    one-process path, armed only where it cannot disturb the caller: in the main thread, when
    no ``ITIMER_REAL`` timer of the caller's is running (the previous handler is restored).
    Elsewhere the call has the size bounds (bounds.py) but no time limit. Anything but a
    moe-lint error (a bug) becomes :class:`~moe_lint.errors.InternalError`, chained.
    """

    @functools.wraps(func)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        # Lazy: the timer helpers (moe_lint.workers imports multiprocessing) only for the API.
        from moe_lint.workers import Overtime, file_timeout, overtime_message, time_limit

        limit = file_timeout()
        timed = (
            not signal.getitimer(signal.ITIMER_REAL)[0] if hasattr(signal, "getitimer") else False
        )
        try:
            if not timed:
                return func(*args, **kwargs)
            with time_limit(limit):
                return func(*args, **kwargs)
        except Error:
            raise
        except Overtime:
            raise InputError(overtime_message(limit), _label(args, kwargs)) from None
        except Exception as exc:
            raise InternalError(
                f"internal error: {type(exc).__name__}: {bounded_str(_text_of(exc))}"
            ) from exc

    return call


def _text_of(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # an exception whose own __str__ fails
        return "(no message)"


def _label(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """The file an API call is about, for an error raised outside its data path."""
    filename = kwargs.get("filename")
    config = args[0] if args else kwargs.get("config")
    if isinstance(filename, str):
        return bounded_str(filename, MAX_REPR_CHARS)
    if isinstance(config, str):
        return bounded_str(config, MAX_REPR_CHARS)
    return "<mapping>" if isinstance(config, Mapping) else "<string>"


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem in one config, as ``moe-lint FILE --format json`` reports it.

    ``message`` is the rule's message; ``full_message`` adds what the JSON record's
    ``message`` adds (the override it is about, the Megatron/Bridge check it anticipates).
    ``line``/``column`` (1-based) are None for a mapping config and for a finding about an
    override (then ``override`` holds the override's text). ``applicability`` is what
    ``moe-lint --fix`` would do with the file ("display-only" for a mapping: nothing to edit).
    """

    code: str
    name: str
    severity: Severity
    message: str
    #: Dotted config path the finding is about (``model.context_parallel_size``), relative to
    #: the config's root (a recipe dump's ``model:``, an override file's top level).
    path: str
    #: The file linted: its path as given, ``<string>``, ``<mapping>`` or ``filename``.
    file: str
    line: int | None
    column: int | None
    end_line: int | None
    end_column: int | None
    #: How the values in the message were derived (world size, DP, presets, overrides).
    derivation: str | None
    #: What to change, when the rule has a fix ("set model.x to 4").
    fix: str | None
    applicability: Applicability | None
    #: The Megatron-Core / Bridge check the rule mirrors (``file.py::function``).
    source: str | None
    #: The override (``model.x=4``) a finding about an override is located at.
    override: str | None
    #: The message as the CLI's JSON and text output print it.
    full_message: str


@dataclass(frozen=True, slots=True)
class MemoryTerm:
    """One named contribution to a stage's memory (weights, activations, buffers, margin)."""

    name: str
    gib: float
    #: ``state``, ``activation``, ``step``, ``load``, ``fixed`` or ``margin``.
    kind: str
    derivation: str


@dataclass(frozen=True, slots=True)
class StageMemory:
    """One pipeline stage's peak per GPU: the central estimate with its lower bound and band."""

    stage: int
    #: The central estimate of the device total (allocated peak + fixed costs + margin).
    total_gib: float
    #: Only what is certain: MEM001 / "does NOT fit" compare this with usable memory.
    lower_bound_gib: float
    #: The pessimistic reading of the uncertain terms plus the validation set's largest miss.
    upper_band_gib: float
    #: PyTorch-allocated peak (``torch.cuda.max_memory_allocated``) and what the caching
    #: allocator reserves (allocated plus the allocator overhead fitted per GPU).
    allocated_gib: float
    reserved_gib: float
    #: "forward/backward", "optimizer step" or "checkpoint load": the phase of the peak.
    peak_phase: str
    terms: tuple[MemoryTerm, ...]
    #: (lower bound, central, band) of "allocated", "reserved" and "device" (the device total):
    #: the same quantity three ways, as ``moe-lint estimate`` prints them side by side.
    bounds: tuple[tuple[str, tuple[float, float, float]], ...] = ()


@dataclass(frozen=True, slots=True)
class Lever:
    """A config change and what it does to the worst stage's peak (negative saves)."""

    name: str
    delta_gib: float
    requires: str


@dataclass(frozen=True, slots=True)
class MemoryEstimate:
    """``moe-lint estimate``'s result for one config (docs/memory-model.md)."""

    file: str
    #: The GPU type (data/gpus.yaml key) or None when none was given.
    gpu: str | None
    capacity_gib: float | None
    #: What a training process can use of the capacity; None without a GPU.
    usable_gib: float | None
    #: The one verdict ``check`` (MEM001 / MEM002) and ``estimate`` share, under the memory
    #: settings in force (``warn-headroom``, ``error-margin``); None without a GPU.
    verdict: Verdict | None
    worst_stage: int
    #: The worst stage's central estimate, lower bound and band (each stage's worst).
    total_gib: float
    lower_bound_gib: float
    upper_band_gib: float
    stages: tuple[StageMemory, ...]
    #: Config changes that lower the worst stage, best first (the CLI shows five).
    levers: tuple[Lever, ...]
    assumptions: tuple[str, ...]
    #: The verdict as a sentence: the quantity it compared with usable memory, the threshold
    #: and why that quantity (None without a GPU).
    verdict_text: str | None = None


@_guarded
def lint(
    config: ConfigInput | None = None,
    *,
    text: str | None = None,
    filename: str | None = None,
    gpus: int | None = None,
    gpu: str | None = None,
    model: str | None = None,
    overrides: Sequence[str] = (),
    settings: SettingsInput | None = None,
) -> list[Finding]:
    """Lint one config; the findings ``moe-lint FILE`` reports for it, in its order.

    ``gpus`` (world size), ``gpu`` (h100, h200, b200, ...) and ``model`` (a preset such as
    ``deepseek-v3``) are the CLI's ``--gpus`` / ``--gpu`` / ``--model``; ``overrides`` are
    Hydra-style overrides (``"model.context_parallel_size=16"``) applied in order.
    """
    doc, is_mapping = _document(config, text, filename)
    base = _settings(settings)
    cluster = _cluster(gpus, gpu, model)
    parsed = _overrides(overrides)
    catalogue = _catalogue(base)
    try:
        result = as_input_error(lint_document(doc, catalogue, base, parsed, cluster))
    except InputError as exc:
        raise _located(exc.message, doc.path, is_mapping) from None
    if result.notice is not None:
        raise NotAConfigError(result.notice, doc.path)
    if result.error is not None:
        raise _located(result.error, doc.path, is_mapping)
    return [_finding(f, is_mapping) for f in result.findings]


@_guarded
def estimate(
    config: ConfigInput | None = None,
    *,
    text: str | None = None,
    filename: str | None = None,
    gpus: int | None = None,
    gpu: str | None = None,
    model: str | None = None,
    overrides: Sequence[str] = (),
    settings: SettingsInput | None = None,
) -> MemoryEstimate:
    """The memory estimate ``moe-lint estimate FILE`` prints, per pipeline stage, with the
    verdict and levers; arguments as for :func:`lint`. Without ``gpu`` there is no verdict."""
    # Lazy: the memory model (~40 ms to import) loads only when an estimate is asked for.
    from moe_lint.analysis.memory import MemoryInputError, levers
    from moe_lint.analysis.memory.results import stage_bounds
    from moe_lint.analysis.memory.verdict import judge
    from moe_lint.analysis.memory_facts import config_values, model_inputs, run_estimate

    doc, is_mapping = _document(config, text, filename)
    base = _settings(settings)
    cluster = _cluster(gpus, gpu, model)
    parsed = _overrides(overrides)
    try:
        cfg, facts, file_settings = prepare(doc, base, parsed, cluster)
        mem, warn, margin = memory_settings(file_settings.memory, "memory settings")
        est = run_estimate(cfg, facts, mem)
    except InputError as exc:
        raise _located(exc.message, doc.path, is_mapping) from None
    except NotBridgeConfig as exc:
        raise NotAConfigError(str(exc), doc.path) from None
    except MemoryInputError as exc:
        raise InputError(
            f"cannot estimate memory: {exc} (pass --model or the value as an override)", doc.path
        ) from None
    plain = model_inputs({name: fact.value for name, fact in facts.values.items()})
    found = levers(config_values(cfg), plain, mem, est.capacity_gib, dict(cfg.versions), base=est)
    lower = {s.stage: s for s in est.lower}
    upper = {s.stage: s for s in est.upper}
    stages = tuple(
        StageMemory(
            stage=s.stage,
            total_gib=s.total_gib,
            lower_bound_gib=(lower[s.stage] if lower else s).total_gib,
            upper_band_gib=(upper[s.stage] if upper else s).total_gib,
            allocated_gib=s.allocated_gib,
            reserved_gib=s.reserved_gib,
            peak_phase=s.peak_phase,
            terms=tuple(MemoryTerm(t.name, t.gib, t.kind, t.derivation) for t in s.terms),
            bounds=tuple(
                (name, (b.lower, b.central, b.band))
                for name, b in stage_bounds(est, s.stage).items()
            ),
        )
        for s in est.stages
    )
    judged = judge(est, warn, margin)
    return MemoryEstimate(
        file=doc.path,
        gpu=file_settings.gpu,
        capacity_gib=est.capacity_gib,
        usable_gib=est.usable_gib,
        verdict=None if judged is None else judged.label,
        worst_stage=est.worst.stage,
        total_gib=est.worst.total_gib,
        lower_bound_gib=est.lower_worst.total_gib,
        upper_band_gib=est.upper_worst.total_gib,
        stages=stages,
        levers=tuple(Lever(lv.name, lv.delta_gib, lv.requires) for lv in found),
        assumptions=tuple(est.assumptions),
        verdict_text=None if judged is None else judged.text(),
    )


# ------------------------------------------------------------------------------ the inputs


def _document(
    config: ConfigInput | None, text: str | None, filename: str | None
) -> tuple[Document, bool]:
    """The parsed config and whether it came from a mapping (no spans, no text)."""
    if (config is None) == (text is None):
        raise ArgumentError("pass a config (a path or a mapping) or text=, not both or neither")
    if filename is not None:
        if not isinstance(filename, str):
            raise ArgumentError(f"filename must be a str, not {type(filename).__name__}")
        _check_name(filename, "filename")
    if text is not None:
        if not isinstance(text, str):
            raise ArgumentError(f"text must be a str, not {type(text).__name__}")
        name = filename or "<string>"
        if len(text) > MAX_BYTES:  # a character is at least a byte: refused before encoding
            raise InputError(f"text is too large ({len(text):,} characters; limit "
                             f"{MAX_BYTES:,} bytes)", name)  # fmt: skip
        try:
            decoded, bom = decode(text.encode("utf-8", "surrogatepass"), name)
            return parse_text(decoded, name, bom), False
        except InputError as exc:
            raise _located(exc.message, name, False) from None
    if isinstance(config, Mapping):
        name = filename or "<mapping>"
        data = _plain_mapping(config, name)
        return Document(path=name, text="", data=data, spans=SpanMap()), True
    if isinstance(config, str | os.PathLike):
        try:
            path = os.fspath(config)
        except Exception as exc:  # a PathLike whose __fspath__ fails
            raise ArgumentError(f"config: os.fspath() raised {type(exc).__name__}") from None
        if not isinstance(path, str):
            raise ArgumentError("config path must be a str path, not bytes")
        if filename is not None:
            raise ArgumentError("filename= names a text or a mapping; a file is named by its path")
        _check_name(path, "config path")
        try:
            return load_file(path), False
        except InputError as exc:
            raise _located(exc.message, path, False) from None
    raise ArgumentError(
        f"config must be a path or a mapping, not {type(config).__name__} (YAML text: text=...)"
    )


def _check_name(name: str, what: str) -> None:
    """A file name is at most ``bounds.MAX_NAME_CHARS`` characters (every finding and error
    carries it)."""
    if len(name) > MAX_NAME_CHARS:
        raise UsageError(
            f"{what} {bounded_repr(name, 60)} of {len(name):,} characters is longer than "
            f"moe-lint's bound of {MAX_NAME_CHARS:,} (bounds.MAX_NAME_CHARS)"
        )


def _plain_mapping(config: Mapping[Any, Any], name: str) -> dict[str, Any]:
    """A copy of ``config`` as the YAML loader builds values: dicts with str keys, lists and
    scalars (None, bool, int, float, str; subclasses such as enums become the plain type),
    bounded as a file is: ``bounds.MAX_NODES`` values, ``bounds.MAX_DEPTH`` levels and
    ``bounds.MAX_BYTES`` characters of keys and strings. A mapping or sequence whose own methods
    raise is an input error naming the exception."""
    budget = [MAX_NODES, MAX_BYTES]

    def walk(value: Any, path: tuple[str | int, ...]) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise InputError(f"more than {MAX_NODES:,} values in the mapping", name)
        if len(path) > MAX_DEPTH:
            raise InputError(f"nesting deeper than {MAX_DEPTH} levels", name)
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, str):
            budget[1] -= len(value)
            if budget[1] < 0:
                raise InputError(f"more than {MAX_BYTES:,} characters in the mapping", name)
            return str.__str__(value)
        if isinstance(value, int):
            return int.__int__(value)
        if isinstance(value, float):
            return float.__float__(value)
        where = bounded_str(format_path(path), MAX_REPR_CHARS) or "the top level"
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise InputError(f"{where}: key {bounded_repr(key)} is not a string", name)
                key = str.__str__(key)
                budget[1] -= len(key)
                if budget[1] < 0:
                    raise InputError(f"more than {MAX_BYTES:,} characters in the mapping", name)
                out[key] = walk(item, (*path, key))
            return out
        if isinstance(value, list | tuple) or (
            isinstance(value, Sequence) and not isinstance(value, bytes | bytearray)
        ):
            return [walk(item, (*path, i)) for i, item in enumerate(value)]
        raise InputError(
            f"{where}: a {type(value).__name__} is not a YAML value (mappings, lists, str, int, "
            "float, bool and None are)",
            name,
        )

    try:
        data = walk(config, ())
    except Error:
        raise
    except Exception as exc:  # the caller's mapping or sequence raised while it was read
        raise InputError(
            f"reading the mapping raised {type(exc).__name__}: {bounded_str(_text_of(exc))}", name
        ) from None
    return cast("dict[str, Any]", data)


def _settings(settings: SettingsInput | None) -> Settings:
    if settings is None:
        return Settings()
    if isinstance(settings, Mapping):
        table: dict[str, Any] = {}
        for key, value in settings.items():
            if not isinstance(key, str):
                raise UsageError(f"settings: key {bounded_repr(key, 60)} is not a string")
            table[key.replace("_", "-")] = value
        table.pop("format", None)  # the output format is the caller's business here
        return settings_from_table(table, "settings", None)[0]
    if isinstance(settings, str | os.PathLike):
        path = Path(os.fspath(settings))
        if not path.exists():
            raise UsageError(f"settings {bounded_str(str(path), MAX_REPR_CHARS)}: no such file")
        return load_pyproject(path)[0]
    raise ArgumentError(
        f"settings must be a mapping or a pyproject.toml path, not {type(settings).__name__}"
    )


def _cluster(gpus: int | None, gpu: str | None, model: str | None) -> dict[str, object]:
    """The CLI layer (``--gpus/--gpu/--model``), validated once as the CLI does."""
    if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int)):
        raise ArgumentError(f"gpus must be an int, not {type(gpus).__name__}")
    if gpu is not None and not isinstance(gpu, str):
        raise ArgumentError(f"gpu must be a str, not {type(gpu).__name__}")
    if model is not None and not isinstance(model, str | os.PathLike):
        raise ArgumentError(f"model must be a str or a path, not {type(model).__name__}")
    if model is not None and not isinstance(model, str):
        model = os.fspath(model)
        if not isinstance(model, str):
            raise ArgumentError("model path must be a str path, not bytes")
    given: tuple[tuple[str, object], ...] = (("gpus", gpus), ("gpu", gpu), ("model", model))
    cluster = {k: v for k, v in given if v is not None}
    if cluster:
        apply_cluster(Settings(), cluster, "arguments")
    return cluster


def _overrides(overrides: Sequence[str]) -> list[Override]:
    if isinstance(overrides, str | bytes) or not isinstance(overrides, Sequence):
        raise ArgumentError(
            f"overrides must be a sequence of strings, not {type(overrides).__name__}"
        )
    try:
        check_override_count(overrides)
    except InputError as exc:
        raise UsageError(exc.message) from None
    parsed = []
    for text in overrides:
        if not isinstance(text, str):
            raise ArgumentError(f"an override must be a str, not {type(text).__name__}")
        try:
            parsed.append(parse_override(str.__str__(text)))
        except InputError as exc:
            raise UsageError(exc.message) from None
    return parsed


def _catalogue(settings: Settings) -> Catalogue:
    """The rules ``moe-lint`` loads (shipped packs, plugins, the settings' packs), selectors
    checked before anything is linted: the shipped catalogue once per process, and the packs
    settings name (files of the linted repository, which may be edited between calls) every
    call."""
    catalogue = (
        load_catalogue(extra_packs=settings.rules) if settings.rules else shipped_catalogue()
    )
    check_selectors(catalogue, settings)
    return catalogue


# ------------------------------------------------------------------------------ the outputs


def _located(message: str, file: str, is_mapping: bool) -> InputError:
    """The input error for ``file``; a mapping's has no line/column to name."""
    return InputError(_POSITION.sub("", message) if is_mapping else message, file)


def _finding(f: _EngineFinding, is_mapping: bool) -> Finding:
    located = f.argument is None and not is_mapping
    applicability = f.applicability
    if is_mapping and f.fix is not None:
        applicability = "display-only"
    return Finding(
        code=f.code,
        name=f.name,
        severity=cast("Severity", f.severity),
        message=f.message,
        path=f.path,
        file=f.file,
        line=f.line if located else None,
        column=f.column if located else None,
        end_line=f.end_line if located else None,
        end_column=f.end_column if located else None,
        derivation=f.derivation,
        fix=f.fix,
        applicability=cast("Applicability | None", applicability),
        source=f.source,
        override=f.argument.text if f.argument is not None else None,
        full_message=f.full_message,
    )


__all__ = [
    "ConfigInput", "Finding", "Lever", "MemoryEstimate", "MemoryTerm",
    "SettingsInput", "StageMemory", "estimate", "lint",
]  # fmt: skip
