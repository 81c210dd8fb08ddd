#!/usr/bin/env bash
# deps.sh - make sure what cowstore needs is on this machine:
#  1. the Debian packages of one set. As root: installs what is missing
#     (apt-get update first). Otherwise: prints the exact command to run and
#     exits 1.
#  2. for arm64: the arm64 sysroot (scripts/arm64-sysroot.sh: Debian's arm64
#     ck and Criterion, downloaded and unpacked, never installed). As root it
#     adds the arm64 architecture to dpkg (dpkg --add-architecture) if it is
#     missing; otherwise it prints what to do and exits 1.
#  3. jemalloc's source tarball (Debian's source package, orig tarball), in
#     the cache ${XDG_CACHE_HOME:-$HOME/.cache}/cowstore, checked against the
#     SHA-256 the repository pins in cmake/jemalloc.sha256. CMake builds a
#     private, prefixed copy of it from there (cmake/jemalloc.cmake). As root
#     it adds a deb-src entry for the configured Debian suites if there is
#     none; otherwise it prints what to do and exits 1.
#
# Usage: scripts/deps.sh [all|run|python|arm64 ...]   (several: their union)
#   all (the default; test.sh, bench.sh, anchors.sh): everything the presets
#       and their tests need, except arm64's
#   python (python-install.sh): what the Python package needs to build and
#       install with pip (run's packages, Python 3's headers, pip,
#       setuptools and wheel)
#   run (run.sh): what the release library and cow_stress need to build: a
#       C compiler, CMake, make and ConcurrencyKit's headers (the run preset
#       has no tests, so no Criterion, clang, valgrind, spin or gnuplot)
#   arm64 (test.sh arm64; docs/arm64.md): Debian's aarch64 cross compiler,
#       qemu-user and the arm64 sysroot
set -euo pipefail
cd "$(dirname "$0")/.."

run_packages=(
	cmake make gcc libc6-dev          # build
	libck-dev                         # ConcurrencyKit's headers
)
all_packages=(
	"${run_packages[@]}"
	clang pkg-config          # build: clang presets, Criterion
	libcriterion-dev          # unit tests
	libclang-rt-dev           # sanitizers and libFuzzer for clang
	valgrind spin             # memcheck, protocol model checking
	python3                   # embedding test (ctypes)
	python3-numpy             # tests/dtype, dlpack.numpy: NumPy as the reference and a DLPack peer
	python3-dev               # the Python module (python/)
	python3-pytest python3-hypothesis  # its tests (tests/python)
	mypy                      # its stubs checked: stubtest, mypy --strict (tests/python/test_stubs.py)
	python3-pip python3-venv python3-setuptools python3-wheel python3-build  # pip install . and python3 -m build (python.package_*)
	python3-torch             # PyTorch 1.13, a DLPack peer of the Python tests
	libdlpack-dev             # dlpack.abi: the legacy ABI as Debian ships it
	g++                       # install test: a C++ consumer
	gnuplot-nox               # benchmark charts
)
arm64_packages=(
	cmake make pkg-config
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross  # the cross compiler and its libc
	qemu-user                 # runs the tests (qemu-aarch64)
)

packages=()
arm64=false
for mode in "${@:-all}"; do
	case $mode in
	run)
		packages+=("${run_packages[@]}")
		;;
	python)
		packages+=("${run_packages[@]}" python3 python3-dev python3-pip python3-setuptools python3-wheel)
		;;
	all)
		packages+=("${all_packages[@]}")
		;;
	arm64)
		packages+=("${arm64_packages[@]}")
		arm64=true
		;;
	*)
		echo "usage: scripts/deps.sh [all|run|python|arm64 ...]" >&2
		exit 2
		;;
	esac
done

is_root() {
	[ "$(id -u)" -eq 0 ]
}

# arm64: apt must know the arm64 packages before the update below (the
# sysroot is made of them; none is installed).
add_arm64=false
if $arm64 && ! dpkg --print-foreign-architectures | grep -qx arm64; then
	if ! is_root; then
		echo "cowstore: apt does not know arm64 packages. Run as root:" >&2
		echo "  dpkg --add-architecture arm64 && apt-get update" >&2
		exit 1
	fi
	echo "cowstore: adding the arm64 architecture to dpkg (for the arm64" \
	    "sysroot's downloads)" >&2
	dpkg --add-architecture arm64
	add_arm64=true
fi

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
	    grep -q "install ok installed"; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -ne 0 ]; then
	if ! is_root; then
		echo "cowstore: missing Debian packages: ${missing[*]}" >&2
		echo "Run as root:" >&2
		echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
		exit 1
	fi
	echo "cowstore: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >&2
	apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
	# The downloaded packages are not needed again (over 1 GB with
	# clang, PyTorch and qemu), and a CI machine's disk may be short.
	apt-get clean >&2
elif $add_arm64; then
	apt-get update -q >&2
fi

if $arm64; then
	scripts/arm64-sysroot.sh
fi

# --- jemalloc source ------------------------------------------------------
read -r je_sha je_file < cmake/jemalloc.sha256
cache=${XDG_CACHE_HOME:-$HOME/.cache}/cowstore
tarball=$cache/$je_file

sha_ok() {
	[ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$je_sha" ]
}

if sha_ok "$tarball"; then
	exit 0
fi

has_source_index() {
	apt-cache showsrc jemalloc 2>/dev/null | grep -q '^Package: jemalloc$'
}

# deb-src twins of the machine's Debian entries (deb822 .sources stanzas
# whose URIs are Debian's, and one-line "deb" entries of sources.list).
add_deb_src() {
	local f out=/etc/apt/sources.list.d/cowstore-deb-src.sources
	: > "$out.tmp"
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && [ "$f" != "$out" ] || continue
		awk 'BEGIN { RS = ""; ORS = "\n\n" }
		    /(^|\n)Types:[^\n]*deb/ && /(^|\n)URIs:[^\n]*debian/ &&
		    !/(^|\n)Types:[^\n]*deb-src/ {
			sub(/(^|\n)Types:[^\n]*/, "\nTypes: deb-src")
			sub(/^\n/, ""); print }' "$f" >> "$out.tmp"
	done
	if [ -f /etc/apt/sources.list ]; then
		sed -n 's/^deb \(.*debian.*\)/deb-src \1/p' /etc/apt/sources.list \
		    > /etc/apt/sources.list.d/cowstore-deb-src.list
		[ -s /etc/apt/sources.list.d/cowstore-deb-src.list ] ||
		    rm -f /etc/apt/sources.list.d/cowstore-deb-src.list
	fi
	if [ -s "$out.tmp" ]; then
		mv "$out.tmp" "$out"
	else
		rm -f "$out.tmp"
	fi
}

if ! has_source_index; then
	if ! is_root; then
		cat >&2 <<EOF
cowstore: jemalloc's source is not in $cache and apt has no source index.
Either, as root, run scripts/deps.sh (it adds a deb-src entry and fetches
it), or put $je_file (SHA-256 $je_sha)
in $cache, or configure with -DCOW_JEMALLOC_SOURCE=PATH, or build without
jemalloc: -DCOW_WITH_JEMALLOC=OFF.
EOF
		exit 1
	fi
	echo "cowstore: adding a deb-src entry for jemalloc's source" >&2
	add_deb_src
	apt-get update -q >&2
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT
# apt drops to the _apt user for downloads when it can write the directory.
if is_root && id _apt >/dev/null 2>&1; then
	chown _apt "$work"
fi
echo "cowstore: fetching jemalloc's source package into $cache" >&2
(cd "$work" && apt-get source -q --download-only jemalloc >&2)
if ! sha_ok "$work/$je_file"; then
	echo "cowstore: $work/$je_file is missing or its SHA-256 is not" \
	    "$je_sha (cmake/jemalloc.sha256)" >&2
	exit 1
fi
mv "$work/$je_file" "$tarball"
