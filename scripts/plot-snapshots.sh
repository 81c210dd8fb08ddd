#!/usr/bin/env bash
# plot-snapshots.sh - the snapshot benchmark's chart (docs/performance.md,
# "Snapshots") from scripts/snapshots-summary.py's summary.tsv.
#
#   scripts/plot-snapshots.sh SUMMARY.tsv OUT.png [TITLE]
#
# Six panels against the fraction of tensors written per step, one line per
# method: the writers' stall, the peak extra memory, the writers' time lost,
# the step time p99 during the save, the save's wall time and its
# throughput against the plain write. Needs gnuplot (plot-bench.sh says how
# to install it).
set -euo pipefail
in=${1:?usage: plot-snapshots.sh SUMMARY.tsv OUT.png [TITLE]}
png=${2:?usage: plot-snapshots.sh SUMMARY.tsv OUT.png [TITLE]}
title=${3:-}
command -v gnuplot >/dev/null || {
	echo "plot-snapshots.sh: gnuplot missing (see scripts/plot-bench.sh)" >&2
	exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
methods="cow-stream cow-persist-first eager eager-pre fork"
for m in $methods; do
	awk -F'\t' -v m="$m" 'NR > 1 && $1 == m' "$in" > "$tmp/$m.dat"
done
# plot COLUMN SCALE: one line per method.
plot() {
	local s="" m k=1
	for m in $methods; do
		s+="\"$tmp/$m.dat\" u 2:(\$$1/$2) w linespoints lt $k t \"$m\", "
		k=$((k + 1))
	done
	echo "${s%, }"
}
mkdir -p "$(dirname "$png")"
gnuplot <<GP
set terminal pngcairo size 1350,800 font ",10" noenhanced
set output "$png"
set multiplot layout 2,3 title "Saving a state of 256 float32 tensors ($title) while 2 writers run steps (medians)"
set grid
set linetype 1 lc rgb "#1f77b4" lw 2 pt 7
set linetype 2 lc rgb "#2ca02c" lw 2 pt 5
set linetype 3 lc rgb "#d62728" lw 1 pt 9
set linetype 4 lc rgb "#ff7f0e" lw 1 pt 11
set linetype 5 lc rgb "#7f7f7f" lw 1 pt 13
set key below font ",9" maxrows 2
set xlabel "tensors written per step (%)"
set xrange [-5:105]
set xtics (0, 10, 50, 100)
set logscale y
set title "writers' stall (µs; take, copy, fork; persist-first: + the save's start)"
plot $(plot 3 1e3)
unset logscale y
unset key
set title "peak extra memory (x the state; summed Pss)"
set yrange [0:*]
plot $(plot 10 1)
set title "writers' time lost to the save (ms)"
set yrange [*:*]
plot $(plot 9 1e6)
set title "step time p99 during the save (ms)"
set yrange [0:*]
plot $(plot 5 1e6)
set title "save wall time, stall to fsync (ms)"
plot $(plot 12 1e6)
set title "save throughput / plain write (dashed: the goal, 0.8)"
set offsets graph 0, graph 0, graph 0.15, graph 0
plot $(plot 13 1), 0.8 w l dt 2 lc rgb "black" t "goal 0.8"
unset multiplot
GP
echo "wrote $png"
