"""``moe-lint estimate CONFIG [overrides]``: the per-GPU memory of a config, through check's
option table (:mod:`moe_lint.cli.options`) plus ``--verbose``."""

from __future__ import annotations

import sys
from typing import Any

from moe_lint.analysis.memory_facts import config_values, model_inputs, run_estimate
from moe_lint.bounds import bounded_repr
from moe_lint.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, _stderr
from moe_lint.cli.options import (
    _check_command_line,
    _check_parser,
    _cli_cluster,
    _memory_options,
    _settings_for,
    _settings_path,
    _split_args,
    _targets,
    _use_color,
    parse_command_line,
)
from moe_lint.config.forms import NotBridgeConfig
from moe_lint.config.load import load_file
from moe_lint.config.memory_settings import memory_settings
from moe_lint.config.settings import FORMATS, SettingsFinder
from moe_lint.errors import InputError, UsageError
from moe_lint.files import STDIN, read_stdin
from moe_lint.linting import prepare
from moe_lint.output import text as report


def _cmd_estimate(argv: list[str]) -> int:
    """``moe-lint estimate CONFIG [overrides]``: the memory table of every pipeline stage."""
    parser = _check_parser((*FORMATS, "html"))
    parser.prog = "moe-lint estimate"
    parser.add_argument("-v", "--verbose", action="store_true", help="show each term's formula")
    ns = parse_command_line(parser, argv, 1)
    # Lazy: the memory model (~40 ms to import) loads only when a memory fact or estimate is needed.
    from moe_lint.analysis.memory import MemoryInputError, levers
    from moe_lint.analysis.memory.verdict import judge
    from moe_lint.output import estimate as memreport

    files, overrides = _split_args(ns)
    if ns.format not in (None, "text", "json", "html"):
        raise UsageError(
            f"estimate writes --format text, json or html, not {bounded_repr(ns.format)}"
        )
    if ns.output is not None:
        # Lazy: only a command that writes a file checks one.
        from moe_lint.output.target import output_target, write_output

        output_target(ns.output)  # before any work: a bad -o is one usage line
    settings, _, settings_path = _settings_for(ns)
    _check_command_line(ns)
    _memory_options(ns, settings)
    finder = SettingsFinder(
        bool(ns.isolated or ns.config),
        settings,
        settings_path,
        lambda file_settings: _memory_options(ns, file_settings),
    )
    cli_cluster = _cli_cluster(ns)

    payload: list[dict[str, Any]] = []
    rows: list[list[Any]] = []
    status = EXIT_OK
    for target in _targets(files, ns, settings):
        path = (ns.stdin_filename or STDIN) if target.path == STDIN else target.path
        if target.error is not None:
            _stderr(f"{path}: error: {target.error}")
            status = EXIT_USAGE
            continue
        if target.notice is not None:
            if not ns.quiet:
                _stderr(f"{path}: skipped: {target.notice}")
            continue
        try:
            stream = getattr(sys.stdin, "buffer", None) if target.path == STDIN else None
            if target.path == STDIN and stream is None:
                raise InputError("stdin is closed or not readable as bytes")
            doc = read_stdin(stream, path) if stream is not None else load_file(path)
            pyproject_settings = finder.settings_for(_settings_path(target.path, ns.stdin_filename))
            cfg, facts, file_settings = prepare(doc, pyproject_settings, overrides, cli_cluster)
            mem, warn, margin = memory_settings(file_settings.memory, "memory settings")
            est = run_estimate(cfg, facts, mem)
        except InputError as exc:
            _stderr(f"{path}: error: {exc}")
            status = EXIT_USAGE
            continue
        except NotBridgeConfig as exc:
            if not target.explicit:  # found in a folder or by a glob: skipped, as check does
                if not ns.quiet:
                    _stderr(f"{path}: skipped: {exc}")
                continue
            _stderr(f"{path}: error: {exc}")
            status = EXIT_USAGE
            continue
        except MemoryInputError as exc:
            _stderr(
                f"{path}: error: cannot estimate memory: {exc} (pass --model or the value as "
                "an override)"
            )
            status = EXIT_USAGE
            continue

        plain = model_inputs({name: fact.value for name, fact in facts.values.items()})
        found = levers(
            config_values(cfg), plain, mem, est.capacity_gib, dict(cfg.versions), base=est
        )
        gpu = file_settings.gpu
        judged = judge(est, warn, margin)
        verdict = None if judged is None else judged.label
        payload.append(memreport.to_json(path, est, found, gpu, judged))
        rows += memreport.text_rows(path, est, found, gpu, ns.verbose, judged, ns.quiet)
        rows.append([("", None)])
        failing = verdict == "does NOT fit" or (
            verdict == "may not fit" and file_settings.fail_on in ("warning", "info")
        )
        if failing and status == EXIT_OK:
            status = EXIT_FINDINGS
    if ns.format == "html":
        # Lazy: the HTML report loads only when asked for.
        from moe_lint.output import estimate_html

        page = estimate_html.page(payload)
        if ns.output is not None:
            write_output(ns.output, page)
        else:
            sys.stdout.write(page)
    elif ns.output is not None:  # a file gets what stdout would without colour
        text = memreport.dumps(payload) if ns.format == "json" else report.render_plain(rows)
        write_output(ns.output, text)
    elif ns.format == "json":
        sys.stdout.write(memreport.dumps(payload))
    elif rows:
        if _use_color(sys.stdout, ns.color):
            report.render_rich(rows, sys.stdout)
        else:
            sys.stdout.write(report.render_plain(rows))
    return status
