#!/usr/bin/env bash
# The GitHub Action's last step: fail the job with the lint step's exit code, now that the
# SARIF upload and the comment have run (1: findings at or above --fail-on; 2: a file that
# could not be linted, or a usage error; 3: an internal error).
#
#   MOE_LINT_EXIT_CODE  the lint step's output exit-code; empty: the lint step did not finish
set -euo pipefail
code="${MOE_LINT_EXIT_CODE:-}"
if [[ ! "$code" =~ ^[0-9]+$ ]]; then
	echo "::error title=moe-lint::moe-lint did not run to the end: see the steps above"
	exit 1
fi
if ((code != 0)); then
	echo "moe-lint: failing the job with exit code $code"
fi
exit "$code"
