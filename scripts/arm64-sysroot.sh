#!/usr/bin/env bash
# arm64-sysroot.sh - the arm64 headers and libraries that the arm64 preset
# (docs/arm64.md, cmake/aarch64-linux-gnu.cmake) builds and runs against:
# Debian's arm64 packages of ConcurrencyKit and Criterion, and the run-time
# libraries Criterion needs, unpacked (dpkg-deb -x) into a directory:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/cowstore/arm64-sysroot
# Nothing is installed on the host: installing libck-dev:arm64 would remove
# the host's libck-dev (libck0 is not Multi-Arch: same), and an arm64 libc6
# on the host is not needed (the cross toolchain brings its own).
#
# The directory is kept while the packages' versions stay the same (its file
# .packages lists them); otherwise it is made again. It needs apt to know the
# arm64 packages (dpkg --add-architecture arm64, then apt-get update): as
# root this script does both when they are missing; otherwise it prints the
# commands and exits 1. scripts/deps.sh arm64 runs it.
#
# Usage: scripts/arm64-sysroot.sh
set -euo pipefail

arch=arm64
triple=aarch64-linux-gnu
cache=${XDG_CACHE_HOME:-$HOME/.cache}/cowstore
root=$cache/arm64-sysroot

# Headers, .pc files and link libraries. Criterion's .pc file names boxfort,
# libffi, libgit2 and nanomsg (Requires.private), and libgit2's names
# libpcre2-8 and zlib: pkg-config reads them all, so their -dev packages are
# here too (only their .pc files and headers matter).
dev_packages=(libck-dev libcriterion-dev libboxfort-dev libffi-dev
	libgit2-dev libnanomsg-dev libpcre2-dev zlib1g-dev)
# Run-time libraries: these and everything they depend on, except what the
# cross toolchain's libc6-arm64-cross and libgcc-s1-arm64-cross provide.
runtime_roots=(libck0 libcriterion3)
provided='^(libc6|libgcc-s1|gcc-12-base)$'

is_root() {
	[ "$(id -u)" -eq 0 ]
}

# --- apt must know the arm64 packages ----------------------------------------
if ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
	if ! is_root; then
		echo "cowstore: apt does not know $arch packages. Run as root:" >&2
		echo "  dpkg --add-architecture $arch && apt-get update" >&2
		exit 1
	fi
	echo "cowstore: adding the $arch architecture to dpkg (packages are" \
	    "only downloaded, never installed)" >&2
	dpkg --add-architecture "$arch"
	DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
fi

# --- the packages and their versions -----------------------------------------
runtime_closure() {
	apt-cache depends --recurse --no-recommends --no-suggests \
		--no-conflicts --no-breaks --no-replaces --no-enhances \
		"${runtime_roots[@]/%/:$arch}" 2>/dev/null |
		sed -n "s/^\([a-z0-9][a-z0-9.+-]*\):$arch\$/\1/p" |
		grep -Ev "$provided" | sort -u || true
}
runtime=$(runtime_closure)
if ! grep -qx libck0 <<<"$runtime"; then
	if ! is_root; then
		echo "cowstore: apt has no $arch package index. Run as root:" >&2
		echo "  apt-get update" >&2
		exit 1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
	runtime=$(runtime_closure)
fi
mapfile -t packages < <(printf '%s\n' "${dev_packages[@]}" $runtime | sort -u)
manifest=$(apt-cache show --no-all-versions "${packages[@]/%/:$arch}" |
	awk '/^Package:/ { p = $2 } /^Version:/ { print p, $2 }' | sort -u)
if [ "$(printf '%s\n' "$manifest" | wc -l)" -ne ${#packages[@]} ]; then
	echo "cowstore: apt does not know all of: ${packages[*]} ($arch)" >&2
	exit 1
fi

if [ -f "$root/.packages" ] && [ "$(cat "$root/.packages")" = "$manifest" ]; then
	exit 0
fi

# --- download and unpack -----------------------------------------------------
mkdir -p "$cache"
work=$(mktemp -d "$cache/arm64-sysroot.XXXXXX")
# The downloads go to a directory apt's _apt user can reach (it drops to
# that user when it can; the cache may be under a private home).
debs=$(mktemp -d)
trap 'rm -rf "$work" "$debs"' EXIT
if is_root && id _apt >/dev/null 2>&1; then
	chown _apt "$debs"
fi
echo "cowstore: downloading ${#packages[@]} $arch packages for $root" >&2
(cd "$debs" && apt-get download -q "${packages[@]/%/:$arch}" >&2)
mkdir "$work/root"
for deb in "$debs"/*.deb; do
	dpkg-deb -x "$deb" "$work/root"
done
rm -rf "$work/root/usr/share"
printf '%s\n' "$manifest" > "$work/root/.packages"

# The guard CMakeLists.txt applies too: these are arm64's ck headers.
if ! grep -q '^#define CK_MD_RMO' "$work/root/usr/include/ck_md.h" ||
    [ ! -f "$work/root/usr/lib/$triple/pkgconfig/criterion.pc" ]; then
	echo "cowstore: unexpected contents in the $arch packages" \
	    "(no arm64 ck_md.h with CK_MD_RMO, or no criterion.pc)" >&2
	exit 1
fi

rm -rf "$root.old"
if [ -e "$root" ]; then
	mv "$root" "$root.old"
fi
mv "$work/root" "$root"
rm -rf "$root.old"
echo "cowstore: $arch sysroot ready in $root" >&2
