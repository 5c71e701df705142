#!/bin/bash
# .ci/bullseye-fork.sh: the fork suites (`make check-fork`) on a glibc
# older than 2.36, in a minimal Debian 11 (glibc 2.31, as Ubuntu 22.04's
# 2.35 behaves): before 2.36, fork() holds glibc's handler lock while every
# prepare handler runs, so a handler that waits for another thread which is
# itself registering a handler (libcuda's first cuInit does) deadlocks
# there and nowhere newer.  The library, the simulated GPU and the suites
# are built there from a clone of HEAD; cuda.h comes from this machine's
# CUDA toolkit, bound read-only.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

say() { echo "bullseye-fork: $(date -u +%H:%M:%S) $*"; }
die() { echo "bullseye-fork: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, chroot)"
cuda=$(readlink -f "${CUDA_HOME:-/usr/local/cuda}")
[ -f "$cuda/include/cuda.h" ] || die "no CUDA toolkit at ${CUDA_HOME:-/usr/local/cuda} (config/deps.sh installs one)"

# shellcheck source=.ci/chroot.sh
. "$repo/.ci/chroot.sh"
chroot_make bullseye git,ca-certificates,gcc,make,autoconf,automake,libtool,pkg-config,libcunit1-dev
chroot_bind "$cuda"
git clone -q "$repo" "$root/root/gdrx"

glibc=$(in_root "ldd --version | head -n 1")
say "$glibc"
log=$root/check-fork.log
in_root "cd /root/gdrx && ./autogen.sh && ./configure --with-cuda=$cuda && make -j2 && make -j2 check-fork" \
    > "$log" 2>&1 || {
    tail -n 40 "$log"
    # the failed suites' own logs (tests/logs/NAME.log: their FAILED lines)
    grep -l -E 'FAILED|Failed|Aborted|Segmentation' "$root"/root/gdrx/tests/logs/*.log 2>/dev/null |
        while read -r f; do echo "--- $f"; tail -n 40 "$f"; done
    die "make check-fork failed on $glibc"
}
sed -n '/^== summary/,$p' "$log"
grep -q 'test_fork' "$log" || die "the fork suites did not run"
say "passed"
