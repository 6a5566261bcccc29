"""``moe-lint schema``: the JSON Schema (draft 2020-12) of Bridge's config, for editors.

Written to stdout or ``-o FILE``; a YAML file that starts with ``# yaml-language-server:
$schema=FILE`` then gets completion, hover text and type errors from yaml-language-server
(output/json_schema.py says what the schema holds)."""

from __future__ import annotations

import json
import sys

from moe_lint.cli import EXIT_OK
from moe_lint.cli.options import _Parser


def _cmd_schema(argv: list[str]) -> int:
    p = _Parser(
        prog="moe-lint schema",
        description="Write the JSON Schema of Megatron Bridge's config (for yaml-language-server).",
    )
    p.add_argument("--bridge", metavar="VERSION", help="the Bridge release the configs target")
    p.add_argument("-o", "--output", metavar="FILE", help="write the schema to FILE")
    ns = p.parse_args(argv)
    if ns.output is not None:
        # Lazy: only a command that writes a file checks one.
        from moe_lint.output.target import output_target, write_output

        output_target(ns.output)  # before any work: a bad -o is one usage line
    # Lazy: the schema builder only for `moe-lint schema`.
    from moe_lint.output.json_schema import bridge_schema

    text = json.dumps(bridge_schema(ns.bridge), indent=2, sort_keys=False) + "\n"
    if ns.output is not None:
        write_output(ns.output, text)
    else:
        sys.stdout.write(text)
    return EXIT_OK
