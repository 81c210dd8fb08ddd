#!/usr/bin/env bash
# measure_controls.sh - time to detection of each negative control (fault
# switches (a)-(d), docs/stress.md) in the dev, tsan and asan builds, over
# several seeds; writes the lines of docs/stress-reports/controls.txt.
#
#   stress/measure_controls.sh [SEEDS] > docs/stress-reports/controls.txt
#
# SEEDS: how many seeds per control and build (default 5). The builds must
# exist (cmake --preset dev|tsan|asan && cmake --build --preset ...); a
# missing one is skipped with a note. Each run: the control's scenario for
# at most 60 s with --quiet; the line gives the exit status, the wall time
# and the first evidence: a harness violation (with its own timestamp) or
# a sanitizer report (TSan lines add the __tsan_on_report timestamp).
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-5}
export TSAN_OPTIONS=halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

scenario() { [ "$1" = d ] && echo clone-storm || echo materialize-race; }

echo "# Negative controls: time to detection (stress/measure_controls.sh $seeds)."
echo "# Commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- runtime alloc stress || echo ' plus local changes'), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores."
echo "# Command per run: cow_stress_fault_<x> --scenario <materialize-race, clone-storm for d> --seconds 60 --seed <s> --quiet"
echo "# TSAN_OPTIONS=$TSAN_OPTIONS ASAN_OPTIONS=$ASAN_OPTIONS"
echo "# Each line: build, control, seed, exit status, wall time, first evidence."
for build in dev tsan asan; do
	echo
	echo "## $build"
	dir=build/$build/stress
	if [ ! -x "$dir/cow_stress_fault_a" ]; then
		echo "(not built: cmake --preset $build && cmake --build --preset $build)"
		continue
	fi
	for x in a b c d; do
		for s in $(seq 1 "$seeds"); do
			t0=$(date +%s.%N)
			set +e
			out=$("$dir/cow_stress_fault_$x" --scenario "$(scenario $x)" \
			    --seconds 60 --seed "$s" --quiet 2>&1)
			rc=$?
			set -e
			t1=$(date +%s.%N)
			ev=$(printf '%s\n' "$out" | grep -m1 -oE \
			    'VIOLATION.*|WARNING: ThreadSanitizer: [a-z-]+( race)?|ERROR: AddressSanitizer: [a-z-]+|runtime error:.*' || true)
			tsan=$(printf '%s\n' "$out" | grep -m1 -oE \
			    'ThreadSanitizer report [0-9.]+ s' || true)
			printf 'stress-%s fault_%s seed %s rc=%s wall=%.3fs | %s %s\n' \
			    "$build" "$x" "$s" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
			    "${ev:-NO EVIDENCE}" "$tsan"
		done
	done
done
