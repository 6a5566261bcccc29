#!/usr/bin/env bash
# The config files a CI run lints, NUL-separated, into the file $1 (default: list in the run's
# temp folder): on a pull or merge request the files it adds, copies, modifies or renames
# (`git diff --diff-filter=ACMR BASE...HEAD`), deleted ones left out; without a base (a push)
# every tracked file that matches. Step outputs (GitHub): list=<file>, count=<n>.
#
#   MOE_LINT_FILES         git glob pathspecs of the configs, whitespace-separated
#                          (default: **/*.yaml **/*.yml **/*.sh)
#   MOE_LINT_BASE          the base commit; empty: every matching file
#   MOE_LINT_CHANGED_ONLY  false: every matching file even on a pull request (default true)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=SCRIPTDIR/common.sh
source "$here/common.sh"

out="${1:-$(moe_lint_tmp)/files}"
patterns="${MOE_LINT_FILES:-}"
if [[ -z "${patterns//[[:space:]]/}" ]]; then
	patterns='**/*.yaml **/*.yml **/*.sh'
fi
words=()
# Split on blanks and newlines; `read` expands no glob, so the patterns reach git as written.
read -r -d '' -a words <<<"$patterns" || true
pathspecs=()
for word in "${words[@]}"; do
	pathspecs+=(":(glob)$word")
done

base="${MOE_LINT_BASE:-}"
if [[ "${MOE_LINT_CHANGED_ONLY:-true}" == false ]]; then
	base=""
fi
if [[ -n "$base" ]]; then
	if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
		# actions/checkout fetches one commit by default: fetch the base too.
		if ! git fetch --quiet --no-tags --depth=1 origin "$base"; then
			echo "moe-lint: cannot fetch the base commit $base: clone more history" \
				"(actions/checkout fetch-depth: 0; GitLab GIT_DEPTH: 0)" >&2
			exit 2
		fi
	fi
	if git merge-base "$base" HEAD >/dev/null 2>&1; then
		range=("$base...HEAD")
	else
		# A shallow clone knows no merge base. The pull request's merge commit (what
		# actions/checkout checks out) has the base as its parent, so diffing the two trees
		# gives the same files.
		range=("$base" HEAD)
	fi
	git diff -z --name-only --diff-filter=ACMR "${range[@]}" -- "${pathspecs[@]}" >"$out"
	what="changed since ${base:0:12}"
else
	git ls-files -z -- "${pathspecs[@]}" >"$out"
	what="tracked"
fi
count="$(tr -cd '\0' <"$out" | wc -c | tr -d ' ')"
echo "moe-lint: $count matching file(s) $what"
moe_lint_output list "$out"
moe_lint_output count "$count"
