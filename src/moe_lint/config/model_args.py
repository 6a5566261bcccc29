"""A functional test's ``MODEL_ARGS:`` turned into a command line the way Megatron-LM's harness
does it (tests/functional_tests/shell_test_utils/_run_training.sh and run_ci_test.sh, main):

1. ``envsubst`` replaces ``$VAR`` / ``${VAR}`` of the harness's environment (DATA_PATH,
   CHECKPOINT_LOAD_PATH, ... from the CI recipe): values moe-lint does not know.
2. ``yq 'explode(.) | ... | .[env(KEY)] | to_entries | .[] | with(select(.value == true);
   .value = "true") | .key + ": " + (select(.value != "") | .value | tostring)'``: anchors,
   aliases and merge keys (``<<:``) resolved; one ``key: value`` line per entry; an empty
   string drops the entry (an empty value, YAML null, keeps it with no value).
3. Per line: the value trimmed by ``xargs`` (quotes and backslashes processed, blanks
   collapsed); ``true`` gives the flag alone; a value wrapped in ``( )`` is passed quoted; one
   wrapped in ``[ ]`` loses its brackets and is split into words; one with a blank, ``|``,
   ``(`` or ``)`` is passed quoted as one word; any other as it is (``false`` and ``null`` are
   the words ``false`` and ``null``). The string goes through ``eval "ARRAY=(...)"``.

``KEY`` is ``MODEL_ARGS`` on the first run; run N of a ckpt-resume or checkpoint-consistency
test reads ``MODEL_ARGS_N`` when there is one, and a checkpoint-consistency test launches each
run on ``MODEL_ENV_VARS.<KEY>.GPUS_PER_NODE`` GPUs per node (run_ci_test.sh exports it over
the recipe's). moe-lint reads run 1.
"""

from __future__ import annotations

import re
from typing import Any

from moe_lint.config.pyyaml import yaml
from moe_lint.config.shell import WORD_COST, _PStr, _span, charge, unknown_value
from moe_lint.errors import InputError

MERGE_TAG = "tag:yaml.org,2002:merge"
#: The environment envsubst sees: what run_ci_test.sh is given by the CI recipe (ARGUMENTS)
#: and exports itself, and what _run_training.sh exports before it.
HARNESS_VARIABLES = frozenset({
    "DATA_PATH", "DATA_CACHE_PATH", "OUTPUT_PATH", "TENSORBOARD_PATH", "CHECKPOINT_SAVE_PATH",
    "CHECKPOINT_LOAD_PATH", "TRAINING_SCRIPT_PATH", "TRAINING_PARAMS_PATH",
    "GOLDEN_VALUES_PATH", "N_REPEAT", "ENABLE_LIGHTWEIGHT_MODE", "RECORD_CHECKPOINTS", "REPEAT",
    "RUN_NUMBER", "ONE_LOGGER_JOB_CATEGORY", "IS_NEMO_TEST", "KEY", "LOOP_RN", "GPUS_PER_NODE",
    "NCCL_PROTO", "NCCL_ALGO", "NCCL_COLLNET_ENABLE", "NCCL_NVLS_ENABLE", "NCCL_TUNER_PLUGIN",
    "NCCL_BUFFSIZE", "TORCH_NCCL_AVOID_RECORD_STREAMS", "HOME", "PATH", "PWD", "USER",
})  # fmt: skip
#: Entries a chain of merge keys may bring in (a merge of merges of ... is a YAML bomb).
MAX_ENTRIES = 100_000
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))")
#: Characters the harness's ``eval`` would act on in a value it passes unquoted. Not the glob
#: characters ``*?[]``: bash keeps a pattern that matches no file as written, and a flag value
#: such as the hybrid layer pattern ``MEMEM*EMEMEM*E/*E/*E`` names no file in the harness's
#: working directory (the Megatron-LM checkout), so the run gets it as written.
_SHELL_SPECIAL = set("$`\\\"';&<>{}~#!")
#: Words one MODEL_ARGS file may put on the command line (mlm_args.MAX_FLAGS arguments,
#: four words each): a ``[a b c ...]`` value is refused when it passes this, before its
#: words are built.
MAX_WORDS = 4 * 20_000
#: Quotes and backslashes of one value that are read as xargs would (each is a step in
#: Python); a value with more is unknown, as one xargs refuses is.
MAX_QUOTES = 4_096
_QUOTED_SPECIAL = set('$`\\"')


class Entry:
    """One ``key: value`` of MODEL_ARGS after yq's ``explode``; ``ambiguous``: the value
    depends on the yq version (a key before a merge that also brings it)."""

    __slots__ = ("ambiguous", "key", "value")

    def __init__(self, key: Any, value: Any, ambiguous: bool = False) -> None:
        self.key, self.value, self.ambiguous = key, value, ambiguous


def explode(mapping: yaml.MappingNode, spent: list[int] | None = None,
            seen: frozenset[int] = frozenset(),
            done: dict[int, list[Entry]] | None = None) -> list[Entry]:  # fmt: skip
    """The entries of ``mapping`` with its merge keys resolved (yq ``explode(.)``): a merged
    map's keys go where the ``<<`` is, unless the map has the key itself (spec order: the
    first of a merge list wins). yq before ``--yaml-fix-merge-anchor-to-spec`` lets a merge
    override a key written *before* it; that value is marked ambiguous."""
    spent = [0] if spent is None else spent
    done = {} if done is None else done
    if id(mapping) in done:  # a map merged again (an anchor used twice): read once
        return done[id(mapping)]
    if id(mapping) in seen:
        raise InputError(f"line {mapping.start_mark.line + 1}: a merge key merges its own map")
    seen = seen | {id(mapping)}
    local = {k.value for k, _ in mapping.value if k.tag != MERGE_TAG and hasattr(k, "value")}
    out: list[Entry] = []
    at: dict[str, int] = {}
    for key, value in mapping.value:
        spent[0] += 1
        if spent[0] > MAX_ENTRIES:
            raise InputError(f"merge keys bring in more than {MAX_ENTRIES:,} entries")
        if key.tag != MERGE_TAG:
            name = key.value if isinstance(key, yaml.ScalarNode) else None
            if name is not None and name in at:
                out[at[name]] = Entry(key, value)  # a duplicate key: the later one
            else:
                if name is not None:
                    at[name] = len(out)
                out.append(Entry(key, value))
            continue
        maps = value.value if isinstance(value, yaml.SequenceNode) else [value]
        for merged in maps:
            if not isinstance(merged, yaml.MappingNode):
                raise InputError(
                    f"line {merged.start_mark.line + 1}: a merge key (<<) needs a map or a list "
                    "of maps"
                )
            for entry in explode(merged, spent, seen, done):
                name = entry.key.value if isinstance(entry.key, yaml.ScalarNode) else None
                if name in at:
                    earlier = out[at[name]]
                    if name in local and earlier.key.tag != MERGE_TAG and not earlier.ambiguous:
                        earlier.ambiguous = True  # written before the merge that brings it
                    continue
                if name in local:
                    continue  # the map's own (later) key wins
                if name is not None:
                    at[name] = len(out)
                out.append(Entry(entry.key, entry.value, entry.ambiguous))
    done[id(mapping)] = out
    return out


class _Finder:
    """Source positions of the words of one scalar written as is (xargs and the harness
    leave them as written): each found after the one before, so finding them all is one
    pass over the scalar (``raw.find`` from its start for each word was quadratic)."""

    def __init__(self, text: str, node: yaml.ScalarNode) -> None:
        self.start = node.start_mark.index + (1 if node.style in ("'", '"') else 0)
        self.raw = node.value
        #: Escapes or folding: the scalar is not written as is.
        self.as_is = text[self.start : self.start + len(self.raw)] == self.raw
        self.cursor = 0

    def positions(self, shown: str) -> range | None:
        if not self.as_is:
            return None
        at = self.raw.find(shown, self.cursor)
        if at < 0:
            self.as_is = False  # the rest is not searched again: one pass in all
            return None
        self.cursor = at + len(shown)
        return _span(self.start + at, self.start + at + len(shown))


_BLANKS = re.compile(r"[ \t\r\n]*")
_TOKEN = re.compile(r"""(?:[^ \t\r\n'"\\]+|'[^']*'|"(?:[^"\\]|\\[\s\S])*"|\\[\s\S])+""")
_PIECE = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\[\s\S])*)"|\\([\s\S])""")
_IN_DOUBLE = re.compile(r"\\([\s\S])")


def _piece(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        return m.group(1)
    if m.group(2) is not None:  # in double quotes a backslash escapes only " and itself
        return _IN_DOUBLE.sub(lambda e: e.group(1) if e.group(1) in '"\\' else e.group(0),
                              m.group(2))  # fmt: skip
    return m.group(3)


def _xargs(value: str) -> str | None:
    """``echo "$value" | xargs``: its words (quotes and backslashes processed) joined by one
    blank; None when xargs refuses it (an unmatched quote, a trailing backslash). Read as
    ``shlex`` in POSIX mode splits on blanks (its character loop was quadratic: 30 s on a
    7 MB value), a token at a time with regular expressions."""
    if not any(c in value for c in "'\"\\"):
        return _collapse(value)
    if value.count("'") + value.count('"') + value.count("\\") > MAX_QUOTES:
        return None
    words: list[str] = []
    at = 0
    while True:
        at = _BLANKS.match(value, at).end()  # type: ignore[union-attr]
        if at >= len(value):
            return " ".join(words)
        m = _TOKEN.match(value, at)
        if m is None:
            return None  # an unmatched quote or a lone backslash at the end
        at = m.end()
        if at < len(value) and value[at] not in " \t\r\n":
            return None
        token = m.group()
        words.append(_PIECE.sub(_piece, token) if any(c in token for c in "'\"\\") else token)


def _collapse(value: str) -> str:
    """The words of ``value`` (split on xargs's blanks) joined by one blank, in passes at C
    speed: blanks made spaces, then runs of spaces halved until none is left (log of the
    longest run passes; a substitution a run cost 0.3 µs each)."""
    value = value.replace("\t", " ").replace("\r", " ").replace("\n", " ")
    while "  " in value:
        value = value.replace("  ", " ")
    return value.strip(" ")


_SPLIT = re.compile(r"\S+")


def entry_words(text: str, entry: Entry, room: int = MAX_WORDS) -> list[_PStr]:
    """The words one MODEL_ARGS entry puts on the command line (see the module docstring);
    each entry (an alias's value again at each use) is charged to the expansion budget, and
    more than ``room`` words are refused before they are built."""
    key, value = entry.key, entry.value
    if not isinstance(key, yaml.ScalarNode):
        charge(WORD_COST)
        return [unknown_value("MODEL_ARGS")]
    k0 = key.start_mark.index + (1 if key.style in ("'", '"') else 0)
    name = key.value
    charge(2 * WORD_COST + len(name) + (len(value.value) if isinstance(value, yaml.ScalarNode)
                                        else 0))  # fmt: skip
    flag = _PStr(name, _span(k0, k0 + len(name)) if text[k0 : k0 + len(name)] == name
                 else None)  # fmt: skip
    if not isinstance(value, yaml.ScalarNode):
        # yq prints a list or a map as YAML text; the harness reads it line by line.
        return [flag, unknown_value(name.lstrip("-").replace("-", "_"))]
    raw = value.value
    if value.tag.endswith(":str") and raw == "" and value.style in ("'", '"'):
        return []  # select(.value != "") drops an empty string
    if entry.ambiguous or "\n" in raw:
        return [flag, unknown_value(name.lstrip("-").replace("-", "_"), hidden=False)]
    substituted = _VARIABLE.search(raw) is not None
    shown = _xargs(raw)
    if shown is None:
        return [flag, unknown_value(name.lstrip("-").replace("-", "_"), hidden=False)]
    if shown == "true":
        return [flag]
    pieces: Any
    if re.fullmatch(r"\([^)]+\)", shown):
        pieces, special = [shown], _QUOTED_SPECIAL  # passed as "$value": one word
    elif re.fullmatch(r"\[[^]]+\]", shown):
        # brackets stripped, split (str.split's blanks, a word at a time)
        pieces, special = (m.group() for m in _SPLIT.finditer(shown, 1, len(shown) - 1)), \
            _SHELL_SPECIAL  # fmt: skip
    elif re.search(r"[ |()]", shown):
        pieces, special = [shown], _QUOTED_SPECIAL
    else:
        pieces, special = ([shown] if shown else []), _SHELL_SPECIAL
    words = [flag]
    finder = _Finder(text, value)
    for piece in pieces:
        if len(words) > room:
            raise InputError(f"more than {MAX_WORDS // 4:,} arguments")
        charge(WORD_COST)
        if substituted or not special.isdisjoint(piece):
            # envsubst's values, or text the harness's eval changes: unknown, one word
            words.append(_PStr(piece, unresolved=True, hidden=False, at=value.start_mark.index))
        else:
            words.append(_PStr(piece, finder.positions(piece)))
    return words


def model_args_key(node: yaml.MappingNode) -> tuple[Any, Any] | None:
    """The ``MODEL_ARGS`` key and value of the file (run 1's arguments)."""
    for key, value in node.value:
        if isinstance(key, yaml.ScalarNode) and key.value == "MODEL_ARGS":
            return key, value
    return None


def run_gpus(node: yaml.MappingNode) -> tuple[dict[str, str], str]:
    """A checkpoint-consistency test's GPUs per node for run 1 (run_ci_test.sh exports
    ``MODEL_ENV_VARS.MODEL_ARGS.GPUS_PER_NODE`` for it), and where that came from."""
    top = {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
    test_type = top.get("TEST_TYPE")
    env = top.get("MODEL_ENV_VARS")
    if not (isinstance(test_type, yaml.ScalarNode) and test_type.value == "checkpoint-consistency"
            and isinstance(env, yaml.MappingNode)):  # fmt: skip
        return {}, ""
    runs = {k.value: v for k, v in env.value if isinstance(k, yaml.ScalarNode)}
    first = runs.get("MODEL_ARGS")
    if not isinstance(first, yaml.MappingNode):
        return {}, ""
    for k, v in first.value:
        if isinstance(k, yaml.ScalarNode) and k.value == "GPUS_PER_NODE" \
                and isinstance(v, yaml.ScalarNode) and v.value.isdigit():  # fmt: skip
            others = sorted(r for r in runs if r != "MODEL_ARGS" and r in top)
            rest = f"; runs {', '.join(others)} are not linted" if others else ""
            return {"gpus-per-node": v.value}, (
                f"MODEL_ENV_VARS.MODEL_ARGS.GPUS_PER_NODE: {v.value} at line "
                f"{v.start_mark.line + 1}, the GPUs per node run_ci_test.sh gives run 1{rest}"
            )
    return {}, ""
