#!/usr/bin/env bash
# run-pair.sh BEFORE_TREE AFTER_TREE - loops.c against two release builds
# (their static libraries): callgrind instructions per iteration (the
# difference of 200,000 and 100,000 iterations), then ROUNDS (default 8)
# alternating timed runs of 2,000,000 iterations each.
set -euo pipefail
B=${1:?usage: run-pair.sh BEFORE_TREE AFTER_TREE [ROUNDS]}
A=${2:?}
rounds=${3:-8}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for v in before after; do
	t=$B; [ $v = after ] && t=$A
	cc -O2 -std=c11 -I"$t/include" -I"$t/build/release/include" \
	    "$here/loops.c" "$t/build/release/libcowstore.a" -lpthread -lm \
	    -o "$work/loops_$v"
done
count() { # BIN MODE N -> instructions
	valgrind --tool=callgrind --callgrind-out-file="$work/cg" "$1" "$2" "$3" \
	    >/dev/null 2>"$work/cg.err"
	sed -n 's/^==[0-9]*== Collected : //p' "$work/cg.err"
}
for mode in clone steal; do
	for v in before after; do
		a=$(count "$work/loops_$v" $mode 100000)
		b=$(count "$work/loops_$v" $mode 200000)
		echo "instructions $mode $v $(( (b - a) / 100000 ))"
	done
done
for r in $(seq 1 "$rounds"); do
	for v in before after; do
		for mode in clone steal; do
			echo "round $r $v $("$work/loops_$v" $mode 2000000)"
		done
	done
done
