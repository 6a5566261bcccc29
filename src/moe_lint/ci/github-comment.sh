#!/usr/bin/env bash
# The GitHub Action's comment step: one pull-request comment with the findings table and each
# linted config's memory table (`moe-lint estimate --format json`), created on the first run and
# updated on the next ones (found by its hidden marker). Posting goes through `gh api` with the
# token in GH_TOKEN; a failure to post (a fork's read-only token) is a warning, not a failure.
#
#   MOE_LINT_LIST     the NUL-separated file list (changed-files.sh)
#   MOE_LINT_SUMMARY  the findings table the lint step wrote
#   MOE_LINT_PR       the pull request's number; empty: the body goes to the job summary only
#   GITHUB_REPOSITORY owner/name (set by the runner), GH_TOKEN
#   and common.sh's MOE_LINT_GPUS, MOE_LINT_GPU, MOE_LINT_ARGS
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=SCRIPTDIR/common.sh
source "$here/common.sh"

dir="$(moe_lint_tmp)"
body="$dir/comment.md"
moe_lint_options
python -m moe_lint.ci comment --files-from "${MOE_LINT_LIST:?MOE_LINT_LIST names the file list}" \
	--summary "${MOE_LINT_SUMMARY:-}" --output "$body" -- "${MOE_LINT_OPTS[@]}"
if [[ -z "${MOE_LINT_PR:-}" ]]; then
	echo "moe-lint: not a pull request: no comment posted"
	exit 0
fi
update=()
if [[ ! -s "$MOE_LINT_LIST" ]]; then
	update=(--update-only) # nothing linted: refresh an existing comment, add no new one
fi
python -m moe_lint.ci post-comment --repo "${GITHUB_REPOSITORY:?}" --pr "$MOE_LINT_PR" \
	"${update[@]}" "$body"
