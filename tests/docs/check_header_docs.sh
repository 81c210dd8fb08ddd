#!/usr/bin/env bash
# check_header_docs.sh - every public function of the cowstore headers states
# its thread-safety and errors, and its ownership whenever it has any.
#
# Usage: check_header_docs.sh [INCLUDE_DIR ...]
#   INCLUDE_DIR  a directory of public headers (default: include/cowstore of
#                the repository that holds this script). Give several to
#                check headers generated into a build tree too (version.h).
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
# has no ownership to state ("Ownership: none (returns a value)" is not
# asked for). A file-level preamble does not count: the words must be in
# the comment of each function.
#
# Prints each function that fails and the words it lacks, then the summary
# "check_header_docs: N functions, M incomplete". Exit status: 0 when M is 0,
# 1 when M > 0, 2 on a usage error.
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/../.." && pwd)

if [ $# -eq 0 ]; then
	set -- "$repo_root/include/cowstore"
fi
headers=()
for include_dir in "$@"; do
	if [ ! -d "$include_dir" ]; then
		echo "check_header_docs: $include_dir is not a directory" >&2
		exit 2
	fi
	shopt -s nullglob
	found=("$include_dir"/*.h)
	shopt -u nullglob
	if [ ${#found[@]} -eq 0 ]; then
		echo "check_header_docs: no headers in $include_dir" >&2
		exit 2
	fi
	headers+=("${found[@]}")
done

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

BEGIN {
	nwords = split("Ownership Thread-safety Errors", words, " ")
	nfuncs = 0
	nbad = 0
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
		if (index(line, "*/") > 0) {
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
		if (index(substr(line, index(line, "/**") + 3), "*/") > 0)
			group = 1
		else
			in_doc = 1
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
	if (line ~ /\/\*/) {
		rest = substr(line, index(line, "/*") + 2)
		if (index(rest, "*/") == 0)
			in_comment = 1
	}
}

END {
	printf "check_header_docs: %d functions, %d incomplete\n", nfuncs, nbad
	exit (nbad > 0 ? 1 : 0)
}
' "${headers[@]}"
