#!/usr/bin/env bash
# check_configure_quiet.sh - the configure step of scripts/run.sh (the
# preset "run") gives no CMake warning: run.sh keeps CMake's output in a
# log, so a warning there is one nobody reads.
#
# Usage: check_configure_quiet.sh SOURCE_DIR WORK [CMAKE_ARG ...]
#   Configures `cmake --preset run -B WORK CMAKE_ARG...` from SOURCE_DIR
#   (a fresh WORK; the private jemalloc comes from its cache, or is built
#   there once) and fails on any "CMake Warning" or "CMake Deprecation
#   Warning", printing it.
#
# Exit status: 0 when the configure succeeds without warnings, 1 otherwise,
# 2 on a usage error.
set -euo pipefail

if [ $# -lt 2 ] || [ ! -f "$1/CMakePresets.json" ]; then
	echo "usage: check_configure_quiet.sh SOURCE_DIR WORK [CMAKE_ARG ...]" >&2
	exit 2
fi
src=$1 work=$2
shift 2
rm -rf "$work"
mkdir -p "$work"
rc=0
(cd "$src" && cmake --preset run -B "$work/build" "$@") >"$work/configure.log" 2>&1 || rc=$?
if [ "$rc" -ne 0 ]; then
	echo "check_configure_quiet: the configure failed ($rc):"
	cat "$work/configure.log"
	exit 1
fi
if grep -q '^CMake \(Deprecation \)\{0,1\}Warning' "$work/configure.log"; then
	echo "check_configure_quiet: the run preset's configure warned:"
	grep -A 8 '^CMake \(Deprecation \)\{0,1\}Warning' "$work/configure.log"
	exit 1
fi
echo "check_configure_quiet: cmake --preset run${*:+ $*}: no CMake warning"
