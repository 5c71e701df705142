#!/bin/bash
# .ci/aarch64.sh: cross-compile gdrx for aarch64 with Debian's toolchain and
# run the CUnit suites on the simulated GPU under qemu user-mode emulation.
# From a fresh Debian 12 (amd64) machine, as root, from the repository
# root: installs what it needs (gcc-aarch64-linux-gnu, qemu-user-static,
# arm64 multiarch CUnit; cuda.h through config/deps.sh's route when no
# /usr/local/cuda/include/cuda.h), registers qemu-aarch64 with binfmt_misc
# (the suites fork and exec themselves and gdrx-info, so every aarch64
# program must run as if native), builds in $GDRX_ARM_BUILD (default
# /tmp/gdrx-aarch64) and prints each suite, "N passed, N failed" and the
# time.  Not part of .ci/run (CI time); see docs/arm64.md.
#
# What is not covered here: the UCX transport (no arm64 UCX is installed),
# gdrdrv.ko and its kernel tests (qemu-system-aarch64), the nvrm emulator's
# aarch64 differences.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${GDRX_ARM_BUILD:-/tmp/gdrx-aarch64}
start=$(date +%s)

say() { echo "aarch64: $(date -u +%H:%M:%S) $*"; }
die() { echo "aarch64: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (apt-get, binfmt_misc)"

say "packages"
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends build-essential autoconf automake libtool \
    pkg-config file binutils gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static \
    libcunit1-dev libcunit1-dev:arm64 >/dev/null

cuda=""
for d in /usr/local/cuda /opt/gdrx-cuda; do
    [ -f "$d/include/cuda.h" ] && { cuda=$d; break; }
done
if [ -z "$cuda" ]; then
    say "cuda.h (config/cuda-header.sh)"
    sh "$repo/config/cuda-header.sh" /opt/gdrx-cuda
    cuda=/opt/gdrx-cuda
fi

say "binfmt_misc: qemu-aarch64"
mountpoint -q /proc/sys/fs/binfmt_misc ||
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc ||
    die "cannot mount binfmt_misc"
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
    # magic and mask of an ELF64 little-endian EM_AARCH64 executable or
    # shared object (as qemu-user-static's /usr/share/binfmts/qemu-aarch64);
    # F: the interpreter is opened now, so it works inside chroots too
    interp=/usr/libexec/qemu-binfmt/aarch64-binfmt-P
    [ -x "$interp" ] || interp=/usr/bin/qemu-aarch64-static
    printf '%s' ":qemu-aarch64:M::\\x7f\\x45\\x4c\\x46\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\xb7\\x00:\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xff\\xff\\xff:$interp:FP" \
        > /proc/sys/fs/binfmt_misc/register
fi
grep -qx enabled /proc/sys/fs/binfmt_misc/qemu-aarch64 || die "qemu-aarch64 binfmt entry not enabled"

say "configure --host=aarch64-linux-gnu"
cd "$repo"
[ -x configure ] || ./autogen.sh >/dev/null
rm -rf "$build"; mkdir -p "$build"; cd "$build"
# The x86 host's UCX, kernel headers, MPI and nvcc are not for the target.
"$repo/configure" --host=aarch64-linux-gnu --with-cuda="$cuda" --with-ucx=/nonexistent \
    --with-kernel-headers=/nonexistent MPICC=/nonexistent MPIRUN=/nonexistent \
    NVCC=/nonexistent > configure.log 2>&1 || { tail -n 40 configure.log; die "configure failed"; }
sed -n '/configuration summary/,$p' configure.log
built=$(date +%s)
say "make check-build"
make -j"$(nproc)" check-build > build.log 2>&1 || { grep -E 'error|Error' build.log | head -n 40; die "build failed"; }
file libgdr/.libs/libgdrx.so.0.0.0 | grep -q 'ARM aarch64' || die "libgdrx.so is not an aarch64 object"
say "build: $(( $(date +%s) - built )) s; the suites under qemu-aarch64"
suites=$(date +%s)
# Emulation is slow (and CI machines are shared): a case gets 5 minutes.
# (make's status says there were failures: the summary below says which,
# after the time, so pipefail must not end the script here)
GDRX_TEST_TIMEOUT=${GDRX_TEST_TIMEOUT:-300} make check-suites 2>&1 | tee suites.log |
    grep -E '^=== suite|^ +(suites|tests|asserts) +[0-9]|FAILED|^[0-9]+ passed' || true
end=$(date +%s)
echo "aarch64: suites $(( end - suites )) s, total $(( end - start )) s (build dir $build)"
tail -n 1 suites.log | grep -q ' 0 failed' || die "failures under emulation (logs: $build/tests/logs)"
