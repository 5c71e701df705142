#!/bin/bash
# build_tools.sh OUTDIR - build the tools a user gets from make (the
# benchmarks gdrx-copylat, gdrx-copybw, gdrx-apiperf, gdrx-pplat, and
# gdrx-info) with gcc and nvcc alone (no autotools: the GPU machine has
# none) against the libgdrx.so.0 in OUTDIR (tests/gpu/build.sh builds it
# there).  CUDA_HOME: where include/cuda.h is (default /usr/local/cuda).  gdrx-pplat embeds its kernel when
# nvcc is found (PATH, $CUDA_HOME/bin), and is built without it otherwise
# (it then reports "not run").  With UCX_SRC (a configured UCX source tree)
# and UCX_LIBDIR (its libraries) set, gdrx-apiperf measures the UCX
# registration cache too, with the plugin build_plugin.sh builds into
# OUTDIR/ucx_plugin/.libs.  Runs here as well (tests/tools checks it).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(cd "${1:?usage: build_tools.sh OUTDIR}" && pwd)
CUDA=${CUDA_HOME:-/usr/local/cuda}
CC=${CC:-gcc}
T="$SRC/tools"
[ -f "$OUT/libgdrx.so.0" ] || { echo "build_tools.sh: $OUT/libgdrx.so.0 missing (build.sh builds it)" >&2; exit 1; }
mkdir -p "$OUT/obj/tools"
O="$OUT/obj/tools"
CFLAGS=(-std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -pthread -I"$SRC/libgdr/include" -I"$T"
        -I"$CUDA/include")
LIB=(tool_cuda tool_sys tool_clock tool_measure tool_opts tool_table tool_out tool_env tool_floor
     tool_copy tool_variants copy_tool)
pids=()
waitall() { # a failed background job fails the build (plain `wait` would not)
    local p rc=0
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    pids=()
    return $rc
}
for f in "${LIB[@]}"; do
    $CC "${CFLAGS[@]}" -c "$T/$f.c" -o "$O/$f.o" & pids+=($!)
done
# gdrx-info links the copy engine's own objects (its CPU detection and
# variant names are not libgdrx's API; tools/local.mk links GDRX_COPY_LIBS)
# and reads the nvrm backend's list of driver branches.  Its config.h:
# what AC_INIT gives configure's.
mkdir -p "$O/info"
sed -n 's/^AC_INIT(\[gdrx\], \[\([^]]*\)\], \[\([^]]*\)\].*/#define VERSION "\1"\n#define PACKAGE_VERSION "\1"\n#define PACKAGE_BUGREPORT "\2"/p' \
    "$SRC/configure.ac" > "$O/info/config.h"
grep -q PACKAGE_BUGREPORT "$O/info/config.h" || { echo "build_tools.sh: AC_INIT not understood" >&2; exit 1; }
copy_obj() { # file [isa flag]
    local f=$1; shift
    $CC "${CFLAGS[@]}" -fvisibility=hidden "$@" -c "$f" -o "$O/info/copy_$(basename "$f" .c).o" &
    pids+=($!)
}
. "$SRC/tests/gpu/copy_engine.sh"
copy_engine copy_obj
waitall
objs=()
for f in "${LIB[@]}"; do objs+=("$O/$f.o"); done
link() { # program sources... [-- extra link flags]
    local prog=$1; shift
    $CC "${CFLAGS[@]}" "$@" "${objs[@]}" -o "$OUT/$prog" -L"$OUT" -l:libgdrx.so.0 -ldl -pthread \
        -Wl,-rpath,"$OUT"
}
link gdrx-copylat "$T/gdrx-copylat.c" & pids+=($!)
link gdrx-copybw "$T/gdrx-copybw.c" & pids+=($!)
link gdrx-info -I"$O/info" -I"$SRC/libgdr/src/copy" -I"$SRC/libgdr/src/nvrm" \
    -DGDRX_UCX_MODULEDIR="\"$OUT/ucx_plugin/.libs\"" "$T/gdrx-info.c" "$T"/info_*.c "$SRC/libgdr/src/nvrm/nvrm_layout.c" \
    "$O"/info/copy_*.o &
pids+=($!)
waitall

ucx=()
if [ -n "${UCX_SRC:-}" ] && [ -n "${UCX_LIBDIR:-}" ]; then
    built=$(GDRX_GPU_BUILD="$OUT" bash "$SRC/tests/gpu/build_plugin.sh" "$UCX_SRC" "$UCX_LIBDIR" \
            "$OUT/ucx_plugin/.libs")
    read -r -a ucxf <<< "$(echo "$built" | sed -n 's/^UCXF=//p')"
    # shellcheck disable=SC2054 # -Wl, options hold commas
    ucx=(-std=gnu11 "${ucxf[@]}" -DGDRX_APIPERF_UCX=1
         -DGDRX_UCX_PLUGIN_DIR="\"$OUT/ucx_plugin/.libs\"" -L"$UCX_LIBDIR" -l:libuct.so.0
         -l:libucs.so.0 -Wl,-rpath,"$UCX_LIBDIR")
fi
link gdrx-apiperf "$T/gdrx-apiperf.c" "$T/apiperf_ucx.c" "${ucx[@]}"

NVCC=${NVCC:-$(command -v nvcc || true)}
[ -z "$NVCC" ] && [ -x "$CUDA/bin/nvcc" ] && NVCC="$CUDA/bin/nvcc"
kernel=()
if [ -n "$NVCC" ]; then
    # shellcheck disable=SC2086 # an option list
    "$NVCC" ${GDRX_NVCC_ARCH:--gencode arch=compute_75,code=compute_75 -gencode arch=compute_90,code=sm_90} \
        --fatbin -o "$O/pplat_kernel.fatbin" "$T/pplat_kernel.cu"
    kernel=(-DGDRX_PPLAT_FATBIN="\"$O/pplat_kernel.fatbin\"")
else
    echo "build_tools.sh: no nvcc: gdrx-pplat is built without its kernel (it will say not run)"
fi
link gdrx-pplat "${kernel[@]}" "$T/gdrx-pplat.c" "$T/pplat_gpu.c" "$T/pplat_sim.c" "$T/pplat_image.c"

echo "built $OUT/gdrx-copylat, gdrx-copybw, gdrx-apiperf${ucx:+ (with UCX)}, gdrx-pplat${kernel:+ (with its kernel)}, gdrx-info"
