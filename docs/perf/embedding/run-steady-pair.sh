#!/usr/bin/env bash
# run-steady-pair.sh BEFORE AFTER OUTDIR - the steady materialise loop
# (steady_loop.c) against warm memcpy, built against two checkouts' release
# libraries (each with build/release/libcowstore.a built) and run
# alternately for 8 rounds at 1 MiB and 64 MiB, pinned to the last CPU.
# Writes OUTDIR/before.jsonl and OUTDIR/after.jsonl (lines tagged "round").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
before=${1:?usage: run-steady-pair.sh BEFORE AFTER OUTDIR}
after=${2:?}
out=${3:?}
mkdir -p "$out"
build() { # checkout exe: the code before issue 16 linked Debian's jemalloc
	local lib=$1/build/release/libcowstore.a extra=
	if nm "$lib" 2>/dev/null | grep ' U mallocx$' >/dev/null; then extra=-ljemalloc; fi
	cc -O2 -std=c11 -I"$1/include" -I"$1/build/release/include" \
	    "$here/steady_loop.c" "$lib" $extra -lpthread -lm -o "$2"
}
build "$before" "$out/steady_loop.before"
build "$after" "$out/steady_loop.after"
cpu=$(($(nproc) - 1))
rm -f "$out/before.jsonl" "$out/after.jsonl"
for r in 1 2 3 4 5 6 7 8; do
	for v in before after; do
		for mib in 1 64; do
			taskset -c "$cpu" "$out/steady_loop.$v" "$mib" 15
		done | sed "s/^{/{\"round\": $r, /" >> "$out/$v.jsonl"
	done
done
rm -f "$out/steady_loop.before" "$out/steady_loop.after"
