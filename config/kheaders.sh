#!/bin/sh
# kheaders.sh [DIR] - unpack the extra kernels gdrdrv is built and booted
# against in CI, next to the installed 6.1 (config/deps.sh runs this):
#   5.10  Debian 11 (bullseye) headers: the oldest supported kernel
#   6.12  Debian 12's newest kernel (bookworm-security), headers and image
# Each goes to DIR/KVER (default /opt/gdrx-kheaders) with dpkg -x: nothing
# is installed and no apt source is added; the package lists of both
# (bullseye, bookworm-security) live in private apt state directories under
# DIR, so the system's sources do not matter (a debootstrap system has no
# bookworm-security).  The headers' Makefile names
# its -common tree by absolute path, so it is pointed into DIR.  A kernel
# already unpacked is left alone.  tests/kmod/kernels.sh uses the result.
set -eu

dir=${1:-/opt/gdrx-kheaders}
say() { echo "kheaders.sh: $*"; }
die() { echo "kheaders.sh: $*" >&2; exit 1; }

# unpack KVER DEB... : the debs into $dir/$kver, Makefile path fixed.
unpack() {
	kver=$1; shift
	root=$dir/$kver
	rm -rf "$root.tmp" && mkdir -p "$root.tmp"
	for deb in "$@"; do
		case $deb in
		*linux-image-*) dpkg-deb --fsys-tarfile "$deb" |
			tar -x -C "$root.tmp" --wildcards './boot/vmlinuz-*' ;;
		*) dpkg -x "$deb" "$root.tmp" ;;
		esac
	done
	mk=$root.tmp/usr/src/linux-headers-$kver/Makefile
	[ -f "$mk" ] || die "no headers for $kver in the packages"
	sed -i "s|^include /usr/src/|include $root/usr/src/|" "$mk"
	rm -rf "$root" && mv "$root.tmp" "$root"
	say "$kver in $root"
}

# newest_kver PREFIX APT-OPTION...: the newest "linux-headers-KVER-amd64"
# the metapackage depends on with KVER starting with PREFIX.
newest_kver() {
	prefix=$1; shift
	apt-cache "$@" show linux-headers-amd64 2>/dev/null |
		sed -n 's/^Depends: linux-headers-\([^ ]*-amd64\) .*/\1/p' |
		grep "^$prefix" | sort -V | tail -n1
}

mkdir -p "$dir"
tmp=$(mktemp -d)
chmod 755 "$tmp"	# apt downloads as _apt
trap 'rm -rf "$tmp"' EXIT

# private_apt NAME SOURCES-LINE...: apt options ("$@" afterwards) that see
# only these sources, with their lists in DIR/.apt-NAME, freshly updated.
private_apt() {
	b=$dir/.apt-$1; shift
	mkdir -p "$b/lists/partial" "$b/cache/archives/partial"
	printf '%s\n' "$@" > "$b/sources.list"
	apt_opts="-o Dir::Etc::SourceList=$b/sources.list -o Dir::Etc::SourceParts=/nonexistent
		-o Dir::State::Lists=$b/lists -o Dir::Cache=$b/cache"
	# shellcheck disable=SC2086 # an option list
	apt-get -q $apt_opts update >/dev/null ||
		die "apt-get update of $* failed (network? deb.debian.org must be reachable)"
}

# 6.12: bookworm-security main (the system's sources may lack it).
private_apt bookworm 'deb http://deb.debian.org/debian-security bookworm-security main'
# shellcheck disable=SC2086 # an option list
set -- $apt_opts
kv612=$(apt-cache "$@" search --names-only '^linux-headers-6\.12\.[0-9.]*\+deb12-amd64$' |
	cut -d' ' -f1 | sed 's/^linux-headers-//' | sort -V | tail -n1)
[ -n "$kv612" ] || die "no linux-headers-6.12.*+deb12-amd64 in bookworm-security's package list"
if [ ! -d "$dir/$kv612" ]; then
	abi=${kv612%-amd64}
	(cd "$tmp" && apt-get download -q "$@" "linux-headers-$kv612" \
		"linux-headers-$abi-common" "linux-kbuild-$abi" \
		"linux-image-$kv612-unsigned" >/dev/null) || die "download of $kv612 failed"
	unpack "$kv612" "$tmp"/*.deb
	rm -f "$tmp"/*.deb
fi

# 5.10: bullseye.
private_apt bullseye 'deb http://deb.debian.org/debian bullseye main' \
	'deb http://deb.debian.org/debian-security bullseye-security main'
# shellcheck disable=SC2086 # an option list
set -- $apt_opts
kv510=$(newest_kver '5\.10\.' "$@" || true)
[ -n "$kv510" ] || die "no 5.10 headers in bullseye's lists"
if [ ! -d "$dir/$kv510" ]; then
	(cd "$tmp" && apt-get download -q "$@" "linux-headers-$kv510" \
		"linux-headers-${kv510%-amd64}-common" linux-kbuild-5.10 >/dev/null) ||
		die "download of $kv510 failed"
	unpack "$kv510" "$tmp"/*.deb
fi
