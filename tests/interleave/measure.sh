#!/usr/bin/env bash
# measure.sh - the figures of docs/interleave.md: every scenario's search
# (schedules per preemption count, time), the same with the statistics
# counters as scheduling points, and every negative control against every
# scenario (the search, stopping at the first violation) plus seeded
# random searches; then the weak-memory mode (--weak): every scenario's
# search, and its controls (g-k) against every scenario in both modes;
# writes the lines of docs/interleave-reports/measure.txt. Then the
# snapshot scenarios (issue 37) and their controls (l-p), which
# `measure.sh snapshot` runs alone (docs/interleave-reports/snapshot.txt).
#
#   tests/interleave/measure.sh > docs/interleave-reports/measure.txt
#   tests/interleave/measure.sh snapshot > docs/interleave-reports/snapshot.txt
#
# Needs the asan build (cmake --preset asan && cmake --build --preset asan).
# Takes about 25 minutes on 2 cores, plus about 10 for the snapshot part.
set -uo pipefail
cd "$(dirname "$0")/../.."
dir=build/asan/tests/interleave
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
if [ ! -x "$dir/cow_interleave_fault_p" ]; then
	echo "not built: cmake --preset asan && cmake --build --preset asan" >&2
	exit 2
fi
scenarios=(pair trio wrap chain shadow functional keep borrowed budget)
snapshots=(snapshot snapshot_get snapshot_release snapshot_fail)
bound() {
	case $1 in
	shadow | functional | snapshot_get | snapshot_release) echo 2 ;;
	*) echo 3 ;;
	esac
}

echo "# Interleaving checker figures (tests/interleave/measure.sh${1:+ $1})."
echo "# Commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- runtime alloc tests/interleave || echo ' plus local changes'), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)."
echo

# One control's search of one scenario, as a line (extra arguments: the
# mode).
control_line() {
	local x=$1 s=$2 out rc found v sum sched
	shift 2
	out=$("$dir/cow_interleave_fault_$x" "$s" --bound "$(bound "$s")" "$@" 2>&1)
	rc=$?
	found=$(printf '%s\n' "$out" | grep -m1 -oE 'found in schedule [0-9]+ .*|explored [0-9]+ schedules .*exhausted' || true)
	v=$(printf '%s\n' "$out" | grep -m1 -oE 'VIOLATION: .*' || true)
	sum=$(printf '%s\n' "$out" | grep -m1 -oE 'SUMMARY: [A-Za-z]+Sanitizer: [a-z-]+ [^ ]+ in [^ ]+' | sed "s#$PWD/##" || true)
	sched=$(printf '%s\n' "$out" | grep -m1 -oE 'interleave: schedule [^ ]+' | cut -d' ' -f3 || true)
	echo "fault_$x $s $* rc=$rc | $found | $v ${sum:+| $sum} ${sched:+| $sched}"
}

# Control @1 on each scenario after it: the weak-memory search, then the
# sequentially consistent one.
control_lines_both_modes() {
	local x=$1 s
	shift
	for s in "$@"; do
		control_line "$x" "$s" --weak
		control_line "$x" "$s"
	done
}

# Seeded random schedules of one control on one scenario until the first
# violation, seeds 1-5 (extra arguments: the mode).
random_lines() {
	local x=$1 s=$2 out n seed
	shift 2
	for seed in 1 2 3 4 5; do
		out=$("$dir/cow_interleave_fault_$x" "$s" --random 100000 --seed "$seed" "$@" 2>&1)
		n=$(printf '%s\n' "$out" | grep -m1 -oE 'found in random schedule [0-9]+' | awk '{print $5}')
		echo "fault_$x $s${*:+ $*} seed $seed: ${n:-NOT FOUND in 100000}"
	done
}

# The snapshot scenarios and their controls.
measure_snapshots() {
	local s x
	echo "## Snapshot scenarios (issue 37): searches, sequentially consistent, then weak-memory"
	for s in "${snapshots[@]}"; do
		"$dir/cow_interleave" "$s" --bound "$(bound "$s")" 2>&1
		"$dir/cow_interleave" "$s" --bound "$(bound "$s")" --weak 2>&1
	done
	"$dir/cow_interleave" snapshot --bound 2 --counters 2>&1
	for s in sb spin; do
		"$dir/cow_interleave" "$s" --bound 63 2>&1
		"$dir/cow_interleave" "$s" --bound 63 --weak 2>&1
	done
	echo
	echo "## Snapshot controls (l-p), per snapshot scenario: the weak-memory search, then the sequentially consistent one"
	echo "# Each line: control, scenario, mode, exit status | where found, or 'exhausted' | first failure"
	for x in l m n o p; do
		control_lines_both_modes "$x" "${snapshots[@]}"
	done
	echo
	echo "## Snapshot controls: seeded random schedules (the control's scenario and mode), seeds 1-5"
	random_lines l snapshot
	random_lines m snapshot
	random_lines n snapshot --weak
	random_lines o snapshot_fail --weak
	random_lines p snapshot_release --weak
}

if [ "${1:-}" = snapshot ]; then
	measure_snapshots
	exit 0
fi
echo "## Searches of the correct build (cow_interleave SCENARIO --bound B)"
for s in "${scenarios[@]}"; do
	"$dir/cow_interleave" "$s" --bound "$(bound "$s")" 2>&1
done
for s in pair wrap borrowed budget; do
	"$dir/cow_interleave" "$s" --bound 63 2>&1
done
for s in shadow functional; do
	"$dir/cow_interleave" "$s" --random 20000 --seed 1 2>&1
done
echo
echo "## The same with the statistics counters as scheduling points (--counters)"
for s in pair trio wrap chain; do
	"$dir/cow_interleave" "$s" --bound 3 --counters 2>&1
done
"$dir/cow_interleave" functional --bound 1 --counters 2>&1
echo

echo "## Negative controls: the search (bound 3; 2 for shadow, functional), per scenario"
echo "# Each line: control, scenario, exit status | where found, or 'exhausted' | first failure"
for x in a b c d e f; do
	for s in "${scenarios[@]}"; do
		control_line "$x" "$s"
	done
done
echo
echo "## Negative controls: seeded random schedules (the control's scenario), seeds 1-5"
echo "# Each line: control, scenario, seed, random schedules until the first violation"
for x in a b c d e f; do
	s=pair
	[ "$x" = d ] && s=chain
	random_lines "$x" "$s"
done
echo
echo "## The weak-memory mode (--weak, history 3): searches of the correct build"
for s in "${scenarios[@]}"; do
	"$dir/cow_interleave" "$s" --bound "$(bound "$s")" --weak 2>&1
done
for s in pair wrap borrowed budget; do
	"$dir/cow_interleave" "$s" --bound 63 --weak 2>&1
done
for s in pair trio wrap; do
	"$dir/cow_interleave" "$s" --bound 3 --weak --history 8 2>&1
done
echo
echo "## Weak-memory controls (g-k), per scenario: the weak-memory search, then the sequentially consistent one"
echo "# Each line: control, scenario, mode, exit status | where found, or 'exhausted' | first failure"
for x in g h i j k; do
	control_lines_both_modes "$x" "${scenarios[@]}"
done
echo
echo "## Weak-memory controls: seeded random schedules in the weak-memory mode, seeds 1-5"
for x in g h i j k; do
	case $x in g | i) s=pair ;; h) s=trio ;; j) s=wrap ;; k) s=budget ;; esac
	random_lines "$x" "$s" --weak
done
echo
measure_snapshots
