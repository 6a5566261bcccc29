"""``moe-lint server``: the language server (LSP over stdio) for editors.

The server itself is :mod:`moe_lint.server`; this command checks that its optional
dependency, pygls, is installed (one line naming the extra when it is not: exit 2) and runs
it until the editor disconnects. ``--stdio`` is accepted because editors' generic LSP
clients pass it; stdio is the only transport.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from typing import BinaryIO

from moe_lint.cli import EXIT_OK, EXIT_USAGE, _stderr
from moe_lint.cli.options import _Parser


def _cmd_server(argv: list[str]) -> int:
    p = _Parser(
        prog="moe-lint server",
        description="Run the language server over stdin/stdout (for an editor's LSP client).",
    )
    p.add_argument("--stdio", action="store_true", help="use stdin/stdout (the default)")
    p.parse_args(argv)
    if importlib.util.find_spec("pygls") is None or importlib.util.find_spec("lsprotocol") is None:
        _stderr(
            "moe-lint: error: the language server needs pygls: install moe-lint[server] "
            "(pip install 'moe-lint[server]', or pygls>=2 beside moe-lint)"
        )
        return EXIT_USAGE
    # Lazy: pygls and the server (~100 ms of imports) only for `moe-lint server`.
    from moe_lint.server.protocol import serve

    with _protocol_streams() as (stdin, stdout):
        serve(stdin, stdout)
    return EXIT_OK


@contextlib.contextmanager
def _protocol_streams() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """The client's stdin/stdout as private streams for the protocol, with the process's own
    stdout (``print``, a library's or a C extension's write to fd 1) sent to stderr for as
    long as the server runs: one stray byte on the protocol's stream would break the
    session. The server closes its stream when the client says exit; the process's stdout is
    put back after, so the CLI's final flush finds it open."""
    sys.stdout.flush()
    stdin = os.fdopen(os.dup(0), "rb")
    stdout = os.fdopen(os.dup(1), "wb")
    saved_fd = os.dup(1)
    saved = sys.stdout
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        yield stdin, stdout
    finally:
        sys.stdout = saved
        os.dup2(saved_fd, 1)
        os.close(saved_fd)
        for stream in (stdin, stdout):
            with contextlib.suppress(OSError, ValueError):
                stream.close()
