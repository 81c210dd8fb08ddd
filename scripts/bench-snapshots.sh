#!/usr/bin/env bash
# bench-snapshots.sh - the snapshot benchmark of docs/performance.md
# ("Snapshots"): a state of 256 float32 tensors saved while two writer
# threads run steps, by a cowstore snapshot (stream, and persist first),
# eager staging (fresh and kept buffers) and fork(), each at 0/10/50/100% of
# the tensors written per step, back to back in one session, with a plain
# sequential write of the same bytes to the same file as the reference.
# Builds the release preset first. Run it on an otherwise idle machine.
#
#   scripts/bench-snapshots.sh [STATE [OUTDIR [IMGDIR]]]
#
# STATE   the state's size: 1G (default), 4G, or 64M for a quick check
# OUTDIR  default docs/perf/snapshots/STATE
# IMGDIR  default docs/img; the chart is IMGDIR/snapshots-STATE.png
# Environment:
#   SNAP_REPS  repetitions of every configuration (default 3)
#   SNAP_PCTS  write fractions in percent (default "0 10 50 100")
#   SNAP_DIR   where the saves write (default build/release/snapbench: the
#              disk under the build directory; env.txt records which
#              filesystem); every save, the plain one included, writes one
#              new file there, DIR/cow_snapbench.bin, and fsyncs it
#   SNAP_ARGS  more cow_snapbench options (e.g. "--shape mixed")
#   SNAP_BIN   a folder with cow_snapbench and cow_bench already built (a
#              machine where scripts/deps.sh cannot install the project's
#              packages: build them there with -DCOW_WITH_JEMALLOC=OFF);
#              skips the dependencies, the build, the summary and the
#              chart (run scripts/snapshots-summary.py on OUTDIR later)
#
# Files in OUTDIR: runs.jsonl (every cow_snapbench line, in run order),
# take.jsonl (cow_bench's snapshot group at STATE), env.txt (machine,
# commit, filesystem, load), summary.md and summary.tsv
# (scripts/snapshots-summary.py). Any save whose file differs from the
# state at the snapshot step stops the script (cow_snapbench exits 3).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
state=${1:-1G}
out=${2:-docs/perf/snapshots/$state}
img=${3:-docs/img}
reps=${SNAP_REPS:-3}
pcts=${SNAP_PCTS:-0 10 50 100}
dir=${SNAP_DIR:-build/release/snapbench}
args=${SNAP_ARGS:-}
methods=(cow-stream cow-persist-first eager eager-pre fork)

bytes=$(bench_bytes "$state")

bin=${SNAP_BIN:-build/release/stress/bench}
if [ -z "${SNAP_BIN:-}" ]; then
	scripts/deps.sh
	cmake --preset release >/dev/null
	cmake --build --preset release -j2 --target cow_snapbench cow_bench \
	    >/dev/null
fi
mkdir -p "$out" "$dir"
bench_need_free bench-snapshots.sh "$dir" $(( bytes * 2 ))
bench_env "$dir/cow_snapbench.bin" \
    "state: $state ($bytes bytes); reps: $reps; write %: $pcts; args: $args" \
    > "$out/env.txt"

one() { # method pct
	echo "bench-snapshots.sh: $1 at $2%" >&2
	# shellcheck disable=SC2086 # SNAP_ARGS is a list of options
	"$bin/cow_snapbench" --json --state "$state" --method "$1" \
	    --write-pct "$2" --dir "$dir" $args >> "$out/runs.jsonl"
}

: > "$out/runs.jsonl"
for rep in $(seq "$reps"); do
	echo "bench-snapshots.sh: repetition $rep of $reps" >&2
	one plain 0
	one plain-busy 0
	for p in $pcts; do
		for m in "${methods[@]}"; do
			one "$m" "$p"
		done
	done
done
one plain 0
one plain-busy 0

echo "bench-snapshots.sh: cow_bench snapshot group" >&2
"$bin/cow_bench" --json --filter snapshot_ --sizes "$state" > "$out/take.jsonl"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/env.txt"
if [ -n "${SNAP_BIN:-}" ]; then
	echo "bench-snapshots.sh: wrote $out (no summary: SNAP_BIN)" >&2
	exit 0
fi

/usr/bin/python3 scripts/snapshots-summary.py "$out/runs.jsonl" "$out"
scripts/plot-snapshots.sh "$out/summary.tsv" "$img/snapshots-$state.png" "$state"
echo "bench-snapshots.sh: wrote $out and $img/snapshots-$state.png" >&2
