#!/usr/bin/env bash
# check_index.sh - an index page names everything in its folder.
#
# Usage: check_index.sh INDEX
#   INDEX  a Markdown page (docs/README.md, docs/perf/README.md); its folder
#          is the one it indexes.
#
# Every file under INDEX's folder (at any depth; the index itself left out)
# must be covered by a relative Markdown link of the index, "[...](PATH)":
# a link to the file itself, to a folder above it ("sub/" or "sub"), or to
# the README.md of a folder above it. Every such link must name a file or
# folder that exists (an index entry left behind by a removed file is
# reported). Anchors ("#...") are set aside; absolute URLs and links that
# leave the folder ("../") are not entries.
#
# Prints each file no entry covers and each entry that names nothing, then
# "check_index: INDEX: N files, E entries, U not indexed, D dangling".
# Exit status: 0 when U and D are 0, 1 otherwise, 2 on a usage error.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -f "$1" ]; then
	echo "usage: check_index.sh INDEX.md" >&2
	exit 2
fi
index=$1
dir=$(cd "$(dirname "$index")" && pwd)
base=$(basename "$index")

# The link targets of the index: "](target)" with the anchor cut off.
entries=$(grep -o '](\([^)]*\))' "$index" | sed -e 's/^](//' -e 's/)$//' \
    -e 's/#.*//' | grep -v -e '^$' -e '^[a-z]*:' -e '^/' -e '^\.\./' |
    sed -e 's|^\./||' -e 's|/$||' | sort -u || true)

ndangling=0
nentries=0
while IFS= read -r e; do
	[ -n "$e" ] || continue
	nentries=$((nentries + 1))
	if [ ! -e "$dir/$e" ]; then
		echo "$index: entry $e names no file or folder"
		ndangling=$((ndangling + 1))
	fi
done <<<"$entries"

nfiles=0
nmissing=0
while IFS= read -r f; do
	[ -n "$f" ] || continue
	[ "$f" != "$base" ] || continue
	nfiles=$((nfiles + 1))
	covered=false
	p=$f
	while :; do
		if grep -qxF -- "$p" <<<"$entries" ||
		    { [ "$p" != "$f" ] && grep -qxF -- "$p/README.md" <<<"$entries"; }; then
			covered=true
			break
		fi
		case "$p" in
		*/*) p=${p%/*} ;;
		*) break ;;
		esac
	done
	if ! $covered; then
		echo "$index: $f is not in the index"
		nmissing=$((nmissing + 1))
	fi
done < <(cd "$dir" && find . -type f | sed 's|^\./||' | LC_ALL=C sort)

echo "check_index: $index: $nfiles files, $nentries entries," \
    "$nmissing not indexed, $ndangling dangling"
[ "$nmissing" -eq 0 ] && [ "$ndangling" -eq 0 ]
