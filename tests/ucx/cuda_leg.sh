#!/bin/sh
# tests/ucx/cuda_leg.sh UCX_PREFIX UCX_SRC [WORK] - gdrx next to a
# CUDA-enabled UCX of the release you built, with gdr_copy running over
# gdrx's libgdrapi.so.2, on the simulated GPU: the flavour sites with GPU
# builds of UCX have (HPC-X, Spack's +gdrcopy).  CI's CUDA-enabled UCX is
# Debian's 1.13; from 1.21 on UCP asserts when its memory-type endpoint
# would need a third CUDA transport, so the releases where gdrx once
# aborted every process run here.
#
# Builds this gdrx source tree against that UCX in WORK/build, then runs
#   - `ucx_info -e -u t` with UCX_TLS unset (worker, memory-type
#     endpoints, an endpoint: the abort of old plugins);
#   - the UCX and MPI suites that use a CUDA-enabled UCX: test_ucp_defaults,
#     test_mpi, test_span, test_uct, test_ucp, test_memtype_race (its
#     UCX >= 1.22 case is built only there), with GDRX_UCX_CUDA_PREFIX set;
# and ends with a labelled summary.  Builds no third-party code: the UCX
# is yours, built by hand, for example from a clone of
# github.com/openucx/ucx at v1.22.0, configured in place:
#
#   ./autogen.sh && ./contrib/configure-release-mt --prefix=UCX_PREFIX \
#       --with-cuda=/usr/local/cuda --with-gdrcopy=GDRAPI --without-gda \
#       --enable-devel-headers CPPFLAGS=-INVML_INCLUDE LDFLAGS=-LNVML_LIB
#   make -j2; make -k install   (perftest's CUDA kernels may not build)
#
# where GDRAPI holds gdrx's gdrapi.h and a link stub of libgdrapi.so.2,
# and NVML_* NVML's header and library: config/deps.sh leaves both in
# /opt/gdrx-ucx-cuda.build (gdrapi/, nvml/) when it builds CI's UCX.
# This gdrx tree must not be configured in place.  Takes 10-20 minutes
# on 2 cores (JOBS=N uses more).
#
#   tests/ucx/cuda_leg.sh /opt/ucx122 ~/src/ucx-1.22 2>&1 | tee cuda-leg.log
#
# Exit status: 0 when everything passed, 1 when a test failed, 2 when
# something is missing or the build failed.
#
# SPDX-License-Identifier: MIT
# make's variables are single-quoted on purpose.
# shellcheck disable=SC2016
set -eu

die() { echo "cuda_leg: $*" >&2; exit 2; }
say() { echo "cuda_leg: $*"; }

if [ $# -lt 2 ] || [ $# -gt 3 ]; then die "usage: $0 UCX_PREFIX UCX_SRC [WORK]"; fi
prefix=$(cd "$1" && pwd) || die "no directory $1"
ucx_src=$(cd "$2" && pwd) || die "no directory $2"
work=${3:-/tmp/gdrx-cuda-leg}
mkdir -p "$work"
work=$(cd "$work" && pwd)
jobs=${JOBS:-2}
cuda=${CUDA_HOME:-/usr/local/cuda}
deps=${UCX_CUDA_WORK:-/opt/gdrx-ucx-cuda.build}
srcdir=$(cd "$(dirname "$0")/../.." && pwd)

[ -x "$prefix/bin/ucx_info" ] || die "no UCX installed at $prefix"
[ -f "$prefix/lib/ucx/libuct_cuda_gdrcopy.so.0" ] ||
    die "$prefix has no gdr_copy module (configure UCX --with-cuda --with-gdrcopy)"
if [ ! -f "$ucx_src/src/uct/base/uct_iface.h" ] || [ ! -f "$ucx_src/config.h" ]; then
    die "$ucx_src is not a configured UCX source tree"
fi
[ ! -f "$srcdir/config.status" ] ||
    die "$srcdir is configured in place: run 'make distclean' there, or use a clean copy"
nvlib=$(dirname "$(find "$deps/nvml" -name 'libnvidia-ml.so*' 2>/dev/null | head -n 1)")
[ -f "$nvlib/libnvidia-ml.so.1" ] || nvlib=""

ucx_v=$("$prefix/bin/ucx_info" -v | sed -n 's/^# Library version: //p')
# what tests/ucx/ut_uct.c and tests/libgdr/tcuda.c look for
echo "ucx $ucx_v-tree cuda $(readlink -f "$cuda") gdrcopy gdrx" >"$prefix/.ucx-cuda-debian"
if [ -n "$nvlib" ]; then echo "$nvlib" >"$prefix/.nvml-libdir"; fi

# 2. gdrx against it, and the programs make check would build
say "gdrx against UCX $ucx_v (logs in $work)"
mkdir -p "$work/build"
cd "$work/build"
[ -x "$srcdir/configure" ] || (cd "$srcdir" && ./autogen.sh) >"$work/autogen.log" 2>&1 ||
    die "autogen failed: $work/autogen.log"
"$srcdir/configure" --enable-all --with-ucx="$prefix" --with-ucx-src="$ucx_src" \
    CFLAGS="${CUDA_LEG_CFLAGS:--O2 -Werror}" >"$work/configure.log" 2>&1 ||
    die "configure failed: $work/configure.log"
grep -q "UCX $ucx_v transport *yes" "$work/configure.log" ||
    die "configure left out the UCX transport: $work/configure.log"
{ make -j"$jobs" && printf 'cuda-leg-programs: $(check_PROGRAMS) $(check_LTLIBRARIES)\n' |
      make -j"$jobs" -f Makefile -f - cuda-leg-programs; } >"$work/make.log" 2>&1 ||
    die "build failed: $work/make.log"

# 3. the runs
b=$work/build
rc=0
lines=""
out=$work/ucx_info.log
env -u UCX_TLS GDRX_BACKEND=dmabuf \
    LD_LIBRARY_PATH="$b/tests/sim/.libs:$b/libgdr/.libs:$b/libgdr/gdrapi/.libs:$prefix/lib${nvlib:+:$nvlib}" \
    LD_PRELOAD="$b/tests/sim/.libs/libcuda.so.1:$b/tests/ucx/.libs/libut_cuda_init.so:$b/ucx_plugin/.libs/libuct_gdrx.so.0" \
    timeout 120 "$prefix/bin/ucx_info" -e -u t >"$out" 2>&1 && st=0 || st=$?
if [ "$st" -eq 0 ] && grep -q "gdrx/" "$out" && ! grep -q "Assertion" "$out"; then
    lines="ucx_info -e -u t, UCX_TLS unset:  passed (gdrx in the endpoint)"
else
    lines="ucx_info -e -u t, UCX_TLS unset:  FAILED (exit $st, $out)"
    grep -m 3 -E "Assertion|ERROR" "$out" || true
    rc=1
fi
for s in tests/ucx/test_ucp_defaults tests/mpi/test_mpi tests/ucx/test_span tests/ucx/test_uct \
         tests/ucx/test_ucp tests/ucx/test_memtype_race; do
    log=$work/$(basename "$s").log
    say "$s (log: $log)"
    GDRX_UCX_CUDA_PREFIX=$prefix GDRX_TEST_SRCDIR=$srcdir GDRX_TEST_BUILDDIR=$b \
        LD_LIBRARY_PATH="$b/tests/sim/.libs:$b/libgdr/.libs${nvlib:+:$nvlib}" \
        timeout 1800 "$b/$s" >"$log" 2>&1 && st=0 || st=$?
    got=$(awk '$1 == "tests" { print $3 " ran, " $4 " passed, " $5 " failed" }' "$log" | tail -n 1)
    if [ "$st" -ne 0 ] || [ -z "$got" ]; then
        rc=1
        grep -E "FAILED|TIMED OUT|NOT RUN" "$log" | head -n 10 | sed 's/^/  /'
    fi
    lines="$lines
$(printf '%-34s %s (exit %s)' "$(basename "$s"):" "${got:-no summary}" "$st")"
done

echo
echo "== cuda_leg summary: UCX $ucx_v with CUDA and gdr_copy over gdrx's libgdrapi, simulated GPU"
echo "$lines"
echo "result: $([ $rc -eq 0 ] && echo passed || echo FAILED) (exit status $rc); logs in $work"
exit $rc
