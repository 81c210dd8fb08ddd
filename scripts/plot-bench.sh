#!/usr/bin/env bash
# plot-bench.sh - turn cow_bench --json output into PNG charts.
#
#   scripts/plot-bench.sh BENCH.jsonl [OUTDIR] [LOCKS.jsonl ...]
#
# BENCH.jsonl: one run of `cow_bench --json` (default lock).
# LOCKS.jsonl: optional runs of every lock variant (cow_bench, cow_bench_pflock
#   ...), each file named after its lock, e.g. ck_pflock.jsonl; the contention
#   chart then draws these instead of BENCH.
# Writes OUTDIR/copy-vs-size.png and OUTDIR/contention.png (default docs/img).
# Installs gnuplot when missing (as root), like the other scripts.
set -euo pipefail
in=${1:?usage: plot-bench.sh BENCH.jsonl [OUTDIR] [LOCKS.jsonl ...]}
out=${2:-docs/img}
shift $(( $# >= 2 ? 2 : 1 ))
if ! command -v gnuplot >/dev/null; then
	if [ "$(id -u)" -eq 0 ]; then
		apt-get update -q && apt-get install -y -q gnuplot-nox
	else
		echo "plot-bench.sh: gnuplot missing; run as root:" >&2
		echo "  apt-get update && apt-get install -y gnuplot-nox" >&2
		exit 1
	fi
fi
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# field NAME: print the value of a JSON field from each line.
extract() { # bench-name threads -> "bytes ns_per_op p10 p90" lines
	grep "\"bench\": \"$1\"" "$2" | grep "\"threads\": $3," |
	    sed -E 's/.*"bytes": ([0-9]+).*"ns_per_op": ([0-9.]+), "p10": ([0-9.]+), "p90": ([0-9.]+).*/\1 \2 \3 \4/'
}

for b in memcpy_warm eager_clone lazy_clone materialize_copy \
    materialize_copy_cold materialize_steal; do
	extract "$b" "$in" 1 > "$tmp/$b.dat"
done

gnuplot <<GP
set terminal pngcairo size 900,600 font ",11" noenhanced
set output "$out/copy-vs-size.png"
set title "Time per operation against size (median, bars: p10-p90)"
set logscale xy
set xlabel "bytes"
set ylabel "ns per operation"
set key top left
set grid
set format x "%.0s%cB"
plot "$tmp/memcpy_warm.dat" u 1:2:3:4 w yerrorlines t "memcpy (warm)", \
     "$tmp/eager_clone.dat" u 1:2:3:4 w yerrorlines t "eager clone", \
     "$tmp/materialize_copy.dat" u 1:2:3:4 w yerrorlines t "materialize by copy (steady)", \
     "$tmp/materialize_copy_cold.dat" u 1:2:3:4 w yerrorlines t "materialize by copy (cold)", \
     "$tmp/lazy_clone.dat" u 1:2:3:4 w yerrorlines t "lazy clone + release", \
     "$tmp/materialize_steal.dat" u 1:2:3:4 w yerrorlines t "materialize by steal"
GP

# Contention: ns per op (per thread) against threads, one line per lock
# (the LOCKS files if given, else BENCH itself as the default lock).
series=()
lockfiles=("$@")
[ ${#lockfiles[@]} -gt 0 ] || lockfiles=("$in")
for f in "${lockfiles[@]}"; do
	name=$(basename "$f" .jsonl)
	[ "$f" = "$in" ] && name=ck_rwlock
	[ "$name" = ck_rwlock ] && name="ck_rwlock (default)"
	grep '"bench": "clone_release_contended"' "$f" |
	    sed -E 's/.*"threads": ([0-9]+).*"ns_per_op": ([0-9.]+), "p10": ([0-9.]+), "p90": ([0-9.]+).*/\1 \2 \3 \4/' \
	    > "$tmp/clone-$name.dat"
	grep '"bench": "peers_materialize"' "$f" | grep '"bytes": 1048576,' |
	    sed -E 's/.*"threads": ([0-9]+).*"ns_per_op": ([0-9.]+), "p10": ([0-9.]+), "p90": ([0-9.]+).*/\1 \2 \3 \4/' \
	    > "$tmp/peers-$name.dat"
	series+=("$name")
done
plot1="" plot2=""
for name in "${series[@]}"; do
	plot1+="\"$tmp/clone-$name.dat\" u 1:2:3:4 w yerrorlines t \"$name\", "
	plot2+="\"$tmp/peers-$name.dat\" u 1:2:3:4 w yerrorlines t \"$name\", "
done
gnuplot <<GP
set terminal pngcairo size 1100,450 font ",11" noenhanced
set output "$out/contention.png"
set multiplot layout 1,2
set grid
set key top left
set xlabel "threads"
set xtics 1
set title "lazy clone + release of one source (ns/op per thread)"
set ylabel "ns per operation"
plot ${plot1%, }
set title "N peers of 1 MiB materialise at once (ns per round)"
set ylabel "ns per round"
plot ${plot2%, }
unset multiplot
GP
echo "wrote $out/copy-vs-size.png $out/contention.png"
