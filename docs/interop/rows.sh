#!/usr/bin/env bash
# rows.sh BEFORE_TREE AFTER_TREE - rows.c against two release builds (their
# static libraries, build/release/libcowstore.a), before then after.
set -euo pipefail
B=${1:?usage: rows.sh BEFORE_TREE AFTER_TREE}
A=${2:?}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for v in before after; do
	t=$B; [ $v = after ] && t=$A
	ro=0
	grep -q COW_STORAGE_READ_ONLY "$t/include/cowstore/storage.h" &&
	    ro=COW_STORAGE_READ_ONLY
	cc -O2 -std=c11 -DRO_FLAG="$ro" -I"$t/include" \
	    -I"$t/build/release/include" "$here/rows.c" \
	    "$t/build/release/libcowstore.a" -lpthread -lm -o "$work/rows_$v"
	echo "== $v ($(git -C "$t" rev-parse --short HEAD))"
	"$work/rows_$v"
done
