#!/usr/bin/env bash
# bench.sh - one benchmark run for docs/performance.md: builds the release
# configuration, runs every cow_bench variant and writes JSON lines and the
# charts into IMGDIR (defaults docs/perf and docs/img). Takes about five
# minutes; run it on an otherwise idle machine.
#
#   scripts/bench.sh [OUTDIR [IMGDIR]]
#
# Files (one JSON object per line, see stress/bench/bench_main.c):
#   bench.jsonl            every benchmark, default build (ck_rwlock, jemalloc)
#   locks/<lock>.<r>.jsonl contention and single-thread materialise, per lock,
#                          rounds r = 1-3; locks/<lock>.jsonl: the median round
#   tuning/<setting>.jsonl materialise by copy under each allocator setting
#   shadow/<build>-<k>.jsonl  the reshape-alias checks' cost, 3 runs each
# and IMGDIR/copy-vs-size.png, IMGDIR/contention.png (scripts/plot-bench.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/perf}
img=${2:-docs/img}
scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j2 --target cow_bench cow_bench_pflock \
    cow_bench_pthread cow_bench_noshadow >/dev/null
bin=build/release/stress/bench
mkdir -p "$out/locks" "$out/tuning" "$out/shadow"

echo "bench.sh: all benchmarks (default build)" >&2
"$bin/cow_bench" --json > "$out/bench.jsonl"

# The lock variants run in turn, three rounds, so that a change in the
# machine (this VM's two vCPUs are not equal, and the host moves them) hits
# every variant alike; locks/<lock>.jsonl keeps, for each benchmark, the
# round with the median time (locks/<lock>.<round>.jsonl are the rounds).
echo "bench.sh: context locks" >&2
lock_names=(ck_rwlock ck_pflock pthread_rwlock)
lock_bins=(cow_bench cow_bench_pflock cow_bench_pthread)
for round in 1 2 3; do
	for i in "${!lock_bins[@]}"; do
		exe=$bin/${lock_bins[$i]}
		{ "$exe" --json --filter contention
		  "$exe" --json --filter materialize_ --sizes 4K; } \
		    > "$out/locks/${lock_names[$i]}.$round.jsonl"
	done
done
for name in "${lock_names[@]}"; do
	awk '{ key = $0; sub(/, "ns_per_op".*/, "", key)
	       v = $0; sub(/.*"ns_per_op": /, "", v); sub(/,.*/, "", v)
	       n[key]++; ns[key, n[key]] = v + 0; line[key, n[key]] = $0
	       if (n[key] == 1) order[++keys] = key }
	     END { for (k = 1; k <= keys; k++) { key = order[k]
	             for (i = 1; i <= n[key]; i++) { below = 0
	               for (j = 1; j <= n[key]; j++)
	                 below += ns[key, j] < ns[key, i] ||
	                     (ns[key, j] == ns[key, i] && j < i)
	               if (below == int((n[key] - 1) / 2)) { print line[key, i]; break } } } }' \
	    "$out"/locks/"$name".[123].jsonl > "$out/locks/$name.jsonl"
done

echo "bench.sh: allocator settings" >&2
tune() { # name env...
	local name=$1
	shift
	env "$@" "$bin/cow_bench" --json --filter materialize_copy \
	    --sizes 1M,64M,256M > "$out/tuning/$name.jsonl"
}
tune default
tune no-thp COW_THP=0
tune decay-10s COW_JEMALLOC_DECAY_MS=10000
tune decay-0 COW_JEMALLOC_DECAY_MS=0
tune decay-0-no-thp COW_JEMALLOC_DECAY_MS=0 COW_THP=0
tune cap-32m COW_RETAIN_LIMIT_MB=32
tune system COW_BENCH_ALLOCATOR=system

echo "bench.sh: reshape-alias checks" >&2
for k in 1 2 3; do
	"$bin/cow_bench_noshadow" --json --filter shadow > "$out/shadow/noshadow-$k.jsonl"
	"$bin/cow_bench" --json --filter shadow > "$out/shadow/shadow-$k.jsonl"
done

scripts/plot-bench.sh "$out/bench.jsonl" "$img" "$out/locks/ck_rwlock.jsonl" \
    "$out/locks/ck_pflock.jsonl" "$out/locks/pthread_rwlock.jsonl"
echo "bench.sh: wrote $out and $img" >&2
