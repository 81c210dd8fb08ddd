#!/usr/bin/env bash
# bench-files.sh - the file benchmark of docs/performance.md ("Files"): a
# state of 256 float32 tensors saved and loaded, cowstore's safetensors
# files against NumPy's and PyTorch's, every configuration back to back in
# one session, with a plain sequential write of the same bytes to the same
# place as the reference. Builds the release preset first. Run it on an
# otherwise idle machine.
#
#   scripts/bench-files.sh [STATE [OUTDIR]]
#
# STATE   the state's size: 1G (default), or 64M for a quick check
# OUTDIR  default docs/perf/files/STATE
# Environment:
#   FILES_REPS  repetitions of every configuration (default 3)
#   FILES_PCTS  write fractions, in percent, of the cowstore saves that run
#               beside cow_snapbench's writers (default "0 10")
#   FILES_DIR   where the saves write (default build/release/filebench:
#               the disk under the build directory; env.txt names the
#               filesystem); it needs about 7 times STATE free
#   FILES_KEEP  1: leave the loaded files in FILES_DIR at the end
#
# Saving (each repetition, each in a fresh process; every save fsyncs its
# files and their directory):
#   cow_snapbench: plain and plain-busy (the references), st-alone (no
#     writer: cow_safetensors_save on the calling thread), st-stream and
#     st-persist-first (jobs, the writers running) at each FILES_PCTS
#   filebench.py save: np-save, np-savez, torch-save, and cowstore's Python
#     bindings (py-save-file, py-snapshot) where the module has them
# Loading (warm: each file read with cat just before; each load a fresh
# process): cow_stload (mapped, and --pread) of the 256-tensor and of a
# 1,000-tensor safetensors file of the same size; filebench.py load:
# np-mmap, npz, torch, np-fromfile, and py-safe-open where the module has
# it. The files loaded are the last repetition's saves (st-alone's for
# cowstore and np-fromfile), each checked against the state as it is saved
# and again as it is loaded: a file that differs stops the script (exit 3).
#
# Files in OUTDIR: runs.jsonl (every save line, in run order), loads.jsonl
# (every load line), env.txt (machine, commit, filesystem, load, which
# methods ran), summary.md and summary.tsv (scripts/files-summary.py).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
state=${1:-1G}
out=${2:-docs/perf/files/$state}
reps=${FILES_REPS:-3}
pcts=${FILES_PCTS:-0 10}
dir=${FILES_DIR:-build/release/filebench}
bytes=$(bench_bytes "$state")
py=/usr/bin/python3
pyenv=(env PYTHONPATH=build/release/python PYTHONDONTWRITEBYTECODE=1)
filebench=stress/bench/filebench.py

scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j2 \
    --target cow_snapbench cow_stload cowstore_python >/dev/null
bin=build/release/stress/bench
mkdir -p "$out" "$dir"
bench_need_free bench-files.sh "$dir" $(( bytes * 7 ))

# cowstore's Python file bindings (issue 38) where this tree has them.
py_saves=()
py_loads=()
if "${pyenv[@]}" "$py" -c 'import cowstore as c
c.save_file, c.snapshot, c.asarray, c.safe_open' 2>/dev/null; then
	py_saves=(py-save-file py-snapshot)
	py_loads=(py-safe-open)
	py_note="cowstore Python file bindings: present (py-save-file, py-snapshot, py-safe-open run)"
else
	py_note="cowstore Python file bindings: absent in this tree (py-save-file, py-snapshot, py-safe-open skipped)"
fi
bench_env "$dir/" \
    "state: $state ($bytes bytes), 256 float32 tensors; reps: $reps; write %: $pcts" \
    "python: $("$py" -c 'import sys, numpy, torch; print(sys.version.split()[0], "numpy", numpy.__version__, "torch", torch.__version__)')" \
    "$py_note" > "$out/env.txt"

snap() { # method pct [options]
	local m=$1 p=$2
	shift 2
	echo "bench-files.sh: cow_snapbench $m at $p% $*" >&2
	"$bin/cow_snapbench" --json --state "$state" --method "$m" \
	    --write-pct "$p" --dir "$dir" "$@" >> "$out/runs.jsonl"
}

pysave() { # method [--keep]
	echo "bench-files.sh: filebench.py save $*" >&2
	"${pyenv[@]}" "$py" "$filebench" save --state "$state" --dir "$dir" \
	    --method "$@" >> "$out/runs.jsonl"
}

warm() { # path: its bytes into the page cache
	find "$1" -type f -exec cat {} + > /dev/null
}

: > "$out/runs.jsonl"
: > "$out/loads.jsonl"
for rep in $(seq "$reps"); do
	echo "bench-files.sh: saving, repetition $rep of $reps" >&2
	keep=()
	if [ "$rep" = "$reps" ]; then
		keep=(--keep)
	fi
	snap plain 0
	snap plain-busy 0
	snap st-alone 0 "${keep[@]}"
	if [ "$rep" = "$reps" ]; then
		mv "$dir/cow_snapbench.safetensors" "$dir/state.safetensors"
	fi
	for p in $pcts; do
		snap st-stream "$p"
		snap st-persist-first "$p"
	done
	for m in np-save np-savez torch-save; do
		pysave "$m" "${keep[@]}"
	done
	for m in "${py_saves[@]}"; do
		pysave "$m"
	done
done
snap plain 0
snap st-alone 0 --tensors 1000 --keep
mv "$dir/cow_snapbench.safetensors" "$dir/state-1000.safetensors"

for rep in $(seq "$reps"); do
	echo "bench-files.sh: loading, repetition $rep of $reps" >&2
	for f in state.safetensors state-1000.safetensors; do
		for flag in "" --pread; do
			warm "$dir/$f"
			"$bin/cow_stload" "$dir/$f" --json $flag >> "$out/loads.jsonl"
		done
	done
	for ml in np-mmap:filebench-npy npz:filebench.npz torch:filebench.pt \
	    np-fromfile:state.safetensors \
	    "${py_loads[@]/%/:state.safetensors}"; do
		warm "$dir/${ml#*:}"
		"${pyenv[@]}" "$py" "$filebench" load --method "${ml%%:*}" \
		    --path "$dir/${ml#*:}" >> "$out/loads.jsonl"
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/env.txt"
if [ "${FILES_KEEP:-0}" != 1 ]; then
	rm -rf "$dir/state.safetensors" "$dir/state-1000.safetensors" \
	    "$dir/filebench-npy" "$dir/filebench.npz" "$dir/filebench.pt"
fi

"$py" scripts/files-summary.py "$out/runs.jsonl" "$out/loads.jsonl" "$out"
echo "bench-files.sh: wrote $out" >&2
