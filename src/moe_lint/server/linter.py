"""One open file, linted as ``moe-lint check`` lints it, for the language server.

No LSP types here: this module answers in moe-lint's own records (findings, an input
problem, hover Markdown, per-stage memory lines) and ``protocol`` translates them. What the
editor shows must be what the CLI prints for the same file and settings, so every step is the
CLI's own: settings from the closest pyproject.toml with a ``[tool.moe-lint]`` table
(config/settings.py), the file's directives and launch command (linting.resolve_settings,
inside linting.prepare), the same catalogue and selectors, the same input bounds
(config/load.py, bounds.py), the per-file time limit (workers.time_limit) and the fix loop's
judgement of a fix (output/fix.py). The editor's options are the command line's layer:
``gpus``, ``gpu``, ``model`` and the other cluster keys override the file's settings, as
``--gpus`` does.

Each call returns a value and never raises for anything a file, a pyproject.toml or an
option can hold: bad input is the file's one input problem (the CLI's exit-2 line, code
E000), bad settings the file's one settings problem (the CLI's usage error), and a bug in
moe-lint one internal-error problem, so one hostile file can never take the server down.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from moe_lint.bounds import MAX_REPR_CHARS, bounded_repr, bounded_str
from moe_lint.config import fields
from moe_lint.config.forms import NotBridgeConfig, detect_root
from moe_lint.config.load import ConfigPath, Document, Span, decode, format_path, parse_text
from moe_lint.config.memory_settings import memory_settings
from moe_lint.config.settings import (
    Settings,
    apply_cluster,
    check_table,
    find_pyproject,
    load_pyproject,
)
from moe_lint.engine.catalogue import Catalogue, Rule, load_catalogue, shipped_catalogue
from moe_lint.engine.findings import SEVERITY_RANK, Finding, InputProblem, docs_url
from moe_lint.errors import InputError, RulePackError, UsageError
from moe_lint.linting import (
    as_input_error,
    check_selectors,
    lint_document,
    prepare,
    relint_for_fix,
)
from moe_lint.output.fix import run_fixes, try_fix
from moe_lint.output.json_schema import field_schema
from moe_lint.workers import Overtime, file_timeout, overtime_message, time_limit

_T = TypeVar("_T")

#: Editor options that are the command line's cluster layer (``--gpus``, ``--gpu``, ...).
CLUSTER_OPTIONS = (
    "gpus", "nodes", "gpus-per-node", "gpu", "model", "megatron-core", "transformer-engine",
    "bridge",
)  # fmt: skip
#: Editor options that are the command line's rule selection (``--select``, ...).
RULE_OPTIONS = ("select", "extend-select", "ignore")
#: The other editor options: ``--config PATH``, ``--isolated``, ``--show-infos``.
OTHER_OPTIONS = ("config", "isolated", "show-infos")
OPTIONS = (*CLUSTER_OPTIONS, *RULE_OPTIONS, *OTHER_OPTIONS)
#: Rules shown in a field's hover (the rest are counted).
HOVER_RULES = 8


@dataclass(frozen=True)
class Options:
    """The editor's options (``initializationOptions``, or the ``moe-lint`` section of the
    workspace settings): the command line the server stands for."""

    cluster: dict[str, object] = field(default_factory=dict)
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    config: str | None = None
    isolated: bool = False
    show_infos: bool = False


def _option_key(key: str) -> str:
    """``gpusPerNode``, ``gpus_per_node`` and ``gpus-per-node`` are one option: editors write
    settings in camelCase, pyproject.toml in kebab-case."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"-\1", key).lower().replace("_", "-")


def parse_options(raw: object) -> Options:
    """Options from what the editor sent; a wrong name or value is one UsageError naming it,
    checked as the command line's values are (apply_cluster) within the settings bounds."""
    if raw is None:
        return Options()
    where = "editor settings (initializationOptions / moe-lint)"
    table = check_table(raw, where)
    nested = table.get("moe-lint", table.get("moeLint"))
    if isinstance(nested, dict):
        table = nested  # workspace/didChangeConfiguration: {"moe-lint": {...}}
    given = {_option_key(k): v for k, v in table.items() if v is not None}
    unknown = sorted(set(given) - set(OPTIONS))
    if unknown:
        shown = ", ".join(bounded_repr(k, 60) for k in unknown[:5])
        raise UsageError(f"{where}: unknown option(s) {shown} (known: {', '.join(OPTIONS)})")
    cluster = {k: given[k] for k in CLUSTER_OPTIONS if k in given}
    if cluster:
        apply_cluster(Settings(), cluster, where)  # validated once, as _cli_cluster does

    def names(key: str) -> list[str]:
        value = given.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{where}: {key} must be a list of rule codes or names")
        return list(value)

    def flag(key: str) -> bool:
        value = given.get(key, False)
        if not isinstance(value, bool):
            raise UsageError(f"{where}: {key} must be true or false")
        return value

    config = given.get("config")
    if config is not None and not isinstance(config, str):
        raise UsageError(f"{where}: config must be the path of a pyproject.toml")
    return Options(
        cluster=cluster,
        select=names("select") if "select" in given else None,
        extend_select=names("extend-select"),
        ignore=names("ignore"),
        config=config,
        isolated=flag("isolated"),
        show_infos=flag("show-infos"),
    )


@dataclass
class Outcome:
    """One lint of one text: what the editor shows for it, and what its requests reuse."""

    path: str
    text: str
    #: The findings the CLI reports for the file (infos only when it would show them).
    findings: list[Finding] = field(default_factory=list)
    #: The file's one problem instead of findings: input (E000), settings or internal.
    problem: InputProblem | None = None
    #: What kind of problem: "input", "settings" or "internal" (None without one).
    problem_kind: str | None = None
    #: Why the file is not linted at all (not a Bridge config), as ``check`` skips it.
    notice: str | None = None
    #: The parsed document (spans for hover, the text for fixes) and what linted it.
    doc: Document | None = None
    settings: Settings | None = None
    catalogue: Catalogue | None = None
    #: Every finding of the lint, infos too (the fix loop judges a fix against all of them).
    all_findings: list[Finding] = field(default_factory=list)


@dataclass
class StageLine:
    """One pipeline stage's memory, for a code lens."""

    stage: int
    #: 1-based line the lens sits on (the ``pipeline_model_parallel_size`` key, else 1).
    line: int
    title: str


@dataclass
class _Setup:
    settings: Settings
    catalogue: Catalogue


class Linter:
    """The server's moe-lint: options, settings per pyproject (re-read when the file
    changes) and the catalogue they name."""

    def __init__(self) -> None:
        self.options = Options()
        #: Why the editor's options were refused: every file shows it until they are fixed.
        self.options_error: str | None = None
        self._setups: dict[tuple[Any, ...], _Setup] = {}
        self._catalogues: dict[tuple[Any, ...], Catalogue] = {}
        self._checked_by: dict[int, dict[str, list[Rule]]] = {}

    def configure(self, raw: object) -> None:
        """Take the editor's options (a refusal is kept and shown on every file)."""
        try:
            self.options, self.options_error = parse_options(raw), None
        except UsageError as exc:
            self.options, self.options_error = Options(), str(exc)
        self._setups.clear()

    def warm(self) -> None:
        """Load the shipped catalogue now, at ``initialize``, so the first file opened is
        linted as fast as every later one."""
        shipped_catalogue()

    # ------------------------------------------------------------------------- linting

    def lint(self, path: str, text: str, settings_path: str | None = None) -> Outcome:
        """Lint ``text`` as the file ``path``; ``settings_path`` is the file whose folder
        decides the settings (an unsaved buffer's workspace), ``path`` by default."""
        outcome = Outcome(path, text)
        limit: float | None = None
        try:
            if self.options_error is not None:
                raise UsageError(self.options_error)
            limit = file_timeout()
            setup = self._setup(settings_path or path)
            outcome.settings, outcome.catalogue = setup.settings, setup.catalogue
            with time_limit(limit):
                doc = _document(text, path)
                result = as_input_error(
                    lint_document(doc, setup.catalogue, setup.settings, [], self.options.cluster)
                )
            if result.error is not None:
                return _problem(outcome, "input", InputProblem.parse(path, result.error))
            outcome.doc, outcome.notice = doc, result.notice
            outcome.all_findings = result.findings
            show = self.options.show_infos or setup.settings.show_infos
            show = show or setup.settings.fail_on == "info"
            outcome.findings = [f for f in result.findings if show or f.severity != "info"]
        except InputError as exc:
            return _problem(outcome, "input", InputProblem.parse(path, exc.message))
        except Overtime:
            return _problem(outcome, "input", InputProblem(path, overtime_message(limit or 0)))
        except (UsageError, RulePackError) as exc:
            return _problem(outcome, "settings", InputProblem(path, f"moe-lint: error: {exc}"))
        except Exception as exc:  # a bug: one problem on the file, never a dead server
            return _problem(outcome, "internal", InputProblem(path, _internal(exc)))
        return outcome

    def _setup(self, path: str) -> _Setup:
        """The pyproject-level settings of ``path`` with the editor's rule options over them,
        and their catalogue with its selectors checked: read again whenever the
        pyproject.toml (or a rule pack it names) changes, since an editor session outlives
        many edits of it."""
        options = self.options
        if options.isolated:
            pyproject: Path | None = None
        elif options.config:
            pyproject = Path(os.path.expanduser(options.config))
            if not pyproject.is_file():
                raise UsageError(
                    f"config {bounded_str(options.config, MAX_REPR_CHARS)}: no such file"
                )
        else:
            try:
                folder = Path(path).resolve().parent
            except (OSError, RuntimeError, ValueError):
                folder = Path.cwd()
            pyproject = find_pyproject(folder)
        key = (pyproject, _stamp(pyproject))
        setup = self._setups.get(key)
        if setup is not None and self._packs_unchanged(setup.settings):
            return setup
        settings, _ = load_pyproject(pyproject)
        if options.select is not None:
            settings.select = list(options.select)
        settings.extend_select = settings.extend_select + options.extend_select
        settings.ignore = settings.ignore + options.ignore
        catalogue = self._catalogue(settings)
        check_selectors(catalogue, settings)
        if len(self._setups) > 64:  # many projects in one session: keep the recent ones
            self._setups.clear()
        self._setups[key] = setup = _Setup(settings, catalogue)
        return setup

    def _catalogue(self, settings: Settings) -> Catalogue:
        if not settings.rules:
            return shipped_catalogue()
        key = tuple((pack, _stamp(Path(pack))) for pack in settings.rules)
        if key not in self._catalogues:
            if len(self._catalogues) > 8:  # packs edited many times: keep only new versions
                self._catalogues.clear()
            self._catalogues[key] = load_catalogue(extra_packs=settings.rules)
        return self._catalogues[key]

    def _packs_unchanged(self, settings: Settings) -> bool:
        key = tuple((pack, _stamp(Path(pack))) for pack in settings.rules)
        return not settings.rules or key in self._catalogues

    # --------------------------------------------------------------------------- fixes

    def fix(self, outcome: Outcome, finding: Finding) -> tuple[str | None, str]:
        """``finding``'s fix alone on the outcome's text, judged as ``--fix`` judges it:
        (the fixed text, "") or (None, why it is refused)."""
        refused: tuple[str | None, str] = (None, "moe-lint could not check this fix")
        return self._guarded(
            lambda: try_fix(outcome.text, self._relint(outcome), outcome.all_findings, finding),
            refused,
        )

    def fix_all(self, outcome: Outcome) -> str:
        """The text ``moe-lint check --fix`` writes for the outcome's text (its safe fixes,
        re-linted until nothing changes); the text itself when nothing applies."""
        if not any(f.applicability == "safe" and f.edits for f in outcome.all_findings):
            return outcome.text
        return self._guarded(
            lambda: (
                run_fixes(outcome.text, self._relint(outcome), False, outcome.all_findings).text
            ),
            outcome.text,
        )

    def _relint(self, outcome: Outcome) -> Callable[[str], list[Finding]]:
        assert outcome.doc is not None and outcome.settings is not None
        assert outcome.catalogue is not None
        return relint_for_fix(
            outcome.doc, outcome.catalogue, outcome.settings, [], self.options.cluster
        )

    @staticmethod
    def _guarded(work: Callable[[], _T], fallback: _T) -> _T:
        """``work()`` under the per-file time limit; ``fallback`` when it fails in any way
        (a fix that cannot be judged is not offered, and the server goes on)."""
        try:
            with time_limit(file_timeout()):
                return work()
        except (Exception, Overtime):
            return fallback

    # --------------------------------------------------------------------------- hover

    def finding_hover(self, outcome: Outcome, finding: Finding) -> str:
        """Markdown for a finding: what it says and why, then the rule's documentation
        (``moe-lint explain``)."""
        # Lazy: the explain text lives with the explain command.
        from moe_lint.cli.rules import explain_text

        parts = [f"**{finding.code}** `{finding.name}` ({finding.severity})", finding.message]
        if finding.derivation:
            parts.append(f"derived: {finding.derivation}")
        if finding.fix:
            applicability = {"safe": "a quick fix", "unsafe": "an unsafe quick fix"}
            offered = applicability.get(finding.applicability or "", "advice only")
            parts.append(f"help: {finding.fix} ({offered})")
        if finding.source:
            parts.append(f"source: {finding.source}")
        parts.append(f"[{finding.code} documentation]({docs_url(finding.code)})")
        rule = outcome.catalogue.by_code.get(finding.code) if outcome.catalogue else None
        if rule is not None and rule.docs.get("what"):
            parts += ["---", explain_text(rule).strip()]
        return "\n\n".join(parts)

    def field_hover(self, outcome: Outcome, line: int, column: int) -> str | None:
        """Markdown for the config key (or scalar value) at 1-based ``line``/``column``: the
        field's type, default and defining source from the field table, its value here, and
        the rules that check it; None when no key is there."""
        doc = outcome.doc
        if doc is None or outcome.notice is not None:
            return None  # not a Bridge config: its keys are no fields
        found = key_at(doc, line, column)
        if found is None:
            return None
        path, _ = found
        try:
            root, _form = detect_root(doc.data)
        except NotBridgeConfig:
            root = ()
        if path[: len(root)] != root or len(path) == len(root):
            return None
        relative = path[len(root) :]
        cut = next((i for i, part in enumerate(relative) if isinstance(part, int)), len(relative))
        dotted = format_path(relative[:cut])
        entry = fields.entry(dotted)
        parts: list[str] = []
        if entry is not None:
            kinds = entry.get("types") or [entry.get("type", "any")]
            parts.append(f"**{dotted}**: `{' | '.join(map(str, kinds))}`")
            parts.append(field_schema(entry)["description"])
            if entry.get("ge") is not None or entry.get("le") is not None:
                low, high = entry.get("ge"), entry.get("le")
                bounds = " and ".join(
                    text
                    for text in (
                        f"at least {low}" if low is not None else "",
                        f"at most {high}" if high is not None else "",
                    )
                    if text
                )
                parts.append(f"Bridge accepts {bounds}.")
        else:
            parts.append(f"**{dotted}**: {_not_a_field(dotted, relative)}")
        value = _value_at(doc.data, path)
        if value is not _MISSING and not isinstance(value, dict | list):
            parts.append(f"Here: `{bounded_repr(value)}`.")
        rules = self._rules_checking(outcome).get(dotted, [])
        if rules:
            shown = "\n".join(f"- {r.code} `{r.name}`: {r.summary}" for r in rules[:HOVER_RULES])
            more = len(rules) - HOVER_RULES
            tail = f"\n- and {more} more (`moe-lint rules`)" if more > 0 else ""
            parts.append(f"Checked by {len(rules)} rule(s):\n{shown}{tail}")
        return "\n\n".join(parts)

    def _rules_checking(self, outcome: Outcome) -> dict[str, list[Rule]]:
        """Field -> the rules whose finding sits at it or that read it (``path``,
        ``related``), once per catalogue."""
        catalogue = outcome.catalogue
        if catalogue is None:
            return {}
        index = self._checked_by.get(id(catalogue))
        if index is None:
            index = {}
            for rule in catalogue.rules:
                for dotted in dict.fromkeys([*([rule.path] if rule.path else []), *rule.related]):
                    index.setdefault(dotted, []).append(rule)
            for dotted, rules in index.items():
                # The rules reported at the field first, errors before warnings before infos.
                rules.sort(key=functools.partial(_rule_order, dotted))
            self._checked_by = {id(catalogue): index}
        return index

    # ---------------------------------------------------------------------------- lens

    def stages(self, outcome: Outcome) -> list[StageLine]:
        """Each pipeline stage's memory (``moe-lint estimate``'s numbers), when the file
        lints and its world is known (``gpus`` from any layer); none otherwise."""
        doc, settings = outcome.doc, outcome.settings
        if doc is None or settings is None or outcome.problem is not None or outcome.notice:
            return []
        return self._guarded(lambda: self._stages(doc, settings), [])

    def _stages(self, doc: Document, settings: Settings) -> list[StageLine]:
        # Lazy: the memory model (~40 ms to import) only when a code lens asks for it.
        from moe_lint.analysis.memory.verdict import judge
        from moe_lint.analysis.memory_facts import run_estimate

        cfg, facts, file_settings = prepare(doc, settings, [], self.options.cluster)
        if file_settings.world() is None:
            return []
        mem, warn, margin = memory_settings(file_settings.memory, "memory settings")
        est = run_estimate(cfg, facts, mem)
        verdict = judge(est, warn, margin)
        try:
            root, _form = detect_root(doc.data)
        except NotBridgeConfig:
            root = ()
        span = doc.spans.get((*root, "model", "pipeline_model_parallel_size"))
        line = (span.key_start or span.value_start).line if span is not None else 1
        usable = est.usable_gib
        lines = []
        for stage in est.stages:
            title = (
                f"PP stage {stage.stage}: {stage.total_gib:.1f} GiB"
                + (f" of {usable:.1f} usable" if usable is not None else "")
                + f" (allocated {stage.allocated_gib:.1f}, reserved {stage.reserved_gib:.1f};"
                f" peak in {stage.peak_phase})"
            )
            if verdict is not None and stage.stage == est.worst.stage:
                title += f": {verdict.label}"
            lines.append(StageLine(stage.stage, line, title))
        return lines


# ------------------------------------------------------------------------------ helpers

_MISSING = object()


def _document(text: str, path: str) -> Document:
    """The editor's text as ``moe-lint FILE`` reads the file: the same size and binary checks
    (config/load.decode, on the UTF-8 the file would hold) before it is parsed."""
    decoded, had_bom = decode(text.encode("utf-8", "surrogatepass"), path)
    return parse_text(decoded, path, had_bom)


def _rule_order(dotted: str, rule: Rule) -> tuple[bool, int, str]:
    return rule.path != dotted, -SEVERITY_RANK.get(rule.severity, 0), rule.code


def _not_a_field(dotted: str, relative: ConfigPath) -> str:
    """What a key without a field-table entry is: a section, an entry of a free-form field
    (``env_vars``), the class a section instantiates, or a key Bridge does not know."""
    table = fields.table()
    free = next((f for f in table["free_form"] if dotted == f or dotted.startswith(f + ".")), None)
    if dotted in table["sections"]:
        return f"a section ({len(fields.section(dotted))} fields in moe-lint's table)"
    if free is not None:
        return (
            "free-form: Bridge takes any keys here"
            if dotted == free
            else (f"an entry of `{free}`, which takes any keys")
        )
    if relative[-1] == "_target_":
        return "the class Bridge instantiates for this section"
    if len(relative) == 1 and dotted in table["top_level"]:
        return "a section of Bridge's ConfigContainer"
    return (
        "not a field of moe-lint's table of Megatron Bridge fields (SCH001 reports a key "
        "Bridge does not know)"
    )


def _problem(outcome: Outcome, kind: str, problem: InputProblem) -> Outcome:
    outcome.problem, outcome.problem_kind = problem, kind
    outcome.findings, outcome.all_findings, outcome.doc = [], [], None
    return outcome


def _internal(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:
        text = "(no message)"
    return f"moe-lint: internal error: {type(exc).__name__}: {bounded_str(text)}"


def _stamp(path: Path | None) -> tuple[int, int] | None:
    """What tells a changed settings file or pack from the one read before."""
    if path is None:
        return None
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def _within(start: Any, end: Any, line: int, column: int) -> bool:
    return bool((start.line, start.column) <= (line, column) <= (end.line, end.column))


def key_at(doc: Document, line: int, column: int) -> tuple[ConfigPath, Span] | None:
    """The deepest config path whose key, or scalar value, holds 1-based ``line:column``
    (the loader's path -> span map, read backwards)."""
    best: tuple[ConfigPath, Span] | None = None
    for path, span in doc.spans.items():
        on_key = span.key_start is not None and _within(span.key_start, span.key_end, line, column)
        on_value = span.scalar and _within(span.value_start, span.value_end, line, column)
        if (on_key or on_value) and (best is None or len(path) > len(best[0])):
            best = (path, span)
    return best


def _value_at(data: Mapping[str, Any], path: ConfigPath) -> Any:
    value: Any = data
    for part in path:
        in_list = isinstance(part, int) and isinstance(value, list) and 0 <= part < len(value)
        in_dict = isinstance(part, str) and isinstance(value, dict) and part in value
        if not (in_list or in_dict):
            return _MISSING
        value = value[part]
    return value


__all__ = [
    "Linter", "Options", "Outcome", "StageLine", "key_at", "parse_options",
]  # fmt: skip
