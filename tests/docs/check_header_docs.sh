#!/usr/bin/env bash
# check_header_docs.sh - every public function of the cowstore headers states
# its thread-safety and errors, and its ownership whenever something moves,
# and no comment states ownership as filler.
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
# "Ownership:" when a declaration of the group hands out, keeps or consumes
# something: it returns a pointer (whose is it, how long is it valid), takes
# a pointer to a pointer (what *out holds), or its name ends in _retain,
# _release, _destroy, _close or _free (a reference or a handle is added or
# consumed). A file-level preamble does not count: the words must be in the
# comment of each function.
#
# The rest is common.h's rule: arguments are borrowed while the call runs
# and nothing moves unless the comment says so. A function that keeps an
# argument past the call (a context, a reference) says so under
# "Ownership:" too; no rule can see that, so review does. Saying the default
# is filler, refused in every comment of the headers (a function's or any
# other, across a line break too): "Ownership: none", "nothing to release",
# "borrowed for the call", "borrows @x for the call", "reference(s)
# is/are unchanged".
#
# Prints each function that fails and the words it lacks, and each filler
# phrase, then the summary "check_header_docs: N functions, M incomplete,
# K filler". Exit status: 0 when M and K are 0, 1 otherwise, 2 on a usage
# error.
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
awk "$docs_awk_decl"'
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
function decl_name(text,    head, name) {
	if ((name = fnptr_name(text)) != "")
		return name
	head = before_paren(text)
	sub(/[ \t*]+$/, "", head)
	if (match(head, /[A-Za-z_][A-Za-z0-9_]*$/))
		return substr(head, RSTART, RLENGTH)
	return "?"
}

# Does something move? The declaration returns a pointer, takes a pointer
# to a pointer, or is named for a reference or handle it adds or consumes.
function has_ownership(text, name,    head, params) {
	if (name ~ /_(retain|release|destroy|close|free)$/)
		return 1
	sub(/^[ \t]*COW_API[ \t]+/, "", text)
	head = text
	sub(/\(.*/, "", head)
	if (index(head, "*") > 0)
		return 1
	params = substr(text, length(head) + 2)
	gsub(/[ \t]+/, "", params)
	return index(params, "**") > 0
}

# Every comment, its lines joined (leading "*" dropped): refuse the filler
# phrases in it.
function comment_add(text) {
	sub(/^[ \t]*\*+/, "", text)
	ctext = ctext " " text
}

function comment_end(file,    t, f) {
	t = ctext
	gsub(/[ \t]+/, " ", t)
	f = ""
	if (match(t, /Ownership: ?none([^A-Za-z_]|$)/))
		f = "Ownership: none"
	else if (match(t, /nothing to release/))
		f = "nothing to release"
	else if (match(t, /borrow(s|ed) ([^ .;:]+ )?for the call/))
		f = substr(t, RSTART, RLENGTH)
	else if (match(t, /references? (is|are) unchanged/))
		f = substr(t, RSTART, RLENGTH)
	if (f != "") {
		nfiller++
		printf "%s:%d: filler \"%s\": arguments are borrowed and " \
		    "nothing moves unless a comment says so (common.h); say " \
		    "what moves, or leave it out\n", file, cline, f
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
	nfiller = 0
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
			    group ? doc : "", has_ownership(decl, decl_name(decl)))
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
			    group ? doc : "", has_ownership(decl, decl_name(decl)))
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
	    "%d filler\n", nfuncs, nbad, nfiller
	exit (nbad > 0 || nfiller > 0 ? 1 : 0)
}
' "${headers[@]}"
