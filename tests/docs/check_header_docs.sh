#!/usr/bin/env bash
# check_header_docs.sh - every public function of the cowstore headers states
# its thread-safety and errors, and its ownership whenever it has any.
#
# Usage: check_header_docs.sh [INCLUDE_DIR ...]
#   INCLUDE_DIR  a directory of public headers (default: include/cowstore of
#                the repository that holds this script), or one header. Give
#                several to check headers generated into a build tree too
#                (version.h).
#
# For each INCLUDE_DIR/*.h, every declaration that starts with COW_API must be
# preceded by a doc comment (/** ... */). One comment may cover several
# consecutive declarations; the group ends at the first line that is neither
# part of a COW_API declaration nor of the comment (a blank line, another
# comment, any other code). The comment must contain the words
# "Thread-safety:" and "Errors:" (case-sensitive, colon included), and
# "Ownership:" when a declaration of the group can pass ownership or
# borrow: it returns a pointer, or takes a pointer that is not const (an
# out-parameter, an object it changes or keeps) or a pointer to a pointer.
# A function that takes values and const pointers only and returns a value
# has no ownership to state, and its comment leaves "Ownership:" out. A
# file-level preamble does not count: the words must be in the comment of
# each function.
#
# "Ownership: none" is refused in every comment of the headers (a function's
# or any other, across a line break too), whatever follows it: it is filler
# ("Ownership: none (returns a value)"). Where there is nothing to own, leave
# "Ownership:" out; where there is, say it ("*out is filled; nothing to
# release", "@t is borrowed for the call").
#
# Prints each function that fails and the words it lacks, and each
# "Ownership: none", then the summary "check_header_docs: N functions, M
# incomplete, K Ownership: none". Exit status: 0 when M and K are 0, 1
# otherwise, 2 on a usage error.
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/../.." && pwd)
# shellcheck source=lib.sh
. "$script_dir/lib.sh"

if [ $# -eq 0 ]; then
	set -- "$repo_root/include/cowstore"
fi
docs_headers check_header_docs "$@"

# POSIX awk (mawk and gawk both run it).
awk '
function report(file, line, name, doc, owns,    missing, i) {
	nfuncs++
	if (doc == "") {
		missing = "no /** */ comment directly above"
	} else {
		missing = ""
		for (i = 1; i <= nwords; i++) {
			if (words[i] == "Ownership" && !owns)
				continue
			if (index(doc, words[i] ":") == 0)
				missing = missing (missing == "" ? "" : ", ") \
				    words[i] ":"
		}
		if (missing != "")
			missing = "missing " missing
	}
	if (missing != "") {
		nbad++
		printf "%s:%d: %s: %s\n", file, line, name, missing
	}
}

# The function name: the identifier just before the first "(", or the one
# in "(*name)" when the first "(" opens a function-pointer declarator.
function decl_name(text,    head, rest) {
	head = text
	sub(/\(.*/, "", head)
	rest = substr(text, length(head) + 2)
	if (match(rest, /^[ \t]*\*[ \t]*[A-Za-z_][A-Za-z0-9_]*/)) {
		rest = substr(rest, 1, RLENGTH)
		gsub(/[ \t*]/, "", rest)
		return rest
	}
	sub(/[ \t*]+$/, "", head)
	if (match(head, /[A-Za-z_][A-Za-z0-9_]*$/))
		return substr(head, RSTART, RLENGTH)
	return "?"
}

# Can the declaration pass ownership or borrow? It returns a pointer, or
# one of its parameters is a pointer to non-const or a pointer to a pointer.
function has_ownership(text,    head, params, n, p, i) {
	sub(/^[ \t]*COW_API[ \t]+/, "", text)
	head = text
	sub(/\(.*/, "", head)
	if (index(head, "*") > 0)
		return 1
	params = substr(text, length(head) + 2)
	sub(/\)[^)]*$/, "", params)
	n = split(params, p, ",")
	for (i = 1; i <= n; i++) {
		if (index(p[i], "*") == 0)
			continue
		if (index(p[i], "**") > 0 || p[i] !~ /^[ \t]*const[ \t]/)
			return 1
	}
	return 0
}

# Every comment, its lines joined (leading "*" dropped): refuse
# "Ownership: none" in it.
function comment_add(text) {
	sub(/^[ \t]*\*+/, "", text)
	ctext = ctext " " text
}

function comment_end(file,    t) {
	t = ctext
	gsub(/[ \t]+/, " ", t)
	if (t ~ /Ownership: ?none([^A-Za-z_]|$)/) {
		nnone++
		printf "%s:%d: \"Ownership: none\": say what is owned or " \
		    "borrowed, or leave Ownership: out\n", file, cline
	}
	ctext = ""
}

function comment_start(file, line, text) {
	ctext = ""
	cline = line
	comment_add(text)
	if (index(substr(text, 3), "*/") > 0) {
		comment_end(file)
		return 0
	}
	return 1
}

BEGIN {
	nwords = split("Ownership Thread-safety Errors", words, " ")
	nfuncs = 0
	nbad = 0
	nnone = 0
}

FNR == 1 {
	in_doc = 0; in_comment = 0; in_decl = 0
	doc = ""; group = 0
}

{
	line = $0

	# Inside a comment.
	if (in_doc || in_comment) {
		if (in_doc)
			doc = doc "\n" line
		comment_add(line)
		if (index(line, "*/") > 0) {
			comment_end(FILENAME)
			if (in_doc)
				group = 1
			in_doc = 0
			in_comment = 0
		}
		next
	}

	# Inside a COW_API declaration that spans lines.
	if (in_decl) {
		decl = decl " " line
		if (index(line, ";") > 0 || index(line, "{") > 0) {
			in_decl = 0
			report(FILENAME, decl_line, decl_name(decl), \
			    group ? doc : "", has_ownership(decl))
		}
		next
	}

	# A new doc comment ("/**", not "/**/").
	if (line ~ /^[ \t]*\/\*\*/ && line !~ /^[ \t]*\/\*\*\//) {
		doc = line
		group = 0
		if (comment_start(FILENAME, FNR,
		    substr(line, index(line, "/**"))))
			in_doc = 1
		else
			group = 1
		next
	}

	# A COW_API declaration.
	if (line ~ /^[ \t]*COW_API[ \t]/) {
		decl = line
		decl_line = FNR
		if (index(line, ";") > 0 || index(line, "{") > 0)
			report(FILENAME, decl_line, decl_name(decl), \
			    group ? doc : "", has_ownership(decl))
		else
			in_decl = 1
		next
	}

	# Anything else ends the current group.
	group = 0
	doc = ""
	if (index(line, "/*") > 0 &&
	    comment_start(FILENAME, FNR, substr(line, index(line, "/*"))))
		in_comment = 1
}

END {
	printf "check_header_docs: %d functions, %d incomplete, " \
	    "%d Ownership: none\n", nfuncs, nbad, nnone
	exit (nbad > 0 || nnone > 0 ? 1 : 0)
}
' "${headers[@]}"
