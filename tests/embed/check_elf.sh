#!/usr/bin/env bash
# check_elf.sh LIBRARY - what a host that loads LIBRARY gets: it needs no
# libjemalloc, libstdc++ or libgcc_s, has no STATIC_TLS flag (so dlopen
# cannot run out of static TLS), is NODELETE (its thread-exit and fork
# handlers outlive dlclose), and exports only cow_ symbols (no cow__
# internals). Prints each problem and exits 1 if there is any.
set -euo pipefail
lib=${1:?usage: check_elf.sh LIBRARY}
status=0
problem() {
	echo "check_elf: $lib: $*"
	status=1
}

dyn=$(readelf -dW "$lib")
while read -r needed; do
	problem "NEEDED $needed"
done < <(sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' <<<"$dyn" |
    grep -E '^lib(jemalloc|stdc\+\+|gcc_s)' || true)
if grep -E '\(FLAGS\)' <<<"$dyn" | grep -q STATIC_TLS; then
	problem "has the STATIC_TLS flag (initial-exec TLS: dlopen may fail)"
fi
if ! grep -E '\(FLAGS_1\)' <<<"$dyn" | grep -q NODELETE; then
	problem "is not NODELETE (link with -z nodelete)"
fi
# Defined, global or weak, default-visibility dynamic symbols (ABS entries
# are version definitions, not code or data).
bad=$(readelf --dyn-syms -W "$lib" |
    awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && $7 != "ABS" &&
         ($5 == "GLOBAL" || $5 == "WEAK") && $6 == "DEFAULT" {
	     name = $8; sub(/@.*/, "", name)
	     if (name !~ /^cow_[a-z0-9]/) print name }' | sort -u | tr '\n' ' ')
if [ -n "$bad" ]; then
	problem "exports symbols without the cow_ prefix: $bad"
fi
if [ "$status" -eq 0 ]; then
	echo "check_elf: $lib: ok ($(readelf --dyn-syms -W "$lib" |
	    grep -c ' cow_') cow_ symbols)"
fi
exit "$status"
