#!/usr/bin/env bash
# check_sync.sh - keep the side-by-side table of docs/model.md true: every
# row names a C line and a model line and quotes both; the quotes must be on
# those lines. Every [LABEL] of the C protocol code must have a row and a
# place in the model. A change to either side fails here until the table
# (and, if the protocol changed, the model) follows.
#
# Usage: check_sync.sh SOURCE_DIR
# Table rows: | [LABEL] | step | `path:line` | `C code` | `path:line` | `model code` |
# ([LABEL] is a C label, or (name) for an unlabelled step such as (release).)
set -euo pipefail

root=${1:?usage: check_sync.sh SOURCE_DIR}
doc=docs/model.md
model=docs/model/cow_protocol.pml
csrc=(runtime/storage/cow_ctx.h runtime/storage/cow_ctx.c runtime/storage/storage.c)
status=0

problem() {
	echo "docs/model.md out of date: $*" >&2
	status=1
}

cd "$root"
[ -r "$doc" ] || { echo "$doc missing" >&2; exit 1; }

unquote() {
	local s=$1
	s=${s#"${s%%[![:space:]]*}"}
	s=${s%"${s##*[![:space:]]}"}
	s=${s#\`}
	s=${s%\`}
	printf '%s' "$s"
}

# check_ref LABEL `path:line` CODE: the line holds CODE.
check_ref() {
	local label=$1 ref=$2 code=$3 file line text where
	file=${ref%:*}
	line=${ref##*:}
	if [ ! -r "$file" ] || ! [[ $line =~ ^[0-9]+$ ]]; then
		problem "$label: bad reference '$ref'"
		return
	fi
	text=$(sed -n "${line}p" "$file")
	if [[ "$text" != *"$code"* ]]; then
		where=$(grep -nF -- "$code" "$file" | cut -d: -f1 | tr '\n' ' ' || true)
		if [ -n "$where" ]; then
			problem "$label: $file:$line does not hold \`$code\`; it is now at line(s) $where"
		else
			problem "$label: \`$code\` is no longer in $file (the code changed: check the model)"
		fi
	fi
}

rows=0
table_labels=""
while IFS= read -r row; do
	IFS='|' read -r -a f <<<"$row"
	# f[0] is empty (text before the first bar).
	if [ "${#f[@]}" -ne 7 ]; then
		problem "row with ${#f[@]} fields, not 7: $row"
		continue
	fi
	label=$(unquote "${f[1]}")
	check_ref "$label" "$(unquote "${f[3]}")" "$(unquote "${f[4]}")"
	check_ref "$label" "$(unquote "${f[5]}")" "$(unquote "${f[6]}")"
	if [[ $label == \[* ]]; then
		table_labels+=" $label"
	fi
	rows=$((rows + 1))
done < <(grep -E '^\| (\[[A-Z]+\]|\([a-z_]+\)) \|' "$doc")

[ "$rows" -gt 0 ] || problem "no step table rows found"

for label in $(grep -ohE '\[[A-Z]+\]' "${csrc[@]}" | sort -u); do
	[[ " $table_labels " == *" $label "* ]] ||
		problem "C label $label has no row in the table"
	grep -qF -- "$label" "$model" ||
		problem "C label $label does not appear in $model"
done
for label in $(tr ' ' '\n' <<<"$table_labels" | sort -u); do
	grep -qF -- "$label" "${csrc[@]}" ||
		problem "table label $label is not in the C code"
done

if [ "$status" = 0 ]; then
	echo "docs/model.md: $rows steps match the C code and the model"
fi
exit "$status"
