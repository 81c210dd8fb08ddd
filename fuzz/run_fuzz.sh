#!/bin/sh
# run_fuzz.sh - one bounded libFuzzer run, for ctest and CI.
#
#   run_fuzz.sh clean|find WORKDIR SECONDS FUZZER [libFuzzer flags] [SEED_DIR...]
#
# clean: pass when the run ends with no finding; on a finding print each
#        reproducer's path and bytes (hex) and fail.
# find:  the negative control: pass only when the run finds a crash, and,
#        when FUZZ_EXPECT is set, only when the run's output contains it
#        (the finding is the one the control names).
# WORKDIR is emptied; new corpus entries go to WORKDIR/corpus and findings
# to WORKDIR/artifacts, never into the committed seed directories.
set -u
if [ $# -lt 4 ]; then
	echo "usage: $0 clean|find WORKDIR SECONDS FUZZER [ARGS...]" >&2
	exit 2
fi
mode=$1 work=$2 secs=$3 fuzzer=$4
shift 4
case $mode in clean|find) ;; *) echo "$0: bad mode $mode" >&2; exit 2;; esac
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts" || exit 2

expect=${FUZZ_EXPECT:-}
if [ "$mode" = find ] && [ -n "$expect" ]; then
	"$fuzzer" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 \
	    -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
	    "$work/corpus" "$@" > "$work/log" 2>&1
	rc=$?
	cat "$work/log"
else
	"$fuzzer" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 \
	    -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
	    "$work/corpus" "$@"
	rc=$?
fi

found=0
for f in "$work"/artifacts/*; do
	[ -f "$f" ] || continue
	found=$((found + 1))
	size=$(wc -c < "$f")
	echo "=== reproducer: $f ($size bytes)"
	echo "=== replay it with: $fuzzer $f"
	od -An -tx1 -v "$f" | head -n 256
	[ "$size" -gt 4096 ] && echo "=== (first 4096 bytes shown)"
done

if [ "$mode" = find ]; then
	if [ "$rc" -ne 0 ] && [ "$found" -gt 0 ]; then
		if [ -n "$expect" ] && ! grep -qF -- "$expect" "$work/log"; then
			echo "=== negative control FAILED: a finding without '$expect' (exit $rc)"
			exit 1
		fi
		echo "=== negative control: the fuzzer found the planted bug (exit $rc)"
		exit 0
	fi
	echo "=== negative control FAILED: no finding in $secs s (exit $rc)"
	exit 1
fi
if [ "$rc" -ne 0 ] || [ "$found" -gt 0 ]; then
	echo "=== fuzzing FAILED: exit $rc, $found reproducer(s)"
	exit 1
fi
echo "=== no finding in $secs s"
exit 0
