#!/usr/bin/env bash
# The GitHub Action's lint step: annotations on the diff (`--format github`, whose exit code is
# the gate), the full findings table in the job summary, and a SARIF log for code scanning.
# It exits 0 and leaves moe-lint's exit code in the step output exit-code, so the SARIF upload
# and the comment still run; the action's last step fails the job with it.
# Step outputs: exit-code, sarif (the log's path, empty when none was written), summary.
#
#   MOE_LINT_LIST     the NUL-separated file list (changed-files.sh)
#   MOE_LINT_FAIL_ON  lowest severity that fails (--fail-on); empty: the settings' (error)
#   MOE_LINT_SARIF    false: write no SARIF log
#   and common.sh's MOE_LINT_GPUS, MOE_LINT_GPU, MOE_LINT_ARGS
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=SCRIPTDIR/common.sh
source "$here/common.sh"

dir="$(moe_lint_tmp)"
sarif="$dir/moe-lint.sarif"
summary="$dir/summary.md"
rm -f "$sarif" "$summary" # --summary appends
moe_lint_read_list "${MOE_LINT_LIST:?MOE_LINT_LIST names the file list}"
files=("${MOE_LINT_FILES_LIST[@]}")
if ((${#files[@]} == 0)); then
	echo "moe-lint: no config files to lint"
	printf '### moe-lint\n\nNo config files to lint.\n' >"$summary"
	if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then
		cat "$summary" >>"$GITHUB_STEP_SUMMARY"
	fi
	moe_lint_output exit-code 0
	moe_lint_output sarif ""
	moe_lint_output summary "$summary"
	exit 0
fi

moe_lint_options
gate=()
if [[ -n "${MOE_LINT_FAIL_ON:-}" ]]; then
	gate=(--fail-on "$MOE_LINT_FAIL_ON")
fi
status=0
# Options after the user's arguments win over them; after -- every word is a file.
moe-lint check "${MOE_LINT_OPTS[@]}" "${gate[@]}" --format github --summary "$summary" \
	-- "${files[@]}" || status=$?
if [[ "${MOE_LINT_SARIF:-true}" != false ]]; then
	# The same findings for code scanning; the gate is the run above (a file that cannot be
	# linted exits 2 here too, and is in the log as E000, so this exit code adds nothing).
	moe-lint check "${MOE_LINT_OPTS[@]}" --format sarif --output "$sarif" --exit-zero \
		-- "${files[@]}" || true
fi
if [[ -f "$summary" && -n "${GITHUB_STEP_SUMMARY:-}" ]]; then
	cat "$summary" >>"$GITHUB_STEP_SUMMARY"
fi
if [[ ! -s "$sarif" ]]; then
	sarif=""
fi
echo "moe-lint: exit code $status"
moe_lint_output exit-code "$status"
moe_lint_output sarif "$sarif"
moe_lint_output summary "$summary"
