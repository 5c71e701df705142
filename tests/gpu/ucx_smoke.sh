#!/bin/bash
# ucx_smoke.sh UCX_SRC UCX_LIBDIR CUNIT_ROOT [UCX_INFO] - the gdrx UCX
# transport on a GPU machine without autotools: build libgdrx (build.sh),
# the plugin against the UCX whose libraries are in UCX_LIBDIR (UCX_SRC: a
# configured source tree of the same release, headers and config.h only),
# and tests/ucx/test_uct; then run test_uct's data cases on the real GPU
# (nvrm backend), test_ucp_aside's (gdrx that cannot serve steps aside;
# with a CUDA-enabled UCX also leaving GPU memory to cuda_copy), `ucx_info
# -d` and `-c` with the plugin preloaded, and bench_uct; with GDRX_UCX_CUDA_PREFIX (a CUDA-enabled UCX 1.13.1: lib/
# libucs, libucm, ucx/libucm_cuda) also tests/hooks/test_ucx_cuda on the
# real libcuda.  UCX_VERSION (default MAJOR.MINOR.0 of the tree) is the
# release recorded in the plugin.  CUNIT_ROOT holds usr/include/CUnit and usr/lib/*/libcunit.so.
# Output under $OUT (ucx_smoke.txt); exit status non-zero on any failure.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
UCX_SRC=$(cd "${1:?usage: ucx_smoke.sh UCX_SRC UCX_LIBDIR CUNIT_ROOT [UCX_INFO]}" && pwd)
UCX_LIBDIR=${2:?UCX_LIBDIR}
CUNIT=$(cd "${3:?CUNIT_ROOT}" && pwd)
UCX_INFO=${4:-}
B=${GDRX_GPU_BUILD:-/tmp/gdrx-gpu}
CUDA=${CUDA_HOME:-/usr/local/cuda}
LOG=${OUT:-/tmp}/ucx_smoke.txt
BACKEND=${GDRX_BACKEND:-nvrm}

main() {
    local rc=0 ver cunit_lib
    [ -x "$B/gdrx-copylat" ] || bash "$SRC/tests/gpu/build.sh" "$B" || return 1

    local P="$B/ucx_plugin/.libs" T="$B/tests/ucx" built
    mkdir -p "$T"
    built=$(bash "$SRC/tests/gpu/build_plugin.sh" "$UCX_SRC" "$UCX_LIBDIR" "$P") || return 1
    ver=$(echo "$built" | sed -n 's/^UCX_VERSION=//p')
    local UCXF LIBS="-L$UCX_LIBDIR -l:libucp.so.0 -l:libuct.so.0 -l:libucs.so.0 -l:libucm.so.0"
    UCXF=$(echo "$built" | sed -n 's/^UCXF=//p')
    echo "== UCX $ver from $UCX_LIBDIR, headers of $UCX_SRC ($UCXF)"
    cunit_lib=$(dirname "$(find "$CUNIT" -name 'libcunit.so' | head -n1)")
    # shellcheck disable=SC2086
    for prog in test_uct bench_uct test_ucp_aside; do
        gcc -std=gnu11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -pthread -I"$SRC/libgdr/include" \
            -I"$SRC/tests/harness" -I"$SRC/tests/libgdr" -I"$SRC/tests/sim" -I"$CUDA/include" \
            -I"$CUNIT/usr/include" $UCXF "$SRC/tests/ucx/$prog.c" "$SRC/tests/ucx/ut_uct.c" \
            "$SRC/tests/ucx/ut_ucp.c" \
            "$SRC/tests/libgdr/tcuda.c" "$SRC/tests/harness/gdrx_test.c" \
            "$SRC/tests/harness/gdrx_test_proc.c" -o "$T/$prog" -L"$B" -lgdrx \
            -L"$cunit_lib" -lcunit $LIBS -ldl -Wl,-rpath,"$B:$cunit_lib:$UCX_LIBDIR" || return 1
    done
    echo "built $P/libuct_gdrx.so.0, $T/test_uct, $T/bench_uct, $T/test_ucp_aside"

    # Real GPU data checks: every size 0..64 KiB at odd offsets, each
    # direction, short/bcopy/zcopy; host memory; bad parameters; two threads.
    # (test_pin_failure needs the simulated GPU's fault injection.)
    local f
    for f in _sizes host_memory bad_params two_threads; do
        echo "== test_uct, cases matching '$f' (GDRX_BACKEND=$BACKEND)"
        (cd "$B" && GDRX_TEST_BUILDDIR="$B" GDRX_BACKEND="$BACKEND" GDRX_TEST_FILTER="$f" \
            "$T/test_uct") || rc=1
    done
    # gdrx that cannot serve steps aside: its backend forced to a missing
    # gdrdrv (environment: not listed; UCP's configuration: stands aside),
    # device memory as without gdrx, and with a CUDA-enabled UCX GPU memory
    # through cuda_copy.  (test_cuda_failure_stands_aside needs the simulated
    # GPU's fault injection.)
    for f in forced_backend device_memory cuda_copy; do
        echo "== test_ucp_aside, cases matching '$f' (GDRX_BACKEND=$BACKEND)"
        (cd "$B" && GDRX_TEST_BUILDDIR="$B" GDRX_BACKEND="$BACKEND" GDRX_TEST_FILTER="$f" \
            "$T/test_ucp_aside") || rc=1
    done
    if [ -n "$UCX_INFO" ]; then
        echo "== ucx_info -d / -c with LD_PRELOAD (UCX libraries of $UCX_LIBDIR)"
        local env=(env LD_LIBRARY_PATH="$UCX_LIBDIR:$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LD_PRELOAD="$P/libuct_gdrx.so.0"
                   GDRX_BACKEND="$BACKEND")
        "${env[@]}" "$UCX_INFO" -v | head -n2
        "${env[@]}" "$UCX_INFO" -d | grep -B2 -A30 'Transport: gdrx' | head -n40 || rc=1
        "${env[@]}" "$UCX_INFO" -d | grep -q 'Transport: gdrx' || { echo "gdrx NOT listed"; rc=1; }
        "${env[@]}" "$UCX_INFO" -c | grep 'GDRX' || rc=1
    fi
    # gdrx's CUDA hooks next to a CUDA-enabled UCX's own (libucm_cuda, bistro
    # and reloc, either loaded first) on the real libcuda.
    if [ -n "${GDRX_UCX_CUDA_PREFIX:-}" ]; then
        echo "== test_ucx_cuda with $GDRX_UCX_CUDA_PREFIX (real libcuda, GDRX_BACKEND=$BACKEND)"
        gcc -std=gnu11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -pthread -I"$SRC/libgdr/include" \
            -I"$SRC/tests/harness" -I"$SRC/tests/libgdr" -I"$CUDA/include" -I"$CUNIT/usr/include" \
            "$SRC/tests/hooks/test_ucx_cuda.c" "$SRC/tests/libgdr/tcuda.c" \
            "$SRC/tests/harness/gdrx_test.c" "$SRC/tests/harness/gdrx_test_proc.c" \
            -o "$B/test_ucx_cuda" -L"$B" -lgdrx -L"$cunit_lib" -lcunit -L"$CUDA/lib64/stubs" \
            -lcuda -ldl -Wl,-rpath,"$B:$cunit_lib" || return 1
        (cd "$B" && GDRX_BACKEND="$BACKEND" ./test_ucx_cuda) || rc=1
    fi
    echo "== bench_uct ($BACKEND)"
    (cd "$B" && GDRX_TEST_BUILDDIR="$B" GDRX_BACKEND="$BACKEND" "$T/bench_uct" 20000) || rc=1
    echo "== ucx_smoke.sh exit status $rc"
    return $rc
}

main 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"
