# shellcheck shell=bash
# Sourced by the CI step scripts of this folder (the GitHub Action's steps and the GitLab job):
# the moe-lint options every step passes, built from environment variables. The CI sets those
# from its inputs, so no input is ever pasted into a script's text (a workflow expression in a
# `run:` line would be script injection).
#
#   MOE_LINT_GPUS, MOE_LINT_GPU   the cluster (--gpus, --gpu); empty: the files' own settings
#   MOE_LINT_ARGS                 more moe-lint arguments, split as a POSIX shell would (shlex)

# The folder for the run's files: the runner's per-job temp folder on GitHub, else TMPDIR.
moe_lint_tmp() {
	local dir="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/moe-lint"
	mkdir -p "$dir"
	printf '%s\n' "$dir"
}

# Fills the array MOE_LINT_OPTS with the options for every moe-lint command of the run.
# --force-exclude: pyproject's exclude patterns apply to the files named on the command line,
# as they do to folders (the pre-commit hooks pass it for the same reason).
moe_lint_options() {
	MOE_LINT_OPTS=(--force-exclude)
	if [[ -n "${MOE_LINT_GPUS:-}" ]]; then
		MOE_LINT_OPTS+=(--gpus "$MOE_LINT_GPUS")
	fi
	if [[ -n "${MOE_LINT_GPU:-}" ]]; then
		MOE_LINT_OPTS+=(--gpu "$MOE_LINT_GPU")
	fi
	if [[ -n "${MOE_LINT_ARGS:-}" ]]; then
		local words
		words="$(moe_lint_tmp)/args"
		# shlex, not word splitting: `--select "PAR,MEM"` and quoted paths mean what they say,
		# and no glob or variable in the text is expanded. NUL-separated, read back below.
		python -c 'import shlex, sys
sys.stdout.write("".join(word + "\0" for word in shlex.split(sys.argv[1])))' \
			"$MOE_LINT_ARGS" >"$words"
		local extra=()
		mapfile -d '' -t extra <"$words"
		MOE_LINT_OPTS+=("${extra[@]}")
	fi
}

# Reads the NUL-separated file list $1 into the array MOE_LINT_FILES_LIST.
moe_lint_read_list() {
	# shellcheck disable=SC2034 # read by the scripts that source this file
	mapfile -d '' -t MOE_LINT_FILES_LIST <"$1"
}

# Appends name=value to the step's outputs ($GITHUB_OUTPUT) when the CI has them.
moe_lint_output() {
	if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
		printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"
	fi
}
