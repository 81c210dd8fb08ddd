#!/usr/bin/env bash
# check_readme.sh - a new user's path through README.md, checked.
#
# Usage:
#   check_readme.sh quickstart README CI_RUN
#       The code block of README's "## Quick start" section holds exactly
#       two commands (comments and blank lines aside): `scripts/run.sh`, the
#       main job, and the command that CI_RUN (.ci/run) runs with `exec`,
#       the whole test suite.
#   check_readme.sh c README WORKDIR CC LIBRARY INCLUDE_DIR ...
#       The fenced block after "<!-- readme-example: c -->" is written to
#       WORKDIR/example.c, compiled with CC (-std=c11 -Wall -Wextra -Werror,
#       -I each INCLUDE_DIR) and linked with LIBRARY (the static library,
#       plus -lpthread -lm), then run: what it prints must be the block
#       after "<!-- readme-output: c -->", and it must exit 0.
#   check_readme.sh python README WORKDIR PYTHON MODULE_DIR
#       The same for "<!-- readme-example: python -->" and
#       "<!-- readme-output: python -->": run by PYTHON with
#       PYTHONPATH=MODULE_DIR.
#
# Prints what is wrong, or what was checked. Exit status: 0 when the check
# holds, 1 when it does not, 2 on a usage error.
set -euo pipefail

usage() {
	echo "usage: check_readme.sh quickstart README CI_RUN" >&2
	echo "       check_readme.sh c README WORKDIR CC LIBRARY INCLUDE_DIR ..." >&2
	echo "       check_readme.sh python README WORKDIR PYTHON MODULE_DIR" >&2
	exit 2
}

# block README MARKER: the fenced code block that follows the line MARKER
# (blank lines between them allowed), without its fences. Fails when the
# marker is missing, is there more than once or is not followed by a block.
block() {
	local n
	n=$(grep -cxF -- "$2" "$1" || true)
	if [ "$n" -ne 1 ]; then
		echo "$1: \"$2\" is there $n times, not once" >&2
		return 1
	fi
	awk -v marker="$2" '
		state == 0 && $0 == marker { state = 1; next }
		state == 1 && /^[ \t]*$/ { next }
		state == 1 && /^```/ { state = 2; next }
		state == 1 { exit 1 }
		state == 2 && /^```[ \t]*$/ { state = 3; exit 0 }
		state == 2 { print }
		END { if (state != 3) exit 1 }
	' "$1" || {
		echo "$1: no complete code block after \"$2\"" >&2
		return 1
	}
}

# compare WHAT EXPECTED_FILE ACTUAL_FILE
compare() {
	if ! diff -u "$2" "$3" >"$3.diff"; then
		echo "$1: its output is not the README's (--- README, +++ run):"
		cat "$3.diff"
		return 1
	fi
}

[ $# -ge 3 ] || usage
mode=$1
readme=$2
[ -f "$readme" ] || usage

case $mode in
quickstart)
	[ $# -eq 3 ] || usage
	ci_run=$3
	# The block of the section "## Quick start".
	commands=$(awk '
		/^## / { insec = ($0 == "## Quick start") }
		insec && /^```/ { inblock = !inblock; if (!inblock) exit; next }
		insec && inblock { print }
	' "$readme" | sed -e 's/[ \t]*#.*//' -e '/^[ \t]*$/d')
	ci=$(sed -n 's/^[ \t]*exec[ \t]\{1,\}//p' "$ci_run" | sed 's/[ \t]*$//')
	if [ -z "$ci" ]; then
		echo "$ci_run: no exec line"
		exit 1
	fi
	n=$(printf '%s\n' "$commands" | sed '/^$/d' | wc -l)
	first=$(printf '%s\n' "$commands" | sed -n 1p)
	second=$(printf '%s\n' "$commands" | sed -n 2p)
	bad=0
	if [ "$n" -ne 2 ]; then
		echo "$readme: the quick start has $n commands, not 2:"
		printf '%s\n' "$commands" | sed 's/^/  /'
		bad=1
	fi
	if [ "$first" != "scripts/run.sh" ]; then
		echo "$readme: the quick start's first command is \"$first\", not \"scripts/run.sh\""
		bad=1
	fi
	if [ "$second" != "$ci" ]; then
		echo "$readme: the quick start's test command \"$second\" is not what $ci_run runs (\"$ci\")"
		bad=1
	fi
	[ "$bad" -eq 0 ] || exit 1
	echo "check_readme: the quick start is \"$first\" and \"$second\", which $ci_run runs"
	;;
c)
	[ $# -ge 6 ] || usage
	work=$3 cc=$4 lib=$5
	shift 5
	incs=()
	for d in "$@"; do
		incs+=("-I$d")
	done
	mkdir -p "$work"
	block "$readme" "<!-- readme-example: c -->" >"$work/example.c"
	block "$readme" "<!-- readme-output: c -->" >"$work/expected.txt"
	"$cc" -std=c11 -Wall -Wextra -Werror "${incs[@]}" "$work/example.c" \
	    "$lib" -lpthread -lm -o "$work/example"
	rc=0
	"$work/example" >"$work/actual.txt" || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "the C example exited with $rc; it printed:"
		cat "$work/actual.txt"
		exit 1
	fi
	compare "the C example" "$work/expected.txt" "$work/actual.txt"
	echo "check_readme: the C example compiled with $cc against $lib and printed what the README says:"
	cat "$work/actual.txt"
	;;
python)
	[ $# -eq 5 ] || usage
	work=$3 python=$4 moddir=$5
	mkdir -p "$work"
	block "$readme" "<!-- readme-example: python -->" >"$work/example.py"
	block "$readme" "<!-- readme-output: python -->" >"$work/expected.txt"
	rc=0
	(cd "$work" && PYTHONPATH=$moddir "$python" example.py) \
	    >"$work/actual.txt" || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "the Python example exited with $rc; it printed:"
		cat "$work/actual.txt"
		exit 1
	fi
	compare "the Python example" "$work/expected.txt" "$work/actual.txt"
	echo "check_readme: the Python example ran with $python (PYTHONPATH=$moddir) and printed what the README says:"
	cat "$work/actual.txt"
	;;
*)
	usage
	;;
esac
