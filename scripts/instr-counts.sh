#!/usr/bin/env bash
# instr-counts.sh - instructions per call of four hot operations (lazy
# clone, release, steal, tensor const data), counted by valgrind's
# callgrind in the driver stress/bench/instr_count.c, for checking that a
# refactor leaves them unchanged: run it on the build before and after and
# compare the tables.
#
#   scripts/instr-counts.sh [BUILD_DIR]      (default build/release)
#
# Build first: cmake --preset release && cmake --build build/release -j2
# (the counts of the release preset are the ones that matter). N (default
# 100000, a multiple of 16) sets the number of calls.
#
# Instruction counts are deterministic: callgrind counts the instructions
# the program executes, not time, so the same binary gives the same counts
# on any run, loaded machine or not (they change with the code, the
# compiler and its flags, and the libraries linked in). Each operation is
# run at N, 2N and 3N calls, counting only inside the driver's function
# instr_<operation> (--toggle-collect); the difference between the 2N and
# the N run is the cost of N calls, set-up and first-call costs cancelled
# exactly, and the 3N run checks that the next N calls cost the same.
# Columns:
#   Ir/call    instructions per call in the measuring function: the call
#              and everything under it, plus the driver's loop around it
#   in API fn  the part inside the public function itself (inclusive of
#              what it calls); the rest is the driver's loop
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
n=${N:-100000}
exe=$build/stress/bench/cow_instr_count
ops=(lazy_clone release steal tensor_const_data)
fns=(cow_storage_lazy_clone cow_storage_release cow_storage_mutable_data
    cow_tensor_const_data)

command -v valgrind >/dev/null ||
    { echo "instr-counts.sh: valgrind is not installed" >&2; exit 2; }
[ -x "$exe" ] || { echo "instr-counts.sh: no $exe; build it first:" \
    "cmake --preset release && cmake --build build/release -j2" >&2; exit 2; }
case $n in
	''|*[!0-9]*) echo "instr-counts.sh: N must be a number" >&2; exit 2 ;;
esac
if [ $((n % 16)) -ne 0 ] || [ "$n" -eq 0 ]; then
	echo "instr-counts.sh: N must be a positive multiple of 16" >&2
	exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# count OP CALLS FN: prints the total Ir collected and FN's inclusive Ir.
count() {
	local out=$tmp/$1.$2
	valgrind --tool=callgrind --callgrind-out-file="$out" \
	    --collect-atstart=no --toggle-collect="instr_$1*" \
	    "$exe" "$1" "$2" 2>"$out.log" ||
	    { cat "$out.log" >&2; echo "instr-counts.sh: $1 $2 failed" >&2; exit 1; }
	local total fn
	total=$(sed -n 's/^totals: *//p' "$out")
	fn=$(callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$out" |
	    awk -v fn="$3" '$0 ~ (":" fn " \\[") { gsub(",", "", $1); s += $1 }
	        END { print s + 0 }')
	echo "$total $fn"
}

cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
echo "# $(valgrind --version), $("$cc" --version | head -n 1), CMAKE_BUILD_TYPE=$type"
echo "# driver: $exe; N = $n calls; per call = (Ir at 2N - Ir at N) / N"
echo
printf '| %-17s | %-24s | %10s | %10s |\n' operation "public function" \
    Ir/call "in API fn"
printf '|%s|%s|%s|%s|\n' "-------------------" "--------------------------" \
    "-----------:" "-----------:"
status=0
for i in "${!ops[@]}"; do
	op=${ops[$i]}
	fn=${fns[$i]}
	read -r t1 f1 < <(count "$op" "$n" "$fn")
	read -r t2 f2 < <(count "$op" $((2 * n)) "$fn")
	read -r t3 f3 < <(count "$op" $((3 * n)) "$fn")
	if [ $((t3 - t2)) -ne $((t2 - t1)) ] || [ $((f3 - f2)) -ne $((f2 - f1)) ]; then
		echo "instr-counts.sh: $op: calls N+1..2N and 2N+1..3N differ" \
		    "($((t2 - t1)) and $((t3 - t2)) instructions)" >&2
		status=1
	fi
	awk -v op="$op" -v fn="$fn" -v n="$n" -v t=$((t2 - t1)) -v f=$((f2 - f1)) \
	    'BEGIN { printf "| %-17s | %-24s | %10.4f | %10.4f |\n", op, fn, t / n, f / n }'
done
exit $status
