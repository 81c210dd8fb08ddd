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
#   locks/<lock>.jsonl     contention and single-thread materialise, per lock
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
    cow_bench_brlock cow_bench_pthread cow_bench_noshadow >/dev/null
bin=build/release/stress/bench
mkdir -p "$out/locks" "$out/tuning" "$out/shadow"

echo "bench.sh: all benchmarks (default build)" >&2
"$bin/cow_bench" --json > "$out/bench.jsonl"

echo "bench.sh: context locks" >&2
for lock in rwlock pflock brlock pthread; do
	exe=$bin/cow_bench_$lock
	[ "$lock" = rwlock ] && exe=$bin/cow_bench
	name=ck_$lock
	[ "$lock" = pthread ] && name=pthread_rwlock
	{ "$exe" --json --filter contention
	  "$exe" --json --filter materialize_ --sizes 4K; } > "$out/locks/$name.jsonl"
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

locks=()
for f in "$out"/locks/*.jsonl; do
	[ "$(basename "$f")" = ck_rwlock.jsonl ] || locks+=("$f")
done
scripts/plot-bench.sh "$out/bench.jsonl" "$img" "${locks[@]}"
echo "bench.sh: wrote $out and $img" >&2
