"""Command line: ``moe-lint [check] FILES [overrides]``, ``moe-lint rules``, ``moe-lint explain``,
``moe-lint models``.

The only module that prints or decides the exit code: 0 nothing at or above ``--fail-on``,
1 findings, 2 usage or input error (one clear line, no traceback), 3 internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from moe_lint import __version__
from moe_lint.analysis.memory_facts import config_values, model_inputs, run_estimate
from moe_lint.bounds import MAX_GPUS, MAX_PLANS, bounded_repr, bounded_str
from moe_lint.cmdline import positional_indices
from moe_lint.config.forms import NotBridgeConfig, detect_root
from moe_lint.config.load import format_path, load_file
from moe_lint.config.memory_settings import memory_settings
from moe_lint.config.overrides import check_count as check_override_count
from moe_lint.config.overrides import looks_like_override, parse_override
from moe_lint.config.settings import (
    FORMATS,
    Settings,
    SettingsFinder,
    apply_cluster,
    check_table,
    default_gpus_per_node,
    find_pyproject,
    glob_match,
    load_pyproject,
    model_presets,
    normalize_model,
    preset_fields,
)
from moe_lint.engine.catalogue import load_catalogue
from moe_lint.engine.findings import SEVERITY_RANK, Finding, InputProblem, docs_url
from moe_lint.errors import InputError, RulePackError, UsageError
from moe_lint.files import STDIN, Target, excluder_for, expand, read_stdin
from moe_lint.globs import check_pattern
from moe_lint.linting import (
    FileResult,
    check_selectors,
    lint_document,
    lint_text,
    prepare,
    resolve_settings,
    rule_hint,
    select_rules,
    slim,
)
from moe_lint.linting import as_input_error as _as_input_error
from moe_lint.output import escape
from moe_lint.output import text as report
from moe_lint.output.escape import line

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
SUBCOMMANDS = ("check", "rules", "explain", "models")


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting, with a did-you-mean for
    an unknown flag or choice."""

    def error(self, message: str) -> Any:
        raise UsageError(message + self._hint(message))

    def _hint(self, message: str) -> str:
        # Lazy: the suggester (difflib) only for a usage error.
        from moe_lint.config.suggest import did_you_mean

        if message.startswith("unrecognized arguments: "):
            options = [o for o in self._option_string_actions if o.startswith("--")]
            for word in message.removeprefix("unrecognized arguments: ").split():
                if word.startswith("--"):
                    hint = did_you_mean(word.split("=", 1)[0][:100], options)
                    if hint:
                        return hint
            return ""
        choice = _INVALID_CHOICE.search(message)
        if choice is None:
            return ""
        choices = [c.strip().strip("'") for c in choice.group(2).split(",")]
        return did_you_mean(choice.group(1)[:100], choices)


#: argparse's "argument --format: invalid choice: 'jsn' (choose from 'text', 'json')".
_INVALID_CHOICE = re.compile(r"invalid choice: '(.*?)' \(choose from (.*)\)")


#: The subcommands, each with its one line for ``moe-lint --help`` (``check`` is the default:
#: ``moe-lint FILE`` is ``moe-lint check FILE``).
COMMANDS: tuple[tuple[str, str], ...] = (
    ("check", "lint configs, launch scripts and argument files (the default command)"),
    ("estimate", "per-GPU memory of a config: the terms, the bounds and the verdict"),
    ("plan", "search and rank the layouts of a run that fit (--emit writes one)"),
    ("rules", "list the rules (code, name, severity, summary)"),
    ("explain", "one rule's documentation: what, why, example, fix, source"),
    ("models", "the model presets, or what an HF config.json maps to"),
)


def _commands_epilog() -> str:
    width = max(len(name) for name, _ in COMMANDS)
    lines = [f"  {name:<{width}}  {text}" for name, text in COMMANDS]
    return (
        "commands (moe-lint COMMAND --help for each):\n"
        + "\n".join(lines)
        + "\n\nmoe-lint FILE ... is moe-lint check FILE ...; the options above are check's."
    )


def _check_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="moe-lint",
        description="Lint long-context MoE Megatron Bridge configs.",
        epilog=_commands_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "args",
        nargs="*",
        metavar="FILE|OVERRIDE",
        help="config files, folders (walked for *.yaml, *.yml, *.sh), quoted globs "
        "('configs/**/*.yaml'), - for stdin, and Hydra-style overrides "
        "(model.context_parallel_size=16), in any order among the options; after -- no word "
        "is an option",
    )
    p.add_argument("--version", action="version", version=f"moe-lint {__version__}")
    cluster = p.add_argument_group("cluster and model")
    cluster.add_argument("--gpus", type=str, help="total GPUs (world size)")
    cluster.add_argument("--nodes", type=str, help="number of nodes (with --gpus-per-node)")
    cluster.add_argument("--gpus-per-node", type=str, help="GPUs per node")
    cluster.add_argument("--gpu", help="GPU type: h100, h200, b200, b300, gb200, gb300, a100")
    cluster.add_argument(
        "--model",
        help="architecture preset (deepseek-v3, qwen3-235b-a22b; see `moe-lint models`), or an "
        "HF config.json / model directory",
    )
    cluster.add_argument(
        "--memory",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="memory-model setting, e.g. routing_imbalance=1.5 or "
        "warn-headroom=0.1 (see docs/memory-model.md)",
    )
    versions = p.add_argument_group("framework versions (default: the newest behaviour)")
    versions.add_argument("--megatron-core", metavar="VERSION", help="e.g. 0.14")
    versions.add_argument("--transformer-engine", metavar="VERSION", help="e.g. 2.6")
    versions.add_argument("--bridge", metavar="VERSION", help="Megatron Bridge, e.g. 0.6")
    out = p.add_argument_group("output")
    out.add_argument(
        "--format",
        "--output-format",
        dest="format",
        choices=FORMATS,
        help="output format (default: text); --output-format as ruff spells it",
    )
    out.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    out.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print findings only: no summary, no notices for skipped non-config YAML",
    )
    out.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE")
    out.add_argument(
        "--show-infos",
        action="store_true",
        help="show info findings too (advice such as PAR003 'world size assumed'); they are "
        "hidden by default, and always shown with --fail-on info",
    )
    out.add_argument(
        "--statistics",
        action="store_true",
        help="print one line per rule with its count of findings instead of the findings "
        "(text, or json with --format json)",
    )
    out.add_argument(
        "--summary",
        metavar="FILE",
        help="also write a Markdown table of all findings (default with "
        "--format github: $GITHUB_STEP_SUMMARY when set)",
    )
    base = p.add_argument_group("baselines")
    base.add_argument("--baseline", metavar="FILE", help="report only findings not in FILE")
    base.add_argument("--write-baseline", metavar="FILE", help="record today's findings in FILE")
    sel = p.add_argument_group("rule selection")
    sel.add_argument("--select", type=_csv, help="rules to enable (codes, names, prefixes, ALL)")
    sel.add_argument("--extend-select", type=_csv, default=[], help="rules to add")
    sel.add_argument("--ignore", type=_csv, default=[], help="rules to disable")
    sel.add_argument(
        "--rules",
        action="append",
        default=[],
        metavar="PACK",
        help="extra rule pack (YAML, data only); repeatable",
    )
    sel.add_argument(
        "--fail-on",
        choices=("error", "warning", "info"),
        help="lowest severity that fails the run (default: error)",
    )
    sel.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    sel.add_argument("--config", metavar="PYPROJECT", help="pyproject.toml to read settings from")
    sel.add_argument("--isolated", action="store_true", help="ignore pyproject.toml")
    sel.add_argument(
        "--no-cache", action="store_true", help="read and write no per-user cache files"
    )
    found = p.add_argument_group("files")
    found.add_argument(
        "--exclude",
        type=_csv,
        action="extend",
        metavar="PATTERNS",
        help="glob patterns folders and globs skip, replacing the default ones (.git, .venv, "
        "node_modules, ...) and pyproject's exclude; comma-separated, repeatable",
    )
    found.add_argument(
        "--extend-exclude",
        type=_csv,
        action="extend",
        default=[],
        metavar="PATTERNS",
        help="more glob patterns to skip, besides the default or configured ones",
    )
    found.add_argument(
        "--force-exclude",
        action="store_true",
        help="skip excluded files even when named on the command line (for pre-commit)",
    )
    found.add_argument(
        "--show-files",
        action="store_true",
        help="list the files that would be linted, and lint nothing",
    )
    found.add_argument(
        "--show-settings",
        action="store_true",
        help="show each file's settings (its pyproject, model, GPUs, versions, rules) and "
        "where each came from, and lint nothing",
    )
    found.add_argument(
        "--stdin-filename",
        metavar="NAME",
        help="the file name for the config read from - (stdin): its locations and its "
        "per-file settings",
    )
    fx = p.add_argument_group("fixes")
    fx.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    fx.add_argument("--unsafe-fixes", action="store_true", help="also apply unsafe fixes")
    fx.add_argument("--diff", action="store_true", help="show fixes as a diff; write nothing")
    fx.add_argument(
        "--show-fixes", action="store_true", help="list each fix applied (file:line: CODE fix)"
    )
    return p


def _use_color(stream: TextIO, choice: str) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


#: Set by :func:`run` (the console script and ``python -m moe_lint``): the garbage collector
#: is off until the catalogue is loaded, then frozen (see :func:`_settle_gc`). ``main()`` called
#: from tests or the API leaves the collector alone.
_ENTRY = False


def run() -> NoReturn:
    """The console script and ``python -m moe_lint``: :func:`main`, then exit at once.

    Interpreter teardown and its final collection (~20 ms of a one-file run) buy nothing
    here: every file moe-lint writes (``--fix``, ``--output``, baselines, the user cache) is
    closed before ``main`` returns, no thread or atexit handler of ours is left, so after
    flushing stdout and stderr ``os._exit`` loses nothing. When a flush fails, or the code is
    not a plain exit status, the normal ``SystemExit`` path runs instead, so exit codes and
    messages stay what the interpreter makes of them.
    """
    global _ENTRY
    # Lazy: gc only under the console script (main() leaves the collector alone).
    import gc

    gc.disable()  # start-up allocates only long-lived objects: collecting them finds nothing
    _ENTRY = True
    code = main()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except BaseException:
        raise SystemExit(code) from None
    if type(code) is not int or not 0 <= code <= 255:
        raise SystemExit(code)
    os._exit(code)


def _settle_gc() -> None:
    """After the catalogue is loaded (under :func:`run` only): move everything alive into the
    permanent generation and turn the collector back on, so a long batch still collects its
    per-file garbage while no collection rescans the start-up objects (and forked workers do
    not touch their pages)."""
    if _ENTRY:
        # Lazy: as in run(), only under the console script.
        import gc

        gc.freeze()
        gc.enable()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    stderr = sys.stderr
    sys.stderr = _EscapedLines(stderr)
    try:
        code = _main(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # The reader went away (`moe-lint rules | head`): stop quietly, like ruff and ripgrep.
        # `check` returns its own exit code from _report; this is everything else.
        _silence_stdout()
        return EXIT_OK
    finally:
        with contextlib.suppress(BrokenPipeError):
            sys.stderr.flush()
        sys.stderr = stderr


def _main(args: list[str]) -> int:
    try:
        if args and args[0] in ("rules", "explain", "models", "estimate", "plan"):
            _settle_gc()  # a plan search may run long: collect as usual
        if args and args[0] == "rules":
            return _cmd_rules(args[1:])
        if args and args[0] == "explain":
            return _cmd_explain(args[1:])
        if args and args[0] == "models":
            return _cmd_models(args[1:])
        if args and args[0] == "estimate":
            return _cmd_estimate(args[1:])
        if args and args[0] == "plan":
            return _cmd_plan(args[1:])
        if args and args[0] == "check":
            return _cmd_check(args[1:], 1)
        return _cmd_check(args)
    except (UsageError, RulePackError) as exc:
        _stderr(f"moe-lint: error: {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        raise
    except Exception as exc:  # last resort: one line, exit 3, never a traceback by default
        _stderr(f"moe-lint: internal error: {type(exc).__name__}: {bounded_str(str(exc))}")
        if os.environ.get("MOE_LINT_DEBUG"):
            raise
        return EXIT_INTERNAL


def _stderr(message: str) -> None:
    """Write one stderr line: line breaks inside it (a key, a file name or a message that
    holds one) are shown as escapes, so one problem is always one line."""
    print(escape.text(message), file=sys.stderr)


class _EscapedLines:
    """stderr with each line escaped (:func:`moe_lint.output.escape.line`): file names, config text
    and rule-pack text in messages cannot write control characters or start a CI workflow
    command. Lines are written whole, when their newline arrives (or at flush)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        *complete, self._pending = (self._pending + text).split("\n")
        if complete:
            self._stream.write("".join(line(part) + "\n" for part in complete))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._stream.write(line(self._pending))
            self._pending = ""
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again (the
    recipe in Python's signal documentation, "Note on SIGPIPE")."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a real file (captured in tests): nothing is flushed at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _check_command_line(ns: argparse.Namespace) -> None:
    """The command line's lists are settings like pyproject's, under the same bounds
    (settings.check_table: values and characters in all; each exclude pattern's length)."""
    lists = {
        "select": ns.select or [], "extend-select": ns.extend_select, "ignore": ns.ignore,
        "rules": ns.rules, "exclude": ns.exclude or [], "extend-exclude": ns.extend_exclude,
        "memory": getattr(ns, "memory", []),
    }  # fmt: skip
    check_table(lists, "command line")
    for option in ("exclude", "extend-exclude"):
        for pattern in lists[option]:
            check_pattern(pattern, f"--{option}")


def _memory_options(ns: argparse.Namespace, settings: Settings) -> None:
    """``--memory NAME=VALUE`` over pyproject's memory table, checked once."""
    for item in ns.memory:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--memory {bounded_repr(item)}: expected NAME=VALUE")
        settings.memory[key.strip()] = value.strip()
    if ns.memory:
        memory_settings(settings.memory, "--memory")


def _settings_for(ns: argparse.Namespace) -> tuple[Any, str | None, Path | None]:
    """The run's settings, output format and their pyproject: --config's, none with
    --isolated, else the closest pyproject.toml with a [tool.moe-lint] table at or above the
    current folder (each linted file may have a closer one: SettingsFinder)."""
    if ns.isolated:
        return Settings(), None, None
    path = Path(ns.config) if ns.config else find_pyproject(Path.cwd())
    if ns.config and not path.exists():  # type: ignore[union-attr]
        raise UsageError(f"--config {ns.config}: no such file")
    settings, fmt = load_pyproject(path)
    return settings, fmt, path


def _file_setup(
    path: str, finder: SettingsFinder, catalogue_for: Any, stdin_name: str | None = None
) -> tuple[Settings, Any]:
    """The settings and catalogue ``path`` is linted with; stdin's are those of
    --stdin-filename's folder (the current folder when none is given)."""
    file_settings = finder.settings_for(_settings_path(path, stdin_name))
    return file_settings, catalogue_for(file_settings)


def _settings_path(path: str, stdin_name: str | None) -> str:
    """The file name whose folder decides ``path``'s settings (stdin: --stdin-filename)."""
    if path != STDIN:
        return path
    return stdin_name if stdin_name else str(Path.cwd() / STDIN)


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


def parse_command_line(
    parser: argparse.ArgumentParser, argv: list[str], offset: int = 0
) -> argparse.Namespace:
    """Parse files, overrides and options in any order (``moe-lint cfg.yaml a.b=1 --gpus 8
    c.d=2``); after ``--`` every word is positional. ``ns.args`` holds the positionals and
    ``ns.arg_positions`` their 1-based positions on the command line (``offset`` counts the
    words before ``argv``, such as ``check``)."""
    indices, dashes = positional_indices(parser, argv)
    # argparse's intermixed parsing still reads options after `--` (Python 3.11), so the words
    # after it are kept out of argparse.
    head, tail = (argv, []) if dashes is None else (argv[:dashes], argv[dashes + 1 :])
    ns = parser.parse_intermixed_args(head)
    ns.args = [*ns.args, *tail]
    ns.after_dashes = tail
    if [argv[i] for i in indices] == ns.args:
        ns.arg_positions = [offset + i + 1 for i in indices]
    else:  # an option form the scan does not know: match the words in order instead
        positions: list[int | None] = []
        start = 0
        for arg in ns.args:
            found = next((j for j in range(start, len(argv)) if argv[j] == arg), None)
            positions.append(None if found is None else offset + found + 1)
            start = start if found is None else found + 1
        ns.arg_positions = positions
    return ns


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

    def catalogue_for(file_settings: Settings) -> Any:
        """The catalogue a file's settings name (its pyproject's packs), loaded once each and
        its selectors checked before anything is linted with it."""
        packs = (*file_settings.rules, *ns.rules)
        if packs not in catalogues:
            catalogues[packs] = load_catalogue(extra_packs=list(packs))
        check_selectors(catalogues[packs], file_settings)
        return catalogues[packs]

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
    results: list[FileResult] = []
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
        failed = [r for r in results if r.error is not None]
        for r in failed:
            _stderr(f"{r.path}: error: {r.error}")
        _report_fixes(outcomes, ns, summary=False)
        if not ns.quiet and (not results or len(failed) < len(results)):
            could_not = f" ({_plural(len(failed), 'file')} could not be linted)" if failed else ""
            print(
                f"{changed} file{'s' if changed != 1 else ''} would be changed by --fix"
                f"{' --unsafe-fixes' if ns.unsafe_fixes else ''}{could_not}.",
                file=sys.stderr,
            )
        if failed:
            return EXIT_USAGE
        return EXIT_FINDINGS if changed else EXIT_OK
    status = _report(results, settings.fail_on, fmt, ns)
    if ns.fix:
        _report_fixes(outcomes, ns, summary=True, left=sum(len(r.findings) for r in results))
    return status


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


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
        done = f"Fixed {_plural(fixed, 'finding')} in {_plural(files, 'file')}"
        _stderr(f"{done if fixed else 'No fixes applied'} ({left} left).")


def _lintable(target: Target) -> bool:
    return target.error is None and target.notice is None


def _targets(files: list[str], ns: argparse.Namespace, settings: Settings) -> list[Target]:
    """The command line's files, folders, globs and ``-``, expanded (moe_lint.files): the
    exclude patterns are ``--exclude`` (relative to the current folder), else pyproject's
    ``exclude`` (relative to its folder), else the defaults; ``extend-exclude`` adds to them."""
    base = settings.base_dir
    exclude: list[tuple[str, Path | None]] | None = None
    if ns.exclude is not None:
        exclude = [(p, None) for p in ns.exclude]
    elif settings.exclude is not None:
        exclude = [(p, base) for p in settings.exclude]
    extend = [(p, base) for p in settings.extend_exclude]
    extend += [(p, None) for p in ns.extend_exclude]
    targets = expand(files, excluder_for(exclude, extend), ns.force_exclude)
    stdin = sum(1 for t in targets if t.path == STDIN and _lintable(t))
    if stdin > 1:
        raise UsageError("- (stdin) can be given only once")
    if ns.stdin_filename is not None and not stdin:
        raise UsageError("--stdin-filename names the config read from stdin: add - to the files")
    return targets


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


def _split_args(ns: argparse.Namespace, allow_none: bool = False) -> tuple[list[str], list[Any]]:
    """Config files and Hydra-style overrides, in any order (an existing file wins over a name
    that looks like an override); the overrides apply to every file, in the order given."""
    files: list[str] = []
    overrides = []
    positions = getattr(ns, "arg_positions", None) or [None] * len(ns.args)
    for arg, position in zip(ns.args, positions, strict=True):
        if looks_like_override(arg) and not os.path.exists(arg):
            try:
                overrides.append(parse_override(arg, position))
            except InputError as exc:
                where = f"argument {position}: " if position else ""
                raise UsageError(f"{where}{exc}") from None
        else:
            files.append(arg)
    try:
        check_override_count(overrides)
    except InputError as exc:
        raise UsageError(str(exc)) from None
    if not files and getattr(ns, "stdin_filename", None) is not None:
        files.append(STDIN)  # like ruff: --stdin-filename alone reads stdin
    if not files and not allow_none:
        raise UsageError("no config files given (try `moe-lint examples/<file>.yaml`)")
    return files, overrides


def _cmd_estimate(argv: list[str]) -> int:
    """``moe-lint estimate CONFIG [overrides]``: the memory table of every pipeline stage."""
    parser = _check_parser()
    parser.prog = "moe-lint estimate"
    parser.add_argument("-v", "--verbose", action="store_true", help="show each term's formula")
    ns = parse_command_line(parser, argv, 1)
    # Lazy: the memory model (~40 ms to import) loads only when a memory fact or estimate is needed.
    from moe_lint.analysis.memory import MemoryInputError, levers
    from moe_lint.analysis.memory.verdict import judge
    from moe_lint.output import estimate as memreport

    files, overrides = _split_args(ns)
    if ns.format not in (None, "text", "json"):
        raise UsageError(f"estimate writes --format text or json, not {bounded_repr(ns.format)}")
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
        rows += memreport.text_rows(path, est, found, gpu, ns.verbose, judged)
        rows.append([("", None)])
        failing = verdict == "does NOT fit" or (
            verdict == "may not fit" and file_settings.fail_on in ("warning", "info")
        )
        if failing and status == EXIT_OK:
            status = EXIT_FINDINGS
    if ns.output is not None:  # a file gets what stdout would without colour
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


def plan_options(argv: list[str]) -> tuple[argparse.Namespace, Any]:
    """``moe-lint plan``'s command line as its namespace and plan.run.Options, every value
    checked (plan/args.py): UsageError for one that cannot be planned."""
    # Lazy: the planner loads only for `moe-lint plan`.
    from moe_lint.plan import args as plan_args
    from moe_lint.plan.run import DISPATCHERS, PRECISIONS, Options

    parser = _Parser(prog="moe-lint plan", description=(
        "Search TP, CP, PP, VPP, EP, ETP, MBS, recompute, offload and dispatcher for a model "
        "on a GPU count; rank the layouts that pass the rules and fit by predicted "
        "tokens/s/GPU (docs/planner.md)."))  # fmt: skip
    parser.add_argument(
        "--model",
        required=True,
        help="model preset, HF config.json (or its folder) or a Bridge YAML",
    )
    parser.add_argument("--seq", type=int, help="sequence length (default: the YAML's)")
    parser.add_argument("--gpu", help="GPU type (h100, b200, gb200, ...)")
    parser.add_argument("--gpus", help="GPU count: N, a list N,M or a range LO-HI (powers of 2)")
    parser.add_argument("--nodes", type=int, help="nodes (with --gpus-per-node)")
    parser.add_argument("--gpus-per-node", type=int)
    parser.add_argument("--gbs", type=int, help="global batch size (sequences per step)")
    parser.add_argument("--tokens-per-step", type=int, help="instead of --gbs")
    parser.add_argument("--precision", choices=sorted(PRECISIONS))
    parser.add_argument("--dispatcher", choices=DISPATCHERS)
    parser.add_argument("--max-ep", type=int)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="fix tp, pp, vpp, cp, ep, etp, mbs, recompute or offload; or override any "
        "base field (section.field=value)",
    )
    parser.add_argument(
        "--compare",
        metavar="LAYOUT",
        help="place a layout among the plans, e.g. tp=1,cp=32,ep=32,pp=8,vpp=4 (gpus=N too)",
    )
    parser.add_argument("--objective", choices=("throughput", "gpus"), default="throughput")
    parser.add_argument(
        "--safe",
        action="store_true",
        help="only plans whose central memory estimate fits (no 'may not fit')",
    )
    parser.add_argument("--top", type=int, default=10, help="plans to show (default 10)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="a rich table on a terminal (auto)")  # fmt: skip
    parser.add_argument("--emit", type=int, metavar="N", help="write plan N as Bridge YAML")
    parser.add_argument(
        "--emit-format",
        choices=("yaml", "hydra"),
        default="yaml",
        help="--emit as a Bridge YAML (default) or, for --model RECIPE_NAME, the "
        "run_recipe.py --recipe command with Hydra overrides",
    )
    parser.add_argument("-o", "--output", help="file for --emit (default: stdout)")
    ns = parser.parse_args(argv)
    if ns.gpus and ns.nodes is not None:
        raise UsageError("plan takes --gpus or --nodes with --gpus-per-node, not both")
    if ns.gpus:
        gpus = plan_args.gpu_counts(ns.gpus)
    elif ns.nodes is not None and ns.gpus_per_node is not None:
        nodes = plan_args.number("--nodes", ns.nodes, MAX_GPUS, "bounds.MAX_GPUS")
        per = plan_args.number("--gpus-per-node", ns.gpus_per_node, MAX_GPUS, "bounds.MAX_GPUS")
        gpus = (plan_args.number("--nodes x --gpus-per-node", nodes * per, MAX_GPUS,
                                 "bounds.MAX_GPUS"),)  # fmt: skip
    else:
        raise UsageError("plan needs --gpus (or --nodes with --gpus-per-node)")
    plan_args.number("--top", ns.top, MAX_PLANS, "bounds.MAX_PLANS")
    if ns.emit is not None:
        plan_args.number("--emit", ns.emit, MAX_PLANS, "bounds.MAX_PLANS")
    if ns.emit_format != "yaml" and ns.emit is None:
        raise UsageError("--emit-format is the form of --emit N")
    if ns.output is not None:
        if ns.emit is None:
            raise UsageError("-o names the file for --emit N")
        # Lazy: only a command that writes a file checks one.
        from moe_lint.output.target import output_target

        output_target(ns.output)
    fixed, others = plan_args.fixed(ns.set)
    opts = Options(
        model=ns.model,
        gpu=ns.gpu,
        gpus=gpus,
        seq=ns.seq,
        gbs=ns.gbs,
        tokens_per_step=ns.tokens_per_step,
        precision=ns.precision,
        dispatcher=ns.dispatcher,
        max_ep=ns.max_ep,
        fixed=fixed,
        overrides=others,
        safe=ns.safe,
        objective=ns.objective,
        top=max(ns.top, ns.emit or 0),
        gpus_per_node=ns.gpus_per_node,
        compare=plan_args.layout(ns.compare),
    )
    plan_args.check(opts)
    return ns, opts


def _cmd_plan(argv: list[str]) -> int:
    """``moe-lint plan``: ranked layouts for a run, pruned values with the rule that pruned them."""
    # Lazy: the planner loads only for `moe-lint plan`.
    from moe_lint.plan.run import run

    ns, opts = plan_options(argv)
    try:
        result = run(opts)
    except (InputError, NotBridgeConfig) as exc:
        print(f"moe-lint: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if ns.emit is not None:
        # Lazy: the planner loads only for `moe-lint plan`.
        from moe_lint.plan.emit import emit_text

        if ns.emit > len(result.shown):
            print(f"moe-lint: error: --emit {ns.emit}: only {len(result.shown)} plans",
                  file=sys.stderr)  # fmt: skip
            return EXIT_FINDINGS
        cand = result.shown[ns.emit - 1]
        if ns.emit_format == "hydra":
            # Lazy: the planner loads only for `moe-lint plan`.
            from moe_lint.plan.emit import emit_hydra

            text = emit_hydra(result.request, cand, ns.model, result.settings,
                              result.mixed_recipe, ns.emit)  # fmt: skip
        else:
            text = emit_text(result.request, cand, ns.model, result.settings,
                             result.base_is_yaml, result.mixed_recipe, result.base_text,
                             ns.emit)  # fmt: skip
        if ns.output:
            # Lazy: only a command that writes a file checks one.
            from moe_lint.output.target import write_output

            write_output(ns.output, text)
        else:
            sys.stdout.write(text)
        return EXIT_OK
    # Lazy: the planner loads only for `moe-lint plan`.
    from moe_lint.plan import report as plan_report

    shown = result.shown[: ns.top]
    result.shown = shown
    if ns.format == "json":
        sys.stdout.write(plan_report.to_json(result))
    elif _use_color(sys.stdout, ns.color):
        plan_report.to_rich(result, sys.stdout)
    else:
        sys.stdout.write(plan_report.to_text(result))
    return EXIT_OK if shown else EXIT_FINDINGS


def _cli_cluster(ns: argparse.Namespace) -> dict[str, Any]:
    cluster = {
        k: v
        for k, v in (
            ("gpus", ns.gpus),
            ("nodes", ns.nodes),
            ("gpus-per-node", ns.gpus_per_node),
            ("gpu", ns.gpu),
            ("model", ns.model),
            ("megatron-core", ns.megatron_core),
            ("transformer-engine", ns.transformer_engine),
            ("bridge", ns.bridge),
        )
        if v is not None
    }
    if cluster:
        given = apply_cluster(Settings(), cluster, "command line")  # validate once, up front
        if given.gpus is not None and given.nodes is not None and given.gpus_per_node:
            product = given.nodes * given.gpus_per_node
            if product != given.gpus:
                raise UsageError(
                    f"--gpus {given.gpus} contradicts --nodes {given.nodes} × --gpus-per-node "
                    f"{given.gpus_per_node} = {product}: give the world one way"
                )
    return cluster


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
        linted[text] = again
        return again.findings

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


def _report(results: list[Any], fail_on: str, fmt: str, ns: argparse.Namespace) -> int:
    findings: list[Finding] = sorted((f for r in results for f in r.findings), key=Finding.sort_key)
    errors = [r for r in results if r.error is not None]
    for r in errors:
        _stderr(f"{r.path}: error: {r.error}")
    problems = [InputProblem.parse(r.path, r.error) for r in errors]
    if ns.write_baseline and not errors:
        # Lazy: baselines (~10 ms) only with --baseline / --write-baseline.
        from moe_lint.output.baseline import write_baseline
        from moe_lint.output.formats import repo_root

        count = write_baseline(ns.write_baseline, findings, repo_root())
        _stderr(f"moe-lint: wrote {count} baseline entries to {ns.write_baseline}")
        return EXIT_OK
    stale: list[Any] = []
    if ns.baseline:
        # Lazy: baselines (~10 ms) only with --baseline / --write-baseline.
        from moe_lint.output.baseline import apply_baseline
        from moe_lint.output.formats import relative_uri, repo_root

        root = repo_root()
        linted = {relative_uri(r.path, root) for r in results if r.error is None}
        applied = apply_baseline(ns.baseline, findings, root, linted)
        findings, stale = applied.new, applied.stale
        kept = set(map(id, findings))
        for r in results:
            r.findings = [f for f in r.findings if id(f) in kept]
        for code, file, cfg_path in stale:
            _stderr(f"moe-lint: stale baseline entry: {code} {file} {cfg_path} (no longer found)")
    hidden = 0
    if not (ns.show_infos or fail_on == "info"):
        # Quiet by default: advice does not fail the run, so it is shown only when asked for.
        shown = [f for f in findings if f.severity != "info"]
        hidden, findings = len(findings) - len(shown), shown
        if hidden:
            for r in results:
                r.findings = [f for f in r.findings if f.severity != "info"]
    if errors:
        status = EXIT_USAGE
    else:
        threshold = SEVERITY_RANK[fail_on]
        failing = [f for f in findings if SEVERITY_RANK[f.severity] >= threshold]
        status = EXIT_FINDINGS if failing and not ns.exit_zero else EXIT_OK
    out: Any = sys.stdout
    handle = None
    if ns.output:
        try:  # any writable path (/dev/stdout too); one usage line when it is not
            handle = open(ns.output, "w", encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise UsageError(
                f"-o {bounded_repr(ns.output, 80)}: cannot write: {exc.strerror}"
            ) from None
        out = handle
    try:
        if ns.statistics:
            out.write(report.statistics(findings, fmt == "json", hidden))
        else:
            _write_format(results, findings, fmt, ns, out, problems, fail_on, hidden)
        out.flush()
    except BrokenPipeError:
        _silence_stdout()  # a closed pipe cuts the report short; the exit code still holds
    finally:
        if handle is not None:
            handle.close()
    summary_path = ns.summary or (
        os.environ.get("GITHUB_STEP_SUMMARY") if fmt == "github" else None
    )
    if summary_path:
        # Lazy: machine formats (~11 ms) only when one is asked for.
        from moe_lint.output.formats import markdown_summary

        with open(summary_path, "a", encoding="utf-8") as summary:
            summary.write(markdown_summary(findings, problems))
    return status


def _write_format(
    results: list[Any],
    findings: list[Finding],
    fmt: str,
    ns: argparse.Namespace,
    out: Any,
    problems: list[Any],
    fail_on: str = "error",
    hidden: int = 0,
) -> None:
    """Write the report; every format escapes what it echoes (moe_lint.output.escape), and the
    machine formats carry the input errors too (docs/output.md "Input errors")."""
    if fmt in ("sarif", "gitlab", "junit", "github", "json-lines"):
        # Lazy: machine formats (~11 ms) only when one is asked for.
        from moe_lint.output import formats
    if fmt in ("sarif", "gitlab", "junit"):
        root = formats.repo_root()
        if fmt == "sarif":
            out.write(formats.sarif(findings, ns.catalogue_rules, root, problems))
        elif fmt == "gitlab":
            out.write(formats.gitlab(findings, root, problems))
        else:
            files = [r.path for r in results if r.error is None]
            notices = {r.path: r.notice for r in results if r.notice is not None}
            out.write(formats.junit(findings, files, problems, fail_on, notices))
        return
    if fmt == "github":
        out.write(formats.github(findings, problems))
        return
    if fmt == "json-lines":
        out.write(formats.json_lines(findings, problems))
        return
    if fmt == "json":
        out.write(report.to_json(findings, problems))
    elif fmt == "concise":
        out.write(report.concise(findings))
    else:
        rows: list[list[Any]] = []
        for r in results:
            lines = r.doc.lines if r.doc is not None else None
            for finding in r.findings:
                rows.extend(report.text_segments(finding, lines))
                rows.append([("", None)])
        for r in results:
            if r.notice and not ns.quiet:
                rows.append([(f"{r.path}: skipped: {r.notice}", "dim")])
        # With input errors the summary still comes, for the other files (not when every
        # file failed: each already has its one line on stderr).
        if not ns.quiet and (not results or len(problems) < len(results)):
            fixable = sum(1 for f in findings if f.applicability == "safe" and f.edits)
            unsafe = sum(1 for f in findings if f.applicability == "unsafe" and f.edits)
            linted = sum(1 for r in results if r.notice is None and r.error is None)
            rows.append(report.summary(findings, linted, fixable, unsafe, len(problems), hidden))
        if rows:
            if _use_color(out, ns.color):
                report.render_rich(rows, out)
            else:
                out.write(report.render_plain(rows))


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


def model_json(key: str, entry: dict[str, Any]) -> dict[str, Any]:
    """One preset for ``moe-lint models``: names, architecture, computed parameter counts
    (analysis/params.py, embedding and output included, MTP excluded) and its sources."""
    # Lazy: the parameter counter loads only for `moe-lint models`.
    from moe_lint.analysis.params import Arch, count_params

    counts = count_params(Arch.from_preset(key))
    return {
        "name": key,
        "display_name": entry.get("display_name"),
        "hf_id": entry.get("hf_id"),
        "hf_architecture": entry.get("hf_architecture"),
        "bridge": entry.get("bridge"),
        "aliases": list(entry.get("aliases") or []),
        "layers": preset_fields(key).get("num_layers"),
        "experts": preset_fields(key).get("num_moe_experts"),
        "topk": preset_fields(key).get("moe_router_topk"),
        "total_params": counts.total,
        "active_params": counts.active,
        "published_params": dict(entry.get("published_params") or {}),
        "sources": list(entry.get("sources") or []),
    }


def _billions(count: int) -> str:
    return f"{count / 1e9:.1f}B"


def _cmd_models(argv: list[str]) -> int:
    """``moe-lint models``: the bundled presets; ``moe-lint models PATH``: what an HF
    config.json (or a model directory) maps to."""
    p = _Parser(prog="moe-lint models")
    p.add_argument("target", nargs="?", help="an HF config.json or model directory to map")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.add_argument(
        "--sources", action="store_true", help="list each preset's sources under its row"
    )
    ns = p.parse_args(argv)
    if ns.target:
        key = normalize_model(ns.target, "models")
        fields = preset_fields(key)
        if ns.format == "json":
            sys.stdout.write(escape.dumps({"model": key, "fields": fields}, indent=2) + "\n")
        elif ns.format == "markdown":
            print(escape.line("| field | value |\n|---|---|"))
            for name, value in fields.items():
                print(escape.line(f"| `model.{name}` | `{value!r}` |"))
        else:
            print(escape.line(f"# {key}"))
            for name, value in fields.items():
                print(escape.line(f"model.{name} = {value!r}"))
        return EXIT_OK
    rows = [model_json(k, e) for k, e in model_presets().items()]
    if ns.format == "json":
        sys.stdout.write(escape.dumps(rows, indent=2) + "\n")
        return EXIT_OK
    header = ("preset", "model", "HF architecture", "layers", "experts", "total", "active")
    table = [
        (
            r["name"],
            str(r["display_name"] or "").split(" (")[0],  # the notes stay in --format json
            str(r["hf_architecture"] or ""),
            str(r["layers"]),
            f"{r['experts']} top-{r['topk']}" if r["experts"] else "dense",
            _billions(r["total_params"]),
            _billions(r["active_params"]),
        )
        for r in rows
    ]
    if ns.format == "markdown":
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * 3 + "---:|" * 4)
        for cells in table:
            print(escape.line("| " + " | ".join(cells) + " |"))
        return EXIT_OK
    widths = [max(len(c) for c in column) for column in zip(header, *table, strict=True)]
    right = {3, 5, 6}  # counts align right

    def row(cells: tuple[str, ...]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    print(row(header))
    for r, cells in zip(rows, table, strict=True):
        print(escape.line(row(cells)))
        if ns.sources:
            for source in r["sources"]:
                print(escape.line(f"    {source}"))
    if not ns.sources:
        print("(total and active: parameters without MTP; --sources lists where each comes from)")
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
