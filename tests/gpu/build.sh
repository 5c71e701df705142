#!/bin/bash
# build.sh OUTDIR - build libgdrx.so (straight from the sources, no
# autotools: the GPU machine has gcc, nvcc and make only), the nvrm sanity
# programs, the tools of make (build_tools.sh: the benchmarks and
# gdrx-info), libgdrapi.so.2 and its sanity program into OUTDIR.  Run from
# anywhere.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?usage: build.sh OUTDIR}
CUDA=${CUDA_HOME:-/usr/local/cuda}
CC=${CC:-gcc}
mkdir -p "$OUT/obj"
OUT=$(cd "$OUT" && pwd)

CFLAGS="-std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -fPIC -pthread -fvisibility=hidden
  -I$SRC/libgdr/include -I$SRC/libgdr/src -I$SRC/libgdr/src/hooks -I$SRC/libgdr/src/nvrm
  -I$SRC/gdrdrv -I$CUDA/include -DGDRX_HAVE_NVRM=1 -DGDRX_HAVE_FREE_HOOKS=1"

OBJ="$OUT/obj" XFLAGS=
compile() { # file extra-flags...: into $OBJ, with $XFLAGS
    local f=$1; shift
    local o="$OBJ/$(echo "${f#$SRC/}" | tr / _).o"
    $CC $CFLAGS $XFLAGS "$@" -c "$f" -o "$o" &
}
. "$SRC/tests/gpu/copy_engine.sh"
build_libgdrx() { # DIR: libgdrx.so.0 there, its objects in $OBJ
    local f
    for f in "$SRC"/libgdr/src/*.c "$SRC"/libgdr/src/hooks/*.c "$SRC"/libgdr/src/nvrm/*.c; do
        compile "$f"
    done
    copy_engine compile
    wait
    $CC -shared -o "$1/libgdrx.so.0" -Wl,-soname,libgdrx.so.0 -Wl,-z,nodelete \
        -Wl,--version-script="$SRC/libgdr/libgdrx.map" "$OBJ"/libgdr_*.o -ldl -pthread
    ln -sf libgdrx.so.0 "$1/libgdrx.so"
}
build_libgdrx "$OUT"
# The same with the interleaving points (libgdr/src/ipoint.h: what
# configure --enable-test-points builds) in $OUT/tp, for fork_conc's park-*
# modes: first on LD_LIBRARY_PATH, it replaces the one programs link.
OBJ="$OUT/obj/tp" XFLAGS=-DGDRX_TEST_POINTS
mkdir -p "$OBJ" "$OUT/tp"
build_libgdrx "$OUT/tp"
OBJ="$OUT/obj" XFLAGS=

G="$SRC/tests/gpu"
nvcc -O2 -arch=sm_90 -I"$G" -c "$G/gpu_kernels.cu" -o "$OUT/obj/gpu_kernels.o"
for f in nvrm_sanity nvrm_sanity_life gpu_vmm; do
    $CC -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -I"$SRC/libgdr/include" -I"$G" \
        -I"$CUDA/include" -c "$G/$f.c" -o "$OUT/obj/$f.o"
done
nvcc -o "$OUT/nvrm_sanity" "$OUT/obj/nvrm_sanity.o" "$OUT/obj/nvrm_sanity_life.o" "$OUT/obj/gpu_vmm.o" \
    "$OUT/obj/gpu_kernels.o" -L"$OUT" -lgdrx -L"$CUDA/lib64/stubs" -lcuda \
    -Xlinker -rpath="$OUT"
# The VMM probe: the backend's own files built into the program.  It maps
# VMM memory before calling nvrm_trace_install(), to take the export route.
PROBE_SRCS=("$SRC"/libgdr/src/nvrm/*.c "$SRC"/libgdr/src/log.c "$SRC"/libgdr/src/cuda_loader.c
            "$SRC"/libgdr/src/lock_order.c
            "$SRC"/libgdr/src/hooks/got_import.c "$SRC"/libgdr/src/hooks/got_elf.c
            "$SRC"/libgdr/src/hooks/proc_maps.c "$G/nvrm_vmm_probe.c")
mkdir -p "$OUT/obj/probe"
for f in "${PROBE_SRCS[@]}"; do
    $CC $CFLAGS -I"$G" -c "$f" -o "$OUT/obj/probe/$(basename "$f" .c).o" &
done
wait
nvcc -o "$OUT/nvrm_vmm_probe" "$OUT"/obj/probe/*.o "$OUT/obj/gpu_kernels.o" "$OUT/obj/gpu_vmm.o" \
    -L"$CUDA/lib64/stubs" -lcuda -ldl
# Load order (libgdrx before or after libcuda and the allocations): links
# neither library, dlopens both; run with libgdrx.so.0 on LD_LIBRARY_PATH.
$CC -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -I"$SRC/libgdr/include" -I"$CUDA/include" \
    "$SRC/tests/nvrm/nvrm_load_order.c" -o "$OUT/nvrm_load_order" -ldl
# The tools a user gets from make (tools/local.mk's bin_PROGRAMS: the
# benchmarks gdrx-copylat, -copybw, -apiperf, -pplat, and gdrx-info),
# against this libgdrx.
T="$SRC/tools"
bash "$SRC/tests/gpu/build_tools.sh" "$OUT"
# The CUDA memory events with the runtime initialised first, static and shared.
for rt in static shared; do
    nvcc -O2 -cudart $rt -I"$SRC/libgdr/include" "$G/hooks_sanity.cu" -o "$OUT/hooks_sanity_$rt" \
        -L"$OUT" -lgdrx -L"$CUDA/lib64/stubs" -lcuda -ldl -Xlinker -rpath="$OUT"
done
# What the CUDA hooks cost dlsym, dlopen and cuMemFree (tools/gdrx-hookcost.c).
$CC -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -I"$SRC/libgdr/include" -I"$T" -I"$CUDA/include" \
    "$T/gdrx-hookcost.c" "$T/tool_cuda.c" "$T/tool_sys.c" -o "$OUT/gdrx-hookcost" \
    -L"$OUT" -lgdrx -ldl -Wl,-rpath,"$OUT"
# The hooks installed while threads run libcuda (tests/gpu/hooks_stress.c);
# it dlopens the libgdrx it is given, so two builds run under one program.
$CC -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -I"$SRC/libgdr/include" -I"$SRC/tests/hooks" \
    -I"$CUDA/include" "$G/hooks_stress.c" "$SRC/tests/hooks/park.c" -o "$OUT/hooks_stress" \
    -L"$CUDA/lib64/stubs" -lcuda -ldl -pthread
# Every way CUDA releases memory, against a live pin (tests/gpu/free_paths.c).
$CC -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -I"$SRC/libgdr/include" -I"$G" -I"$CUDA/include" \
    "$G/free_paths.c" "$G/gpu_vmm.c" -o "$OUT/free_paths" -L"$OUT" -lgdrx \
    -L"$CUDA/lib64/stubs" -lcuda -Wl,-rpath,"$OUT"
# fork() while threads pin, map, copy and unpin (tests/gpu/fork_stress.c).
$CC -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -I"$SRC/libgdr/include" -I"$G" -I"$CUDA/include" \
    "$G/fork_stress.c" -o "$OUT/fork_stress" -L"$OUT" -lgdrx -L"$CUDA/lib64" -lcudart -pthread \
    -Wl,-rpath,"$OUT" -Wl,-rpath,"$CUDA/lib64"
# Issue 43 on the GPU (tests/gpu/concurrency.sh runs them): graph memory
# handed on under a live pin (graph_alias.c, gdrx and libgdrapi.so.2,
# which it dlopens), fork() against allocating threads and CUDA-calling or
# copying fork handlers (fork_conc.c; the harness's interleaving points,
# its libgdrx hook renamed so one binary runs on $OUT and $OUT/tp).
$CC -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -I"$SRC/libgdr/include" -I"$SRC/libgdr/gdrapi" \
    -I"$G" -I"$CUDA/include" "$G/graph_alias.c" -o "$OUT/graph_alias" -L"$OUT" -lgdrx \
    -L"$CUDA/lib64/stubs" -lcuda -ldl -Wl,-rpath,"$OUT"
$CC -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Dgdrx_test_ipoint_hook_set=fc_ipoint_hook_set \
    -c "$SRC/tests/harness/ipoint.c" -o "$OUT/obj/harness_ipoint.o"
$CC -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -I"$SRC/libgdr/include" -I"$SRC/tests/harness" \
    -I"$G" -I"$CUDA/include" "$G/fork_conc.c" "$OUT/obj/harness_ipoint.o" -o "$OUT/fork_conc" \
    -L"$OUT" -lgdrx -L"$CUDA/lib64/stubs" -lcuda -ldl -pthread -Wl,-rpath,"$OUT"
# One copy-engine copy while a second process takes turns on the GPU
# (tests/gpu/ce_share.c): what cuda_copy pays without MPS.
$CC -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -I"$CUDA/include" "$G/ce_share.c" \
    -o "$OUT/ce_share" -L"$CUDA/lib64/stubs" -lcuda
# What libcuda tells the RM when asked for a dma-buf (the nvrm backend's
# route to memory mapped before gdrx_open): defines ioctl() itself.
$CC -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -I"$SRC/libgdr/src/nvrm" -I"$CUDA/include" \
    "$G/nvrm_export_probe.c" -o "$OUT/nvrm_export_probe" -rdynamic -L"$CUDA/lib64/stubs" -lcuda -ldl
# libgdrapi.so.2 (libgdr/gdrapi: gdrcopy's API over the libgdrx above) and
# gdrapi_sanity, a program written to the gdrcopy API, linked -lgdrapi.
GA="$SRC/libgdr/gdrapi"
mkdir -p "$OUT/obj/gdrapi"
echo "#define PACKAGE_VERSION \"$(sed -n 's/^AC_INIT(\[gdrx\], \[\([^]]*\)\].*/\1/p' \
    "$SRC/configure.ac")\"" > "$OUT/obj/gdrapi/config.h"
for f in "$GA"/*.c; do
    $CC -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -fPIC -fvisibility=hidden \
        -I"$OUT/obj/gdrapi" -I"$SRC/libgdr/include" -I"$GA" \
        -c "$f" -o "$OUT/obj/gdrapi/$(basename "$f" .c).o" &
done
wait
$CC -shared -o "$OUT/libgdrapi.so.2" -Wl,-soname,libgdrapi.so.2 \
    -Wl,--version-script="$GA/libgdrapi.map" "$OUT"/obj/gdrapi/*.o -L"$OUT" -lgdrx \
    -Wl,-rpath,'$ORIGIN'
ln -sf libgdrapi.so.2 "$OUT/libgdrapi.so"
# A gdrcopy-like prefix for UCX: ./configure --with-gdrcopy=$OUT/gdrapi-prefix
P="$OUT/gdrapi-prefix"
mkdir -p "$P/include" "$P/lib"
cp "$GA/gdrapi.h" "$P/include/"
ln -sf ../../libgdrapi.so.2 "$P/lib/libgdrapi.so.2"
ln -sf libgdrapi.so.2 "$P/lib/libgdrapi.so"
ln -sf ../../libgdrx.so.0 "$P/lib/libgdrx.so.0"
$CC -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -I"$GA" -I"$G" -I"$CUDA/include" \
    "$G/gdrapi_sanity.c" -o "$OUT/gdrapi_sanity" -L"$OUT" -lgdrapi \
    -L"$CUDA/lib64" -lcudart -ldl -Wl,-rpath,"$OUT" -Wl,-rpath,"$CUDA/lib64"
echo "built $OUT/libgdrx.so.0, $OUT/nvrm_sanity, $OUT/nvrm_vmm_probe, $OUT/nvrm_load_order," \
     "the benchmark tools, $OUT/gdrx-info, $OUT/gdrx-hookcost, $OUT/hooks_sanity_{static,shared}, $OUT/hooks_stress," \
     "$OUT/free_paths, $OUT/fork_stress, $OUT/graph_alias, $OUT/fork_conc, $OUT/tp/libgdrx.so.0, $OUT/ce_share, $OUT/nvrm_export_probe, $OUT/libgdrapi.so.2 (and $OUT/gdrapi-prefix for" \
     "UCX's --with-gdrcopy), $OUT/gdrapi_sanity"
