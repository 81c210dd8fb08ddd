#!/usr/bin/env bash
# check_model.sh - one spin verification of the copy-or-steal model
# (docs/model/cow_protocol.pml, docs/model.md), run by ctest (label "model").
#
# Usage: check_model.sh MODEL WORKDIR CC KIND EXPECT [SPIN_DEFINE ...]
#   KIND    safety    pan -DSAFETY -DNOCLAIM: assertions, invalid end states
#           liveness  pan -a -f: the ltl property all_finish, weak fairness
#           reach     every probe #define P_* n of the model is reached
#                     (spin -DPROBE=2^n fails on it) and no probe
#                     #define U_* n is (a complete search with all of them
#                     on finds no error); EXPECT must be pass
#   EXPECT  pass      the search is complete and finds no error
#           fail:RE   pan finds an error whose report matches the extended
#                     regex RE, and spin replays the trail to the same error
#   SPIN_DEFINE       -DNAME[=VALUE] passed to spin (model variants)
#
# Fails, never skips, when spin is missing: the proof is part of the suite.
set -euo pipefail

if [ $# -lt 5 ]; then
	echo "usage: $0 MODEL WORKDIR CC KIND EXPECT [-DNAME[=VALUE] ...]" >&2
	exit 2
fi
model=$1
workdir=$2
cc=$3
kind=$4
expect=$5
shift 5
defines=("$@")

# Complete searches: deep enough stack, bounded memory (the search stops
# and the test fails if either bound is hit).
depth=100000
memlim=3072

rundir=
die() {
	echo "model check FAILED: $*" >&2
	if [ -n "$rundir" ]; then
		echo "(files kept in $rundir)" >&2
	fi
	exit 1
}

done_ok() {
	cd /
	rm -rf "$rundir"
	exit 0
}

command -v spin >/dev/null 2>&1 ||
	die "spin is not installed; install the Debian package 'spin' (scripts/deps.sh does)"
[ -r "$model" ] || die "model $model not found"
command -v "$cc" >/dev/null 2>&1 || die "C compiler $cc not found"

# A fresh directory per run (parallel runs in one build tree must not share
# pan's files); kept on failure for the replay, removed on success.
mkdir -p "$workdir"
rundir=$(mktemp -d "$workdir/run.XXXXXX")
cd "$rundir"
cp "$model" model.pml

# Generate and compile pan for one set of spin defines. $1: opt level.
build_pan() {
	local opt=$1
	shift
	rm -f pan pan.? pan.?? pan.out model.pml.trail _spin_nvr.tmp
	spin "$@" -a model.pml >spin.out 2>&1 ||
		{ cat spin.out; die "spin -a $* failed"; }
	local flags=("$opt" -w "-DMEMLIM=$memlim")
	if [ "$kind" != liveness ]; then
		flags+=(-DSAFETY -DNOCLAIM)
	fi
	"$cc" "${flags[@]}" -o pan pan.c ||
		die "$cc ${flags[*]} pan.c failed"
}

run_pan() {
	local args=(-m"$depth")
	if [ "$kind" = liveness ]; then
		args+=(-a -f)
	fi
	./pan "${args[@]}" >pan.out 2>&1 || true
	grep -q "search depth too small" pan.out &&
		{ cat pan.out; die "search depth too small (-m$depth)"; }
	grep -Eq "^State-vector .* errors: [0-9]+" pan.out ||
		{ cat pan.out; die "pan produced no result"; }
	return 0
}

errors() {
	sed -n 's/^State-vector .* errors: \([0-9]*\).*/\1/p' pan.out
}

summary() {
	local stored matched depth_reached elapsed
	stored=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' pan.out)
	matched=$(sed -n 's/^ *\([0-9.e+]*\) states, matched.*/\1/p' pan.out)
	depth_reached=$(sed -n 's/.*depth reached \([0-9]*\),.*/\1/p' pan.out)
	elapsed=$(sed -n 's/^pan: elapsed time \(.*\) seconds/\1/p' pan.out)
	echo "$kind ${defines[*]:-(default)}: errors $(errors)," \
	    "states stored $stored, matched $matched, depth $depth_reached," \
	    "pan ${elapsed}s"
}

# The counterexample, one line per step on shared state: "step Tt Lline
# [statement]", thread t = pid - 1 (pid 0 is init).
trail_summary() {
	spin -t -p "${defines[@]}" model.pml 2>&1 |
	    awk '/^ *[0-9]+:[[:space:]]+proc +[0-9]+ \(storage_thread/ &&
		/shares|writer|n_readers|ctx_alive|s0ctx|orig|n_copying|CYCLE/ {
			step = $1; pid = $3;
			match($0, /model\.pml:[0-9]+/);
			line = substr($0, RSTART + 10, RLENGTH - 10);
			match($0, /\[.*\]$/);
			printf "%s T%d L%s %s\n", step, pid - 1, line,
			    substr($0, RSTART, RLENGTH);
		}
		/START OF CYCLE|violated|trail ends/ { print }'
}

if [ "$kind" = reach ]; then
	# P_ probes: each one alone must fail (its code is reached).
	probes=$(sed -n 's/^#define \(P_[A-Z0-9_]*\)[[:space:]]*\([0-9][0-9]*\).*/\1=\2/p' model.pml)
	[ -n "$probes" ] || die "no probes (#define P_* n) in $model"
	kind=safety
	for p in $probes; do
		n=${p#*=}
		build_pan -O0 "${defines[@]}" "-DPROBE=$((1 << n))"
		run_pan
		grep -Fq ">>$n)&1)==0)" pan.out ||
			{ cat pan.out; die "probe $p is never reached: part of the model is dead"; }
		echo "probe $p reached"
	done
	# U_ probes: all together must never fail, in a complete search.
	mask=0
	unreached=$(sed -n 's/^#define \(U_[A-Z0-9_]*\)[[:space:]]*\([0-9][0-9]*\).*/\1=\2/p' model.pml)
	for p in $unreached; do
		mask=$((mask | (1 << ${p#*=})))
	done
	if [ "$mask" != 0 ]; then
		build_pan -O1 "${defines[@]}" "-DPROBE=$mask"
		run_pan
		grep -q "reached -DMEMLIM bound" pan.out &&
			die "search incomplete: memory bound -DMEMLIM=$memlim reached"
		[ "$(errors)" = 0 ] ||
			{ cat pan.out; die "a probe that must stay unreached was reached"; }
		echo "probes" $unreached "never reached"
		defines+=("-DPROBE=$mask")
		summary
	fi
	done_ok
fi

case "$kind" in
safety | liveness) ;;
*) die "unknown kind $kind" ;;
esac

# Searches that must complete are optimised (-O1: -O2 compiles pan.c more
# slowly than it speeds the search up); counterexamples come early.
if [ "$expect" = pass ]; then
	build_pan -O1 "${defines[@]}"
else
	build_pan -O0 "${defines[@]}"
fi
run_pan
cat pan.out

case "$expect" in
pass)
	grep -q "reached -DMEMLIM bound" pan.out &&
		die "search incomplete: memory bound -DMEMLIM=$memlim reached"
	if [ "$kind" = liveness ]; then
		grep -Eq "never claim[[:space:]]+\+ \(all_finish\)" pan.out ||
			die "the ltl property all_finish was not checked"
		grep -Eq "acceptance +cycles[[:space:]]+\+ \(fairness enabled\)" pan.out ||
			die "acceptance cycles were not checked under weak fairness"
	else
		grep -Eq "invalid end states[[:space:]]+\+" pan.out ||
			die "invalid end states were not checked"
	fi
	[ "$(errors)" = 0 ] || die "$(errors) error(s); replay there: spin -t -p ${defines[*]} model.pml"
	summary
	;;
fail:*)
	re=${expect#fail:}
	[ "$(errors)" != 0 ] ||
		die "negative control ${defines[*]} found no counterexample"
	grep -Eq "$re" pan.out ||
		die "the counterexample is not the expected one (/$re/)"
	[ -f model.pml.trail ] || die "pan wrote no trail"
	spin -t "${defines[@]}" model.pml >replay.out 2>&1 || true
	grep -Eq "assertion violated|START OF CYCLE" replay.out ||
		{ cat replay.out; die "spin -t does not replay the counterexample"; }
	echo "counterexample, steps on shared state:"
	trail_summary
	summary
	echo "expected counterexample: $(grep -E "$re" pan.out | head -1)"
	echo "replay: pan -m$depth from spin -a ${defines[*]}, then spin -t -p ${defines[*]}"
	;;
*)
	die "unknown expectation $expect"
	;;
esac
done_ok
