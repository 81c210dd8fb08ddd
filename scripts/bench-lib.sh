# shellcheck shell=bash
# bench-lib.sh - what the session benchmarks share (sourced by
# bench-snapshots.sh and bench-files.sh): sizes, free space, and the
# session's env.txt.

# bench_bytes SIZE: SIZE (1G, 64M, 16K or bytes) in bytes.
bench_bytes() {
	case $1 in
	*[Gg]) echo $(( ${1%?} << 30 )) ;;
	*[Mm]) echo $(( ${1%?} << 20 )) ;;
	*[Kk]) echo $(( ${1%?} << 10 )) ;;
	*) echo "$1" ;;
	esac
}

# bench_need_free WHO DIR BYTES: exit 1 unless DIR's file system has BYTES
# free.
bench_need_free() {
	local free
	free=$(( $(df -Pk "$2" | awk 'NR == 2 { print $4 }') << 10 ))
	if [ "$free" -lt "$3" ]; then
		echo "$1: $2 has $free bytes free, need $3" >&2
		exit 1
	fi
}

# bench_env TARGET LINE...: the session's machine, commit, filesystem and
# load on stdout, each LINE after the commit; TARGET is the file (or
# folder) the saves write.
bench_env() {
	local target=$1 dir
	shift
	dir=$(dirname "$target")
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!docs' || echo ' (modified outside docs/)')"
	printf '%s\n' "$@"
	echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs"
	echo "memory: $(free -g | awk '/^Mem:/ { print $2 " GiB" }')"
	echo "kernel: $(uname -r); THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo '?')"
	echo "target: $(realpath "$dir")/$(basename "$target")"
	echo "filesystem: $(findmnt -n -o SOURCE,FSTYPE,OPTIONS -T "$dir" 2>/dev/null || df -PT "$dir" | tail -1)"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
}
