#!/usr/bin/env bash
# measure_controls.sh - time to detection of each negative control (fault
# switches (a)-(d), (g) and (h), docs/stress.md) in the dev, tsan and asan
# builds, over several seeds; writes the lines of
# docs/stress-reports/controls.txt (and controls-g.txt, controls-h.txt).
#
#   stress/measure_controls.sh [SEEDS [CONTROLS]] > docs/stress-reports/controls.txt
#   stress/measure_controls.sh 20 g > docs/stress-reports/controls-g.txt
#   stress/measure_controls.sh 20 h > docs/stress-reports/controls-h.txt
#
# SEEDS: how many seeds per control and build (default 5); CONTROLS: the
# letters to measure (default "a b c d g"). For (g) and (h) each line also
# says which kind of evidence that its ctest requires the run reported (g:
# a snapshot that changed, first; h: a torn snapshot, and how the
# checkpoint that showed it was saved; see COW_STRESS_EVIDENCE_g and _h in
# stress/CMakeLists.txt). (h) runs under TSan with report_bugs=0, as its
# ctest does (COW_STRESS_TSAN_OPTIONS_h), and again with halt_on_error=1
# (lines "stress-tsan[...]"), where TSan's own report of the race between
# a writer's stamp and the save's read may end the run first. The builds must exist (cmake
# --preset dev|tsan|asan && cmake --build --preset ...); a missing build
# or control binary is skipped with a note. Each run: the control's scenario for
# at most 60 s with --quiet; the line gives the exit status, the wall time
# and the first evidence: a harness violation (with its own timestamp) or
# a sanitizer report (TSan lines add the __tsan_on_report timestamp).
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-5}
controls=${2:-a b c d g}
export TSAN_OPTIONS=halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

scenario() {
	case $1 in
	d) echo clone-storm ;;
	g) echo boundary ;;
	h) echo checkpoint ;;
	*) echo materialize-race ;;
	esac
}

echo "# Negative controls: time to detection (stress/measure_controls.sh $seeds)."
echo "# Commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- runtime alloc stress || echo ' plus local changes'), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores."
echo "# Command per run: cow_stress_fault_<x> --scenario <materialize-race; clone-storm for d; boundary for g; checkpoint for h> --seconds 60 --seed <s> --quiet"
echo "# TSAN_OPTIONS=$TSAN_OPTIONS ASAN_OPTIONS=$ASAN_OPTIONS (h: TSAN_OPTIONS=report_bugs=0 as its ctest, and under TSan also $TSAN_OPTIONS)"
echo "# Each line: build, control, seed, exit status, wall time, first evidence (for g and h: and whether the required one came)."
for build in dev tsan asan; do
	echo
	echo "## $build"
	dir=build/$build/stress
	for x in $controls; do
		if [ ! -x "$dir/cow_stress_fault_$x" ]; then
			echo "(cow_stress_fault_$x not built: cmake --preset $build && cmake --build --preset $build)"
			continue
		fi
		# (h) under TSan: as its ctest runs it, then as the preset's
		# TSAN_OPTIONS would (TSan's own report of the race may come
		# first).
		runs=$TSAN_OPTIONS
		[ "$x" = h ] && runs=report_bugs=0
		[ "$x" = h ] && [ "$build" = tsan ] && runs="report_bugs=0 $TSAN_OPTIONS"
		for topts in $runs; do
		label=$build
		[ "$x" = h ] && [ "$build" = tsan ] && label="tsan[$topts]"
		for s in $(seq 1 "$seeds"); do
			t0=$(date +%s.%N)
			set +e
			out=$(TSAN_OPTIONS=$topts "$dir/cow_stress_fault_$x" \
			    --scenario "$(scenario $x)" \
			    --seconds 60 --seed "$s" --quiet 2>&1)
			rc=$?
			set -e
			t1=$(date +%s.%N)
			ev=$(printf '%s\n' "$out" | grep -m1 -oE \
			    'VIOLATION.*|WARNING: ThreadSanitizer: [a-z-]+( race)?|ERROR: AddressSanitizer: [a-z-]+|runtime error:.*' || true)
			tsan=$(printf '%s\n' "$out" | grep -m1 -oE \
			    'ThreadSanitizer report [0-9.]+ s' || true)
			req=
			if [ "$x" = g ]; then
				# The kinds stress.control.g accepts, in this order.
				if printf '%s\n' "$out" | grep -qE 'VIOLATION.*snapshot.*changed'; then
					req=' | required: a snapshot changed'
				elif printf '%s\n' "$out" | grep -qE 'VIOLATION.*differs from its model'; then
					req=' | required: a tensor lost a write through its export'
				elif printf '%s\n' "$out" | grep -qE 'WARNING: ThreadSanitizer: data race'; then
					req=' | required: TSan data race'
				elif printf '%s\n' "$out" | grep -qE 'WARNING: ThreadSanitizer: heap-use-after-free'; then
					req=' | required: TSan heap-use-after-free'
				elif printf '%s\n' "$out" | grep -qE 'ERROR: AddressSanitizer: heap-use-after-free'; then
					req=' | required: ASan heap-use-after-free'
				else
					req=' | required: NONE'
				fi
			fi
			if [ "$x" = h ]; then
				# The first torn snapshot, and how it was saved.
				torn=$(printf '%s\n' "$out" | grep -m1 -E 'VIOLATION in checkpoint .*torn snapshot' || true)
				case $torn in
				'') req=' | required: NONE' ;;
				*'cancelled, read through cow_snapshot_get'*) req=' | required: torn snapshot, read through cow_snapshot_get (left by a cancelled save)' ;;
				*'read through cow_snapshot_get'*) req=' | required: torn snapshot, read through cow_snapshot_get (kept)' ;;
				*'launched a step late'*) req=' | required: torn snapshot, persisted (launched a step late)' ;;
				*) req=" | required: torn snapshot, persisted ($(printf '%s' "$torn" | grep -oE 'launched (at the take|as the writers resumed)'))" ;;
				esac
			fi
			printf 'stress-%s fault_%s seed %s rc=%s wall=%.3fs | %s %s%s\n' \
			    "$label" "$x" "$s" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
			    "${ev:-NO EVIDENCE}" "$tsan" "$req"
		done
		done
	done
done
