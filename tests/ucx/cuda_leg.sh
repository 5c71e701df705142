#!/bin/sh
# tests/ucx/cuda_leg.sh UCX_SRC [WORK] - gdrx next to a CUDA-enabled UCX of
# the release you name, with gdr_copy running over gdrx's libgdrapi.so.2,
# on the simulated GPU: the flavour sites with GPU builds of UCX have
# (HPC-X, Spack's +gdrcopy).  CI's CUDA-enabled UCX is Debian's 1.13; from
# 1.21 on UCP asserts when its memory-type endpoint would need a third
# CUDA transport, so the releases where gdrx once aborted every process
# run here.
#
# Builds the UCX tree in WORK/ucx (a copy; the tree you name is not
# touched) into WORK/prefix, then this gdrx source tree against it in
# WORK/build, then runs
#   - `ucx_info -e -u t` with UCX_TLS unset (worker, memory-type
#     endpoints, an endpoint: the abort of old plugins);
#   - the UCX and MPI suites that use a CUDA-enabled UCX: test_ucp_defaults,
#     test_mpi, test_span, test_uct, test_ucp, test_memtype_race (its
#     UCX >= 1.22 case is built only there), with GDRX_UCX_CUDA_PREFIX set;
# and ends with a labelled summary.  Downloads nothing and installs
# nothing outside WORK.
#
# Needs what config/deps.sh sets up, whose CUDA-enabled UCX build leaves
# two things this leg reuses in its work directory (UCX_CUDA_WORK, default
# /opt/gdrx-ucx-cuda.build): gdrx's gdrapi.h with a link stub of
# libgdrapi.so.2 (gdrapi/) and NVML's header and library (nvml/).  And a
# UCX source tree, e.g. a clone of github.com/openucx/ucx at v1.22.0
# (autogen.sh is run in the copy if it has no configure).  This gdrx tree
# must not be configured in place.  Takes 25-40 minutes on 2 cores, most
# of it UCX's build (JOBS=N uses more; a second run reuses WORK/prefix).
#
#   tests/ucx/cuda_leg.sh ~/src/ucx-1.22 /tmp/gdrx-cuda-leg 2>&1 | tee cuda-leg.log
#
# Exit status: 0 when everything passed, 1 when a test failed, 2 when
# something is missing or a build failed.
#
# SPDX-License-Identifier: MIT
# make's variables are single-quoted on purpose.
# shellcheck disable=SC2016
set -eu

die() { echo "cuda_leg: $*" >&2; exit 2; }
say() { echo "cuda_leg: $*"; }

if [ $# -lt 1 ] || [ $# -gt 2 ]; then die "usage: $0 UCX_SRC [WORK]"; fi
ucx_src=$(cd "$1" && pwd) || die "no directory $1"
work=${2:-/tmp/gdrx-cuda-leg}
mkdir -p "$work"
work=$(cd "$work" && pwd)
jobs=${JOBS:-2}
cuda=${CUDA_HOME:-/usr/local/cuda}
deps=${UCX_CUDA_WORK:-/opt/gdrx-ucx-cuda.build}
srcdir=$(cd "$(dirname "$0")/../.." && pwd)

[ -f "$ucx_src/configure.ac" ] || die "$ucx_src is not a UCX source tree"
[ -f "$cuda/include/cuda.h" ] || die "no CUDA toolkit at $cuda (set CUDA_HOME)"
[ -f "$deps/gdrapi/include/gdrapi.h" ] ||
    die "no gdrapi stub in $deps (run config/deps.sh, or set UCX_CUDA_WORK)"
nvinc=$(dirname "$(find "$deps/nvml" -name nvml.h 2>/dev/null | head -n 1)")
nvlib=$(dirname "$(find "$deps/nvml" -name 'libnvidia-ml.so*' 2>/dev/null | head -n 1)")
[ -f "$cuda/include/nvml.h" ] || [ -f "$nvinc/nvml.h" ] ||
    die "no nvml.h in $cuda/include or $deps/nvml (run config/deps.sh)"
[ ! -f "$srcdir/config.status" ] ||
    die "$srcdir is configured in place: run 'make distclean' there, or use a clean copy"

# 1. UCX, with CUDA and gdr_copy (perftest's CUDA kernels may not build
#    without DOCA headers: nothing here needs them, hence make -k install)
prefix=$work/prefix
if [ ! -f "$prefix/lib/ucx/libuct_cuda_gdrcopy.so.0" ]; then
    say "UCX from $ucx_src (logs in $work)"
    rm -rf "$work/ucx"
    cp -a "$ucx_src" "$work/ucx"
    cd "$work/ucx"
    [ -x configure ] || ./autogen.sh >"$work/ucx-autogen.log" 2>&1 ||
        die "UCX's autogen.sh failed: $work/ucx-autogen.log"
    extra=""
    ./configure --help | grep -q -- '--with-gda' && extra="--without-gda"
    ./contrib/configure-release-mt --prefix="$prefix" --with-cuda="$cuda" \
        --with-gdrcopy="$deps/gdrapi" --without-verbs --without-rdmacm --without-rocm \
        --without-java --without-go --disable-doxygen-doc --enable-devel-headers $extra \
        ${nvinc:+CPPFLAGS=-I$nvinc} ${nvlib:+LDFLAGS=-L$nvlib} >"$work/ucx-configure.log" 2>&1 ||
        die "UCX's configure failed: $work/ucx-configure.log"
    make -j"$jobs" >"$work/ucx-make.log" 2>&1 || say "UCX's make had errors (see $work/ucx-make.log)"
    make -k install >"$work/ucx-install.log" 2>&1 || true
    [ -f "$prefix/lib/ucx/libuct_cuda_gdrcopy.so.0" ] ||
        die "UCX built no gdr_copy module: $work/ucx-make.log"
fi
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
"$srcdir/configure" --enable-all --with-ucx="$prefix" --with-ucx-src="$work/ucx" \
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
        LD_LIBRARY_PATH="$b/tests/sim/.libs:$b/libgdr/.libs" \
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
