#!/bin/sh
# config/cuda-header.sh - put cuda.h (CUDA 12.0 or newer) in PREFIX/include
# on a machine without the CUDA toolkit: gdrx needs only that header to
# build (libcuda is loaded at run time).
#
#   usage: config/cuda-header.sh [PREFIX]     (default /opt/gdrx-cuda,
#                                              where configure looks)
#
# Debian's packages are the source: nvidia-cuda-dev of Debian 13 (trixie,
# CUDA 12.4) from non-free, fetched with apt through a private apt
# configuration (the system's sources, lists and installed packages are
# left as they are) and unpacked for cuda.h alone: nothing is installed,
# no driver library or alternative comes with it.  The package is large (a
# ~930 MB download, deleted afterwards) because it holds the whole toolkit's
# headers and libraries; Debian 12's own nvidia-cuda-dev (CUDA 11.8, 774 MB)
# is too old for gdrx.  Needs root (apt runs its download as _apt), apt,
# dpkg-deb and Debian's archive keyring (debian-archive-keyring).
set -eu

die() { echo "cuda-header.sh: $*" >&2; exit 1; }
say() { echo "cuda-header.sh: $*"; }

prefix=${1:-/opt/gdrx-cuda}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
suite=trixie

[ "$(id -u)" -eq 0 ] || die "run as root (apt downloads as the _apt user)"
command -v apt-get >/dev/null || die "apt-get not found: install cuda.h by hand (CUDA toolkit)"
[ -r "$keyring" ] || die "$keyring missing: apt-get install debian-archive-keyring"

# CUDA_VERSION of a cuda.h, or nothing.
cuda_version() { sed -n 's/^#define CUDA_VERSION  *\([0-9]*\).*/\1/p' "$1" 2>/dev/null; }

if [ -f "$prefix/include/cuda.h" ] && [ "$(cuda_version "$prefix/include/cuda.h")" -ge 12000 ]; then
    say "$prefix/include/cuda.h is there (CUDA_VERSION $(cuda_version "$prefix/include/cuda.h"))"
    exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/etc" "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/deb"
chmod -R 755 "$tmp"
chown -R _apt "$tmp/lists" "$tmp/cache" "$tmp/deb" 2>/dev/null || chmod -R 777 "$tmp/lists" "$tmp/cache" "$tmp/deb"
cat > "$tmp/etc/gdrx-cuda.sources" <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: $suite
Components: non-free
Signed-By: $keyring
EOF
# Only this private configuration: no system source, list or status.
apt_private() {
    apt-get -q -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$tmp/etc" \
        -o Dir::State::Lists="$tmp/lists" -o Dir::Cache="$tmp/cache" \
        -o Dir::State::Status=/dev/null -o APT::Architecture=amd64 "$@"
}
say "reading Debian $suite's non-free package list"
apt_private update >/dev/null || die "apt-get update of Debian $suite non-free failed (network?)"
say "downloading nvidia-cuda-dev of Debian $suite (about 930 MB; only cuda.h is kept)"
(cd "$tmp/deb" && apt_private download nvidia-cuda-dev >/dev/null) ||
    die "apt-get download nvidia-cuda-dev failed"
deb=$(ls "$tmp"/deb/nvidia-cuda-dev_*.deb 2>/dev/null | head -n1)
[ -n "$deb" ] || die "no nvidia-cuda-dev package was downloaded"
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" ./usr/include/cuda.h ||
    die "$deb holds no usr/include/cuda.h"
v=$(cuda_version "$tmp/usr/include/cuda.h")
[ -n "$v" ] && [ "$v" -ge 12000 ] || die "$deb's cuda.h is CUDA_VERSION ${v:-unknown}, older than 12.0"
mkdir -p "$prefix/include"
install -m 644 "$tmp/usr/include/cuda.h" "$prefix/include/cuda.h"
say "installed $prefix/include/cuda.h (CUDA_VERSION $v, from $(basename "$deb"))"
