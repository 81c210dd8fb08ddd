#!/usr/bin/env bash
# run.sh - the main job: build the release configuration of the library
# and cow_stress (the preset "run": release without the tests, so it needs
# only what `scripts/deps.sh run` installs) and run the stress harness with
# its default scenarios (about half a minute), printing its report. Extra
# arguments go to cow_stress (see docs/stress.md), e.g.
#   scripts/run.sh --scenario materialize-race --threads 16 --seconds 60
#
# It says what it builds and how long the build took. CMake's and make's
# output goes to build/run.log; a failed step prints the log's end, and a
# CMake warning is printed, not hidden.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh run

mkdir -p build
log=build/run.log
# The preset's own description (CMakePresets.json), so this cannot drift.
what=$(cmake --list-presets 2>/dev/null |
    sed -n -e 's/^ *"run" *- *//' -e 's/ *(scripts\/run\.sh)$//p')
echo "run.sh: building preset 'run' into build/run, target cow_stress and" \
    "the library it links (${what:-see CMakePresets.json}); log: $log"
if [ ! -f build/run/CMakeCache.txt ]; then
	echo "run.sh: first configure of this tree; on a new machine it also" \
	    "builds the private jemalloc once (about a CPU-minute)"
fi
start=$SECONDS
step() {
	local what=$1
	shift
	if ! "$@" >>"$log" 2>&1; then
		echo "run.sh: $what failed: $*; the end of $log:" >&2
		tail -n 40 "$log" >&2
		exit 1
	fi
}
: >"$log"
step configure cmake --preset run
step build cmake --build --preset run -j2
# Warnings are not errors, but none is expected: show any there is.
if grep -q '^CMake \(Warning\|Deprecation Warning\)' "$log"; then
	echo "run.sh: CMake warned (from $log):" >&2
	grep -A 8 '^CMake \(Warning\|Deprecation Warning\)' "$log" >&2
fi
echo "run.sh: built build/run/stress/cow_stress in $((SECONDS - start)) s;" \
    "running the stress harness"
exec build/run/stress/cow_stress "$@"
