"""``python -m moe_lint.ci COMMAND``: the CI steps that need Python or the installed package.

- ``comment --files-from LIST [--summary FILE] [--output FILE] -- ESTIMATE-OPTIONS``: render the
  pull-request comment (:mod:`moe_lint.ci.comment`)
- ``post-comment --repo OWNER/NAME --pr N [--update-only] BODY``: create or update that
  comment with ``gh api``
- ``gitlab``: the GitLab job (``gitlab.sh`` of the installed package: an included template has
  no checkout of moe-lint to run it from)

Exit codes as moe-lint's: 0 done, 2 a usage error, else the script's own.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from moe_lint.ci import script
from moe_lint.ci.comment import estimate_file, post, read_list, render
from moe_lint.errors import UsageError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m moe_lint.ci",
        description="The CI steps that need Python: the pull-request comment of the GitHub "
        "Action, and the GitLab job (src/moe_lint/ci/, docs/ci.md).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    comment = sub.add_parser("comment", help="render the pull-request comment")
    comment.add_argument("--files-from", required=True, help="NUL-separated file list")
    comment.add_argument("--summary", default="", help="the lint step's findings table")
    comment.add_argument("--output", "-o", help="write the body here (default: stdout)")
    posting = sub.add_parser("post-comment", help="create or update the pull-request comment")
    posting.add_argument("--repo", required=True, help="owner/name")
    posting.add_argument("--pr", required=True, help="the pull request's number")
    posting.add_argument("--gh", default="gh", help="the GitHub CLI to run")
    posting.add_argument(
        "--update-only", action="store_true", help="update the comment, create none"
    )
    posting.add_argument("body", help="the comment body (Markdown)")
    sub.add_parser("gitlab", help="run the GitLab job's script")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the words after ``--`` are moe-lint options for ``comment``."""
    args = list(sys.argv[1:] if argv is None else argv)
    options: list[str] = []
    if "--" in args:
        at = args.index("--")
        args, options = args[:at], args[at + 1 :]
    ns = _parser().parse_args(args)
    try:
        if ns.command == "comment":
            files = read_list(ns.files_from)
            summary = ""
            if ns.summary and Path(ns.summary).is_file():
                summary = Path(ns.summary).read_text(encoding="utf-8")
            body = render([estimate_file(f, options) for f in files], summary)
            if ns.output:
                Path(ns.output).write_text(body, encoding="utf-8")
            else:
                sys.stdout.write(body)
            return 0
        if ns.command == "post-comment":
            return post(Path(ns.body), ns.repo, ns.pr, ns.gh, not ns.update_only)
        return subprocess.call(["bash", str(script("gitlab.sh"))])
    except UsageError as exc:
        print(f"moe-lint: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
