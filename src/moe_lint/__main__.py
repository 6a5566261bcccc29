"""Allow ``python -m moe_lint``."""

from moe_lint.cli import main

raise SystemExit(main())
