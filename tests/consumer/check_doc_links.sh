#!/usr/bin/env bash
# check_doc_links.sh - every link of an installed document or header
# resolves inside the install.
#
# Usage: check_doc_links.sh DOCDIR INCLUDEDIR
#   DOCDIR      the installed doc directory (PREFIX/share/doc/cowstore)
#   INCLUDEDIR  the installed headers' directory (PREFIX/include/cowstore)
#
# In every *.md under DOCDIR, each relative Markdown link "[...](target)"
# (its "#anchor" set aside; URLs and in-page "#..." links are not files)
# must name a file or folder under DOCDIR. In every header of INCLUDEDIR,
# each "docs/<path>.md" it cites must be DOCDIR/<path>.md (an install puts
# docs/X.md at share/doc/cowstore/X.md).
#
# Prints each link that does not resolve, then "check_doc_links: N
# documents, H headers, L links, D dangling". Exit status: 0 when D is 0,
# 1 otherwise, 2 on a usage error.
set -euo pipefail

if [ $# -ne 2 ] || [ ! -d "$1" ] || [ ! -d "$2" ]; then
	echo "usage: check_doc_links.sh DOCDIR INCLUDEDIR (two directories)" >&2
	exit 2
fi
docdir=$(cd "$1" && pwd -P)
incdir=$(cd "$2" && pwd -P)

ndocs=0 nheaders=0 nlinks=0 ndangling=0

# inside PATH: PATH exists and, symbolic links and ".." resolved, lies in
# DOCDIR.
inside() {
	local real
	[ -e "$1" ] || return 1
	real=$(realpath -e -- "$1") || return 1
	case "$real/" in
	"$docdir"/*) return 0 ;;
	*) return 1 ;;
	esac
}

while IFS= read -r -d '' md; do
	ndocs=$((ndocs + 1))
	dir=$(dirname "$md")
	rel=${md#"$docdir"/}
	while IFS= read -r target; do
		[ -n "$target" ] || continue
		nlinks=$((nlinks + 1))
		if ! inside "$dir/$target"; then
			echo "share/doc/cowstore/$rel: link $target does not resolve inside the install"
			ndangling=$((ndangling + 1))
		fi
	done < <(grep -o '](\([^)]*\))' "$md" | sed -e 's/^](//' -e 's/)$//' \
	    -e 's/#.*//' | grep -v -e '^$' -e '^[a-z]*:' || true)
done < <(find "$docdir" -name '*.md' -type f -print0 | sort -z)

while IFS= read -r -d '' h; do
	nheaders=$((nheaders + 1))
	while IFS= read -r cited; do
		[ -n "$cited" ] || continue
		nlinks=$((nlinks + 1))
		if ! inside "$docdir/${cited#docs/}"; then
			echo "include/cowstore/$(basename "$h"): cites $cited, which the install does not hold (share/doc/cowstore/${cited#docs/})"
			ndangling=$((ndangling + 1))
		fi
	done < <(grep -o 'docs/[A-Za-z0-9_/-]*\.md' "$h" | sort -u || true)
done < <(find "$incdir" -name '*.h' -type f -print0 | sort -z)

echo "check_doc_links: $ndocs documents, $nheaders headers, $nlinks links," \
    "$ndangling dangling"
[ "$ndocs" -gt 0 ] || { echo "check_doc_links: no document in $docdir"; exit 1; }
[ "$ndangling" -eq 0 ]
