#!/bin/sh
# tests/ucx/sid_leg.sh UCX_SRC [CHROOT] - the plugin against a newer UCX than
# CI has: Debian sid's libucx-dev and Open MPI in a chroot, with the internal
# headers from a UCX source tree of the same minor release that you name.
# Builds this source tree inside the chroot, runs `make check` there (every
# suite, the MPI ones on sid's Open MPI included), then the randomised MPI
# integrity test on its own, and ends with a labelled summary.  Downloads
# nothing and installs nothing: what is missing is named, with the command
# that installs it.  Takes 12-18 minutes on 2 cores (make check is most of
# it); JOBS=N uses more.
#
# Once, as root, on a Debian or Ubuntu host (debootstrap, ~1 GB in CHROOT):
#
#   1. The chroot:
#        apt-get install debootstrap
#        debootstrap --variant=minbase sid /srv/sid http://deb.debian.org/debian
#      If apt in the chroot later says the Release file "is expired" (sid's
#      Valid-Until passed on a mirror or snapshot that lags), tell it not to
#      check:
#        echo 'Acquire::Check-Valid-Until "false";' \
#            > /srv/sid/etc/apt/apt.conf.d/99gdrx-no-valid-until
#   2. Its packages:
#        chroot /srv/sid apt-get update
#        chroot /srv/sid apt-get install -y gcc make autoconf automake \
#            libtool pkg-config libcunit1-dev libucx-dev ucx-utils \
#            libopenmpi-dev openmpi-bin
#   3. cuda.h (CUDA 12.0 or newer; the only CUDA file the build needs) where
#      configure looks, /opt/gdrx-cuda/include in the chroot.  config/deps.sh
#      does not run in sid; copy the host's instead (on a Debian 12 host
#      `sh config/deps.sh bench` or `sh config/cuda-header.sh` makes
#      /opt/gdrx-cuda/include/cuda.h; the CUDA toolkit has
#      /usr/local/cuda/include/cuda.h):
#        mkdir -p /srv/sid/opt/gdrx-cuda/include
#        cp /opt/gdrx-cuda/include/cuda.h /srv/sid/opt/gdrx-cuda/include/
#   4. A UCX source tree of the chroot's minor release (see `chroot /srv/sid
#      dpkg-query -W libucx-dev`), e.g. a clone of github.com/openucx/ucx at
#      the matching tag or release branch; nothing in it needs building.
#      The tree need not be the package's exact version: sid may carry a
#      release candidate (1.23.0~rc1) while the tree is a later commit of
#      that line.  The script prints both and warns only when the minor
#      release differs; internal headers changed between the two are what
#      would then break the plugin's build.  The lane report of
#      tests/ucx/ucp_job (test_ucp_defaults) does not depend on the tree
#      matching the package exactly: it reads what UCP prints through its
#      public API, not UCP's structures through the tree's headers.
#
# Then, from a checkout or any copy of gdrx (a release tarball, a copy
# without .git; not one configured in place):
#
#   sudo tests/ucx/sid_leg.sh ~/src/ucx-1.23 /srv/sid 2>&1 | tee sid-leg.log
#
# For its run it bind-mounts the host's /dev (so that /dev/kmsg exists and
# test_info's test_gdrdrv_permission runs rather than being left out),
# /proc and a read-only /sys, and unmounts them at exit; the build is in
# CHROOT/tmp/gdrx-sid-leg, its logs next to it.
#
# Environment: JOBS (make -j, 2), SID_LEG_MESSAGES (integrity messages,
# 3000), SID_LEG_CHECK=n skips `make check` (build and integrity only),
# SID_LEG_CFLAGS (-O1 -g -Werror).
# Exit status: 0 when make check and the integrity test passed, 1 when a
# test failed, 2 when something is missing or the build failed.
#
# SPDX-License-Identifier: MIT
# dpkg-query -f formats are single-quoted on purpose; cleanup runs from trap.
# shellcheck disable=SC2016,SC2317
set -eu

die() { echo "sid_leg: $*" >&2; exit 2; }

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    die "usage: $0 UCX_SRC [CHROOT]   (the header says how to make CHROOT)"
fi
[ -d "$1" ] || die "no UCX source tree at $1"
ucx_src=$(cd "$1" && pwd)
root=${2:-/srv/sid}
jobs=${JOBS:-2}
messages=${SID_LEG_MESSAGES:-3000}
cflags=${SID_LEG_CFLAGS:--O1 -g -Werror}
srcdir=$(cd "$(dirname "$0")/../.." && pwd -P)
work=/tmp/gdrx-sid-leg
recipe="see the header of $0 for the recipe"

[ -f "$ucx_src/src/uct/base/uct_iface.h" ] ||
    die "$ucx_src is not a UCX source tree (no src/uct/base/uct_iface.h)"
if [ ! -f "$srcdir/configure.ac" ] || [ ! -f "$srcdir/autogen.sh" ]; then
    die "$srcdir is not a gdrx source tree"
fi
[ ! -f "$srcdir/config.status" ] ||
    die "$srcdir is configured in place: run 'make distclean' there, or use a clean copy"
[ "$(id -u)" = 0 ] || die "needs root (chroot, mounts)"
[ -x "$root/bin/sh" ] || die "no chroot at $root ($recipe, step 1)"

missing=""
for p in gcc make autoconf automake libtool pkg-config libcunit1-dev \
         libucx-dev ucx-utils libopenmpi-dev openmpi-bin; do
    chroot "$root" dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
        grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] ||
    die "missing in $root:$missing (chroot $root apt-get install$missing; $recipe, step 2)"

# configure takes the first cuda.h of these; in sid, config/deps.sh (which
# would put one in /opt/gdrx-cuda) refuses to run.
cuda_h=""
for d in /usr/local/cuda/include /usr/include /opt/gdrx-cuda/include; do
    if [ -f "$root$d/cuda.h" ]; then cuda_h=$d/cuda.h; break; fi
done
[ -n "$cuda_h" ] ||
    die "no cuda.h in $root (looked in /usr/local/cuda/include, /usr/include, /opt/gdrx-cuda/include):
  mkdir -p $root/opt/gdrx-cuda/include && cp /opt/gdrx-cuda/include/cuda.h $root/opt/gdrx-cuda/include/
  ($recipe, step 3)"
cuda_v=$(sed -n 's/^#define CUDA_VERSION *\([0-9]*\).*/\1/p' "$root$cuda_h")
[ "${cuda_v:-0}" -ge 12000 ] ||
    die "$root$cuda_h is CUDA ${cuda_v:-of unknown version}; gdrx needs 12.0 or newer ($recipe, step 3)"

# The release of the chroot's UCX and of the tree must be one minor release.
ucx_v=$(sed -n 's/^#define UCT_VERNO_STRING *"\(.*\)"/\1/p' \
        "$root/usr/include/uct/api/version.h")
tree_v=$(sed -n 's/^define(\[ucx_ver_major\], *\([0-9]*\)).*/\1/p; s/^define(\[ucx_ver_minor\], *\([0-9]*\)).*/\1/p' \
         "$ucx_src/configure.ac" | paste -sd.)
tree_rev=$( (git -C "$ucx_src" describe --always --tags 2>/dev/null) || echo "no git")
echo "sid_leg: chroot $root: UCX $ucx_v (package $(chroot "$root" dpkg-query -W \
      -f='${Version}' libucx-dev)), Open MPI $(chroot "$root" dpkg-query -W \
      -f='${Version}' libopenmpi-dev), $(chroot "$root" gcc --version | head -n 1), $cuda_h (CUDA $cuda_v)"
echo "sid_leg: UCX source tree $ucx_src (release ${tree_v:-unknown}, $tree_rev)"
case "$ucx_v" in
"$tree_v".*) echo "sid_leg: tree and package are of one minor release (their exact versions may differ)" ;;
*) echo "sid_leg: warning: tree ${tree_v:-?} and chroot UCX $ucx_v are not of one minor release" ;;
esac

# Sources into the chroot: this tree as it is, with what git ignores left
# out where it is a git checkout, whole otherwise (a tarball or a copy
# without .git); the UCX tree's headers only.
rm -rf "${root:?}$work"
mkdir -p "$root$work/src" "$root$work/ucx" "$root$work/build"
if git -C "$srcdir" rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
   [ "$(git -C "$srcdir" rev-parse --show-toplevel)" = "$srcdir" ]; then
    (cd "$srcdir" && git ls-files -co --exclude-standard -z |
         tar --null -T - -cf -) | tar -C "$root$work/src" -xf -
else
    tar -C "$srcdir" --exclude=./.git --exclude=./autom4te.cache -cf - . |
        tar -C "$root$work/src" -xf -
fi
(cd "$ucx_src" && find src \( -name '*.h' -o -name '*.inl' \) -print0 |
     tar --null -T - -cf -) | tar -C "$root$work/ucx" -xf -

# Open MPI and the simulated GPU need /proc, UCX's tcp /sys, Open MPI a
# shared-memory /dev/shm, test_info's permission case /dev/kmsg: the
# host's /dev is bound in (recursively, so /dev/shm and /dev/pts come
# along, and as a slave, so nothing done here reaches the host's).  What
# this mounts is unmounted at exit.
mounted=""
cleanup() {
    for m in $mounted; do umount -R "$m" 2>/dev/null || umount -l "$m" || true; done
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
if ! mountpoint -q "$root/dev"; then
    mount --rbind /dev "$root/dev"
    mount --make-rslave "$root/dev"
    mounted="$root/dev $mounted"
fi
[ -c "$root/dev/kmsg" ] ||
    echo "sid_leg: warning: no /dev/kmsg in $root: test_info's permission case will not run"

in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root \
            LANG=C.UTF-8 /bin/sh -c "$1"; }

echo "sid_leg: building (make -j$jobs)"
in_root "cd $work/src && ./autogen.sh >$work/autogen.log 2>&1 &&
         cd $work/build && $work/src/configure --with-ucx-src=$work/ucx \
             CFLAGS='$cflags' >$work/configure.log 2>&1 &&
         make -j$jobs >$work/make.log 2>&1" ||
    die "build failed: see $root$work/autogen.log, configure.log, make.log"
sed -n '/^gdrx .* configuration/,$p' "$root$work/configure.log"

rc=0 check_line="make check:           not run (SID_LEG_CHECK=n)"
if [ "${SID_LEG_CHECK:-y}" = n ]; then
    # what the integrity run below needs of make check's programs
    in_root "cd $work/build && make -j$jobs tests/sim/libcuda.la tests/ucx/libut_cuda_init.la \
             tests/mpi/gdrx_mpi_integrity >>$work/make.log 2>&1" ||
        die "build of the integrity test failed: see $root$work/make.log"
else
    echo "sid_leg: make check (log: $root$work/check.log)"
    in_root "cd $work/build && make -j$jobs check" >"$root$work/check.log" 2>&1 || rc=1
    results=$root$work/build/tests/results.txt
    if [ -s "$results" ]; then
        echo "sid_leg: make check, per suite or step (passed failed):"
        awk '{ printf "  %-44s %5d %5d\n", $1, $2, $3 }' "$results"
        grep '^NOT RUN' "$root$work/check.log" | sed 's/^/  /' || true
        # CUnit suites are recorded by their program's path, the extra
        # steps (kernel tests, bench-bare, docs) by their target's name.
        check_line=$(awk '
            $1 ~ /^tests\// { sp += $2; sf += $3; sn++; next }
            { ep += $2; ef += $3; en++ }
            END {
                printf "make check:           %d passed, %d failed\n", sp + ep, sf + ef
                printf "  CUnit suites (%d):   %d passed, %d failed\n", sn, sp, sf
                printf "  extra steps (%d):    %d passed, %d failed", en, ep, ef
            }' "$results")
    else
        check_line="make check:           no results (see $root$work/check.log)"
        tail -n 20 "$root$work/check.log"
        rc=1
    fi
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
integrity_lines=""
for cache in y n; do
    echo "sid_leg: integrity, UCX_MEMTYPE_CACHE=$cache (in the chroot):"
    echo "  $(integrity_cmd $cache)"
    log=$root$work/integrity-$cache.log
    in_root "cd $b && $(integrity_cmd $cache)" >"$log" 2>&1 || rc=1
    got=$(grep -m1 -E '^integrity:' "$log" || true)
    if [ -z "$got" ]; then
        tail -n 20 "$log"
        got="no result (see $log)"
        rc=1
    fi
    echo "  $got"
    integrity_lines="$integrity_lines
integrity, UCX_MEMTYPE_CACHE=$cache: $got"
done

echo
echo "== sid_leg summary: UCX $ucx_v, UCX tree ${tree_v:-?} ($tree_rev)"
echo "$check_line"
echo "${integrity_lines#?}"
echo "result:               $([ $rc -eq 0 ] && echo passed || echo FAILED) (exit status $rc); logs in $root$work"
exit $rc
