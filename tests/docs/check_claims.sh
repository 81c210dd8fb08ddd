#!/usr/bin/env bash
# check_claims.sh - every cost claim and every cross-thread guarantee in the
# comments of the public headers has a row in the claims table
# (docs/claims.md) naming the tests or the measurements that back it, and
# every reference of the table resolves.
#
# Usage: check_claims.sh TESTS TABLE HEADER ...
#   TESTS   the test names references may use: a file holding the output
#           of `ctest -N`, or a build directory, whose CTestTestfile.cmake
#           files (the top one and its subdirs()) are what `ctest -N` reads
#           (running ctest from a test would rewrite the running ctest's
#           Testing/Temporary/LastTest.log).
#   TABLE   the claims table, a Markdown file (docs/claims.md).
#   HEADER  a header, or a directory whose *.h are read.
#
# The comments of each header are cut into sentences (at ". ", "? ", "! ",
# at a blank comment line and before a "- " list item). A sentence is a
# claim when it contains (case-insensitive):
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
# Each sentence sits somewhere: "preamble" (the header's first comment), the
# NAME of a comment that opens "NAME - " (a function's doc comment), or
# else the name the code after the comment declares (an enum constant, or
# the first function of a section).
#
# The table: every Markdown table row of TABLE whose first cell is not
# "header" is a row, with four cells:
#   | header | where | claim | backed by |
#   | `stats.h` | cow_stats_reset | `never lost` | tested: `threads.counters` |
# header is the header's file name; where is where the sentence sits, as
# above; claim is a fragment of the sentence (whitespace-normalised; no
# "|") that occurs in exactly one sentence of that header and place;
# backed by is "tested: NAME[, NAME ...]", "measured: WHAT[, WHAT ...]"
# or both, "tested: A; measured: B" (backquotes are dropped). An item with
# a "/" is a path from the repository root, optionally with "#anchor" (a
# Markdown heading of that file, as GitHub makes anchors); any other item
# is a ctest name. A ctest name of a unit or thread program may name one
# test in it: unit.storage:zero_size_rule is Test(storage, zero_size_rule)
# of tests/unit/test_storage.c, threads.shadow_threads:handler_switch the
# function handler_switch() of tests/threads/test_shadow_threads.c.
#
# Refused: a claim no row matches (unbacked); a row that matches no claim
# (stale: the sentence changed or went, or no longer makes a claim), more
# than one, or that lacks a cell or a reference (all counted as stale); a
# "(tested: ...)" or "(measured: ...)" left in a header comment (counted
# as dangling: the reference belongs in the table). Every reference of the
# table is checked: a ctest name must be in TESTS, a test named in it must
# be in its source, a path must exist, an anchor must be a heading of its
# file. A name whose family (the part before its first ".") has no test at
# all in TESTS is registered only in other configurations (interleave.* in
# the asan preset, say): it is counted as unchecked here, not refused; the
# builds that register the family check it (a test named in it is checked
# in every build).
#
# Prints each unbacked claim, each stale row and each dangling reference,
# then "check_claims: N claims (C cost, T cross-thread), U unbacked; W
# rows, S stale; R references, D dangling, K unchecked here". Exit status:
# 0 when U, S and D are 0, 1 otherwise, 2 on a usage error.
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/../.." && pwd)
# shellcheck source=lib.sh
. "$script_dir/lib.sh"

if [ $# -lt 3 ]; then
	echo "usage: check_claims.sh BUILD_DIR|CTEST_N_OUTPUT TABLE HEADER|DIR ..." >&2
	exit 2
fi
tests_arg=$1
table=$2
shift 2

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
if [ ! -f "$table" ]; then
	echo "check_claims: no claims table $table" >&2
	exit 2
fi
# How the messages name the table: from the repository root when it is in it.
table_name=${table#"$repo_root"/}

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

# POSIX awk (mawk and gawk both run it): the headers, then the table (the
# last file). Prints the references left in headers, the unbacked claims,
# the stale rows, a "REF" line per reference item of the table (for
# resolve) and the counts.
awk -v table="$table" -v table_name="$table_name" "$docs_awk_decl"'
BEGIN {
	nclaims = 0; ncostc = 0; nthreadc = 0; nunbacked = 0
	nmisplaced = 0; nbadform = 0; nrows = 0; nstale = 0
	nsent = 0; npending = 0
}

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

function trim(s) {
	gsub(/^[ \t]+|[ \t]+$/, "", s)
	return s
}

# The file name of a path.
function base(path) {
	sub(/.*\//, "", path)
	return path
}

# A reference left in a header: refuse it (it belongs in the table) and
# return s without it, "(x; tested: A)" becoming "(x)".
function drop_refs(s, file, line,    out, rest, body, pre) {
	out = ""
	rest = s
	while (match(rest, /(\(|; )(tested|measured): [^)]*\)/)) {
		body = substr(rest, RSTART, RLENGTH - 1)
		sub(/^(\(|; )/, "", body)
		printf "MISPLACED\t%s:%d: \"%s\" in a header comment: " \
		    "move it to %s\n", file, line, body, table_name
		nmisplaced++
		pre = substr(rest, 1, RSTART - 1)
		if (substr(rest, RSTART, 1) == "(") {
			rest = substr(rest, RSTART + RLENGTH)
			if (rest == "" || rest ~ /^[.,;:)]/)
				sub(/ +$/, "", pre)
			out = out pre
		} else {
			out = out pre ")"
			rest = substr(rest, RSTART + RLENGTH)
		}
	}
	return out rest
}

# Record one sentence of a comment of file at line.
function sentence(file, line, text,    low, c, t) {
	gsub(/[ \t]+/, " ", text)
	text = trim(text)
	if (text == "")
		return
	text = trim(drop_refs(text, file, line))
	low = tolower(text)
	c = is_cost(low)
	t = is_thread(low)
	nsent++
	s_file[nsent] = file
	s_base[nsent] = base(file)
	s_line[nsent] = line
	s_text[nsent] = text
	s_where[nsent] = cwhere
	s_kind[nsent] = (c && t) ? "cost and cross-thread" : \
	    (c ? "cost" : (t ? "cross-thread" : ""))
	if (cwhere == "")
		pend[++npending] = nsent
	if (!c && !t)
		return
	nclaims++
	if (c)
		ncostc++
	if (t)
		nthreadc++
}

# The name a line of code declares: the macro of a #define, the function
# of a declaration ("(*name)" for a function pointer), the identifier
# before "=" or ";", else its first identifier but a keyword.
function decl_of(text,    head, name) {
	if (match(text, /^[ \t]*#[ \t]*define[ \t]+[A-Za-z_][A-Za-z0-9_]*/)) {
		head = substr(text, 1, RLENGTH)
		sub(/.*[ \t]/, "", head)
		return head
	}
	if (index(text, "(") > 0) {
		if ((name = fnptr_name(text)) != "")
			return name
		text = before_paren(text)
	} else if (index(text, "=") > 0) {
		sub(/=.*/, "", text)
	} else if (index(text, ";") > 0) {
		sub(/;.*/, "", text)
	} else {
		while (sub(/(^|[ \t])(typedef|struct|enum|union|const|static)[ \t]+/,
		    " ", text))
			;
		if (match(text, /[A-Za-z_][A-Za-z0-9_]*/))
			return substr(text, RSTART, RLENGTH)
		return ""
	}
	sub(/[ \t*\[\]0-9]+$/, "", text)
	if (match(text, /[A-Za-z_][A-Za-z0-9_]*$/))
		return substr(text, RSTART, RLENGTH)
	return ""
}

# Sentences waiting for the code after their comment: give them where.
function settle(where,    i) {
	for (i = 1; i <= npending; i++)
		s_where[pend[i]] = where
	npending = 0
}

# Cut the text of one comment (lines joined by "\n", the first at line
# cstart) into sentences; cwhere is where they sit ("" until the code after
# the comment says).
function flush_comment(file,    nl, lines, i, ln, cur, curline, rest, p,
    first) {
	nl = split(ctext, lines, "\n")
	for (i = 1; i <= nl; i++) {
		ln = lines[i]
		sub(/^[ \t]*\/\*+/, "", ln)
		sub(/\*+\/[ \t]*$/, "", ln)
		sub(/^[ \t]*\*+([ \t]|$)/, "", ln)
		sub(/^[ \t]*\/\/+/, "", ln)
		lines[i] = ln
		if (first == "" && ln !~ /^[ \t]*$/)
			first = ln
	}
	if (ncomments++ == 0)
		cwhere = "preamble"
	else if (match(first, /^[ \t]*[A-Za-z_][A-Za-z0-9_]* - /)) {
		cwhere = substr(first, RSTART, RLENGTH)
		sub(/ - $/, "", cwhere)
		cwhere = trim(cwhere)
	} else
		cwhere = cbefore
	cur = ""
	curline = cstart
	for (i = 1; i <= nl; i++) {
		ln = lines[i]
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

# A comment starts at column p of line: cbefore is what the code before it
# on the same line declares.
function comment_start(line, p) {
	cbefore = p > 1 ? decl_of(substr(line, 1, p - 1)) : ""
	ctext = substr(line, p)
	cstart = FNR
}

# One table row, its cells split: check it and match it to one sentence.
function row(lnum, line,    cells, n, i, hdr, where, frag, backing, hits, j,
    near, g, ng, groups, label, k, items, item, nitems) {
	line = trim(line)
	sub(/^\|/, "", line)
	sub(/\|$/, "", line)
	n = split(line, cells, "|")
	for (i = 1; i <= n; i++)
		cells[i] = trim(cells[i])
	if (cells[1] == "header")
		return
	nrows++
	if (n != 4) {
		printf "%s:%d: a row has %d cells, not 4 (header, where, " \
		    "claim, backed by)\n", table_name, lnum, n
		nstale++
		return
	}
	hdr = cells[1]; gsub(/`/, "", hdr)
	where = cells[2]; gsub(/`/, "", where)
	frag = cells[3]
	if (frag ~ /^`.*`$/)
		frag = substr(frag, 2, length(frag) - 2)
	gsub(/[ \t]+/, " ", frag)
	frag = trim(frag)
	backing = cells[4]; gsub(/`/, "", backing)
	if (frag == "") {
		printf "%s:%d: a row quotes no claim\n", table_name, lnum
		nstale++
		return
	}

	hits = 0
	near = ""
	for (j = 1; j <= nsent; j++) {
		if (s_base[j] != hdr || index(s_text[j], frag) == 0)
			continue
		if (s_where[j] != where) {
			near = near (near == "" ? "" : ", ") s_where[j]
			continue
		}
		hits++
		matched[j] = 1
	}
	if (hits != 1) {
		if (hits > 1)
			printf "%s:%d: \"%s\" is in %d sentences of %s (%s): " \
			    "quote more\n", table_name, lnum, frag, hits, hdr,
			    where
		else
			printf "%s:%d: stale row: no sentence of %s (%s) " \
			    "contains \"%s\"%s\n", table_name, lnum, hdr, where,
			    frag, near == "" ? "" : "; it is in: " near
		nstale++
		return
	}

	nitems = 0
	ng = split(backing, groups, ";")
	for (g = 1; g <= ng; g++) {
		groups[g] = trim(groups[g])
		label = groups[g]
		sub(/:.*/, "", label)
		if (label != "tested" && label != "measured" ||
		    index(groups[g], ":") == 0) {
			printf "%s:%d: reference part \"%s\" is not " \
			    "tested: or measured:\n", table_name, lnum, groups[g]
			nbadform++
			continue
		}
		sub(/^[a-z]+:[ \t]*/, "", groups[g])
		k = split(groups[g], items, ",")
		for (i = 1; i <= k; i++) {
			item = trim(items[i])
			if (item == "" || item ~ /[ \t]/) {
				printf "%s:%d: reference item \"%s\" is not " \
				    "one name or path\n", table_name, lnum, item
				nbadform++
				continue
			}
			print "REF\t" table_name "\t" lnum "\t" item
			nitems++
		}
	}
	if (nitems == 0) {
		printf "%s:%d: the row names no test or measurement\n",
		    table_name, lnum
		nstale++
	}
}

FNR == 1 {
	settle("(end of file)")
	in_comment = 0
	ncomments = 0
}

FILENAME == table {
	if ($0 ~ /^[ \t]*\|/ && $0 !~ /^[ \t]*\|[ \t:|-]*$/)
		rows[++nrowlines] = FNR "\t" $0
	next
}

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
	code = line
	if (p > 0 || q > 0)
		code = substr(line, 1, (q > 0 && (p == 0 || q < p) ? q : p) - 1)
	if (code ~ /[A-Za-z_]/)
		settle(decl_of(code))
	if (q > 0 && (p == 0 || q < p)) {
		comment_start(line, q)
		flush_comment(FILENAME)
		next
	}
	if (p > 0) {
		comment_start(line, p)
		if (index(substr(line, p + 2), "*/") > 0)
			flush_comment(FILENAME)
		else
			in_comment = 1
	}
}

END {
	settle("(end of file)")
	for (r = 1; r <= nrowlines; r++) {
		lnum = rows[r]
		sub(/\t.*/, "", lnum)
		rowtext = rows[r]
		sub(/^[0-9]+\t/, "", rowtext)
		row(lnum, rowtext)
	}
	for (j = 1; j <= nsent; j++) {
		if (s_kind[j] == "" || matched[j])
			continue
		nunbacked++
		text = s_text[j]
		if (length(text) > 160)
			text = substr(text, 1, 157) "..."
		printf "UNBACKED\t%s:%d: unbacked %s claim (%s): %s\n", s_file[j],
		    s_line[j], s_kind[j], s_where[j], text
	}
	printf "CLAIMS\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", nclaims, ncostc,
	    nthreadc, nunbacked, nbadform, nrows, nstale, nmisplaced
}
' "${headers[@]}" "$table" >"$out_file"

# The references left in headers, the unbacked claims, then the rows'
# messages.
sed -n 's/^MISPLACED	//p' "$out_file"
sed -n 's/^UNBACKED	//p' "$out_file"
grep -v -e '^REF	' -e '^CLAIMS	' -e '^UNBACKED	' -e '^MISPLACED	' \
    "$out_file" || true
IFS=$'\t' read -r _ nclaims ncost nthread nunbacked nbadform nrows nstale \
    nmisplaced < <(grep '^CLAIMS	' "$out_file")
resolved=$({ grep '^REF	' "$out_file" || true; } | cut -f2- | resolve)
printf '%s\n' "$resolved" | grep -v '^refs ' || true
read -r _ nrefs ndangling nunchecked < <(printf '%s\n' "$resolved" | grep '^refs ')
ndangling=$((ndangling + nbadform))
echo "check_claims: $nclaims claims ($ncost cost, $nthread cross-thread)," \
    "$nunbacked unbacked; $nrows rows, $nstale stale; $nrefs references," \
    "$ndangling dangling, $nunchecked unchecked here, $nmisplaced in headers"
[ "$nunbacked" -eq 0 ] && [ "$nstale" -eq 0 ] && [ "$ndangling" -eq 0 ] &&
    [ "$nmisplaced" -eq 0 ]
