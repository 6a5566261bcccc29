"""The CI integrations: the GitHub Action (``action.yml`` at the repository root) and the GitLab
job (``ci/gitlab/moe-lint.gitlab-ci.yml``).

Each CI step is a shell script in this folder, so a test runs the very commands the CI runs
(tests/test_action.py), and the CI passes its inputs to them as environment variables, never as
text pasted into a script. The scripts ship in the wheel: an included GitLab template has no
checkout of moe-lint, so it runs them from the installed package (``python -m moe_lint.ci
gitlab``). The pull-request comment is Python (:mod:`moe_lint.ci.comment`): it turns
``moe-lint estimate --format json`` into Markdown tables and talks to ``gh api``.
"""

from __future__ import annotations

from pathlib import Path

#: The folder of the step scripts (inside the installed package, or the action's checkout).
SCRIPTS = Path(__file__).resolve().parent


def script(name: str) -> Path:
    """The path of the step script ``name`` (``gitlab.sh``), which must exist."""
    path = SCRIPTS / name
    if not path.is_file():
        raise FileNotFoundError(f"no CI script {name} in {SCRIPTS}")
    return path
