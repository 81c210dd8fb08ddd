#!/bin/sh
# run_fuzz.sh - one bounded libFuzzer run, for ctest and CI.
#
#   run_fuzz.sh clean WORKDIR SECONDS FUZZER [libFuzzer flags] [SEED_DIR...]
#   run_fuzz.sh find WORKDIR SECONDS FUZZER EXPECT [libFuzzer flags] ...
#
# clean: pass when the run ends with no finding; on a finding print each
#        reproducer's path and bytes (hex) and fail.
# find:  the negative control: pass only when the run finds a crash for
#        the control's reason: the fuzzer's report of it contains EXPECT
#        (a fixed string, the target's own failure message), so that a
#        crash, timeout or out-of-memory for another reason is not taken
#        for the planted bug.
# WORKDIR is emptied; new corpus entries go to WORKDIR/corpus and findings
# to WORKDIR/artifacts, never into the committed seed directories; the
# fuzzer's output also goes to WORKDIR/log.
set -u
if [ $# -lt 4 ] || { [ "$1" = find ] && [ $# -lt 5 ]; }; then
	echo "usage: $0 clean WORKDIR SECONDS FUZZER [ARGS...]" >&2
	echo "       $0 find WORKDIR SECONDS FUZZER EXPECT [ARGS...]" >&2
	exit 2
fi
mode=$1 work=$2 secs=$3 fuzzer=$4
shift 4
expect=
case $mode in
clean) ;;
find) expect=$1; shift ;;
*) echo "$0: bad mode $mode" >&2; exit 2;;
esac
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts" || exit 2

# The fuzzer's status, through the pipe that keeps its output in the log.
{ "$fuzzer" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
    "$work/corpus" "$@" 2>&1; echo $? > "$work/status"; } | tee "$work/log"
rc=$(cat "$work/status")

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
	if [ "$rc" -ne 0 ] && [ "$found" -gt 0 ] &&
	    grep -qF -- "$expect" "$work/log"; then
		echo "=== negative control: the fuzzer found the planted bug (exit $rc): $(grep -F -m 1 -- "$expect" "$work/log")"
		exit 0
	fi
	if [ "$found" -gt 0 ]; then
		echo "=== negative control FAILED: a finding (exit $rc), but its report lacks '$expect'"
		exit 1
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
