#!/usr/bin/env bash
# The GitHub Action's install step: pip-install moe-lint from MOE_LINT_VERSION (a pip
# requirement: a git URL with a commit, a path, a version on your index) or, when it is empty,
# from the action's own checkout, so `uses: <owner>/moe-lint@<ref>` lints with that ref's code.
set -euo pipefail
spec="${MOE_LINT_VERSION:-}"
if [[ -z "$spec" ]]; then
	spec="${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set: not inside a GitHub Action}"
fi
if [[ "$spec" == -* ]]; then
	echo "moe-lint: version must be a pip requirement, not an option: $spec" >&2
	exit 2
fi
python -m pip install --disable-pip-version-check --quiet "$spec"
moe-lint --version
