"""Megatron-LM input in its own language: a finding names the ``--flag``, not the config path.

Rules address config by Bridge-shaped dotted paths, and config/mlm_args.py maps each
Megatron-LM flag onto one (data/mlm_flags.json). A finding about a launch script, a functional
test's ``model_config.yaml`` or an argument list is written for its reader, who writes flags:

- a config path, dotted (``model.sequence_parallel``) or bare (``sequence_parallel``), becomes
  the flag that sets it (``--sequence-parallel``), through the flag table's reverse map;
- a setting becomes the command line that makes it: ``set tensor_model_parallel_size: 4`` is
  ``use --tensor-model-parallel-size 4`` (``--tensor-model-parallel-size: 4`` in a
  ``MODEL_ARGS:`` file), ``set sequence_parallel false`` is ``remove --sequence-parallel``;
- an environment variable (``env_vars.NAME``) is set the input's way: ``export NAME=value`` in
  a script, ``NAME: value`` under the test's ``ENV_VARS:``;
- a path no flag sets keeps its name and says so (``(no Megatron-LM flag)``);
- quoted text (a framework's own message, a value) is left exactly as it is;
- the sources a rule cites are ordered for the run: Megatron-LM's own checks
  (``megatron/training/...``) first, then Megatron-Core and Transformer Engine, Bridge's last.

Built once here, for every rule: evaluate._finding asks :func:`language_of` for the input's
language and passes the message, the fix title and the derivation through it.
"""

from __future__ import annotations

import re
import shlex
from functools import cache
from typing import Any

from moe_lint.config.fields import table as field_table
from moe_lint.engine.expr import SECTION_NAMES
from moe_lint.engine.findings import split_sources
from moe_lint.records import NamedTuple, field, record

#: What a switch's absence means for its path is the flag table's default; a flag that takes a
#: value is marked with this instead of the value it sets.
TAKES_VALUE = "<value>"
#: Said after a config name that no Megatron-LM flag sets.
NO_FLAG = " (no Megatron-LM flag)"
#: The rule family written for Megatron-LM command lines (rules/mlm.yaml): its texts name flags
#: and quote validate_args word for word already, so they are not translated.
MLM_PACK = "mlm"
#: The input kinds (Document.path and text tell them apart, see :func:`language_of`).
SCRIPT, MODEL_ARGS, ARGUMENTS = "script", "model-args", "arguments"


class Flag(NamedTuple):
    """One flag that sets a config path: its name and the value a switch sets there
    (:data:`TAKES_VALUE` for a flag followed by its value)."""

    name: str
    sets: Any
    nargs: bool = False
    choices: tuple[str, ...] = ()


def _rank(path: str, flag: Flag) -> tuple[int, int, str]:
    """Prefer the flag named after the field, then the shorter name (``--no-x`` before
    ``--disable-x``), so a path always names the same flag."""
    field = "--" + path.rsplit(".", 1)[-1].replace("_", "-")
    return (0 if flag.name in (field, "--no-" + field[2:]) else 1, len(flag.name), flag.name)


@cache
def reverse_flags() -> dict[str, tuple[Flag, ...]]:
    """Config path -> the flags that set it (data/mlm_flags.json read backwards).

    A deprecated flag (its ``dest`` ends in ``_deprecated``) is never the way to say a setting.
    """
    # Lazy: the Megatron-LM reader (and its flag table) only once Megatron-LM input is linted.
    from moe_lint.config.mlm_args import flag_table

    found: dict[str, list[Flag]] = {}
    for name, entry in flag_table()["flags"].items():
        if str(entry.get("dest", "")).endswith("_deprecated"):
            continue
        kind = entry.get("kind")
        for raw in entry.get("paths", ()):
            negate = raw.startswith("!")
            path = raw.lstrip("!")
            if kind == "store_true":
                sets: Any = not negate
            elif kind == "store_false":
                sets = negate
            else:
                sets = TAKES_VALUE
            nargs = entry.get("nargs") in ("+", "*")
            choices = tuple(str(c) for c in entry.get("choices") or ())
            found.setdefault(path, []).append(Flag(name, sets, nargs, choices))
    return {p: tuple(sorted(fs, key=lambda f: _rank(p, f))) for p, fs in found.items()}


def flag_for(path: str) -> str | None:
    """The flag that sets ``path`` (``model.tensor_model_parallel_size`` ->
    ``--tensor-model-parallel-size``), or None when Megatron-LM has none."""
    flags = reverse_flags().get(path)
    return flags[0].name if flags else None


@cache
def _bare_names() -> dict[str, str]:
    """A field name with an underscore -> its one path with a flag (``sequence_parallel`` ->
    ``model.sequence_parallel``); a name whose paths name different flags is left out."""
    seen: dict[str, set[str]] = {}
    first: dict[str, str] = {}
    for path, flags in reverse_flags().items():
        name = path.rsplit(".", 1)[-1]
        if "_" not in name:
            continue
        seen.setdefault(name, set()).add(flags[0].name)
        first.setdefault(name, path)
    return {name: first[name] for name, names in seen.items() if len(names) == 1}


@cache
def _bridge_names() -> frozenset[str]:
    """Bridge's field and section names with an underscore (data/fields.json), for saying that
    one has no Megatron-LM flag."""
    names: set[str] = set()
    for section, entries in field_table()["sections"].items():
        names.update(part for part in section.split(".") if "_" in part)
        names.update(name for name in entries if "_" in name)
    return frozenset(names)


def _sections() -> frozenset[str]:
    return SECTION_NAMES


#: A quoted span (kept as written) or a config name: a dotted identifier or one with an
#: underscore, not part of a file path, a flag, a function call or a longer word.
_TOKEN = re.compile(
    r"""(?P<quote>"[^"\n]*"|`[^`\n]*`|(?<![\w])'[^'\n]*'(?![\w]))"""
    r"|(?<![\w.\-/$:{])(?P<name>(?=[A-Za-z0-9]*(?:_|\.[A-Za-z_]))"
    r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)"
    r"(?![\w\-/(]|\.\w)"
)
_BOOL = {"true": True, "True": True, "on": True, "false": False, "False": False, "off": False,
         "null": None, "None": None}  # fmt: skip
#: A value after ``name:`` / ``name =`` / ``name to`` (quoted, a list, a number, a token).
_VALUE = re.compile(
    r"""(?P<sep>\s*:\s+|\s*=\s*|\s+to\s+|\s+)"""
    r"""(?P<value>"[^"\n]*"|'[^'\n]*'|\[[^\]\n]*\]|[^\s,;()\[\]]+)"""
)
_VALUE_CHARS = re.compile(r"[\d_|+*./]")
_VERB = re.compile(r"\b(set|turn|use)\s+$")
_AND = re.compile(r"\s*(?:,|,?\s*and|with)\s+")


@record
class _State:
    """What one text's translation remembers: names already said to have no flag, and where
    the last setting was written (``set a true and b false`` sets both)."""

    noted: set[str] = field(default_factory=set)
    setting_at: int = -1
    #: The text is a fix (an instruction: written in the input's own syntax) rather than a
    #: description (a message or derivation: ``--flag value`` for every input).
    fix: bool = False


#: How a source citing Megatron Bridge starts (``megatron/bridge/...``, ``Bridge training/...``).
_BRIDGE_SOURCES = ("megatron/bridge/", "Bridge ", "Megatron Bridge", "Megatron-Bridge")


@record(frozen=True)
class Language:
    """How one Megatron-LM input says settings: a ``script``, a ``model-args`` file (a
    functional test's ``MODEL_ARGS:`` / ``ENV_VARS:`` YAML) or plain ``arguments``."""

    kind: str

    # -- sources -------------------------------------------------------------------------

    def sources(self, source: str) -> str:
        """The rule's sources with Megatron-LM's own checks first and Bridge's last."""
        parts = split_sources(source)

        def order(part: str) -> int:
            head = part.split("::", 1)[0]
            if head.startswith("megatron/training/"):
                return 0
            if head.startswith(_BRIDGE_SOURCES):
                return 2
            return 1

        ordered = sorted(parts, key=order)
        return source if ordered == parts else "; ".join(ordered)

    # -- text ----------------------------------------------------------------------------

    def say(self, text: str | None, fix: bool = False) -> str | None:
        """``text`` with its config names, settings and environment variables in flags; a
        ``fix`` is written in the input's own syntax (``--flag: value`` in MODEL_ARGS)."""
        if not text:
            return text
        out: list[str] = []
        at = 0
        state = _State(fix=fix)
        for match in _TOKEN.finditer(text):
            if match.start() < at:
                continue  # inside a value an earlier name took
            out.append(text[at : match.start()])
            at = match.end()
            name = match.group("name")
            if name is None:
                out.append(match.group())
                continue
            said, at = self._name(name, text, at, out, state)
            out.append(said)
        out.append(text[at:])
        return "".join(out)

    def _name(
        self, name: str, text: str, end: int, out: list[str], state: _State
    ) -> tuple[str, int]:
        """What ``name`` (ending at ``end``) says, and where the text after it resumes."""
        head, _, rest = name.partition(".")
        # The previous name was a setting and only "and" / "," / "with" lies between: out ends
        # with [that setting, the text between].
        chained = state.setting_at == len(out) - 2 and _AND.fullmatch(out[-1]) is not None
        state.setting_at = -1
        if head == "env_vars" and rest and "." not in rest:
            return self._env(rest, text, end, out, state.fix)
        if head == "env_vars" and not rest:
            return self._env_section(), end
        if rest and head not in _sections():
            return name, end  # a dotted word that is no config path (a file, a version)
        path = name if rest else _bare_names().get(name)
        flags = reverse_flags().get(path) if path else None
        if not flags:
            if (rest or name in _bridge_names()) and name not in state.noted:
                state.noted.add(name)
                return name + NO_FLAG, end
            return name, end
        value = _VALUE.match(text, end)
        if value is not None:
            said = self._setting(flags, value, out, chained, state.fix)
            if said is not None:
                state.setting_at = len(out)
                return said, value.end()
        switched = _switch_on(flags, out, chained)
        if switched is not None:
            state.setting_at = len(out)
            return switched, end
        return _mention(name, flags), end

    def _setting(
        self,
        flags: tuple[Flag, ...],
        value: re.Match[str],
        out: list[str],
        chained: bool,
        fix: bool,
    ) -> str | None:
        """``flag value`` (or add/remove a switch) for a name followed by a value, else None.

        A value counts only where the text sets one: after ``set``/``turn``/``use`` (or
        ``and`` after such a setting), or written ``name: value`` / ``name = value``; in prose
        (``sequence_parallel off``, ``kv_channels to the head dimension``) the name alone
        becomes the flag.
        """
        sep, raw = value.group("sep").strip(), value.group("value")
        verb = _VERB.search(out[-1]) if out else None
        acts = verb is not None or chained
        if not acts and sep not in (":", "=") and raw[0] != "[":
            return None
        switches = [f for f in flags if f.sets is not TAKES_VALUE]
        takes = [f for f in flags if f.sets is TAKES_VALUE]
        if raw in _BOOL and (switches or _BOOL[raw] is None):
            if raw in ("on", "off") and sep:
                return None  # "name = on" is no way of writing a switch
            truth = bool(_BOOL[raw])
            on = next((f for f in switches if f.sets == truth), None)
            off = next((f for f in switches if f.sets == (not truth)), None)
            if takes and _BOOL[raw] is None:
                on, off = None, takes[0]
            if on is None and off is None:
                return None
            if not acts:
                return on.name if on else f"without {off.name}" if off else None
            if verb is not None:
                out[-1] = out[-1][: verb.start()]
            return f"add {on.name}" if on else f"remove {off.name}" if off else None
        if not takes or raw in _BOOL:
            return None
        looks = raw[0] in "\"'[" or _VALUE_CHARS.search(raw) is not None or raw in takes[0].choices
        if sep and not looks:
            return None  # "to the ...", "name: it must ...": prose, not a value
        if verb is not None:
            out[-1] = out[-1][: verb.start()] + "use "
        return self.flag_value(takes[0], raw, fix)

    def flag_value(self, flag: Flag, raw: str, fix: bool = True) -> str:
        """``--flag value``; in a fix, as this input writes it (``--flag: value`` in
        MODEL_ARGS, a shell word in a script)."""
        items: list[str] | None = None
        if raw.startswith("[") and raw.endswith("]"):
            items = [i.strip().strip("'\"") for i in re.split(r"[,\s]+", raw[1:-1]) if i.strip()]
        if not fix:
            return f"{flag.name} {' '.join(items) if items is not None else raw}"
        if self.kind == MODEL_ARGS:
            if items is not None:
                return f'{flag.name}: "[{" ".join(items)}]"'
            return f"{flag.name}: {raw}"
        if items is not None:
            return f"{flag.name} {' '.join(_shell(i) for i in items)}"
        if raw[0] in "\"'":
            return f"{flag.name} {raw}"
        return f"{flag.name} {_shell(raw)}"

    # -- environment ---------------------------------------------------------------------

    def _env(self, var: str, text: str, end: int, out: list[str], fix: bool) -> tuple[str, int]:
        value = _VALUE.match(text, end)
        if (
            value is None
            or value.group("sep").strip() == ""
            or not (
                value.group("sep").strip() in (":", "=")
                or _VALUE_CHARS.search(value.group("value"))
                or value.group("value")[0] in "\"'"
            )
        ):
            return var, end
        raw = value.group("value")
        if not fix:
            return f"{var}={raw}", value.end()
        verb = _VERB.search(out[-1]) if out else None
        if verb is not None:
            out[-1] = out[-1][: verb.start()]
        return self.env_setting(var, raw), value.end()

    def env_setting(self, var: str, raw: str) -> str:
        """How this input sets an environment variable."""
        if self.kind == MODEL_ARGS:
            return f"set {var}: {raw} under ENV_VARS:"
        shown = raw if raw[0] in "\"'" else _shell(raw)
        if self.kind == SCRIPT:
            return f"export {var}={shown} in the script"
        return f"export {var}={shown} before the run"

    def _env_section(self) -> str:
        if self.kind == MODEL_ARGS:
            return "ENV_VARS"
        if self.kind == SCRIPT:
            return "the script's environment"
        return "the environment"


def _switch_on(flags: tuple[Flag, ...], out: list[str], chained: bool) -> str | None:
    """``set account_for_loss_in_pipeline_split`` (a switch set without a value, i.e. on):
    ``add --account-for-loss-in-pipeline-split``; None for anything else."""
    verb = re.search(r"\bset\s+$", out[-1]) if out else None
    on = next((f for f in flags if f.sets is True), None)
    if on is None or any(f.sets is TAKES_VALUE for f in flags) or not (verb or chained):
        return None
    if verb is not None:
        out[-1] = out[-1][: verb.start()]
    return f"add {on.name}"


def _mention(name: str, flags: tuple[Flag, ...]) -> str:
    """The flag that names a setting in prose: the one that takes its value or turns it on.

    A field only a negative switch sets (``add_bias_linear``: ``--disable-bias-linear``) keeps
    its name, since the flag means the opposite: ``add_bias_linear (off with
    --disable-bias-linear)``."""
    positive = next((f for f in flags if f.sets is TAKES_VALUE or f.sets is True), None)
    if positive is not None:
        return positive.name
    field = name.rsplit(".", 1)[-1]
    return f"{field} (off with {flags[0].name})"


def _shell(text: str) -> str:
    """A word the shell reads back as ``text``."""
    return shlex.quote(text)


def language_of(doc: Any) -> Language | None:
    """The language of a Megatron-LM document; None for Bridge input (its paths are its own)."""
    if doc is None or getattr(doc, "form", None) != "megatron-lm":
        return None
    if doc.path == "<command line>":
        return Language(ARGUMENTS)
    # Lazy: the Megatron-LM reader only for Megatron-LM input (it is loaded for it already).
    from moe_lint.config.mlm_args import looks_like_script

    return Language(SCRIPT if looks_like_script(doc.text, doc.path) else MODEL_ARGS)
