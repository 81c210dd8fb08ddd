# lib.sh - what the docs checks share (sourced by check_header_docs.sh and
# check_claims.sh, not run).

# docs_headers NAME ARG ...: into the array headers, every *.h of each ARG
# that is a directory, and each ARG that is a file. Exits 2, naming the
# check NAME, on an ARG that is neither or a directory without a header.
docs_headers() {
	local name=$1 arg found
	shift
	headers=()
	for arg in "$@"; do
		if [ -f "$arg" ]; then
			headers+=("$arg")
			continue
		fi
		if [ ! -d "$arg" ]; then
			echo "$name: $arg is not a header or a directory" >&2
			exit 2
		fi
		shopt -s nullglob
		found=("$arg"/*.h)
		shopt -u nullglob
		if [ ${#found[@]} -eq 0 ]; then
			echo "$name: no headers in $arg" >&2
			exit 2
		fi
		headers+=("${found[@]}")
	done
}

# docs_awk_decl: POSIX awk functions for reading a declaration, put before
# the program of both checks' awk.
# shellcheck disable=SC2034
docs_awk_decl='
# The text before the first "(" of text.
function before_paren(text) {
	sub(/\(.*/, "", text)
	return text
}

# The name in "(*name)" when the first "(" of text opens a function-pointer
# declarator, else "".
function fnptr_name(text,    rest) {
	rest = substr(text, length(before_paren(text)) + 2)
	if (!match(rest, /^[ \t]*\*[ \t]*[A-Za-z_][A-Za-z0-9_]*/))
		return ""
	rest = substr(rest, 1, RLENGTH)
	gsub(/[ \t*]/, "", rest)
	return rest
}
'
