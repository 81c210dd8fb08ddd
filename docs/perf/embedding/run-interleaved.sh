#!/usr/bin/env bash
# run.sh BEFORE_BENCH AFTER_BENCH OUTDIR - the must-hold benchmarks of the
# embedding change, the two cow_bench binaries alternating for 8 rounds so
# that the load of a shared machine hits both alike. Writes
# OUTDIR/before.jsonl and OUTDIR/after.jsonl (each line tagged "round").
set -euo pipefail
B=${1:?usage: run.sh BEFORE_BENCH AFTER_BENCH OUTDIR}
A=${2:?}
out=${3:?}
mkdir -p "$out"
rm -f "$out/before.jsonl" "$out/after.jsonl"
for r in 1 2 3 4 5 6 7 8; do
	for v in before after; do
		if [ $v = before ]; then bin=$B; else bin=$A; fi
		{ "$bin" --json --filter memcpy_warm --sizes 1M,64M
		  "$bin" --json --filter materialize_copy --sizes 1M,64M
		  "$bin" --json --filter lazy_clone --sizes 4K,1M,64M
		} | sed "s/^{/{\"round\": $r, /" >> "$out/$v.jsonl"
	done
done
