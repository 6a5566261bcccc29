"""Allow ``python -m moe_lint``."""

from moe_lint.cli import run

run()
