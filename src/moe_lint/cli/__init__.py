"""Command line: ``moe-lint [check] FILES [overrides]``, ``moe-lint estimate``, ``moe-lint plan``,
``moe-lint rules``, ``moe-lint explain``, ``moe-lint models``, ``moe-lint schema``,
``moe-lint server``.

The only package that prints or decides the exit code: 0 nothing at or above ``--fail-on``,
1 findings, 2 usage or input error (one clear line, no traceback), 3 internal error. Inside it,
this module is the entry (:func:`run`, :func:`main`) and the dispatch; each command is its own
module, imported only when that command runs (``moe-lint FILE`` in a pre-commit hook loads
``check``, ``options`` and ``report``, never ``estimate``, ``plan``, ``rules`` or ``models``):

- ``options``: the option table ``check`` and ``estimate`` share and what its values mean
- ``check``: linting, ``--show-files`` / ``--show-settings``, the fix loop
- ``report``: the findings report in every format, and the exit code it decides
- ``estimate``, ``plan``, ``rules`` (``rules`` and ``explain``), ``models``, ``schema``,
  ``server`` (the language server, :mod:`moe_lint.server`)
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from moe_lint.bounds import bounded_str
from moe_lint.errors import RulePackError, UsageError
from moe_lint.output import escape
from moe_lint.output.escape import line

if TYPE_CHECKING:  # the names below, as __getattr__ finds them at run time
    from moe_lint.cli.models import model_json as model_json
    from moe_lint.cli.options import _check_parser as _check_parser
    from moe_lint.cli.options import parse_command_line as parse_command_line
    from moe_lint.cli.plan import plan_options as plan_options
    from moe_lint.cli.rules import explain_text as explain_text
    from moe_lint.cli.rules import rule_json as rule_json
    from moe_lint.linting import as_input_error as _as_input_error  # noqa: F401 (check's name)

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


SUBCOMMANDS = ("check", "rules", "explain", "models")


#: The subcommands, each with its one line for ``moe-lint --help`` (``check`` is the default:
#: ``moe-lint FILE`` is ``moe-lint check FILE``).
COMMANDS: tuple[tuple[str, str], ...] = (
    ("check", "lint configs, launch scripts and argument files (the default command)"),
    ("estimate", "per-GPU memory of a config: the terms, the bounds and the verdict"),
    ("plan", "search and rank the layouts of a run that fit (--emit writes one)"),
    ("rules", "list the rules (code, name, severity, summary)"),
    ("explain", "one rule's documentation: what, why, example, fix, source"),
    ("models", "the model presets, or what an HF config.json maps to"),
    ("schema", "the JSON Schema of Bridge's config, for completion in an editor"),
    ("server", "the language server (LSP over stdio): findings, fixes and hovers in an editor"),
)


#: The commands other than check: the module under moe_lint.cli and the function that runs it.
_COMMAND_FUNCTIONS: dict[str, tuple[str, str]] = {
    "estimate": ("estimate", "_cmd_estimate"),
    "plan": ("plan", "_cmd_plan"),
    "rules": ("rules", "_cmd_rules"),
    "explain": ("rules", "_cmd_explain"),
    "models": ("models", "_cmd_models"),
    "schema": ("schema", "_cmd_schema"),
    "server": ("server", "_cmd_server"),
}


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


#: Net new container objects that start a collection of the youngest generation (CPython's
#: default is 700). Linting a full dump holds ~10,000 (its YAML nodes, values, config and
#: facts) until the file is done, then frees them by reference counting, since they hold no
#: cycle (tests/test_batch.py): at 700 the collector ran about nine times a file, each time
#: scanning objects that were about to go, for ~1 ms of a dump's 12. Real garbage cycles are
#: still collected, at most this many objects later.
GC_THRESHOLD = 10_000


def _settle_gc() -> None:
    """After the catalogue is loaded (under :func:`run` only): move everything alive into the
    permanent generation and turn the collector back on, so a long batch still collects its
    per-file garbage while no collection rescans the start-up objects (and forked workers do
    not touch their pages), the youngest generation at :data:`GC_THRESHOLD`."""
    if _ENTRY:
        # Lazy: as in run(), only under the console script.
        import gc

        gc.freeze()
        gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
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
        # Each command's module loads only when it runs: moe-lint FILE (a pre-commit hook) loads
        # check's alone.
        if args and args[0] in _COMMAND_FUNCTIONS:
            _settle_gc()  # a plan search may run long: collect as usual
            module, function = _COMMAND_FUNCTIONS[args[0]]
            command = getattr(importlib.import_module(f"{__name__}.{module}"), function)
            code: int = command(args[1:])
            return code
        # Lazy: the check command (the default) only when no other command is named.
        from moe_lint.cli.check import _cmd_check

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


#: Names code outside the package imported from ``moe_lint.cli`` when it was one module, and the
#: module that holds each now: loaded on first use, so ``moe-lint FILE`` still loads no other
#: command's module.
_MOVED = {
    "_as_input_error": "check",
    "_check_parser": "options",
    "parse_command_line": "options",
    "explain_text": "rules",
    "rule_json": "rules",
    "model_json": "models",
    "plan_options": "plan",
}

if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        home = _MOVED.get(name)
        if home is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{__name__}.{home}"), name)


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
