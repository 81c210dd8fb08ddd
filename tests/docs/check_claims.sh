#!/usr/bin/env bash
# check_claims.sh - every cost claim and every cross-thread guarantee in the
# comments of the public headers names the test or the measurement that
# backs it, and every such reference resolves.
#
# Usage: check_claims.sh TESTS HEADER ...
#   TESTS   the test names references may use: a file holding the output
#           of `ctest -N`, or a build directory, whose CTestTestfile.cmake
#           files (the top one and its subdirs()) are what `ctest -N` reads
#           (running ctest from a test would rewrite the running ctest's
#           Testing/Temporary/LastTest.log).
#   HEADER  a header, or a directory whose *.h are read.
#
# The comments of each header are cut into sentences (at ". ", "? ", "! ",
# at a blank comment line and before a "- " list item). A sentence is a
# claim when, its references set aside, it contains (case-insensitive):
# - a cost: "cost(s)", "O(1)", "O(n)", "O(log", "one atomic", "no
#   atomic", "instruction", "no call(s)", "no library call(s)", "no
#   refcount", "no allocation", "allocates nothing", "allocate, ...
#   nothing", "touch(es) no", "touch(es) only", "cheap", "faster",
#   "slower", or a copy it says is not made: "without copying", "no copy",
#   "copy no", "copies no", "copy nothing", "copies nothing", "nothing is
#   copied", "no byte(s) (is/are) copied", "never copy", "never copies";
# - a cross-thread guarantee: "ordered after", "ordered before",
#   "happens before", "synchronises with", "visible", "sees", "see the
#   new", "never lost", "none will start", "completed before", "different
#   threads", "any number of threads", "no synchronisation", "no user
#   synchronisation".
# Words that only describe a mechanism ("an atomic store") or warn that a
# value may be stale are not claims.
#
# A claim must carry a reference in the same sentence:
#   (tested: NAME[, NAME ...])  or  (measured: WHAT[, WHAT ...])
# or both, "(tested: A; measured: B)"; a reference may also end another
# parenthesis after "; ", as in "(nothing is copied; tested: A)". An item
# with a "/" is a path from the repository root, optionally with "#anchor"
# (a Markdown heading of that file, as GitHub makes anchors); any other
# item is a ctest name. A ctest name of a unit or thread program may name
# one test in it: unit.storage:zero_size_rule is Test(storage,
# zero_size_rule) of tests/unit/test_storage.c, threads.shadow_threads:
# handler_switch the function handler_switch() of
# tests/threads/test_shadow_threads.c.
#
# Every reference anywhere in the comments is checked: a ctest name must be
# in TESTS, a test named in it must be in its source, a path must exist, an
# anchor must be a heading of its file. A name whose family (the part
# before its first ".") has no test at all in TESTS is registered only in
# other configurations (interleave.* in the asan preset, say): it is
# counted as unchecked here, not refused; the builds that register the
# family check it (a test named in it is checked in every build).
#
# Prints each unbacked claim and each dangling reference, then
# "check_claims: N claims (C cost, T cross-thread), U unbacked; R
# references, D dangling, K unchecked here". Exit status: 0 when U and D
# are 0, 1 otherwise, 2 on a usage error.
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/../.." && pwd)
# shellcheck source=lib.sh
. "$script_dir/lib.sh"

if [ $# -lt 2 ]; then
	echo "usage: check_claims.sh BUILD_DIR|CTEST_N_OUTPUT HEADER|DIR ..." >&2
	exit 2
fi
tests_arg=$1
shift

# The tests registered in a build directory, as `ctest -N` prints them:
# add_test([=[NAME]=] ...) lines, and the directories subdirs() names.
ctest_list() {
	local dir=$1 sub
	[ -f "$dir/CTestTestfile.cmake" ] || return 0
	sed -n 's/^[ \t]*add_test(\[=\[\(.*\)\]=\].*/  Test  #0: \1/p' \
	    "$dir/CTestTestfile.cmake"
	sed -n 's/^[ \t]*subdirs("\(.*\)")/\1/p' "$dir/CTestTestfile.cmake" |
	while read -r sub; do
		case "$sub" in
		/*) ctest_list "$sub" ;;
		*) ctest_list "$dir/$sub" ;;
		esac
	done
}

tests_file=$(mktemp)
out_file=$(mktemp)
trap 'rm -f "$tests_file" "$out_file"' EXIT
if [ -d "$tests_arg" ]; then
	ctest_list "$tests_arg" >"$tests_file"
elif [ -f "$tests_arg" ]; then
	cp "$tests_arg" "$tests_file"
else
	echo "check_claims: $tests_arg is neither a build directory nor a file" >&2
	exit 2
fi
if ! grep -q '^ *Test *#[0-9]*: ' "$tests_file"; then
	echo "check_claims: no test names in $tests_arg" >&2
	exit 2
fi

docs_headers check_claims "$@"

# The anchors of a Markdown file, one per line, as GitHub makes them:
# lower case, punctuation but "-" and "_" dropped, spaces made "-"
# (duplicates get no suffix here: a reference names the first).
md_anchors() {
	sed -n 's/^#\{1,6\}[ \t]\{1,\}//p' "$1" | tr 'A-Z' 'a-z' |
	    sed -e 's/[^a-z0-9 _-]//g' -e 's/ /-/g'
}

# Resolve every reference (one "FILE<TAB>LINE<TAB>ITEM" per line on stdin
# from the awk pass below) and print the dangling ones.
resolve() {
	local file line item path anchor name sub family source pattern
	local ntotal=0 nbad=0 nunchecked=0 names
	# Files and here-strings, not pipes into grep -q: under pipefail the
	# writer of a pipe grep -q leaves early fails the match.
	names=$(sed -n 's/^ *Test *#[0-9]*: //p' "$tests_file")
	while IFS=$'\t' read -r file line item; do
		ntotal=$((ntotal + 1))
		case "$item" in
		*/*)
			path=${item%%#*}
			anchor=
			[ "$path" = "$item" ] || anchor=${item#*#}
			if [ ! -e "$repo_root/$path" ]; then
				echo "$file:$line: no file $path (from the repository root)"
				nbad=$((nbad + 1))
			elif [ -n "$anchor" ] && ! grep -qxF -- "$anchor" \
			    <<<"$(md_anchors "$repo_root/$path")"; then
				echo "$file:$line: no heading #$anchor in $path"
				nbad=$((nbad + 1))
			fi
			;;
		*)
			name=${item%%:*}
			sub=
			[ "$name" = "$item" ] || sub=${item#*:}
			family=${name%%.*}
			if grep -qxF -- "$name" <<<"$names"; then
				:
			elif grep -q "^${family}\." <<<"$names"; then
				echo "$file:$line: no test $name in the ctest list"
				nbad=$((nbad + 1))
				continue
			else
				nunchecked=$((nunchecked + 1))
			fi
			[ -n "$sub" ] || continue
			source=$repo_root/tests/$family/test_${name#*.}.c
			case "$family" in
			unit) pattern="^(Parameterized)?Test\([A-Za-z0-9_]+, *$sub[,)]" ;;
			threads) pattern="^$sub\(" ;;
			*)
				echo "$file:$line: $item: only unit.* and threads.* name a test inside"
				nbad=$((nbad + 1))
				continue
				;;
			esac
			if [ ! -f "$source" ] || ! grep -qE -- "$pattern" "$source"; then
				echo "$file:$line: no test $sub in ${source#"$repo_root"/}"
				nbad=$((nbad + 1))
			fi
			;;
		esac
	done
	echo "refs $ntotal $nbad $nunchecked"
}

# POSIX awk (mawk and gawk both run it). Prints the unbacked claims, a
# "refs" line per reference item (for resolve) and the claim counts.
awk '
BEGIN { nclaims = 0; ncostc = 0; nthreadc = 0; nunbacked = 0; nbadform = 0 }

# The keywords of the header comment, on a sentence in lower case.
function is_cost(s) {
	return s ~ /(^|[^a-z])costs?([^a-z]|$)/ ||
	    s ~ /(^|[^a-z])o\((1|n|log)/ ||
	    s ~ /(one|no) atomic/ || s ~ /instruction/ ||
	    s ~ /no (library )?calls?([^a-z]|$)/ || s ~ /no refcount/ ||
	    s ~ /no allocation/ || s ~ /allocates nothing/ ||
	    s ~ /allocate, [^.]*nothing/ || s ~ /touch(es)? (no|only)/ ||
	    s ~ /cheap|faster|slower/ ||
	    s ~ /without copying|no copy|cop(y|ies) no([^a-z]|$)/ ||
	    s ~ /cop(y|ies) nothing|nothing is copied/ ||
	    s ~ /no bytes? (is |are )?copied|never cop(y|ies)/
}

function is_thread(s) {
	return s ~ /ordered (after|before)|happens[- ]before/ ||
	    s ~ /synchronises with/ ||
	    s ~ /visible|(^|[^a-z])sees([^a-z]|$)|see the new/ ||
	    s ~ /never lost|none will start|completed before/ ||
	    s ~ /different threads|any number of threads/ ||
	    s ~ /no (user )?synchronisation/
}

# Take the references out of sentence s: print each item for resolve(),
# count them in nrefs, and return s without them.
function take_refs(s, file, line,    out, rest, body, n, groups, g, i, k,
    items, item, label) {
	nrefs = 0
	out = ""
	rest = s
	while (match(rest, /(\(|; )(tested|measured): [^)]*\)/)) {
		out = out substr(rest, 1, RSTART - 1) ")"
		body = substr(rest, RSTART, RLENGTH - 1)
		sub(/^(\(|; )/, "", body)
		rest = substr(rest, RSTART + RLENGTH)
		n = split(body, groups, ";")
		for (g = 1; g <= n; g++) {
			sub(/^[ \t]+/, "", groups[g])
			label = groups[g]
			sub(/:.*/, "", label)
			if (label != "tested" && label != "measured") {
				printf "%s:%d: reference part \"%s\" is not " \
				    "tested: or measured:\n", file, line, groups[g]
				nbadform++
				continue
			}
			sub(/^[a-z]+:[ \t]*/, "", groups[g])
			k = split(groups[g], items, ",")
			for (i = 1; i <= k; i++) {
				item = items[i]
				gsub(/^[ \t]+|[ \t]+$/, "", item)
				if (item == "" || item ~ /[ \t]/) {
					printf "%s:%d: reference item \"%s\" is " \
					    "not one name or path\n", file, line, item
					nbadform++
					continue
				}
				printf "REF\t%s\t%d\t%s\n", file, line, item
				nrefs++
			}
		}
	}
	return out rest
}

function sentence(file, line, text,    plain, low, c, t) {
	gsub(/[ \t]+/, " ", text)
	sub(/^ /, "", text)
	sub(/ $/, "", text)
	if (text == "")
		return
	plain = take_refs(text, file, line)
	low = tolower(plain)
	c = is_cost(low)
	t = is_thread(low)
	if (!c && !t)
		return
	nclaims++
	if (c)
		ncostc++
	if (t)
		nthreadc++
	if (nrefs == 0) {
		nunbacked++
		if (length(text) > 160)
			text = substr(text, 1, 157) "..."
		printf "%s:%d: unbacked %s claim: %s\n", file, line,
		    (c && t) ? "cost and cross-thread" : (c ? "cost" : \
		    "cross-thread"), text
	}
}

# Cut the text of one comment (lines joined by "\n", each line starting at
# the line number in starts[]) into sentences.
function flush_comment(file,    nl, lines, i, ln, cur, curline, rest, p) {
	nl = split(ctext, lines, "\n")
	cur = ""
	curline = cstart
	for (i = 1; i <= nl; i++) {
		ln = lines[i]
		sub(/^[ \t]*\/\*+/, "", ln)
		sub(/\*+\/[ \t]*$/, "", ln)
		sub(/^[ \t]*\*+([ \t]|$)/, "", ln)
		sub(/^[ \t]*\/\/+/, "", ln)
		if (ln ~ /^[ \t]*$/ || ln ~ /^[ \t]*- /) {
			sentence(file, curline, cur)
			cur = ""
			curline = cstart + i - 1
			if (ln ~ /^[ \t]*$/)
				continue
		}
		if (cur == "")
			curline = cstart + i - 1
		rest = ln " "
		while (match(rest, /[.?!] /)) {
			p = RSTART + RLENGTH - 1
			cur = cur " " substr(rest, 1, p)
			sentence(file, curline, cur)
			cur = ""
			curline = cstart + i - 1
			rest = substr(rest, p + 1)
		}
		cur = cur " " rest
	}
	sentence(file, curline, cur)
	ctext = ""
}

FNR == 1 { in_comment = 0 }

{
	line = $0
	if (in_comment) {
		ctext = ctext "\n" line
		if (index(line, "*/") > 0) {
			in_comment = 0
			flush_comment(FILENAME)
		}
		next
	}
	p = index(line, "/*")
	q = index(line, "//")
	if (q > 0 && (p == 0 || q < p)) {
		ctext = substr(line, q)
		cstart = FNR
		flush_comment(FILENAME)
		next
	}
	if (p > 0) {
		ctext = substr(line, p)
		cstart = FNR
		if (index(substr(line, p + 2), "*/") > 0)
			flush_comment(FILENAME)
		else
			in_comment = 1
	}
}

END {
	printf "CLAIMS\t%d\t%d\t%d\t%d\t%d\n", nclaims, ncostc, nthreadc,
	    nunbacked, nbadform
}
' "${headers[@]}" >"$out_file"

grep -v -e '^REF	' -e '^CLAIMS	' "$out_file" || true
IFS=$'\t' read -r _ nclaims ncost nthread nunbacked nbadform \
    < <(grep '^CLAIMS	' "$out_file")
resolved=$({ grep '^REF	' "$out_file" || true; } | cut -f2- | resolve)
printf '%s\n' "$resolved" | grep -v '^refs ' || true
read -r _ nrefs ndangling nunchecked < <(printf '%s\n' "$resolved" | grep '^refs ')
ndangling=$((ndangling + nbadform))
echo "check_claims: $nclaims claims ($ncost cost, $nthread cross-thread)," \
    "$nunbacked unbacked; $nrefs references, $ndangling dangling," \
    "$nunchecked unchecked here"
[ "$nunbacked" -eq 0 ] && [ "$ndangling" -eq 0 ]
