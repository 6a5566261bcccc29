"""moe-lint's bounds on its input, in one table, and the helpers that enforce them.

Every loop, allocation and message moe-lint makes is sized by its input: the config, and
what else a repository can hold (pyproject.toml settings, rule packs, baselines, file names,
exclude patterns, directives) or a program can pass (the Python API's mappings, overrides,
names). These bounds keep each of them small: past a bound the file, setting or pack is
refused with one line that names the bound (exit 2; in the API a ``moe_lint.Error``), or,
for the message and suggestion bounds, the output is shortened. No real Megatron Bridge
config or project comes near any of them. A refusal names the bound as ``bounds.NAME``; this
table is its documentation.

======================  ===============  ================================================
bound                   value            what it limits
======================  ===============  ================================================
MAX_BYTES               8 MiB            bytes read from one config file or --baseline
                                         (characters of the API's text= or mapping)
MAX_NODES               20,000           YAML nodes, counted before they are composed and
                                         again with aliases expanded (YAML bombs); a full
                                         Bridge dump has ~2,000; JSON values of an HF
                                         config.json
MAX_JSON_BYTES          1 MiB            bytes read from one HF config.json: JSON has
                                         no aliases, so its cost is its size, and a
                                         3-byte ``{}`` is a 64-byte object (8 MiB of
                                         them would be 230 MB); real ones are < 10 KB
MAX_DEPTH               64               mapping / sequence nesting (YAML and JSON)
MAX_LINES               100,000          lines of one config (comment, directive and
                                         suppression scans loop over them; a full Bridge
                                         dump has ~2,000)
MAX_NUMBER_CHARS        64               characters of one int or float literal (checked
                                         before any conversion: ``int()`` is quadratic
                                         past Python's 4,300-digit limit, base 60 too)
MAX_GPUS                2**24            --gpus, --nodes, --gpus-per-node (and directives)
MAX_SIZE                2**20            a parallel size (TP, PP, CP, EP, ETP, VPP; schema)
MAX_COUNT               2**31            a count (layers, heads, batch, sequence; schema);
                                         an HF config's mapped sizes the field table
                                         does not type (MLA ranks, Mamba and DSA dims)
MAX_LAYERS              10,000           model.num_layers (per-layer tables, split search);
                                         an HF config's num_hidden_layers, layer lists
                                         and patterns, checked before the mapping builds
                                         anything per layer
MAX_PIPELINE_STAGES     256              PP·VPP, the stages the memory model walks in
                                         each of its ~13 estimates (real configs use a few
                                         dozen)
MAX_REPR_CHARS          200              characters of a config value's repr in a message
MAX_FIELD_CHARS         2,000            characters of any one placeholder in a message
MAX_MESSAGE_CHARS       4,000            characters of any error's message (moe_lint.Error
                                         cuts longer ones: the CLI's one line, the API's
                                         str(exc))
MAX_FINDINGS            6,000            findings of one file before suppression (each
                                         costs ~0.1 ms: a message, a location, a report
                                         line; real configs get tens)
MAX_SUPPRESSIONS        6,000            suppression comments in one file
MAX_SUGGESTIONS         50               "did you mean" searches per file (the rest of
                                         the unknown keys are reported without one)
MAX_SETTINGS_BYTES      512 KiB          bytes read from a pyproject.toml (tomllib is pure
                                         Python: about 1 s per MiB)
MAX_SETTING_VALUES      2,000            values (list items, table entries, scalars) in
                                         [tool.moe-lint] or the API's settings mapping
MAX_SETTING_CHARS       65,536           characters of keys and strings in them (each
                                         glob is matched against every file's path)
MAX_PACK_BYTES          512 KiB          bytes of all rule packs from outside moe-lint
                                         together (--rules, pyproject rules, plugins);
                                         moe-lint's own ~240 rules are 430 KiB
MAX_PACK_RULES          500              rules in those packs together (twice moe-lint's)
MAX_PACK_NODES          10,000           syntax nodes of their expressions together (each
                                         costs ~16 µs to check and compile; moe-lint's
                                         own rules have ~5,100)
MAX_NAME_CHARS          4,096            characters of a file name the Python API is given
                                         (PATH_MAX; each finding and error carries it)
MAX_OVERRIDES           1,000            Hydra overrides in one call (CLI or API)
MAX_OVERRIDE_CHARS      65,536           characters of one override (a list of 4,096
                                         layer numbers is ~20,000)
MAX_PATTERN_CHARS       512              characters of one glob (exclude patterns, quoted
                                         command-line globs, per-file keys): a match
                                         costs up to path length × pattern length
MAX_PLANS               100              plans ``moe-lint plan`` shows or emits (--top,
                                         --emit): each shown plan is linted in full
MAX_GPU_COUNTS          8                GPU counts one ``plan`` searches (--gpus N,M or
                                         the powers of two of LO-HI): each is a search
MAX_EXPANDED            16 Mi            characters a Megatron-LM launch script's
                                         expansions build in all (re-read loops and
                                         calls, split words and array copies at 128 a
                                         word), and a MODEL_ARGS file's values with its
                                         aliases expanded; real scripts build < 10,000
MAX_SHELL_STEPS         50,000           steps (words, separators, array items, re-read
                                         included) of reading one launch script, each
                                         ~5 µs; the largest real script takes ~1,100
======================  ===============  ================================================
"""

from __future__ import annotations

from typing import Any

MAX_BYTES = 8 * 1024 * 1024
MAX_JSON_BYTES = 1024 * 1024
MAX_NODES = 20_000
MAX_DEPTH = 64
MAX_LINES = 100_000
MAX_NUMBER_CHARS = 64
MAX_GPUS = 1 << 24
MAX_SIZE = 1 << 20
MAX_COUNT = 1 << 31
MAX_LAYERS = 10_000
MAX_PIPELINE_STAGES = 256
MAX_REPR_CHARS = 200
MAX_FIELD_CHARS = 2_000
MAX_MESSAGE_CHARS = 4_000
MAX_FINDINGS = 6_000
MAX_SUPPRESSIONS = 6_000
MAX_SUGGESTIONS = 50
MAX_SETTINGS_BYTES = 512 * 1024
MAX_SETTING_VALUES = 2_000
MAX_SETTING_CHARS = 65_536
MAX_PACK_BYTES = 512 * 1024
MAX_PACK_RULES = 500
MAX_PACK_NODES = 10_000
MAX_NAME_CHARS = 4_096
MAX_OVERRIDES = 1_000
MAX_OVERRIDE_CHARS = 65_536
MAX_PATTERN_CHARS = 512
MAX_PLANS = 100
MAX_GPU_COUNTS = 8
MAX_EXPANDED = 2 * MAX_BYTES
MAX_SHELL_STEPS = 50_000

_ELLIPSIS = "..."


def bounded_repr(value: Any, limit: int = MAX_REPR_CHARS) -> str:
    """``repr(value)`` cut to about ``limit`` characters, built without the full text.

    A value from YAML may share one large string or list through aliases thousands of times;
    ``repr`` would expand every reference. This walks the value and stops once the budget is
    spent, so the cost is bounded by ``limit``, not by the value. Integers too long to print
    are described by their size instead (``str`` of a huge int is quadratic, then refused).
    """
    out: list[str] = []
    _emit(value, out, [limit + 1], 0)
    text = "".join(out)
    return text if len(text) <= limit else text[: max(0, limit - len(_ELLIPSIS))] + _ELLIPSIS


def bounded_str(value: Any, limit: int = MAX_FIELD_CHARS) -> str:
    """``str(value)`` for a message, cut like :func:`bounded_repr` (strings unquoted)."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        return value[: max(0, limit - len(_ELLIPSIS))] + _ELLIPSIS
    if isinstance(value, list | tuple | dict):
        return bounded_repr(value, limit)
    if isinstance(value, int) and not isinstance(value, bool):
        return _int_text(value, limit)
    text = str(value)
    return text if len(text) <= limit else text[: max(0, limit - len(_ELLIPSIS))] + _ELLIPSIS


def _int_text(value: int, limit: int) -> str:
    # 3.33 bits a decimal digit: past the limit, describe the number instead of printing it.
    if value.bit_length() > limit * 3:
        digits = int(value.bit_length() * 0.30103) + 1
        return f"<integer of about {digits:,} digits>"
    return repr(value)


def _emit(value: Any, out: list[str], budget: list[int], depth: int) -> None:
    """Append the repr of ``value`` to ``out`` until ``budget[0]`` characters are spent."""
    if budget[0] <= 0:
        return
    if isinstance(value, str):
        piece = repr(value[: budget[0]])
        if len(value) > budget[0]:
            piece = piece[:-1]  # left open: the ellipsis follows
    elif isinstance(value, bool) or value is None or isinstance(value, float):
        piece = repr(value)
    elif isinstance(value, int):
        piece = _int_text(value, budget[0])
    elif isinstance(value, list | tuple | dict) and depth < MAX_DEPTH:
        is_dict = isinstance(value, dict)
        opener, closer = ("{", "}") if is_dict else ("(", ")") if isinstance(value, tuple) else (
            "[", "]")  # fmt: skip
        _put(opener, out, budget)
        items: Any = value.items() if isinstance(value, dict) else value
        for i, item in enumerate(items):
            if budget[0] <= 0:
                return
            if i:
                _put(", ", out, budget)
            if is_dict:
                _emit(item[0], out, budget, depth + 1)
                _put(": ", out, budget)
                _emit(item[1], out, budget, depth + 1)
            else:
                _emit(item, out, budget, depth + 1)
        if isinstance(value, tuple) and len(value) == 1:
            _put(",", out, budget)
        _put(closer, out, budget)
        return
    else:
        piece = f"<{type(value).__name__}>"
    _put(piece, out, budget)


def _put(piece: str, out: list[str], budget: list[int]) -> None:
    if budget[0] > 0:
        out.append(piece[: budget[0]])
        budget[0] -= len(piece)


def number_too_long(text: str) -> str | None:
    """Why a number literal is refused before conversion, or None when it is short enough."""
    if len(text) <= MAX_NUMBER_CHARS:
        return None
    return (
        f"number literal of {len(text):,} characters exceeds moe-lint's bound of "
        f"{MAX_NUMBER_CHARS} (bounds.MAX_NUMBER_CHARS)"
    )


#: Typed integer fields with a bound tighter than the schema's, checked after typing:
#: dotted path -> (bound, its name in this module, what it counts).
FIELD_BOUNDS: dict[str, tuple[int, str, str]] = {
    "model.num_layers": (MAX_LAYERS, "MAX_LAYERS", "layers"),
}


def field_problems(values: dict[str, Any]) -> list[tuple[str, str]]:
    """(dotted path, problem) for typed values past a bound of this module."""
    problems: list[tuple[str, str]] = []
    for dotted, (bound, name, what) in FIELD_BOUNDS.items():
        value = values.get(dotted)
        if isinstance(value, int) and value > bound:
            problems.append((dotted, _beyond(bound, name, what)))
    pp = values.get("model.pipeline_model_parallel_size")
    vpp = values.get("model.virtual_pipeline_model_parallel_size")
    if isinstance(pp, int) and pp > 0:
        stages = pp * (vpp if isinstance(vpp, int) and vpp > 0 else 1)
        if stages > MAX_PIPELINE_STAGES:
            dotted = (
                "model.pipeline_model_parallel_size"
                if pp > MAX_PIPELINE_STAGES or not isinstance(vpp, int)
                else "model.virtual_pipeline_model_parallel_size"
            )
            what = "pipeline stages (PP·VPP)" if pp <= MAX_PIPELINE_STAGES else "pipeline stages"
            problems.append((dotted, _beyond(MAX_PIPELINE_STAGES, "MAX_PIPELINE_STAGES", what)))
    return problems


def _beyond(bound: int, name: str, what: str) -> str:
    return f"more {what} than moe-lint's bound of {bound:,} (bounds.{name})"


def too_large(size: int, limit: int, name: str) -> str | None:
    """Why ``size`` bytes are refused (naming ``bounds.NAME``), or None within ``limit``."""
    if size <= limit:
        return None
    return f"file is too large (over {limit:,} bytes, bounds.{name})"
