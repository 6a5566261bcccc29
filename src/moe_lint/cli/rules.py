"""``moe-lint rules`` (the catalogue as a table, JSON or Markdown) and ``moe-lint explain``
(one rule's documentation), sharing the catalogue helper (:func:`_catalogue_for`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from moe_lint.bounds import bounded_repr
from moe_lint.cli import COMMANDS, EXIT_OK
from moe_lint.cli.options import _Parser
from moe_lint.engine.catalogue import load_catalogue
from moe_lint.engine.findings import docs_url
from moe_lint.errors import UsageError
from moe_lint.linting import rule_hint
from moe_lint.output import escape


def _catalogue_for(argv: list[str], command: str) -> tuple[Any, argparse.Namespace]:
    p = _Parser(prog=f"moe-lint {command}", description=dict(COMMANDS)[command])
    target = (
        "a code prefix (PAR, MEM001), a rule name or a pack (attention) to list only those"
        if command == "rules"
        else "the rule's code or name"
    )
    p.add_argument("target", nargs="?", help=target)
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.add_argument("--rules", action="append", default=[], metavar="PACK",
                   help="an extra rule pack (a YAML file)")  # fmt: skip
    ns = p.parse_args(argv)

    return load_catalogue(extra_packs=ns.rules), ns


def rule_json(rule: Any) -> dict[str, Any]:
    return {
        "code": rule.code,
        "name": rule.name,
        "severity": rule.severity,
        "summary": rule.summary,
        "pack": rule.pack,
        "fix": rule.fix.applicability if rule.fix else None,
        "source": rule.source,
        "stage": rule.stage,
        "implied_by": list(rule.implied_by),
        "url": docs_url(rule.code),
        "docs": rule.docs,
    }


def _selected_rules(catalogue: Any, target: str | None) -> list[Any]:
    """The rules ``moe-lint rules TARGET`` lists: every rule, or those whose code starts with
    TARGET (any case), whose name is TARGET, or whose pack is TARGET."""
    if not target:
        return list(catalogue.rules)
    prefix = target.upper()
    chosen = [
        r
        for r in catalogue.rules
        if r.code.upper().startswith(prefix) or r.name == target or r.pack == target
    ]
    if not chosen:
        # Lazy: the suggester (difflib) only for a usage error.
        from moe_lint.config.suggest import did_you_mean

        packs = sorted({r.pack for r in catalogue.rules})
        hint = did_you_mean(target[:100], packs) or rule_hint(catalogue, target)
        raise UsageError(
            f"no rule code, name or pack matches {bounded_repr(target)}{hint} "
            f"(packs: {', '.join(packs)})"
        )
    return chosen


def _cmd_rules(argv: list[str]) -> int:
    catalogue, ns = _catalogue_for(argv, "rules")
    rules = _selected_rules(catalogue, ns.target)
    if ns.format == "json":
        sys.stdout.write(escape.dumps([rule_json(r) for r in rules], indent=2) + "\n")
        return EXIT_OK
    if ns.format == "markdown":
        lines = ["| code | name | severity | fix | summary |", "|---|---|---|---|---|"]
        for r in rules:
            fix = r.fix.applicability if r.fix else ""
            cells = (r.code, r.name, r.severity, fix, r.summary)
            lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
        for line in lines:
            print(escape.line(line))
        return EXIT_OK
    width = max(len(r.name) for r in rules)
    for r in rules:
        fix = {"safe": "fix", "unsafe": "fix*", "display-only": "hint"}.get(
            r.fix.applicability if r.fix else "", ""
        )
        line = f"{r.code:<6}  {r.name:<{width}}  {r.severity:<7}  {fix:<4}  {r.summary}"
        print(escape.line(line))
    return EXIT_OK


#: What ``applies_to`` limits a rule to, in the words of `moe-lint explain` (docs/megatron-lm.md).
_INPUT_KIND_TEXT = {
    "bridge": "Megatron Bridge configs (YAML)",
    "megatron-lm": "Megatron-LM command lines (launch scripts, MODEL_ARGS files, argument lists)",
}


def _applies_to_text(rule: Any) -> str:
    """`` Runs on: ...`` for a rule limited to some inputs (``applies_to``), else nothing."""
    kinds = getattr(rule, "applies_to", ()) or ()
    if not kinds:
        return ""
    return " Runs on: " + " and ".join(_INPUT_KIND_TEXT.get(k, k) for k in kinds) + " only."


def _unstated_text(rule: Any) -> str:
    lower = getattr(rule, "unstated_severity", None)
    if not lower:
        return ""
    gates = ", ".join(f"{package} {spec}" for package, spec in rule.versions)
    return f" ({lower} until a version is stated: {gates})"


def _implied_text(rule: Any) -> str:
    """`` Folded into PAR001 ...`` for a rule another one's finding reports (``implied_by``)."""
    roots = getattr(rule, "implied_by", ()) or ()
    if not roots:
        return ""
    return (
        f" Folded into {' or '.join(roots)} when that fires for the same input (one cause, one"
        " finding: its derivation names this rule)."
    )


def explain_text(rule: Any) -> str:
    docs = rule.docs
    lines = [
        f"# {rule.name} ({rule.code})",
        "",
        f"Severity: {rule.severity}{_unstated_text(rule)}. Fix: "
        f"{rule.fix.applicability if rule.fix else 'none'}. Checks: {rule.source}"
        + (
            " (never raises: trains wrongly)."
            if rule.stage == "silent"
            else f" (raises at: {rule.stage})."
            if rule.stage
            else "."
        )
        + _applies_to_text(rule)
        + _implied_text(rule),
        "",
        "## What it does",
        docs["what"].strip(),
        "",
        "## Why is this bad?",
        docs["why"].strip(),
        "",
        "## Example",
        "```yaml",
        docs["example"].rstrip(),
        "```",
    ]
    if docs.get("example_args"):
        lines.append(f"(linted with `{docs['example_args']}`)")
    lines += ["", "## Use instead", "```yaml", docs["use_instead"].rstrip(), "```"]
    if docs.get("use_instead_args"):
        lines.append(f"(linted with `{docs['use_instead_args']}`)")
    if docs.get("references"):
        lines += ["", "## References", *[f"- {ref}" for ref in docs["references"]]]
    lines += ["", "## Suppress", f"`# moe-lint: disable={rule.code} -- reason`"]
    return "\n".join(lines) + "\n"


def _cmd_explain(argv: list[str]) -> int:
    catalogue, ns = _catalogue_for(argv, "explain")
    if not ns.target:
        raise UsageError("explain needs a rule code or name")
    rule = catalogue.by_code.get(ns.target.upper()) or catalogue.by_name.get(ns.target)
    if rule is None:
        hint = rule_hint(catalogue, ns.target)
        raise UsageError(f"no rule {bounded_repr(ns.target)}{hint} (see `moe-lint rules`)")

    if ns.format == "json":
        sys.stdout.write(escape.dumps(rule_json(rule), indent=2) + "\n")
    else:
        sys.stdout.write(escape.block(explain_text(rule)))
    return EXIT_OK
