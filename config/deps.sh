#!/bin/sh
# config/deps.sh [bench] - install the Debian/Ubuntu packages gdrx needs.
# Run as root; safe to run again (it only adds what is missing).  Run as
# another user it installs nothing: it checks that everything it would
# install is there (exit 0), or names what is missing (exit 1), so that the
# README's commands also work for a user once root has run it.
#
# With "bench": only what the main job (make bench: libgdrx, the tools, the
# UCX transport) needs, marked [bench] below; no CUnit, kernel headers,
# qemu or MPI.  Without it: also everything the tests (make check) need.
#
#   build:        [bench] compiler, autotools, libtool, pkg-config; CUnit
#   UCX:          [bench] libucx-dev and the UCX *source* of the installed
#                 version (UCX's uninstalled internal headers), /usr/src/ucx-VER
#   MPI tests:    Open MPI (libopenmpi-dev, openmpi-bin), which uses that UCX
#   kernel tests: qemu, busybox, the Debian kernel's headers and its image
#                 (vmlinuz unpacked to /opt/gdrx-kernel; no bootloader change)
#   nv-p2p.h:     the NVIDIA kernel *source* package, downloaded and unpacked
#                 to /opt/nvidia-kernel-src (installing the dkms package would
#                 compile the whole NVIDIA driver)
#   CUDA UCX:     (Debian, with the CUDA toolkit) the same UCX source package
#                 built with CUDA into /opt/gdrx-ucx-cuda by
#                 config/ucx-cuda-debian.sh (about 4 minutes, once), for the
#                 tests of gdrx next to UCX's own CUDA memory hooks
#
#   cuda.h:       [bench] the only CUDA file the build needs (12.0 or newer).  Used
#                 as found in /usr/local/cuda/include (the toolkit) or
#                 /usr/include; otherwise config/cuda-header.sh unpacks it
#                 alone into /opt/gdrx-cuda/include from Debian 13's
#                 nvidia-cuda-dev package (a ~930 MB download, nothing
#                 installed), where configure finds it.
set -eu

die() { echo "deps.sh: $*" >&2; exit 1; }
say() { echo "deps.sh: $*"; }

case "${1:-}" in
    "") tests=1 ;;
    bench) tests=0 ;;
    *) die "usage: config/deps.sh [bench] (bench: only what make bench needs; default: also what make check needs)" ;;
esac

[ -r /etc/os-release ] || die "cannot identify the distribution (/etc/os-release missing)"
. /etc/os-release
case "$ID:${VERSION_ID:-}" in
    debian:12) suite=bookworm ;;
    ubuntu:22.04|ubuntu:24.04) suite=${VERSION_CODENAME} ;;
    *) die "unsupported distribution '$PRETTY_NAME': gdrx's setup supports Debian 12 and Ubuntu 22.04/24.04; install the equivalents of the packages listed in config/deps.sh by hand" ;;
esac

kpkg=linux-headers-amd64
[ "$ID" = ubuntu ] && kpkg=linux-headers-generic
# What make bench needs, then what only the tests need.
pkgs="build-essential autoconf automake libtool pkg-config dpkg-dev xz-utils file
      libucx-dev ucx-utils"
[ "$tests" = 1 ] && pkgs="$pkgs libcunit1-dev libopenmpi-dev openmpi-bin
      qemu-system-x86 busybox-static cpio kmod $kpkg"

# The checks of what is there: each install step below runs when its check
# fails; a user who is not root gets all of them, and installs nothing.
missing_pkgs() {
    for p in $pkgs; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q ' installed$' || echo "$p"
    done
}
# The kernel the qemu tests boot is the one the headers belong to (not the
# running kernel).
kernel_version() {
    ls -d /usr/src/linux-headers-*-amd64 /usr/src/linux-headers-*-generic 2>/dev/null |
        sed 's|.*/linux-headers-||' | sort -V | tail -n1
}
# (readable by everyone: Ubuntu's /boot/vmlinuz-* is root's alone)
have_vmlinuz() {
    [ -n "$(find "/boot/vmlinuz-$1" "/opt/gdrx-kernel/boot/vmlinuz-$1" -perm -004 2>/dev/null)" ]
}
# The UCX source of exactly the installed libucx (version VERSION-REVISION).
have_ucx_src() {
    [ -f "/usr/src/ucx-${1%-*}/src/uct/base/uct_iface.h" ]
}
have_nv_p2p() {
    [ -n "$(find /opt/nvidia-kernel-src -name nv-p2p.h 2>/dev/null | head -n1)" ]
}
# cuda.h of CUDA 12.0 or newer, where configure looks for it.
cuda_h_ok() {
    for d in /usr/local/cuda /usr /opt/gdrx-cuda; do
        v=$(sed -n 's/^#define CUDA_VERSION  *\([0-9]*\).*/\1/p' "$d/include/cuda.h" 2>/dev/null)
        [ "${v:-0}" -ge 12000 ] && { echo "$d/include/cuda.h"; return 0; }
    done
    return 1
}

if [ "$(id -u)" -ne 0 ]; then
    missing=$(missing_pkgs | tr '\n' ' ')
    ucxver=$(dpkg-query -W -f='${Version}' libucx0 2>/dev/null || true)
    have_ucx_src "$ucxver" || missing="${missing}UCX source "
    cuda_h_ok >/dev/null || missing="${missing}cuda.h "
    if [ "$tests" = 1 ]; then
        kver=$(kernel_version)
        [ -n "$kver" ] && have_vmlinuz "$kver" || missing="${missing}vmlinuz-$kver "
    fi
    if [ "$tests" = 1 ] && [ "$ID" = debian ]; then
        ls -d /opt/gdrx-kheaders/5.10.* /opt/gdrx-kheaders/6.12.* >/dev/null 2>&1 ||
            missing="${missing}/opt/gdrx-kheaders "
        have_nv_p2p || missing="${missing}nv-p2p.h "
        [ ! -f /usr/local/cuda/include/cuda.h ] || [ -f /opt/gdrx-ucx-cuda/.ucx-cuda-debian ] ||
            missing="${missing}/opt/gdrx-ucx-cuda "
    fi
    [ -z "$missing" ] || die "not root, and missing: ${missing}- run config/deps.sh${1:+ $1} as root once (it installs them)"
    say "not root: installed nothing; everything it installs is there"
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
APT="apt-get -y -q -o DPkg::Lock::Timeout=300"

# Source packages (UCX) and, on Debian, contrib/non-free (NVIDIA kernel
# source) come from a sources file of our own, so the system's stay untouched.
srcfile=/etc/apt/sources.list.d/gdrx.sources
if [ "$ID" = debian ]; then
    want="Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian
Suites: $suite ${suite}-updates
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: ${suite}-security
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"
else
    want="Types: deb-src
URIs: http://archive.ubuntu.com/ubuntu
Suites: $suite ${suite}-updates
Components: main universe
Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg
"
fi
if [ ! -f "$srcfile" ] || [ "$(cat "$srcfile")" != "$(printf '%s' "$want")" ]; then
    printf '%s' "$want" > "$srcfile"
fi
say "apt-get update"
$APT update >/dev/null

say "installing packages"
# shellcheck disable=SC2086 # one word a package
$APT install --no-install-recommends $pkgs >/dev/null

# UCX source of exactly the installed libucx version.
ucxver=$(dpkg-query -W -f='${Version}' libucx0 2>/dev/null || true)
[ -n "$ucxver" ] || die "libucx0 is not installed"
upstream=${ucxver%-*}
if ! have_ucx_src "$ucxver"; then
    say "fetching UCX $ucxver source to /usr/src/ucx-$upstream"
    tmp=$(mktemp -d); chmod 755 "$tmp"  # apt downloads as _apt
    (cd "$tmp" && apt-get source -q "ucx=$ucxver" >/dev/null)
    rm -rf "/usr/src/ucx-$upstream"
    mv "$tmp/ucx-$upstream" /usr/src/
    rm -rf "$tmp"
fi

if ! cuda_h=$(cuda_h_ok); then
    # Ubuntu needs Debian's keyring to verify Debian's package list
    [ "$ID" = ubuntu ] && $APT install --no-install-recommends debian-archive-keyring >/dev/null
    sh "$(dirname "$0")/cuda-header.sh" /opt/gdrx-cuda ||
        die "no cuda.h of CUDA 12.0+ (see the message above); install the CUDA toolkit and pass --with-cuda=DIR to configure"
    cuda_h=/opt/gdrx-cuda/include/cuda.h
fi

[ "$tests" = 1 ] || { say "done for make bench (UCX $ucxver, $cuda_h; the tests' packages: sh config/deps.sh)"; exit 0; }

# The rest is for the tests (make check) only.
# Unpack only the kernel's vmlinuz: no initramfs hooks, no grub.
kver=$(kernel_version)
[ -n "$kver" ] || die "no kernel headers found after installing $kpkg"
if ! have_vmlinuz "$kver"; then
    say "unpacking vmlinuz-$kver to /opt/gdrx-kernel"
    tmp=$(mktemp -d); chmod 755 "$tmp"  # apt downloads as _apt
    (cd "$tmp" && apt-get download -q "linux-image-$kver" >/dev/null 2>&1 ||
                  apt-get download -q "linux-image-unsigned-$kver" >/dev/null)
    mkdir -p /opt/gdrx-kernel
    dpkg-deb --fsys-tarfile "$tmp"/linux-image-*.deb |
        tar -x -C /opt/gdrx-kernel --wildcards './boot/vmlinuz-*'
    chmod a+r /opt/gdrx-kernel/boot/vmlinuz-*  # qemu boots it as any user
    rm -rf "$tmp"
fi

# The other kernels gdrdrv is built and booted against (check-kmod-kernels).
if [ "$ID" = debian ]; then
    say "unpacking the extra test kernels (5.10, 6.12) to /opt/gdrx-kheaders"
    sh "$(dirname "$0")/kheaders.sh" /opt/gdrx-kheaders ||
        die "config/kheaders.sh failed (see its message above): the kernel tests (make check) build gdrdrv against Debian 11's 5.10 and Debian 12's 6.12 kernels, fetched from deb.debian.org; make bench needs none of this (sh config/deps.sh bench)"
fi

# nv-p2p.h: from the NVIDIA kernel source package (Debian only).
if [ "$ID" = debian ] && ! have_nv_p2p; then
    say "unpacking the NVIDIA kernel source (for nv-p2p.h) to /opt/nvidia-kernel-src"
    tmp=$(mktemp -d); chmod 755 "$tmp"  # apt downloads as _apt
    (cd "$tmp" && apt-get download -q nvidia-kernel-source >/dev/null)
    mkdir -p /opt/nvidia-kernel-src
    dpkg-deb --fsys-tarfile "$tmp"/nvidia-kernel-source_*.deb | tar -x -C "$tmp"
    tarball=$(find "$tmp/usr/src" -name 'nvidia-kernel*.tar.*' | head -n1)
    if [ -n "$tarball" ]; then
        tar -xf "$tarball" -C /opt/nvidia-kernel-src
    else
        cp -a "$tmp/usr/src/." /opt/nvidia-kernel-src/
    fi
    rm -rf "$tmp"
    have_nv_p2p ||
        die "nv-p2p.h not found in Debian's nvidia-kernel-source package"
fi

# A CUDA-enabled build of the same UCX (its libucm_cuda hooks), for
# tests/hooks/test_ucx_cuda; nvml.h comes from Debian's non-free packages.
if [ "$ID" = debian ] && [ -f /usr/local/cuda/include/cuda.h ]; then
    sh "$(dirname "$0")/ucx-cuda-debian.sh" /opt/gdrx-ucx-cuda /opt/gdrx-ucx-cuda.build ||
        die "building UCX with CUDA failed (see the message above)"
fi

say "done (kernel $kver, UCX $ucxver, $cuda_h)"
