"""The data path for one file: load -> normalize -> derive -> rules -> findings -> suppress."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from moe_lint.analysis.derive import Cluster, Facts, derive
from moe_lint.analysis.memory_facts import attach
from moe_lint.bounds import bounded_repr
from moe_lint.config.forms import NotBridgeConfig
from moe_lint.config.load import Document, format_path, load_file, parse_text
from moe_lint.config.normalize import Config, normalize
from moe_lint.config.overrides import FieldOracle, Override
from moe_lint.config.settings import (
    Settings,
    apply_cluster,
    beside_config,
    glob_match,
    gpu_specs,
    parse_directives,
    preset_fields,
)
from moe_lint.engine.catalogue import Catalogue, Rule
from moe_lint.engine.evaluate import Context, run_rules
from moe_lint.engine.findings import Finding, fold_implied
from moe_lint.engine.suppress import SUPPRESSION_CHECKS, Suppression, suppress
from moe_lint.errors import InputError, UsageError
from moe_lint.records import field, record, replace

#: Findings that mean Bridge cannot even load the file (a value of the wrong type, a duplicate
#: key): like malformed YAML they are bad input, reported in one line with exit code 2.
INPUT_ERROR_CODES = ("SCH002", "SCH003")
#: SCH002 findings on values Bridge loads as written and rejects only when the run starts
#: (a mixed_precision name that is no registered recipe: runtime_config_update ->
#: training/mixed_precision.py::get_mixed_precision_config raises): ordinary error findings.
RAISED_AT_START = frozenset({"mixed_precision"})


@record
class FileResult:
    """What linting one file gave: its findings, or the one input error that stopped it."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None
    notice: str | None = None
    doc: Document | None = None


def slim(result: FileResult, keep_text: bool = True) -> FileResult:
    """Keep only what the report needs: the findings and the lines of their code frames.

    A parsed document (values, spans, the normalized config behind the findings) costs about
    0.9 MiB for a full Bridge dump; holding every one until the report is written made a
    1,000-file run take 0.9 GB. Workers and the one-process path both slim each result.
    Without ``keep_text`` (every format but ``text``, whose code frames are the only reader of
    a linted file's text) the document goes too. With it, the document's text keeps only the
    lines a finding's code frame shows (its line and the one before, output/text.py::_frame),
    the others blank, so the line numbers and the line count are the file's: a 900-line dump
    keeps a few lines and 900 line breaks instead of 27 kB, and memory stays flat in the
    number of files for every format.
    """
    doc = result.doc
    if doc is not None and not keep_text:
        result.doc = None
    elif doc is not None:
        text = frame_text(doc.text, result.findings)
        result.doc = Document(path=doc.path, text=text, data={}, spans=doc.spans.__class__(),
                              had_bom=doc.had_bom)  # fmt: skip
    return result


def frame_text(text: str, findings: list[Finding]) -> str:
    """``text`` with only the lines code frames of ``findings`` show, the others blank: its
    ``splitlines()`` has the same length, and the same line at each index a frame reads."""
    lines = text.splitlines()
    shown = {i for f in findings for i in (f.line - 2, f.line - 1) if 0 <= i < len(lines)}
    if not lines or len(shown) == len(lines):
        return text
    # Lines from splitlines() hold no line break, so "\n" joins them back to the same lines.
    return "\n".join(lines[i] if i in shown else "" for i in range(len(lines))) + "\n"


def as_input_error(result: FileResult) -> FileResult:
    """Turn wrong-type / duplicate-key findings into the file's one-line input error."""
    bad = [
        f
        for f in result.findings
        if f.code in INPUT_ERROR_CODES and not (f.code == "SCH002" and f.path in RAISED_AT_START)
    ]
    if not bad:
        return result
    first = bad[0]
    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    result.error = f"line {first.line}, column {first.column}: {first.message} [{first.code}]{more}"
    result.findings = []
    return result


def resolve_settings(
    path: str,
    doc_text: str,
    base: Settings,
    cli: dict[str, object],
    launcher: dict[str, str] | None = None,
    launcher_source: str = "",
    origins: dict[str, str] | None = None,
) -> Settings:
    """pyproject (+ per-file globs) < the launch command's world (a Megatron-LM script's
    ``torchrun --nproc_per_node N --nnodes M``) < in-file directive < CLI; with no model from
    any of them, an HF ``config.json`` beside the file gives the model (settings.beside_config).

    ``origins``, when given, gets the layer each cluster key came from (``--show-settings``)."""
    settings = base

    def came_from(where: str, values: Mapping[str, object]) -> None:
        if origins is not None:  # only --show-settings asks: nothing is kept on the lint path
            origins.update({key.replace("_", "-"): where for key in values})

    for glob, values in base.per_file.items():
        if glob_match(path, glob, base.base_dir):
            settings = apply_cluster(settings, values, f"per-file {glob}", base.base_dir)
            came_from(f"pyproject per-file {glob!r}", values)
    if launcher:
        settings = apply_cluster(
            settings,
            dict(launcher),
            f"{path}: launch command",
            source=launcher_source or "launch command",
        )
        came_from(launcher_source or "launch command", launcher)
    directives = parse_directives(doc_text, path)
    if directives:
        settings = apply_cluster(settings, directives, f"{path}: directive", Path(path).parent)
        came_from("# moe-lint: directive in the file", directives)
    if cli:
        settings = apply_cluster(settings, dict(cli), "command line")
        came_from("command line", cli)
    if settings.model is None:
        beside = beside_config(path)
        if beside is not None:
            settings = replace(settings, model=beside)
            came_from("config.json beside the file", {"model": beside})
    return settings


def select_rules(catalogue: Catalogue, settings: Settings, path: str) -> list[Rule]:
    """Selected rules for ``path``: select (default ALL) + extend-select - ignore - per-file.

    A selector named twice counts once, so the work per file is bounded by the distinct
    selectors (a few per rule), not by how long a settings list is."""
    chosen: dict[str, Rule] = {}
    selected = settings.select if settings.select is not None else ["ALL"]
    for selector in dict.fromkeys([*selected, *settings.extend_select]):
        for rule in _resolve(catalogue, selector):
            chosen[rule.code] = rule
    ignores = list(settings.ignore)
    for glob, codes in settings.per_file_ignores.items():
        if glob_match(path, glob, settings.base_dir):
            ignores.extend(codes)
    for selector in dict.fromkeys(ignores):
        for rule in _resolve(catalogue, selector):
            chosen.pop(rule.code, None)
    return sorted(chosen.values(), key=lambda r: r.code)


def _resolve(catalogue: Catalogue, selector: str) -> list[Rule]:
    rules = catalogue.resolve(selector)
    if not rules:
        raise UsageError(
            f"unknown rule selector {bounded_repr(selector)}{rule_hint(catalogue, selector)}"
        )
    return rules


def rule_hint(catalogue: Catalogue, word: str) -> str:
    """``; did you mean 'PAR001'?`` for a misspelt rule code or name (a usage error's end)."""
    # Lazy: the suggester (difflib) only for a usage error.
    from moe_lint.config.suggest import did_you_mean

    word = word.strip()[:100]
    candidates = [r.name for r in catalogue.rules] if "-" in word else list(catalogue.by_code)
    return did_you_mean(word.upper() if "-" not in word else word, candidates)


def check_selectors(catalogue: Catalogue, settings: Settings) -> None:
    """Every select / extend-select / ignore / per-file-ignores selector names a rule."""
    selectors = [*(settings.select or []), *settings.extend_select, *settings.ignore]
    for codes in settings.per_file_ignores.values():
        selectors.extend(codes)
    for selector in dict.fromkeys(selectors):
        _resolve(catalogue, selector)


def prepare(
    doc: Document, settings: Settings, overrides: list[Override], cli_cluster: dict[str, object]
) -> tuple[Config, Facts, Settings]:
    """Settings for the file, the normalized config and its derived facts (raises
    NotBridgeConfig for YAML that is not a Bridge config)."""
    file_settings = resolve_settings(
        doc.path, doc.text, settings, cli_cluster, doc.launcher, doc.launcher_source
    )
    preset = preset_fields(file_settings.model) if file_settings.model else None
    if doc.launch is not None:  # a Bridge launch script: its own overrides come first
        overrides = [*doc.launch.overrides, *overrides]
    oracle = None
    if overrides:
        oracle = FieldOracle(file_settings, file_settings.model)
    cfg = normalize(doc, overrides, preset, file_settings.model, file_settings.versions, oracle)
    cluster = Cluster(
        gpus=file_settings.world(),
        gpus_per_node=file_settings.gpus_per_node,
        gpu=file_settings.gpu,
        gpu_spec=gpu_specs()[file_settings.gpu] if file_settings.gpu else None,
        versions=dict(file_settings.versions),
        world_source=file_settings.world_source,
    )
    facts = derive(cfg, cluster)

    attach(facts, cfg, file_settings.memory)
    return cfg, facts, file_settings


def lint_document(
    doc: Document,
    catalogue: Catalogue,
    settings: Settings,
    overrides: list[Override],
    cli_cluster: dict[str, object],
) -> FileResult:
    """Lint an already-loaded document."""
    result = FileResult(doc.path, doc=doc)
    try:
        cfg, facts, file_settings = prepare(doc, settings, overrides, cli_cluster)
    except NotBridgeConfig as exc:
        result.notice = str(exc)
        return result
    selected = select_rules(catalogue, file_settings, doc.path)
    ctx = Context(cfg, facts, file_settings)
    findings = run_rules([r for r in selected if r.check not in SUPPRESSION_CHECKS], ctx, catalogue)
    implied = {r.code: r.implied_by for r in selected if r.implied_by}
    if implied:
        findings = fold_implied(findings, implied)
    findings = suppress(
        findings, ctx, catalogue, [r for r in selected if r.check in SUPPRESSION_CHECKS]
    )
    result.findings = sorted(findings, key=Finding.sort_key)
    return result


def lint_path(
    path: str,
    catalogue: Catalogue,
    settings: Settings,
    overrides: list[Override],
    cli_cluster: dict[str, object],
) -> FileResult:
    """Lint one file; bad input becomes ``FileResult.error`` (exit code 2)."""
    try:
        doc = load_file(path)
        return lint_document(doc, catalogue, settings, overrides, cli_cluster)
    except InputError as exc:
        return FileResult(path, error=str(exc))


def lint_text(
    text: str,
    catalogue: Catalogue,
    settings: Settings | None = None,
    overrides: list[Override] | None = None,
    cli_cluster: dict[str, object] | None = None,
    path: str = "<string>",
) -> FileResult:
    """Lint YAML text (tests, editors, the fix loop)."""
    try:
        doc = parse_text(text, path)
        return lint_document(
            doc, catalogue, settings or Settings(), overrides or [], cli_cluster or {}
        )
    except InputError as exc:
        return FileResult(path, error=str(exc))


def relint_for_fix(
    doc: Document,
    catalogue: Catalogue,
    settings: Settings,
    overrides: list[Override],
    cli_cluster: dict[str, object],
    linted: dict[str, FileResult] | None = None,
) -> Callable[[str], list[Finding]]:
    """The ``lint`` the fix loop (output/fix.py) re-lints each candidate text of ``doc`` with.

    A candidate that no longer loads, is no longer a Bridge config, or repeats a key more
    often than ``doc`` did (Bridge's loader rejects it) raises InputError, so the fix that made
    it is refused. ``linted``, when given, keeps each candidate's result by text (``--fix``
    writes the final one's findings). One function for ``--fix`` and the editor's code
    actions, so both refuse the same fixes.
    """
    repeated = len(doc.duplicates)

    def relint(text: str) -> list[Finding]:
        again = lint_text(text, catalogue, settings, overrides, cli_cluster, path=doc.path)
        if again.error is not None:
            raise InputError(again.error)
        if again.notice is not None:
            raise InputError(f"it would no longer be a Bridge config ({again.notice})")
        if again.doc is not None and len(again.doc.duplicates) > repeated:
            path, span = again.doc.duplicates[-1]
            raise InputError(
                f"line {span.value_start.line}: key '{format_path(path)}' would appear more "
                "than once in the same mapping"
            )
        if linted is not None:
            linted[text] = again
        return again.findings

    return relint


__all__ = [
    "INPUT_ERROR_CODES", "FileResult", "Path", "Suppression", "as_input_error", "lint_path",
    "lint_text", "relint_for_fix", "slim",
]  # fmt: skip
