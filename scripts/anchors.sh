#!/usr/bin/env bash
# anchors.sh - cowstore side by side with the reference implementations, in
# one run: ROUNDS rounds (default 3), each running the references' run.sh
# (a replica of PyTorch's CPU copy-on-write protocol and Rust's
# Arc::make_mut) and then cow_bench's copies of their loops (anchor_*), the
# contended clone + release and steady materialisation against memcpy.
# Prints a Markdown table of the medians over the rounds with the ratios,
# and keeps every JSON line in OUTDIR.
#
#   scripts/anchors.sh ANCHORS_DIR [ROUNDS [OUTDIR]]
#
# ANCHORS_DIR holds run.sh (the references are not part of this
# repository). Run it on an otherwise idle machine: absolute times on a
# shared VM move by 20-50% between runs; ratios from one run hold.
set -euo pipefail
cd "$(dirname "$0")/.."
anchors=${1:?usage: scripts/anchors.sh ANCHORS_DIR [ROUNDS [OUTDIR]]}
rounds=${2:-3}
out=${3:-docs/perf/anchors}
[ -x "$anchors/run.sh" ] || { echo "anchors.sh: no run.sh in $anchors" >&2; exit 2; }
scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j2 --target cow_bench >/dev/null
bench=build/release/stress/bench/cow_bench
mkdir -p "$out"
rm -f "$out"/round.*.jsonl

for r in $(seq 1 "$rounds"); do
	echo "anchors.sh: round $r of $rounds" >&2
	{
		"$anchors/run.sh" build/anchors
		"$bench" --json --filter anchor_ --sizes 4K,1M,64M,256M |
		    sed 's/^{"bench": "anchor_/{"impl": "cowstore", "bench": "/'
		"$bench" --json --filter _contended |
		    sed 's/^{/{"impl": "cowstore", /'
		"$bench" --json --filter materialize_copy --sizes 1M,64M |
		    grep '"bench": "materialize_copy"' |
		    sed 's/^{"bench": "/{"impl": "cowstore", "bench": "steady_/'
		"$bench" --json --filter memcpy_ --sizes 1M,64M |
		    sed 's/^{/{"impl": "cowstore", /'
	} > "$out/round.$r.jsonl"
done

# Median over the rounds per (impl, bench, bytes, threads), then the table.
cat "$out"/round.*.jsonl | awk '
function field(name,   m) {
	if (match($0, "\"" name "\": ?\"[^\"]*\"")) {
		m = substr($0, RSTART, RLENGTH); sub(/^[^:]*: ?"/, "", m); sub(/"$/, "", m); return m
	}
	if (match($0, "\"" name "\": ?[0-9.]+")) {
		m = substr($0, RSTART, RLENGTH); sub(/^[^:]*: ?/, "", m); return m
	}
	return ""
}
{
	key = field("bench") SUBSEP field("bytes") SUBSEP field("threads")
	impl = field("impl")
	n[impl, key]++
	v[impl, key, n[impl, key]] = field("ns_per_op") + 0
	if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
}
function median(impl, key,   i, j, k, t, a) {
	k = n[impl, key]
	if (k == 0) return -1
	for (i = 1; i <= k; i++) a[i] = v[impl, key, i]
	for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
		if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return a[int((k + 1) / 2)]
}
function size(b) {
	if (b == 0) return "-"
	if (b >= 1048576) return b / 1048576 " MiB"
	return b / 1024 " KiB"
}
function cell(x) { return x < 0 ? "" : sprintf("%.1f", x) }
function ratio(a, b) { return (a < 0 || b <= 0) ? "" : sprintf("%.2f", a / b) }
END {
	print "| operation | bytes | threads | cowstore ns | PyTorch replica ns | Rust Arc ns | cowstore / replica | cowstore / Rust |"
	print "|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= nk; i++) {
		split(order[i], f, SUBSEP)
		c = median("cowstore", order[i])
		t = median("torch_cow_replica", order[i])
		r = median("rust_arc_make_mut", order[i])
		printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", f[1], size(f[2]), f[3],
		    cell(c), cell(t), cell(r), ratio(c, t), ratio(c, r)
	}
	print ""
	for (i = 1; i <= nk; i++) {
		split(order[i], f, SUBSEP)
		c = median("cowstore", order[i])
		if (f[1] == "steady_materialize_copy") {
			m = median("cowstore", "memcpy_rotating" SUBSEP f[2] SUBSEP f[3])
			if (m > 0) printf "materialise a batch of clones at %s: %.0f%% of memcpy into as many buffers (%.1f us against %.1f us)\n",
			    size(f[2]), 100 * m / c, c / 1000, m / 1000
		}
		if (f[1] == "materialize_copy" && f[2] >= 1048576) {
			m = median("cowstore", "memcpy_warm" SUBSEP f[2] SUBSEP f[3])
			if (m > 0) printf "clone, materialise, release at %s (one buffer recycled): %.0f%% of warm memcpy (%.1f us against %.1f us)\n",
			    size(f[2]), 100 * m / c, c / 1000, m / 1000
		}
		if (f[1] == "clone_release_contended" && f[3] > 1) {
			m = median("cowstore", "atomic_pair_contended" SUBSEP f[2] SUBSEP f[3])
			if (m > 0) printf "clone + release of one source, %d threads: %.1f ns, %.2f x a bare contended increment + decrement (%.1f ns)\n",
			    f[3], c, c / m, m
		}
	}
}'
echo "anchors.sh: $rounds rounds in $out/round.*.jsonl" >&2
