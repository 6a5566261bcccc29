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
import shlex
from typing import Any

import yaml

from moe_lint.config.shell import _PStr, unknown_value
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


def _positions(text: str, node: yaml.ScalarNode, shown: str) -> list[int]:
    """Source positions of ``shown`` when it is written as is inside ``node``'s scalar."""
    start = node.start_mark.index + (1 if node.style in ("'", '"') else 0)
    raw = node.value
    if text[start : start + len(raw)] != raw:  # escapes or folding: not written as is
        return [-1] * len(shown)
    at = raw.find(shown)
    return list(range(start + at, start + at + len(shown))) if at >= 0 else [-1] * len(shown)


def _xargs(value: str) -> str | None:
    """``echo "$value" | xargs``: its words (quotes and backslashes processed) joined by one
    blank; None when xargs refuses it (an unmatched quote)."""
    try:
        lexer = shlex.shlex(value, posix=True)
        lexer.whitespace_split = True
        lexer.commenters = ""
        return " ".join(lexer)
    except ValueError:
        return None


def entry_words(text: str, entry: Entry) -> list[_PStr]:
    """The words one MODEL_ARGS entry puts on the command line (see the module docstring)."""
    key, value = entry.key, entry.value
    if not isinstance(key, yaml.ScalarNode):
        return [unknown_value("MODEL_ARGS")]
    k0 = key.start_mark.index + (1 if key.style in ("'", '"') else 0)
    name = key.value
    flag = _PStr(name, list(range(k0, k0 + len(name))) if text[k0 : k0 + len(name)] == name
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
    if re.fullmatch(r"\([^)]+\)", shown):
        pieces, special = [shown], _QUOTED_SPECIAL  # passed as "$value": one word
    elif re.fullmatch(r"\[[^]]+\]", shown):
        pieces, special = shown[1:-1].split(), _SHELL_SPECIAL  # brackets stripped, split
    elif re.search(r"[ |()]", shown):
        pieces, special = [shown], _QUOTED_SPECIAL
    else:
        pieces, special = ([shown] if shown else []), _SHELL_SPECIAL
    words = [flag]
    for piece in pieces:
        if substituted or any(c in special for c in piece):
            # envsubst's values, or text the harness's eval changes: unknown, one word
            words.append(_PStr(piece, unresolved=True, hidden=False, at=value.start_mark.index))
        else:
            words.append(_PStr(piece, _positions(text, value, piece)))
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
