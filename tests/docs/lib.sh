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
