"""``moe-lint check`` (the default command): lint the files, or show what would be linted
with which settings (``--show-files``, ``--show-settings``), or fix them (``--fix``,
``--diff``); the report is :mod:`moe_lint.cli.report`'s."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from moe_lint.bounds import bounded_repr
from moe_lint.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, _settle_gc, _stderr
from moe_lint.cli.options import (
    _check_command_line,
    _check_parser,
    _cli_cluster,
    _lintable,
    _memory_options,
    _settings_for,
    _settings_path,
    _split_args,
    _targets,
    parse_command_line,
)
from moe_lint.cli.report import _report
from moe_lint.config.forms import NotBridgeConfig, detect_root
from moe_lint.config.load import format_path, load_file
from moe_lint.config.settings import (
    FORMATS,
    Settings,
    SettingsFinder,
    default_gpus_per_node,
    glob_match,
)
from moe_lint.engine.catalogue import load_catalogue
from moe_lint.engine.findings import Finding
from moe_lint.errors import InputError, UsageError
from moe_lint.files import STDIN, Target, read_stdin
from moe_lint.linting import (
    FileResult,
    check_selectors,
    lint_document,
    relint_for_fix,
    resolve_settings,
    select_rules,
    slim,
)
from moe_lint.linting import as_input_error as _as_input_error
from moe_lint.output import escape
from moe_lint.output.text import plural
from moe_lint.spool import Spilled, load


def _cmd_check(argv: list[str], offset: int = 0) -> int:
    ns = parse_command_line(_check_parser(), argv, offset)
    if ns.no_cache:
        # Lazy: the per-user cache folder only for introspect-bridge / --no-cache.
        from moe_lint.config import user_cache as rulecache

        rulecache.disable()
    mlm_words = _mlm_words(ns)
    files, overrides = _split_args(ns, allow_none=bool(mlm_words))
    settings, fmt_setting, settings_path = _settings_for(ns)
    _check_command_line(ns)

    def adjust(file_settings: Settings) -> None:
        """The command line's rule and memory options over a pyproject's settings."""
        if ns.select is not None:
            file_settings.select = ns.select
        file_settings.extend_select = file_settings.extend_select + ns.extend_select
        file_settings.ignore = file_settings.ignore + ns.ignore
        if ns.fail_on:
            file_settings.fail_on = ns.fail_on
        _memory_options(ns, file_settings)

    adjust(settings)
    ns.show_infos = ns.show_infos or settings.show_infos
    fmt = ns.format or fmt_setting or "text"
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {bounded_repr(fmt)} (choose from {', '.join(FORMATS)})")
    cli_cluster = _cli_cluster(ns)
    if ns.write_baseline:
        # Lazy: only a command that writes a file checks one.
        from moe_lint.output.target import output_target

        output_target(ns.write_baseline, "--write-baseline")  # before linting anything
    catalogues: dict[tuple[str, ...], Any] = {}
    checked: dict[int, Any] = {}  # id(Settings) -> its catalogue (the finder keeps each alive)

    def catalogue_for(file_settings: Settings) -> Any:
        """The catalogue a file's settings name (its pyproject's packs), loaded once each and
        its selectors checked once per settings, before anything is linted with it."""
        if id(file_settings) not in checked:
            packs = (*file_settings.rules, *ns.rules)
            if packs not in catalogues:
                catalogues[packs] = load_catalogue(extra_packs=list(packs))
            check_selectors(catalogues[packs], file_settings)
            checked[id(file_settings)] = catalogues[packs]
        return checked[id(file_settings)]

    catalogue = catalogue_for(settings)
    _settle_gc()
    finder = SettingsFinder(bool(ns.isolated or ns.config), settings, settings_path, adjust)
    targets = _targets(files, ns, settings)
    # Each file's own settings (the closest pyproject with a [tool.moe-lint] table), checked
    # before any file is linted: a bad nested pyproject is one usage error, as the top one is.
    setup = {
        t.path: _file_setup(t.path, finder, catalogue_for, ns.stdin_filename)
        for t in targets
        if _lintable(t)
    }
    ns.catalogue = catalogue
    ns.catalogue_rules = _merged_rules([catalogue, *catalogues.values()])
    if ns.show_files or ns.show_settings:
        return _show(targets, setup, finder, ns, cli_cluster)
    if ns.fix and not ns.diff and any(t.path == STDIN for t in targets):
        raise UsageError(
            "--fix writes files in place and cannot write to stdin: use --diff to see the "
            "fixes for -, or lint the file itself"
        )
    results: list[FileResult | Spilled] = []
    changed = 0
    outcomes: list[tuple[str, Any]] = []
    if ns.fix or ns.diff:
        # One file at a time: lint, fix, keep only what the report needs (lint.slim).
        from moe_lint.workers import lint_one, workers_for

        workers_for(1)  # MOE_LINT_JOBS / MOE_LINT_FILE_TIMEOUT are checked on every path
        for target in targets:
            if target.error is not None or target.notice is not None:
                results.append(FileResult(target.path, error=target.error, notice=target.notice))
                continue
            file_settings, file_catalogue = setup[target.path]
            if target.path == STDIN:
                result = _stdin_result(ns, file_catalogue, file_settings, overrides, cli_cluster)
            else:
                result = lint_one(
                    target.path, file_catalogue, file_settings, overrides, cli_cluster,
                    _as_input_error,
                )  # fmt: skip
            if result.doc is not None and result.error is None:
                before = result.doc.text
                result, outcome = _fix_file(
                    result, file_catalogue, file_settings, overrides, cli_cluster, ns
                )
                changed += outcome.text != before
                outcomes.append((result.path, outcome))
            results.append(slim(result))
    else:
        # Lazy: worker processes (~10 ms, multiprocessing) only when files are linted.
        from moe_lint.workers import lint_many

        # Only the text format's code frames read a file's text: the others keep none of it.
        keep_text = fmt == "text"
        groups: dict[int, list[str]] = {}  # files linted with the same settings, in order
        for target in targets:
            if _lintable(target) and target.path != STDIN:
                groups.setdefault(id(setup[target.path][0]), []).append(target.path)
        linted: dict[int, Any] = {}
        for key, paths in groups.items():
            file_settings, file_catalogue = setup[paths[0]]
            linted[key] = iter(
                lint_many(paths, file_catalogue, file_settings, overrides, cli_cluster,
                          _as_input_error, keep_text)
            )  # fmt: skip
        for target in targets:
            if not _lintable(target):
                results.append(FileResult(target.path, error=target.error, notice=target.notice))
            elif target.path == STDIN:
                file_settings, file_catalogue = setup[STDIN]
                stdin = _stdin_result(ns, file_catalogue, file_settings, overrides, cli_cluster)
                results.append(slim(stdin, keep_text))
            else:
                results.append(next(linted[id(setup[target.path][0])]))
    if mlm_words:
        results.append(_lint_arglist(mlm_words, catalogue, settings, overrides, cli_cluster))
    if ns.diff:
        # Like `ruff --diff`: the diff is the output; exit 1 when something would change,
        # 2 when a file could not be linted (the others' diffs are still shown).
        failed = [r for r in map(load, results) if r.error is not None]
        for r in failed:
            _stderr(f"{r.path}: error: {r.error}")
        _report_fixes(outcomes, ns, summary=False)
        if not ns.quiet and (not results or len(failed) < len(results)):
            could_not = f" ({plural(len(failed), 'file')} could not be linted)" if failed else ""
            print(
                f"{plural(changed, 'file')} would be changed by --fix"
                f"{' --unsafe-fixes' if ns.unsafe_fixes else ''}{could_not}.",
                file=sys.stderr,
            )
        if failed:
            return EXIT_USAGE
        return EXIT_FINDINGS if changed else EXIT_OK
    status, shown = _report(results, settings.fail_on, fmt, ns)
    if ns.fix:
        _report_fixes(outcomes, ns, summary=True, left=shown)
    return status


def _file_setup(
    path: str, finder: SettingsFinder, catalogue_for: Any, stdin_name: str | None = None
) -> tuple[Settings, Any]:
    """The settings and catalogue ``path`` is linted with; stdin's are those of
    --stdin-filename's folder (the current folder when none is given)."""
    file_settings = finder.settings_for(_settings_path(path, stdin_name))
    return file_settings, catalogue_for(file_settings)


def _show(
    targets: list[Target],
    setup: dict[str, tuple[Settings, Any]],
    finder: SettingsFinder,
    ns: argparse.Namespace,
    cli_cluster: dict[str, Any],
) -> int:
    """``--show-files`` / ``--show-settings`` (ruff's names): what would be linted, and with
    which settings from where; nothing is linted. A file that cannot be read is its one
    error line (exit 2), as when linting."""
    status = EXIT_OK
    for target in targets:
        if target.error is not None:
            _stderr(f"{target.path}: error: {target.error}")
            status = EXIT_USAGE
            continue
        if not _lintable(target):
            continue
        name = _settings_path(target.path, ns.stdin_filename)
        if not ns.show_settings:
            print(escape.line(name))
            continue
        if target.path == STDIN:
            print(escape.line(f"{name}: (stdin: settings of its folder; directives unread)"))
            text, launcher, launcher_source = "", None, ""
        else:
            try:
                doc = load_file(target.path)
            except InputError as exc:
                _stderr(f"{target.path}: error: {exc}")
                status = EXIT_USAGE
                continue
            text, launcher, launcher_source = doc.text, doc.launcher, doc.launcher_source
        file_settings, catalogue = setup[target.path]
        pyproject = finder.pyproject_for(name)
        origins: dict[str, str] = {}
        resolved = resolve_settings(
            name, text, file_settings, cli_cluster, launcher, launcher_source, origins
        )
        for line_text in _settings_lines(name, resolved, origins, pyproject, catalogue, ns):
            print(escape.line(line_text))
    return status


def _settings_lines(
    name: str,
    settings: Settings,
    origins: dict[str, str],
    pyproject: Path | None,
    catalogue: Any,
    ns: argparse.Namespace,
) -> list[str]:
    """One file's ``--show-settings`` block: each value and the layer it came from."""
    top = "none (--isolated)" if ns.isolated else "none found"
    where = f"{pyproject} [tool.moe-lint]" if pyproject is not None else top

    def origin(*keys: str) -> str:
        for key in keys:
            if key in origins:
                return origins[key]
        return "pyproject" if pyproject is not None else "?"

    world = settings.world()
    if world is None:
        gpus = "not given: checked at the smallest world its layout runs on (PAR003)"
    elif settings.gpus is not None:
        gpus = f"{world} ({origin('gpus')})"
    else:
        per_node = settings.gpus_per_node or default_gpus_per_node(settings.gpu)
        gpus = f"{world} = {settings.nodes} nodes × {per_node} ({origin('nodes', 'gpus-per-node')})"
    versions = ", ".join(
        f"{package} {version} ({origin(package)})" for package, version in settings.versions.items()
    )
    selected = select_rules(catalogue, settings, name)
    rules = f"{len(selected)} of {len(catalogue.rules)}"
    if settings.select is not None:
        rules += f"; select {', '.join(settings.select)}"
    if settings.ignore:
        rules += f"; ignore {', '.join(settings.ignore)}"
    ignored = [g for g in settings.per_file_ignores if glob_match(name, g, settings.base_dir)]
    if ignored:
        rules += f"; per-file-ignores {', '.join(map(repr, ignored))}"
    return [
        name,
        f"  settings: {where}",
        f"  gpus: {gpus}",
        f"  gpu: {settings.gpu} ({origin('gpu')})" if settings.gpu else "  gpu: not given",
        f"  model: {settings.model} ({origin('model')})"
        if settings.model
        else "  model: not given (the config's own fields)",
        f"  versions: {versions}" if versions else "  versions: none stated (newest releases)",
        f"  rules: {rules}",
        f"  fail-on: {settings.fail_on}",
    ]


def _merged_rules(catalogues: list[Any]) -> list[Any]:
    """Every rule of the catalogues a run used, once per code (SARIF's rule table)."""
    rules: dict[str, Any] = {}
    for catalogue in catalogues:
        for rule in catalogue.rules:
            rules.setdefault(rule.code, rule)
    return list(rules.values())


def _stdin_result(
    ns: argparse.Namespace, catalogue: Any, settings: Any, overrides: Any, cli_cluster: Any
) -> FileResult:
    """Lint the config on stdin as ``--stdin-filename`` (default ``-``), under the per-file
    time limit (the read itself is not timed: a terminal waits for its user)."""
    # Lazy: worker processes (~10 ms, multiprocessing) only when files are linted.
    from moe_lint.workers import Overtime, file_timeout, overtime_message, time_limit

    name = ns.stdin_filename or STDIN
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        return FileResult(name, error="stdin is closed or not readable as bytes")
    limit = file_timeout()
    try:
        doc = read_stdin(stream, name)
        with time_limit(limit):
            result = lint_document(doc, catalogue, settings, overrides, cli_cluster)
    except InputError as exc:
        return FileResult(name, error=str(exc))
    except Overtime:
        return FileResult(name, error=overtime_message(limit))
    converted: FileResult = _as_input_error(result)
    return converted


def _mlm_words(ns: argparse.Namespace) -> list[str]:
    """``moe-lint [options] -- --tensor-model-parallel-size 4 ...``: the words after ``--``
    are one Megatron-LM argument list when the first is a Megatron-LM ``--flag`` (and not an
    existing file); they are taken out of ``ns.args``."""
    tail = getattr(ns, "after_dashes", None) or []
    if not tail or not tail[0].startswith("--") or os.path.exists(tail[0]):
        return []
    # Lazy: the Megatron-LM flag table only for words after --.
    from moe_lint.config.mlm_args import flag_table

    if tail[0].split("=")[0] not in flag_table()["flags"]:
        return []  # not a Megatron-LM flag: a file name like any other word after --
    ns.args = ns.args[: len(ns.args) - len(tail)]
    ns.arg_positions = ns.arg_positions[: len(ns.args)]
    return list(tail)


def _lint_arglist(
    words: list[str], catalogue: Any, settings: Any, overrides: Any, cli_cluster: Any
) -> FileResult:
    """Lint a Megatron-LM argument list given on the command line (path ``<command line>``)."""
    # Lazy: the Megatron-LM reader only for an argument list after --.
    from moe_lint.config.load import mlm_document
    from moe_lint.config.mlm_args import parse_arglist
    from moe_lint.linting import lint_document

    try:
        doc = mlm_document(parse_arglist(words))
        return slim(_as_input_error(lint_document(doc, catalogue, settings, overrides,
                                                  cli_cluster)))  # fmt: skip
    except InputError as exc:
        return FileResult("<command line>", error=str(exc))


def _fix_file(
    result: Any,
    catalogue: Any,
    settings: Any,
    overrides: Any,
    cli_cluster: Any,
    ns: argparse.Namespace,
) -> tuple[Any, Any]:
    """Run the fix loop on one file: write it (--fix) or print its diff (--diff).

    Returns the result (with the fixed file's findings) and the loop's FixOutcome. The file's
    own findings seed the loop, so a file with nothing to fix is never re-linted. A fixed
    text that repeats a key is refused whatever rules are selected (Bridge's loader rejects
    it). When the file cannot be written safely (read-only, vanished, changed meanwhile:
    fix.write_atomic), nothing is written, the result gets that one-line error (exit 2) and
    the outcome says no fix was applied.
    """
    # Lazy: the fix writer (~6 ms) only with --fix / --diff.
    from moe_lint.output.fix import (
        FixOutcome,
        Refusal,
        WriteRefused,
        run_fixes,
        unified_diff,
        write_atomic,
    )

    doc = result.doc
    linted: dict[str, Any] = {}
    relint = relint_for_fix(doc, catalogue, settings, overrides, cli_cluster, linted)

    # Lazy: worker processes (~10 ms, multiprocessing) only when files are linted.
    from moe_lint.workers import Overtime, file_timeout, overtime_message, time_limit

    limit = file_timeout()
    try:
        with time_limit(limit):  # the per-file limit covers the fix loop; nothing is written yet
            outcome = run_fixes(doc.text, relint, ns.unsafe_fixes, result.findings)
    except Overtime:
        result.error, result.findings = overtime_message(limit), []
        return result, FixOutcome(doc.text, [])
    final = linted[outcome.text].doc if outcome.text in linted else doc
    outcome.refused += [
        Refusal(f, why) for f, why in _unfixable(final, outcome, catalogue, ns.unsafe_fixes)
    ]
    # A refused fix is not applicable to this file: report it as advice, not as `[fix: --fix]`.
    refused = {(r.finding.code, r.finding.path) for r in outcome.refused}
    for finding in outcome.remaining:
        if (finding.code, finding.path) in refused:
            finding.applicability, finding.edits = "display-only", []
    if outcome.text == doc.text:
        return result, outcome
    if ns.diff:
        sys.stdout.write(unified_diff(doc.path, doc.text, outcome.text))
        return result, outcome
    read = (b"\xef\xbb\xbf" if doc.had_bom else b"") + doc.text.encode("utf-8")
    try:
        write_atomic(doc.path, outcome.text, doc.had_bom, expected=read)
    except WriteRefused as exc:
        result.error = str(exc)
        outcome.text, outcome.applied, outcome.refused = doc.text, [], []
        return result, outcome
    result.doc = linted[outcome.text].doc
    result.findings = outcome.remaining
    return result, outcome


def _unfixable(doc: Any, outcome: Any, catalogue: Any, unsafe: bool) -> list[tuple[Finding, str]]:
    """Fixes left without an edit because it would go through an alias, an anchor or a merge
    key (``doc.fix_refusals``, recorded by moe_lint.engine.spans), each with the finding it belongs
    to: the remaining finding of a fixable rule, with no edits, at the refused path's nearest
    ancestor (``model`` for a fix that sets ``model.x``)."""
    if not doc.fix_refusals:
        return []
    try:
        root, _ = detect_root(doc.data)
    except NotBridgeConfig:
        root = ()
    allowed = {"safe", "unsafe"} if unsafe else {"safe"}
    done = {(r.finding.code, r.finding.path) for r in outcome.refused}
    candidates = []
    for f in outcome.remaining:
        rule = catalogue.by_code.get(f.code)
        if f.edits or rule is None or rule.fix is None or (f.code, f.path) in done:
            continue
        if rule.fix.applicability in allowed:
            candidates.append(f)
    out: list[tuple[Finding, str]] = []
    for path, why in doc.fix_refusals.items():
        if path[: len(root)] != root:
            continue
        dotted = format_path(path[len(root) :])

        def depth(f: Finding, dotted: str = dotted) -> int:
            hit = f.path == dotted or dotted.startswith((f.path + ".", f.path + "["))
            return len(f.path) if hit else -1

        best = max((depth(f) for f in candidates), default=-1)
        for f in candidates:
            if best >= 0 and depth(f) == best and all(f is not g for g, _ in out):
                out.append((f, why))
    return out


def _report_fixes(
    outcomes: list[tuple[str, Any]], ns: argparse.Namespace, summary: bool, left: int = 0
) -> None:
    """On stderr, like the --diff summary: refused fixes (always), each applied fix
    (--show-fixes), then ``Fixed N findings in M files (K left).`` (not with -q)."""
    for path, outcome in outcomes:
        for refusal in outcome.refused:
            f = refusal.finding
            _stderr(f"{path}:{f.line}: {f.code} fix not applied: {refusal.reason}")
    if ns.show_fixes:
        for path, outcome in outcomes:
            for f in outcome.applied:
                _stderr(f"{path}:{f.line}: {f.code} {f.fix or f.name}")
    fixed = sum(len(o.applied) for _, o in outcomes)
    refused = sum(len(o.refused) for _, o in outcomes)
    if summary and not ns.quiet and (fixed or refused):
        files = sum(1 for _, o in outcomes if o.applied)
        done = f"Fixed {plural(fixed, 'finding')} in {plural(files, 'file')}"
        _stderr(f"{done if fixed else 'No fixes applied'} ({left} left).")
