#!/usr/bin/env bash
# test.sh - the whole test suite: installs what it needs, then builds and
# runs every test in each configuration: dev (gcc, -Werror, jemalloc),
# release (gcc -O2; also the library-only build, label library-only) and
# clang (clang -O2), asan (clang ASan+UBSan, and the
# interleaving checker, tests/interleave), memcheck
# (valgrind on a debug build with the system allocator), tsan (clang TSan) and
# fuzz (libFuzzer corpus replay and bounded fuzzing) and arm64 (an aarch64
# cross build, its unit, threads and stress tests under qemu-user;
# docs/arm64.md). Which tests each configuration runs is its test preset's
# (CMakePresets.json: release runs the labels quick and bench, clang quick).
# Stops at the first failing configuration.
#
# Usage: scripts/test.sh [preset ...]   (default: all, in the order above)
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=2
presets=("$@")
if [ ${#presets[@]} -eq 0 ]; then
	presets=(dev release clang asan memcheck tsan fuzz arm64)
fi

# What the presets need: arm64 needs its own (scripts/deps.sh arm64), the
# others everything else.
deps=()
for preset in "${presets[@]}"; do
	if [ "$preset" = arm64 ]; then
		[[ " ${deps[*]} " == *" arm64 "* ]] || deps+=(arm64)
	else
		[[ " ${deps[*]} " == *" all "* ]] || deps+=(all)
	fi
done
scripts/deps.sh "${deps[@]}"

build() {
	cmake --preset "$1" >/dev/null
	cmake --build --preset "$1" -j"$jobs"
}

# What a failed bounded fuzzing run found (the negative controls' planted
# findings left out), printed after ctest's summary so
# that the end of a CI log shows it: the fuzzer's report and each
# reproducer's bytes (replay one with: printf the bytes into a file, then
# build/fuzz/fuzz/TARGET FILE). A CI run's random seed cannot be replayed.
fuzz_findings() {
	local dir f
	for dir in build/fuzz/fuzz/run/*/; do
		case $(basename "$dir") in control_*) continue ;; esac
		# run_fuzz.sh keeps the fuzzer's exit status in status
		if [ "$(cat "$dir/status" 2>/dev/null)" = 0 ] &&
		    ! ls "$dir"artifacts/* >/dev/null 2>&1; then
			continue
		fi
		echo "==== fuzz finding: $(basename "$dir") (exit $(cat "$dir/status" 2>/dev/null)) ===="
		grep -m 10 -E 'ERROR|SUMMARY|runtime error|^fuzz_[a-z_]+:|Assert|#[0-9]+ 0x' \
		    "$dir/log" || true
		for f in "$dir"artifacts/*; do
			[ -f "$f" ] || continue
			echo "reproducer $(basename "$f") ($(wc -c < "$f") bytes):"
			od -An -tx1 -v "$f" | head -n 24
		done
	done
}

# Disk: a CI machine may have little space to spare (a run once stopped at
# "No space left on device" while linking the dev build). The log says what
# was free and what each build tree took; under CI=true (a fresh clone that
# nobody reads afterwards) a configuration's build tree is removed once it
# has passed, so the run needs room for its largest tree, not for all of
# them.
free_space() {
	df -Pk . | awk 'NR == 2 { printf "%.1f GiB free", $4 / 1048576 }'
}
echo "==== cowstore tests: disk: $(free_space) ===="

for preset in "${presets[@]}"; do
	echo "==== cowstore tests: $preset ===="
	start=$SECONDS
	case "$preset" in
	memcheck)
		build memcheck
		ctest --preset memcheck
		;;
	fuzz)
		if [ -f fuzz/CMakeLists.txt ]; then
			build fuzz
			ctest --preset fuzz || { fuzz_findings; exit 1; }
		else
			echo "(no fuzz targets yet)"
		fi
		;;
	*)
		build "$preset"
		ctest --preset "$preset"
		;;
	esac
	echo "==== cowstore tests: $preset passed in $((SECONDS - start)) s" \
	    "(build/$preset: $(du -sh "build/$preset" | cut -f1);" \
	    "$(free_space)) ===="
	if [ "${CI:-}" = true ]; then
		rm -rf "build/$preset"
	fi
done
