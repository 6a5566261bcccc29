"""Stage 4/5: run the selected rules over one normalized config and build located findings."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from moe_lint.analysis.derive import Facts
from moe_lint.analysis.facts import SHOWN
from moe_lint.bounds import MAX_FINDINGS
from moe_lint.config.load import format_path, location, parse_path
from moe_lint.config.normalize import Config
from moe_lint.config.versions import NEWEST_RELEASED, satisfies, stated_below
from moe_lint.engine.catalogue import Catalogue, Rule
from moe_lint.engine.expr import _LEFT as _BUDGET
from moe_lint.engine.expr import (
    BASE_NAMESPACE,
    FUNCTIONS,
    SECTION_NAMES,
    BudgetExceeded,
    SectionView,
    charge,
    reset_budget,
)
from moe_lint.engine.findings import Argument, Edit, Finding
from moe_lint.engine.spans import set_value_edit
from moe_lint.errors import InputError, NotDerivable, RulePackError
from moe_lint.records import field, record

if TYPE_CHECKING:
    from moe_lint.engine.mlm_language import Language

#: Facts whose derivation is worth printing under a finding (sizes alone are not): those the
#: registry (analysis/facts.py) marks ``shown``, in its order.
_SHOWN_FACTS = SHOWN


def _mlm_pack() -> str:
    """The Megatron-LM rule pack's name."""
    # Lazy: the Megatron-LM language is loaded for Megatron-LM input only.
    from moe_lint.engine.mlm_language import MLM_PACK

    return MLM_PACK


#: Errors a rule expression can hit on odd data (set MOE_LINT_STRICT=1 to surface them).
_DATA_ERRORS = (TypeError, ValueError, ArithmeticError, KeyError, IndexError)


@record
class Violation:
    """What a Python check reports: where, the template parameters, and optional edits.

    An empty ``path`` means the rule's own ``path`` (a rule converted from an expression).
    """

    path: str
    params: dict[str, Any] = field(default_factory=dict)
    edits: list[Edit] = field(default_factory=list)
    derivation: str | None = None
    #: An explicit 1-based (line, column) for findings about comments rather than keys.
    at: tuple[int, int] | None = None
    #: Overrides the rule's fix applicability for this finding (e.g. an unsafe removal where
    #: the rule's usual rewrite is safe).
    applicability: str | None = None
    #: For findings about a command-line override: where it sits on the command line.
    argument: Argument | None = None


@record
class Context:
    """Everything a rule may read about one file."""

    config: Config
    facts: Facts
    settings: Any = None
    #: Filled in after suppression, for the checks that report unused suppressions.
    suppressions: list[Any] = field(default_factory=list)
    catalogue: Any = None
    #: Findings this file may still get, the suppression rules' included (bounds.MAX_FINDINGS).
    findings_left: int = MAX_FINDINGS

    def count_finding(self) -> None:
        """Charge one finding; past ``bounds.MAX_FINDINGS`` the file is refused (each finding
        costs a message, a location and a report line: 100,000 unknown keys took 8 s)."""
        self.findings_left -= 1
        if self.findings_left < 0:
            raise InputError(
                f"more than {MAX_FINDINGS:,} findings in one file, moe-lint's bound "
                "(bounds.MAX_FINDINGS)"
            )


class _Namespace(dict[str, Any]):
    """Globals of a compiled expression: functions and sections stored, the rest looked up.

    A name that is not stored is a rule's ``let`` value or a violation parameter (``locals``),
    else a derived fact (resolved lazily, then cached here), else NotDerivable: the rule does
    not apply to this file.
    """

    def __init__(self, facts: Facts, base: dict[str, Any]) -> None:
        super().__init__(base)
        self.facts = facts
        self.locals: dict[str, Any] = {}

    def __missing__(self, name: str) -> Any:
        if name in self.locals:
            return self.locals[name]
        value = self.facts.require(name)
        self[name] = value
        return value


def _version_below(ctx: Context, package: str, text: str) -> bool:
    """``version_below(package, text)`` in an expression: is the version in use (stated, else
    the newest release) older than ``text``?"""
    settings = ctx.settings
    return stated_below(settings.versions if settings is not None else None, package, text)


def _version_at_least(ctx: Context, package: str, text: str) -> bool:
    """``version_at_least(package, text)`` in an expression: not :func:`_version_below`."""
    return not _version_below(ctx, package, text)


def _fact(ctx: Context, name: str, default: Any = None) -> Any:
    """``fact(name, default)`` in an expression: a derived fact, or ``default`` when it
    cannot be computed for this file."""
    ctx.facts.resolve(name)
    fact = ctx.facts.values.get(name)
    return default if fact is None or fact.value is None else fact.value


def _value(ctx: Context, dotted: str, otherwise: Any = None) -> Any:
    """``value('section.field', otherwise)`` in an expression (docs/adding-rules.md).

    The field's effective value (config/normalize.py ``Config.value``: written, normalized,
    else the field table's framework default). ``otherwise`` (None when not given) stands in
    where there is no value to compute with: the field is UNKNOWN (a recipe decides it in an
    override file) or null. It is the rule's stated reading of "no value", never a default:
    a field whose table default is not null gets that default, whatever ``otherwise`` says.
    """
    return ctx.config.value_or(dotted, otherwise)


class Evaluator:
    """Evaluates compiled rule expressions against one config's facts and sections.

    The expression functions that read the file (``value``, ``fact``, ``version_below``...)
    are bound to the context, not to the evaluator, whose namespace holds them: a reference
    cycle there kept each file's config, facts and YAML nodes alive until the cyclic
    collector found them, which scanned them several times first (a tenth of a batch's CPU).
    """

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        cfg = ctx.config
        self.base: dict[str, Any] = {name: SectionView(cfg, name) for name in SECTION_NAMES}
        functions = dict(FUNCTIONS)
        functions["explicit"] = cfg.explicit
        functions["stated"] = cfg.stated
        functions["known"] = cfg.known
        functions["value"] = partial(_value, ctx)
        functions["fact"] = partial(_fact, ctx)
        functions["version_below"] = partial(_version_below, ctx)
        functions["version_at_least"] = partial(_version_at_least, ctx)
        self.namespace = _Namespace(ctx.facts, {**BASE_NAMESPACE, **functions, **self.base})
        #: Megatron-LM input's own language (flags, ENV_VARS / export), None for Bridge input.
        self.language: Language | None = None
        if getattr(cfg.doc, "form", None) == "megatron-lm":
            # Lazy: the Megatron-LM language (~5 ms) only for Megatron-LM input.
            from moe_lint.engine.mlm_language import language_of

            self.language = language_of(cfg.doc)

    @property
    def locals(self) -> dict[str, Any]:
        """The current rule's ``let`` values and violation parameters."""
        return self.namespace.locals

    @locals.setter
    def locals(self, values: dict[str, Any]) -> None:
        self.namespace.locals = values

    def eval(self, compiled: Any) -> Any:
        # The code was compiled from a whitelisted AST (expr.py) and runs with no builtins,
        # under the per-file cost budget (expr.LIMITS).
        left = _BUDGET[0] - compiled.cost
        _BUDGET[0] = left
        if left < 0:
            charge(0)
        return eval(compiled.code, self.namespace)

    def lookup(self, name: str) -> Any:
        """Resolve a template placeholder (a name or ``section.field``)."""
        if "." in name:
            section, attr = name.split(".", 1)
            return self.base[section]._read(attr)
        if name in self.locals:
            return self.locals[name]
        return self.ctx.facts.require(name)


def _derivation(rule: Rule, ctx: Context, extra: str | None) -> str | None:
    parts: list[str] = []
    if extra:
        parts.append(extra)
    for name in _SHOWN_FACTS:
        if name in rule.facts_used and name in ctx.facts.values:
            parts.append(ctx.facts.values[name].derivation)
            if name == "world" and "min_world" not in rule.facts_used:
                assumed = ctx.facts.values.get("world_assumed")
                if assumed is not None and assumed.value:
                    parts.append(ctx.facts.values["min_world"].derivation)
    for dotted in (rule.path, *rule.related):
        if dotted and dotted in ctx.config.notes:
            parts.append(ctx.config.notes[dotted])
        if dotted and dotted in ctx.config.override_text:
            parts.append(f"{dotted} from override {ctx.config.override_text[dotted]}")
    seen: list[str] = []
    for part in parts:
        if part not in seen:
            seen.append(part)
    return "; ".join(seen) or None


def _finding(
    rule: Rule,
    ctx: Context,
    ev: Evaluator,
    path: str,
    edits: list[Edit],
    derivation: str | None,
    at: tuple[int, int] | None = None,
    applicability: str | None = None,
    argument: Argument | None = None,
) -> Finding:
    cfg = ctx.config
    if argument is not None:
        line, col, end_line, end_col = 0, 0, 0, 0
    elif at is not None:
        line, col, end_line, end_col = at[0], at[1], at[0], at[1]
    else:
        line, col, end_line, end_col = location(cfg.doc, cfg.physical(path))
    fix_text = rule.fix.title.render(ev.lookup) if rule.fix else None
    message = rule.message.render(ev.lookup)
    source = rule.source
    if ev.language is not None and rule.pack != _mlm_pack():
        # Megatron-LM input: its flags, its way of setting the environment, its checks first.
        # (The MLM family is written in flags already, quoting validate_args word for word.)
        message = ev.language.say(message) or message
        fix_text = ev.language.say(fix_text, fix=True)
        derivation = ev.language.say(derivation)
        source = ev.language.sources(source)
    if rule.fix is None:
        applicability = None
    elif applicability is None:
        applicability = rule.fix.applicability
    if rule.fix and applicability != "display-only" and not edits:
        applicability = "display-only"
    severity = rule.severity
    unstated = _unstated_packages(rule, ctx)
    if unstated:
        severity = rule.unstated_severity or severity
        note = "; ".join(
            f"{package} not stated: judged as its newest release {NEWEST_RELEASED[package]}; "
            f"{rule.severity} (not {severity}) once a version {spec} is stated"
            for package, spec in unstated
        )
        derivation = f"{derivation}; {note}" if derivation else note
    return Finding(
        code=rule.code,
        name=rule.name,
        severity=severity,
        message=message,
        path=path,
        file=cfg.doc.path,
        line=line,
        column=col,
        end_line=end_line,
        end_column=end_col,
        derivation=derivation,
        fix=fix_text,
        applicability=applicability,
        edits=edits if applicability != "display-only" else [],
        source=source,
        argument=argument,
    )


def _fix_edits(rule: Rule, ctx: Context, ev: Evaluator) -> list[Edit]:
    if rule.fix is None or rule.fix.applicability == "display-only":
        return []
    edits: list[Edit] = []
    for dotted, compiled in rule.fix.sets:
        value = ev.eval(compiled)
        edit = set_value_edit(ctx.config.doc, ctx.config.physical(dotted), value)
        if edit is None:
            return []
        edits.append(edit)
    return edits


def run_rule(rule: Rule, ctx: Context, ev: Evaluator, catalogue: Catalogue) -> list[Finding]:
    """Evaluate one rule; NotDerivable means the rule does not apply to this file."""
    ev.locals = {}
    try:
        if rule.check is not None:
            check = catalogue.checks[rule.check]
            out = []
            for violation in check.func(ctx):
                ev.locals = dict(violation.params)
                for name, compiled in rule.lets:
                    ev.locals[name] = ev.eval(compiled)
                extra = violation.derivation
                if rule.derivation is not None:
                    rendered = rule.derivation.render(ev.lookup)
                    extra = f"{rendered}; {extra}" if extra else rendered
                # A converted rule's check leaves the path to the rule (an empty path); the
                # checks of rules without a path report "" for the document root.
                path = rule.path if not violation.path and rule.path is not None else violation.path
                ctx.count_finding()
                out.append(
                    _finding(
                        rule,
                        ctx,
                        ev,
                        path,
                        violation.edits,
                        _derivation(rule, ctx, extra),
                        violation.at,
                        violation.applicability,
                        violation.argument,
                    )
                )
            return out
        for name, compiled in rule.when_lets:
            ev.locals[name] = ev.eval(compiled)
        assert rule.when is not None
        if not ev.eval(rule.when):
            return []
        for name, compiled in rule.late_lets:
            ev.locals[name] = ev.eval(compiled)
        derivation = rule.derivation.render(ev.lookup) if rule.derivation else None
        edits = _fix_edits(rule, ctx, ev)
        assert rule.path is not None
        ctx.count_finding()
        return [_finding(rule, ctx, ev, rule.path, edits, _derivation(rule, ctx, derivation))]
    except NotDerivable:
        return []
    except BudgetExceeded as exc:
        if rule.code in catalogue.shipped:
            # moe-lint's own rules stay far inside the budget on any real config (~10,000
            # steps of 1,000,000): only a huge value (a long string or list, shared through
            # aliases) takes one past it, so the file is refused, not the rule.
            raise InputError(
                f"a config value is too large for rule {rule.code} ({rule.name}) to check: {exc}"
            ) from None
        # A rule that asks for too much is a broken (or hostile) pack: stop with one line
        # naming it, rather than skip it as if it did not apply.
        where = f"{ctx.config.doc.path}: " if ctx.config.doc is not None else ""
        raise RulePackError(
            f"{where}rule {rule.code} ({rule.name}, pack {rule.pack}): {exc}"
        ) from None
    except _DATA_ERRORS:
        # A value of an unexpected shape in an untyped field: the rule cannot judge this file.
        if os.environ.get("MOE_LINT_STRICT"):
            raise
        return []


def _unstated_packages(rule: Rule, ctx: Context) -> list[tuple[str, str]]:
    """The version gates of a rule with an ``unstated_severity`` that no version is stated for
    (the rule then reports at that severity: the user's release may predate the gate)."""
    if rule.unstated_severity is None:
        return []
    versions = _stated_versions(ctx)
    return [(package, spec) for package, spec in rule.versions if versions.get(package) is None]


def applies_to_versions(rule: Rule, ctx: Context) -> bool:
    """A version-gated rule runs only for the framework versions it describes."""
    versions = _stated_versions(ctx)
    return all(satisfies(versions.get(package), spec, package) for package, spec in rule.versions)


def _stated_versions(ctx: Context) -> Mapping[str, Any]:
    """The framework versions the user stated (directive, CLI, pyproject); none: {}."""
    return ctx.settings.versions if ctx.settings is not None else {}


def run_rules(rules: Iterable[Rule], ctx: Context, catalogue: Catalogue) -> list[Finding]:
    ev = Evaluator(ctx)
    reset_budget()
    findings: list[Finding] = []
    kind = "megatron-lm" if ctx.config.form == "megatron-lm" else "bridge"
    for rule in rules:
        if rule.versions and not applies_to_versions(rule, ctx):
            continue
        if rule.applies_to and kind not in rule.applies_to:
            continue
        if rule.modes and getattr(ctx.config, "mode", "training") not in rule.modes:
            continue
        findings.extend(run_rule(rule, ctx, ev, catalogue))
    return findings


__all__ = ["Context", "Evaluator", "Violation", "format_path", "parse_path", "run_rules"]
