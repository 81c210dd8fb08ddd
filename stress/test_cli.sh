#!/usr/bin/env bash
# test_cli.sh - cow_stress's command line: the exact messages and exit
# statuses of docs/stress.md ("Options", "Output"). One case per call, each
# a ctest test (stress/CMakeLists.txt, stress.cli.<case>).
#
# Usage: test_cli.sh COW_STRESS CASE SCRATCH_DIR
#
# Prints "ok: CASE" and exits 0 when every check of CASE holds; otherwise
# prints "FAIL: <what>" with the run's exit status, stdout and stderr, and
# exits 1. Exit status 2: a usage error of this script.
#
# The case control_old_json must fail: it expects what cow_stress did before
# a --json path was checked before the run (the run, then PASS, then an
# unprefixed error), so it shows that these checks tell the two apart.
set -uo pipefail

if [ $# -ne 3 ]; then
	echo "usage: $0 COW_STRESS CASE SCRATCH_DIR" >&2
	exit 2
fi
bin=$1
case_name=$2
dir=$3
rm -rf "$dir"
mkdir -p "$dir" || exit 2

rc=0
# run ARGS...: runs cow_stress (stderr is a file, never a terminal); sets
# rc, and leaves the output in $dir/out and $dir/err.
run() {
	"$bin" "$@" >"$dir/out" 2>"$dir/err"
	rc=$?
}

fail() {
	echo "FAIL: $*"
	echo "--- exit status $rc; stdout:"
	cat "$dir/out"
	echo "--- stderr:"
	cat "$dir/err"
	exit 1
}

expect_rc() {
	[ "$rc" -eq "$1" ] || fail "exit status $rc, expected $1"
}

# The whole of stderr is exactly this one line.
expect_err() {
	[ "$(cat "$dir/err")" = "$1" ] && [ "$(wc -l <"$dir/err")" -eq 1 ] ||
		fail "stderr is not exactly: $1"
}

expect_out_empty() {
	[ ! -s "$dir/out" ] || fail "stdout is not empty"
}

# stdout has a line that is exactly this.
expect_out_line() {
	grep -qxF -- "$1" "$dir/out" || fail "no stdout line: $1"
}

# stdout has a line that matches this extended regex as a whole.
expect_out_match() {
	grep -qxE -- "$1" "$dir/out" || fail "no stdout line matches: $1"
}

# A count of 1 followed by a plural, or 0 by a singular, anywhere in the
# output ("1 scenarios", "0 violation").
nouns='scenario|round|thread|core|violation|byte|block|buffer|invariant|source|storage|context|race|peer|steal|pair|hand-off|view|write|read|reshape|clone|copie|copy|time|item|allocation'
expect_plurals_right() {
	local bad
	bad=$(grep -hoE "(^|[^0-9.x])1 (lazy |eager |install |sole-holder )?(${nouns})s\b|(^|[^0-9.x])0 (lazy |eager |install |sole-holder )?(${nouns})\b([^s]|$)" \
	    "$dir/out" "$dir/err")
	[ -z "$bad" ] || fail "wrong plural: $(echo "$bad" | tr '\n' '|')"
}

cores=$(getconf _NPROCESSORS_ONLN)
core_word=cores
[ "$cores" -eq 1 ] && core_word=core

# progress_lines FILE: the progress lines of FILE, one per line, as
# "scenario index/count at of round of_rounds end_in" (end_in "unknown"
# when the expected end is unknown); fails on a progress line of another
# form.
progress_fields() {
	local line re_head re_end
	re_head='^cow_stress: \[ *[0-9]+\.[0-9] s\] ([a-z-]+) \(([0-9]+)/([0-9]+)\) at ([0-9]+\.[0-9])( of ([0-9]+\.[0-9]))? s: round ([0-9]+)( of ([0-9]+))?, [0-9]+ ops/s, [0-9]+ (copy|copies), [0-9]+ (steal|steals), [0-9]+ (violation|violations); expected end (.*)$'
	re_end='^in ([0-9]+\.[0-9]) s, at ([0-9]{4}-[0-9]{2}-[0-9]{2} )?[0-9]{2}:[0-9]{2}:[0-9]{2}$'
	while IFS= read -r line; do
		case "$line" in
		"cow_stress: ["*) ;;
		*) continue ;;
		esac
		[[ $line =~ $re_head ]] || fail "malformed progress line: $line"
		local name=${BASH_REMATCH[1]} idx=${BASH_REMATCH[2]}
		local cnt=${BASH_REMATCH[3]} at=${BASH_REMATCH[4]}
		local of=${BASH_REMATCH[6]:--} round=${BASH_REMATCH[7]}
		local rounds=${BASH_REMATCH[9]:--} end=${BASH_REMATCH[13]}
		local plural_ok=1
		# Singular and plural agree with their counts.
		[[ $line =~ (^|[^0-9])1\ (copies|steals|violations)[,\;] ]] &&
			plural_ok=0
		[[ $line =~ [^0-9]([02-9]|[0-9]{2,})\ (copy|steal|violation)[,\;] ]] &&
			plural_ok=0
		[ "$plural_ok" -eq 1 ] || fail "wrong plural: $line"
		if [[ $end =~ $re_end ]]; then
			end=${BASH_REMATCH[1]}
		elif [[ $end =~ ^unknown\ \(([0-9]+)\ more\ (scenario|scenarios)\ with\ no\ time\ limit\)$ ]]; then
			end=unknown
		else
			fail "malformed expected end: $line"
		fi
		echo "$name $idx/$cnt $at $of $round $rounds $end"
	done <"$1"
}

# awk_true EXPR VARS...: exit 0 when the awk expression holds.
awk_true() {
	local expr=$1
	shift
	awk "$@" "BEGIN { exit !($expr) }"
}

case "$case_name" in
json_unwritable)
	# Refused before the run: no header, no report, exit 2.
	run --json "$dir/no-such-dir/report.json"
	expect_rc 2
	expect_err "cow_stress: cannot write $dir/no-such-dir/report.json: No such file or directory"
	expect_out_empty
	;;
json_directory)
	run --json "$dir"
	expect_rc 2
	expect_err "cow_stress: cannot write $dir: Is a directory"
	expect_out_empty
	;;
json_full)
	# Opened, then the write fails at the end: the report stands and the
	# failure is named; a passing run exits 2.
	[ -c /dev/full ] || fail "/dev/full is missing"
	run --json /dev/full --scenario wrap-race --iterations 1 --threads 2 \
	    --seed 1 --quiet
	expect_rc 2
	expect_err "cow_stress: cannot write /dev/full: No space left on device"
	expect_out_match 'cow_stress: PASS: 1 scenario, [0-9]+ invariants checked, 0 violations, 0 bytes leaked \(seed 0x0000000000000001, .* build\)'
	;;
json_written)
	run --json "$dir/report.json" --scenario wrap-race --iterations 1 \
	    --threads 2 --quiet
	expect_rc 0
	[ ! -s "$dir/err" ] || fail "stderr is not empty"
	grep -qF '"result": "pass"' "$dir/report.json" ||
		fail "report.json has no \"result\": \"pass\""
	grep -qF '{"name": "wrap-race", "rounds": 1,' "$dir/report.json" ||
		fail "report.json has no wrap-race entry with 1 round"
	;;
control_old_json)
	# What cow_stress did before: ran, printed PASS, then the bare error.
	run --json "$dir/no-such-dir/report.json" --scenario wrap-race \
	    --iterations 1 --threads 2
	expect_rc 2
	expect_out_match 'result: PASS: .*'
	expect_err "$dir/no-such-dir/report.json: No such file or directory"
	;;
size_suffixes)
	for bad in 2g 1025m 1048577k 1t 63 1.5m; do
		run --size "$bad"
		expect_rc 2
		expect_err "cow_stress: --size $bad: need 64 bytes to 1 GiB, as a number of bytes with an optional suffix k, m or g (KiB, MiB, GiB)"
		expect_out_empty
	done
	# 1g and 1G are accepted: the options are checked in order, so the
	# error is the next option's (a real 1 GiB run is stress.cli_size_1g).
	for good in 1g 1G 1024m 1048576k 1073741824; do
		run --size "$good" --threads 300
		expect_rc 2
		expect_err "cow_stress: --threads 300: need 2 to 256"
	done
	for pair in 64k:65536 1m:1048576 4096:4096; do
		run --size "${pair%%:*}" --scenario wrap-race --iterations 1 \
		    --threads 2 --seed 1
		expect_rc 0
		expect_out_line "cow_stress: seed 0x0000000000000001, 2 threads on $cores $core_word, ${pair#*:}-byte buffers, 1 scenario, at most 1 round"
	done
	;;
seconds_bounds)
	for bad in 1e9 10000001 0 -1 abc; do
		run --seconds "$bad"
		expect_rc 2
		expect_err "cow_stress: --seconds $bad: need a number above 0 and at most 10000000"
		expect_out_empty
	done
	run --seconds 1e7 --threads 300
	expect_err "cow_stress: --threads 300: need 2 to 256"
	for bad in 0.05 0 1e8; do
		run --progress "$bad"
		expect_rc 2
		expect_err "cow_stress: --progress $bad: need 0.1 to 10000000 seconds"
	done
	;;
plurals)
	# One scenario, one round, two threads: every count that can be 1 is.
	run --scenario wrap-race --iterations 1 --threads 2 --seed 1
	expect_rc 0
	expect_out_line "cow_stress: seed 0x0000000000000001, 2 threads on $cores $core_word, 16384-byte buffers, 1 scenario, at most 1 round"
	expect_out_line "  wrap-race               1 install race of 2 threads: 1 context installed (1 per race)"
	expect_out_match 'result: PASS: 0 violations, 0 bytes leaked, [0-9]+ invariants checked in [0-9.]+ s'
	expect_plurals_right
	run --scenario materialize-race --iterations 1 --threads 2 --seed 1
	expect_rc 0
	expect_out_line "  materialize-race        1 context of 2 peers: 1 steal, 1 copy (1 and 1 per context)"
	expect_plurals_right
	run --scenario release-vs-materialize --iterations 1 --threads 2 --seed 1
	expect_rc 0
	expect_out_match '  release-vs-materialize  1 pair; materialiser decisions under a moving count: (1 copy, 0 steals|0 copies, 1 steal)'
	expect_plurals_right
	run --scenario clone-storm --iterations 1 --threads 2 --seed 1 --seconds 1
	expect_rc 0
	expect_out_line "cow_stress: seed 0x0000000000000001, 2 threads on $cores $core_word, 16384-byte buffers, 1 scenario, 1.0 s, at most 1 round"
	expect_out_match '  clone-storm             1 source; up to [0-9]+ storages sharing one; (0 sole-holder writes stole|1 sole-holder write stole)'
	expect_plurals_right
	run --scenario materialize-race --iterations 1 --threads 2 --seed 1 --quiet
	expect_rc 0
	expect_out_match 'cow_stress: PASS: 1 scenario, [0-9]+ invariants checked, 0 violations, 0 bytes leaked \(seed 0x0000000000000001, .* build\)'
	# Every scenario, with more than one of some things.
	run --iterations 2 --threads 3 --seed 1
	expect_rc 0
	expect_out_match "cow_stress: seed 0x0000000000000001, 3 threads on $cores $core_word, 16384-byte buffers, [2-9] scenarios, at most 2 rounds each"
	expect_plurals_right
	;;
progress_lines)
	# Not a terminal, default interval (5 s), two scenarios of 2 s: one
	# line in each, halfway through it (not at its start), with the run's
	# expected end.
	run --scenario clone-storm,wrap-race --seconds 4 --threads 2 --seed 1
	expect_rc 0
	progress_fields "$dir/err" >"$dir/fields" || exit 1
	n=0
	while read -r name idx at of round rounds end; do
		n=$((n + 1))
		case "$n:$name:$idx" in
		1:clone-storm:1/2) total=4.0 ;;
		2:wrap-race:2/2) total=2.0 ;;
		*) fail "progress line $n is about $name $idx" ;;
		esac
		[ "$of" = 2.0 ] || fail "line $n: scenario budget $of, expected 2.0"
		[ "$rounds" = - ] || fail "line $n: a round limit ($rounds)"
		[ "$round" -ge 1 ] || fail "line $n: round $round"
		# Inside the scenario, at least halfway: 1.0 s.
		awk_true 'at >= 1.0 && at <= 2.5' -v at="$at" ||
			fail "line $n at $at s into its scenario, expected 1.0 to 2.5"
		# Expected end: the rest of this scenario plus the next.
		[ "$end" != unknown ] || fail "line $n: expected end unknown"
		awk_true 'e + at - total <= 0.2 && total - e - at <= 0.2' \
		    -v e="$end" -v at="$at" -v total="$total" ||
			fail "line $n: expected end in $end s at $at s, expected $total - $at"
	done <"$dir/fields"
	[ "$n" -eq 2 ] || fail "$n progress lines, expected 2 (one per scenario)"
	[ "$(grep -vc '^cow_stress: \[' "$dir/err")" -eq 0 ] ||
		fail "stderr has lines other than progress lines"
	;;
progress_interval)
	# --progress 0.5 in a scenario of 2 s with a round limit: lines k =
	# 1, 2, 3, ... at least 0.5 k s into it, each "round R of N".
	run --scenario wrap-race --seconds 2 --threads 2 --seed 1 \
	    --progress 0.5 --iterations 1000000000
	expect_rc 0
	progress_fields "$dir/err" >"$dir/fields" || exit 1
	n=0
	while read -r name idx at of round rounds end; do
		n=$((n + 1))
		[ "$name $idx $of $rounds" = "wrap-race 1/1 2.0 1000000000" ] ||
			fail "line $n: $name $idx of $of s, $rounds rounds"
		awk_true 'at >= 0.5 * n - 0.05' -v at="$at" -v n="$n" ||
			fail "line $n at $at s, before its time ($n x 0.5 s)"
		awk_true 'e + at - 2.0 <= 0.2 && 2.0 - e - at <= 0.2' \
		    -v e="$end" -v at="$at" ||
			fail "line $n: expected end in $end s at $at s"
	done <"$dir/fields"
	[ "$n" -ge 3 ] || fail "$n progress lines, expected at least 3"
	;;
progress_unknown_end)
	# A round limit and no time limit: the end of the run is unknown while
	# a scenario comes after this one, and estimated in the last.
	run --scenario materialize-race,wrap-race --iterations 60 --size 1m \
	    --threads 2 --seed 1 --progress 0.1
	expect_rc 0
	progress_fields "$dir/err" >"$dir/fields" || exit 1
	grep -q '^materialize-race 1/2 [0-9.]* - [0-9]* 60 unknown$' \
	    "$dir/fields" || fail "no line with an unknown end in scenario 1/2"
	grep -qF 'expected end unknown (1 more scenario with no time limit)' \
	    "$dir/err" || fail "no 'expected end unknown (1 more scenario ...)'"
	if grep -q '^wrap-race 2/2 .* unknown$' "$dir/fields"; then
		fail "the last scenario's end is unknown"
	fi
	;;
progress_terminal)
	# On a terminal (a pty from script(1), 70 columns): the line is
	# redrawn in place ("\r\033[K" then the text) twice a second, cut to
	# 69 columns so that it never wraps, and erased at the end.
	command -v script >/dev/null || fail "script (util-linux) is missing"
	: >"$dir/out"
	script -qec "stty cols 70; '$bin' --scenario clone-storm --seconds 2 --threads 2 --seed 1 >/dev/null" \
	    /dev/null >"$dir/err" 2>&1
	rc=$?
	expect_rc 0
	esc=$(printf '\033')
	n=0
	while IFS= read -r seg; do
		[ -n "$seg" ] || continue
		case "$seg" in
		"$esc[K"*) seg=${seg#"$esc[K"} ;;
		*) fail "a redraw does not start with ESC [K: $seg" ;;
		esac
		[ -n "$seg" ] || continue # the final erase
		n=$((n + 1))
		[ "${#seg}" -le 69 ] || fail "line of ${#seg} columns on a 70-column terminal: $seg"
		[[ $seg =~ ^\[\ *[0-9]+\.[0-9]\ s\]\ clone-storm\ \(1/1\)\ at\ [0-9.]+\ of\ 2\.0\ s:\ round ]] ||
			fail "redrawn line of another form: $seg"
	done < <(tr '\r' '\n' <"$dir/err")
	[ "$n" -ge 3 ] || fail "$n redraws in 2 s, expected at least 3"
	tail -c 4 "$dir/err" | od -An -c | tr -d ' \n' | grep -qx '\\r033\[K' ||
		fail "the line is not erased at the end"
	;;
size_1g)
	# A real run with 1 GiB buffers (a round takes seconds: the stall
	# watchdog must see the harness's own loops move).
	run --size 1g --scenario materialize-race --iterations 1 --threads 2 \
	    --seed 1
	expect_rc 0
	expect_out_line "cow_stress: seed 0x0000000000000001, 2 threads on $cores $core_word, 1073741824-byte buffers, 1 scenario, at most 1 round"
	expect_out_line "  materialize-race        1 context of 2 peers: 1 steal, 1 copy (1 and 1 per context)"
	expect_out_match 'result: PASS: 0 violations, 0 bytes leaked, [0-9]+ invariants checked in [0-9.]+ s'
	;;
*)
	echo "test_cli.sh: unknown case '$case_name'" >&2
	exit 2
	;;
esac
echo "ok: $case_name"
