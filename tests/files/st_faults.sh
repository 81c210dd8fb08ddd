#!/bin/bash
# st_faults.sh ST_TOOL [ST_TOOL_SYNC_EIO] - saves that fail in the file
# system (ctest files.faults). Each `st_tool fault` runs four saves (stream and persist
# first, on the caller's thread and as a job) of a 2 MiB snapshot over an
# existing destination and checks that each fails with COW_EIO naming the
# errno, that the destination keeps its bytes and inode, that no temporary
# file is left, and that the snapshot stays usable (tests/files/st_tool.c).
#
#   ENOSPC  a 1 MiB tmpfs, mounted in a private mount namespace
#   EROFS   a read-only bind mount of the destination's directory, there
#   ENOENT  a directory that does not exist
#   EFBIG   RLIMIT_FSIZE of 1 MiB with SIGXFSZ ignored: what stands in for a
#           full file system where no mount namespace can be made
#   EIO     with ST_TOOL_SYNC_EIO (a library whose fsync of the temporary
#           file fails: tests/faults/file_sync_eio.h), given in builds that
#           have fault variants
#
# The namespace: `unshare -rm` (a user and mount namespace, root in it)
# runs this script again with --inside; when that fails, ENOSPC and EROFS
# are skipped and the output says so.
set -u
tool=$1
eio_tool=${2:-}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/cow-st-faults-XXXXXX")
cleanup() {
	# Inside the namespace, its mounts go first (two on ro).
	for m in ro ro full; do
		umount "$scratch/$m" 2>/dev/null
	done
	rm -rf "$scratch"
}
trap cleanup EXIT
ran=0

fault_with() {
	# fault_with TOOL ERRNO PATH [FSIZE]: the four saves; stop at the
	# first failure.
	local t=$1
	shift
	if ! "$t" fault "$@"; then
		echo "FAILED: $(basename "$t") fault $*"
		exit 1
	fi
	ran=$((ran + 4))
}

fault() {
	fault_with "$tool" "$@"
}

prepare() {
	"$tool" prepare "$1" >/dev/null || { echo "FAILED: prepare $1"; exit 1; }
}

if [ "$eio_tool" = "--inside" ]; then
	# In the private mount namespace: what we mount here goes with it.
	full=$scratch/full
	mkdir -p "$full"
	mount -t tmpfs -o size=1m tmpfs "$full" || { echo "FAILED: mount tmpfs"; exit 1; }
	prepare "$full/ckpt.safetensors"
	ST_PRIVATE_FS=1 ST_RETRY_DIR=$scratch fault ENOSPC "$full/ckpt.safetensors"
	ro=$scratch/ro
	mkdir -p "$ro"
	mount -t tmpfs -o size=4m tmpfs "$ro" || { echo "FAILED: mount tmpfs"; exit 1; }
	prepare "$ro/ckpt.safetensors"
	mount --bind "$ro" "$ro" && mount -o remount,bind,ro "$ro" ||
		{ echo "FAILED: read-only bind mount"; exit 1; }
	if touch "$ro/probe" 2>/dev/null; then
		echo "FAILED: $ro is writable after the read-only remount"
		exit 1
	fi
	ST_PRIVATE_FS=1 ST_RETRY_DIR=$scratch fault EROFS "$ro/ckpt.safetensors"
	echo "st_faults: inside: $ran"
	exit 0
fi

if unshare -rm true 2>/dev/null; then
	out=$(unshare -rm bash "$0" "$tool" --inside 2>&1)
	rc=$?
	echo "$out"
	[ $rc -eq 0 ] || { echo "FAILED: the namespace's checks (exit $rc)"; exit 1; }
	ran=$((ran + $(echo "$out" | sed -n 's/^st_faults: inside: //p')))
else
	echo "st_faults: no mount namespace here (unshare -rm failed):" \
	    "ENOSPC and EROFS skipped; EFBIG (RLIMIT_FSIZE) stands for a full" \
	    "file system"
fi

# A missing directory, and RLIMIT_FSIZE, in the scratch directory.
prepare "$scratch/ckpt.safetensors"
ST_RETRY_DIR=$scratch fault ENOENT "$scratch/no/such/dir/ckpt.safetensors"
fault EFBIG "$scratch/ckpt.safetensors" 1048576
if [ -n "$eio_tool" ]; then
	fault_with "$eio_tool" EIO "$scratch/ckpt.safetensors"
fi
echo "st_faults: $ran saves failed as expected"
