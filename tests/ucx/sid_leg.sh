#!/bin/sh
# tests/ucx/sid_leg.sh UCX_SRC [CHROOT] - the plugin against a newer UCX than
# CI has: Debian sid's libucx-dev and Open MPI in a chroot (debootstrap'ed
# by the user), with the internal headers from a UCX source tree of the same
# minor release that the user names.  Builds this working tree inside the
# chroot, runs `make check` there (every suite, the MPI ones on sid's Open
# MPI included), then the randomised MPI integrity test on its own and
# prints its count.  Downloads nothing and installs nothing: a missing sid
# package is named, to be installed with `chroot CHROOT apt-get install`.
#
#   sudo tests/ucx/sid_leg.sh ~/src/ucx-1.23 /srv/sid 2>&1 | tee sid-leg.log
#
# Environment: JOBS (make -j, 2), SID_LEG_MESSAGES (integrity messages,
# 3000), SID_LEG_CHECK=n skips `make check` (build and integrity only),
# SID_LEG_CFLAGS (-O1 -g -Werror).
# Exit status: 0 when make check and the integrity test passed.
#
# SPDX-License-Identifier: MIT
set -eu

die() { echo "sid_leg: $*" >&2; exit 2; }

[ $# -ge 1 ] || die "usage: $0 UCX_SRC [CHROOT]"
ucx_src=$(cd "$1" && pwd) || die "no UCX source tree at $1"
root=${2:-/srv/sid}
jobs=${JOBS:-2}
messages=${SID_LEG_MESSAGES:-3000}
cflags=${SID_LEG_CFLAGS:--O1 -g -Werror}
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
work=/tmp/gdrx-sid-leg

[ -f "$ucx_src/src/uct/base/uct_iface.h" ] ||
    die "$ucx_src is not a UCX source tree (no src/uct/base/uct_iface.h)"
[ "$(id -u)" = 0 ] || die "needs root (chroot, mounts)"
[ -x "$root/bin/sh" ] || die "no chroot at $root"

missing=""
for p in gcc make autoconf automake libtool pkg-config libcunit1-dev \
         libucx-dev ucx-utils libopenmpi-dev openmpi-bin; do
    chroot "$root" dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
        grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] ||
    die "missing in $root:$missing (chroot $root apt-get install$missing)"

# The release of the chroot's UCX and of the tree must be one minor release.
ucx_v=$(sed -n 's/^#define UCT_VERNO_STRING *"\(.*\)"/\1/p' \
        "$root/usr/include/uct/api/version.h")
tree_v=$(sed -n 's/^define(\[ucx_ver_major\], *\([0-9]*\)).*/\1/p; s/^define(\[ucx_ver_minor\], *\([0-9]*\)).*/\1/p' \
         "$ucx_src/configure.ac" | paste -sd.)
echo "sid_leg: chroot $root: UCX $ucx_v ($(chroot "$root" dpkg-query -W \
      -f='${Version}' libucx-dev)), Open MPI $(chroot "$root" dpkg-query -W \
      -f='${Version}' libopenmpi-dev), $(chroot "$root" gcc --version | head -n 1)"
echo "sid_leg: UCX source tree $ucx_src (release ${tree_v:-unknown})"
case "$ucx_v" in
"$tree_v".*) ;;
*) echo "sid_leg: warning: tree ${tree_v:-?} and chroot UCX $ucx_v differ" ;;
esac

# Sources into the chroot: this working tree as it is (committed or not,
# without what git ignores), and the UCX tree's headers only.
rm -rf "$root$work"
mkdir -p "$root$work/src" "$root$work/ucx" "$root$work/build"
(cd "$srcdir" && git ls-files -co --exclude-standard -z |
     tar --null -T - -cf -) | tar -C "$root$work/src" -xf -
(cd "$ucx_src" && find src \( -name '*.h' -o -name '*.inl' \) -print0 |
     tar --null -T - -cf -) | tar -C "$root$work/ucx" -xf -

# Open MPI and the simulated GPU need /proc, UCX's tcp /sys, Open MPI a
# shared-memory /dev/shm; what this mounts is unmounted at exit.
mounted=""
cleanup() {
    for m in $mounted; do umount "$m" || true; done
}
trap cleanup EXIT INT TERM
if ! mountpoint -q "$root/proc"; then
    mount -t proc proc "$root/proc"
    mounted="$root/proc $mounted"
fi
if ! mountpoint -q "$root/sys"; then
    mount -t sysfs -o ro sysfs "$root/sys"
    mounted="$root/sys $mounted"
fi
mkdir -p "$root/dev/shm"
if ! mountpoint -q "$root/dev/shm"; then
    mount -t tmpfs -o mode=1777 shm "$root/dev/shm"
    mounted="$root/dev/shm $mounted"
fi

in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root \
            LANG=C.UTF-8 /bin/sh -c "$1"; }

echo "sid_leg: building (make -j$jobs)"
in_root "cd $work/src && ./autogen.sh >$work/autogen.log 2>&1 &&
         cd $work/build && $work/src/configure --with-ucx-src=$work/ucx \
             CFLAGS='$cflags' >$work/configure.log 2>&1 &&
         make -j$jobs >$work/make.log 2>&1" ||
    die "build failed: see $root$work/*.log"
sed -n '/^gdrx .* configuration/,$p' "$root$work/configure.log"

rc=0
if [ "${SID_LEG_CHECK:-y}" = n ]; then
    # what the integrity run below needs of make check's programs
    in_root "cd $work/build && make -j$jobs tests/sim/libcuda.la tests/ucx/libut_cuda_init.la \
             tests/mpi/gdrx_mpi_integrity >>$work/make.log 2>&1" ||
        die "build of the integrity test failed: see $root$work/make.log"
else
    echo "sid_leg: make check"
    in_root "cd $work/build && make -j$jobs check" >"$root$work/check.log" 2>&1 || rc=1
    grep -E '^(=== suite .*(counted|exit)|  *[0-9]+ passed|.* passed, .* failed)' \
        "$root$work/check.log" || true
    tail -n 3 "$root$work/check.log"
    echo "sid_leg: per suite (program passed failed):"
    cat "$root$work/build/tests/results.txt" 2>/dev/null || true
fi

# The MPI integrity test on its own: two ranks on the simulated GPU
# (preloaded, set up before MPI_Init), the plugin preloaded, sm and gdrx
# only; the same command test_mpi runs, with its output shown.
b=$work/build
integrity_cmd() {
    echo "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1" \
         "GDRX_BACKEND=dmabuf UCX_TLS=sm,gdrx UCX_MEMTYPE_CACHE=$1" \
         "LD_LIBRARY_PATH=$b/tests/sim/.libs:$b/libgdr/.libs" \
         "LD_PRELOAD=$b/tests/sim/.libs/libcuda.so.1:$b/tests/ucx/.libs/libut_cuda_init.so:$b/ucx_plugin/.libs/libuct_gdrx.so.0" \
         "mpirun -np 2 --oversubscribe --bind-to none --allow-run-as-root" \
         "--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any" \
         "--mca btl self,vader -x LD_PRELOAD -x LD_LIBRARY_PATH -x UCX_TLS" \
         "-x UCX_MEMTYPE_CACHE -x GDRX_BACKEND" \
         "$b/tests/mpi/gdrx_mpi_integrity -n $messages -s 1"
}
for cache in y n; do
    echo "sid_leg: integrity, UCX_MEMTYPE_CACHE=$cache (in the chroot):"
    echo "  $(integrity_cmd $cache)"
    in_root "cd $b && $(integrity_cmd $cache)" \
        >"$root$work/integrity-$cache.log" 2>&1 || rc=1
    grep -E 'integrity:' "$root$work/integrity-$cache.log" ||
        { tail -n 20 "$root$work/integrity-$cache.log"; rc=1; }
done
echo "sid_leg: logs in $root$work; exit status $rc"
exit $rc
