#!/usr/bin/env bash
# deps.sh - make sure the Debian packages cowstore needs are installed.
# As root: installs what is missing (apt-get update first). Otherwise: prints
# the exact command to run and exits 1. Used by run.sh and test.sh.
set -euo pipefail

packages=(
	cmake make gcc clang pkg-config   # build
	libck-dev libjemalloc-dev         # runtime dependencies
	libcriterion-dev                  # unit tests
	libclang-rt-dev                   # sanitizers and libFuzzer for clang
	valgrind spin                     # memcheck, protocol model checking
	gnuplot-nox                       # benchmark charts
)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
	    grep -q "install ok installed"; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "cowstore: missing Debian packages: ${missing[*]}" >&2
	echo "Run as root:" >&2
	echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
	exit 1
fi

echo "cowstore: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
