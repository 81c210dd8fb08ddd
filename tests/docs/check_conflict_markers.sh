#!/usr/bin/env bash
# check_conflict_markers.sh ROOT - fail when a file under ROOT holds a line
# that git's merge writes around a conflict ("<<<<<<< ", "=======",
# ">>>>>>> " at the start of a line, the middle one only between the other
# two). ROOT's tracked files when it is a git work tree, else every file.
# A merge committed with its conflicts unresolved once left three such
# blocks in docs/fuzzing.md for a whole issue.
set -euo pipefail
root=$1
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	list() { git ls-files -z --deduplicate; }
else
	list() { find . -type f -print0; }
fi
found=0
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue
	grep -Iq . "$f" 2>/dev/null || continue   # binary or empty
	hits=$(awk '/^<<<<<<< /{open=NR; print FILENAME ":" NR ": conflict marker"; next}
		open && /^=======$/{print FILENAME ":" NR ": conflict marker"; next}
		/^>>>>>>> /{open=0; print FILENAME ":" NR ": conflict marker"}' "$f")
	if [ -n "$hits" ]; then
		printf '%s\n' "$hits"
		found=$((found + 1))
	fi
done < <(list)
echo "check_conflict_markers: $found file(s) with conflict markers"
[ "$found" -eq 0 ]
