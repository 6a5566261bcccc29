"""The option table ``moe-lint check`` and ``moe-lint estimate`` share, the parser every
command builds on (:class:`_Parser`: a usage error is an exception with a did-you-mean), and
what the options mean: the files and overrides, the cluster, the settings' pyproject, the
colour choice. Nothing here prints."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any, TextIO

from moe_lint import __version__
from moe_lint.bounds import bounded_repr
from moe_lint.cli import COMMANDS
from moe_lint.cmdline import positional_indices
from moe_lint.config.memory_settings import memory_settings
from moe_lint.config.overrides import check_count as check_override_count
from moe_lint.config.overrides import looks_like_override, parse_override
from moe_lint.config.settings import (
    FORMATS,
    Settings,
    apply_cluster,
    check_table,
    find_pyproject,
    load_pyproject,
)
from moe_lint.errors import InputError, UsageError
from moe_lint.files import STDIN, Target, excluder_for, expand
from moe_lint.globs import check_pattern


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _terminal_columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` reads it (``$COLUMNS``, else the
    stdout terminal, else 80), without importing shutil."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting, with a did-you-mean for
    an unknown flag or choice."""

    def error(self, message: str) -> Any:
        raise UsageError(message + self._hint(message))

    def _get_formatter(self) -> argparse.HelpFormatter:
        """argparse's formatter with the width given: HelpFormatter finds it itself through
        ``shutil.get_terminal_size``, and add_argument makes a formatter for every option it
        checks, so the default imported shutil (with bz2, lzma and zlib, ~5 ms) on every
        start for a help text that is almost never printed."""
        width = _terminal_columns() - 2  # as HelpFormatter takes shutil's columns
        return self.formatter_class(prog=self.prog, width=width)  # type: ignore[call-arg]

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


def _commands_epilog() -> str:
    width = max(len(name) for name, _ in COMMANDS)
    lines = [f"  {name:<{width}}  {text}" for name, text in COMMANDS]
    return (
        "commands (moe-lint COMMAND --help for each):\n"
        + "\n".join(lines)
        + "\n\nmoe-lint FILE ... is moe-lint check FILE ...; the options above are check's."
    )


def _check_parser(formats: tuple[str, ...] = FORMATS) -> argparse.ArgumentParser:
    """check's command line (``formats``: the --format choices; estimate adds html)."""
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
        choices=formats,
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


def _settings_path(path: str, stdin_name: str | None) -> str:
    """The file name whose folder decides ``path``'s settings (stdin: --stdin-filename)."""
    if path != STDIN:
        return path
    return stdin_name if stdin_name else str(Path.cwd() / STDIN)


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


def _lintable(target: Target) -> bool:
    return target.error is None and target.notice is None
