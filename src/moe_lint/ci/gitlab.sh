#!/usr/bin/env bash
# The GitLab job (ci/gitlab/moe-lint.gitlab-ci.yml runs it as `python -m moe_lint.ci gitlab`):
# on a merge request the configs it changes (against CI_MERGE_REQUEST_DIFF_BASE_SHA), else every
# matching one; a Code Quality report for the merge request widget, then the findings in the
# job log, whose exit code is the job's (it fails on errors, or at --fail-on).
#
#   MOE_LINT_REPORT   the Code Quality report (default gl-code-quality-report.json)
#   MOE_LINT_FAIL_ON  lowest severity that fails (--fail-on); empty: the settings' (error)
#   and changed-files.sh's MOE_LINT_FILES, MOE_LINT_CHANGED_ONLY; common.sh's MOE_LINT_GPUS,
#   MOE_LINT_GPU, MOE_LINT_ARGS
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=SCRIPTDIR/common.sh
source "$here/common.sh"

report="${MOE_LINT_REPORT:-gl-code-quality-report.json}"
list="$(moe_lint_tmp)/files"
MOE_LINT_BASE="${CI_MERGE_REQUEST_DIFF_BASE_SHA:-}" bash "$here/changed-files.sh" "$list"
moe_lint_read_list "$list"
files=("${MOE_LINT_FILES_LIST[@]}")
if ((${#files[@]} == 0)); then
	echo "moe-lint: no config files to lint"
	echo "[]" >"$report"
	exit 0
fi
moe_lint_options
gate=()
if [[ -n "${MOE_LINT_FAIL_ON:-}" ]]; then
	gate=(--fail-on "$MOE_LINT_FAIL_ON")
fi
# The report; the gate is the run below (it exits 2 on a file that cannot be linted too).
moe-lint check "${MOE_LINT_OPTS[@]}" --format gitlab --output "$report" --exit-zero \
	-- "${files[@]}" || true
status=0
moe-lint check "${MOE_LINT_OPTS[@]}" "${gate[@]}" -- "${files[@]}" || status=$?
exit "$status"
