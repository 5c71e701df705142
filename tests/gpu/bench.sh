#!/bin/bash
# bench.sh build|measure - the benchmark suite on the GPU machine (the H200
# of the device tool: Ubuntu 24.04, gcc, nvcc, no autotools, no network),
# in two calls of under 7 minutes each.  From the repository root:
#   bash tests/gpu/bench.sh build     # libgdrx and the tools into $GDRX_GPU_BUILD
#                                     # (tests/gpu/build.sh)
#   bash tests/gpu/bench.sh measure   # the suite (tools/run-benchmarks.sh), then
#                                     # gdrx-copylat and gdrx-copybw per copy variant
#                                     # (builds first when the build is gone)
# UCX: with UCX_SRC, a configured UCX source tree (its src/ headers and
# config.h are enough) of the release whose libraries are in UCX_LIBDIR
# (default: where ldconfig finds libuct.so.0), the build also makes the
# gdrx UCX plugin (build_plugin.sh) and gdrx-apiperf's registration-cache
# part, which measure runs with that plugin.  Give both calls the same
# UCX_SRC: measure rebuilds when the build is gone or lacks the plugin.
# Files under $OUT (default /tmp/gdrx-bench), six at most:
#   build.txt      the build's log (build)
#   tables.txt     every table, the per-variant runs and the summary (measure)
#   results.csv    every result of the suite, one schema (tools/tool_out.h)
#   variants.csv   gdrx-copylat and gdrx-copybw with -v all
#   lscpu.txt, nvidia-smi.txt   the machine
# The backend is GDRX_BACKEND (default nvrm).  GDRX_BENCH_ARGS adds options
# to every tool (e.g. "-c 24").  Exit status: non-zero if the build or a tool
# failed; a part that could not run is listed as NOT RUN in tables.txt.
set -uo pipefail
MODE=${1:-}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
B=${GDRX_GPU_BUILD:-/tmp/gdrx-gpu}
OUTDIR=${OUT:-/tmp/gdrx-bench}
export GDRX_BACKEND=${GDRX_BACKEND:-nvrm}
mkdir -p "$OUTDIR"

PLUGIN="$B/ucx_plugin/.libs/libuct_gdrx.so.0"

# UCX_SRC and UCX_LIBDIR checked, made absolute and exported; the line
# saying what the build will have.  Non-zero: UCX_SRC is set but unusable.
ucx_setup() {
    if [ -z "${UCX_SRC:-}" ]; then
        unset UCX_LIBDIR
        echo "UCX: none (UCX_SRC unset): gdrx-apiperf's registration-cache rows will say NOT RUN"
        return 0
    fi
    if [ ! -f "$UCX_SRC/config.h" ] || [ ! -f "$UCX_SRC/src/uct/api/uct.h" ]; then
        echo "bench.sh: UCX_SRC=$UCX_SRC is not a configured UCX tree (no config.h or" \
             "src/uct/api/uct.h)" >&2
        return 1
    fi
    UCX_SRC=$(cd "$UCX_SRC" && pwd)
    if [ -z "${UCX_LIBDIR:-}" ]; then # ldconfig's "libuct.so.0 (...) => DIR/libuct.so.0"
        UCX_LIBDIR=$(ldconfig -p 2>/dev/null |
            sed -n 's|^[[:space:]]*libuct\.so\.0 (.*) => \(.*\)/libuct\.so\.0$|\1|p' | head -n 1)
    fi
    if [ -z "$UCX_LIBDIR" ] || [ ! -e "$UCX_LIBDIR/libuct.so.0" ]; then
        echo "bench.sh: no libuct.so.0 in UCX_LIBDIR='$UCX_LIBDIR' (set UCX_LIBDIR)" >&2
        return 1
    fi
    export UCX_SRC UCX_LIBDIR
    echo "UCX: headers $UCX_SRC (UCX $(sed -n 's/^#define VERSION "\(.*\)"/\1/p' \
         "$UCX_SRC/config.h")), libraries $UCX_LIBDIR; plugin $PLUGIN"
}

do_build() {
    echo "== build ($(date -u +%FT%TZ)) on $(hostname): $(gcc --version | head -1);" \
         "$(nvcc --version 2>/dev/null | tail -1)"
    ucx_setup || return 1
    bash "$SRC/tests/gpu/build.sh" "$B" || return 1
    if [ -n "${UCX_SRC:-}" ] && [ ! -f "$PLUGIN" ]; then
        echo "bench.sh: the build made no $PLUGIN" >&2
        return 1
    fi
    chmod -R a+rX "$B"
}

have_build() {
    local f
    for f in gdrx-copylat gdrx-copybw gdrx-apiperf gdrx-pplat; do
        [ -x "$B/$f" ] || return 1
    done
    [ -z "${UCX_SRC:-}" ] || [ -f "$PLUGIN" ]
}

# Per copy variant, for the copy engine's per-size defaults.
variants() {
    local rc=0 tmp="$OUTDIR/variants.csv.part"
    echo ""
    echo "== per copy variant ($(date -u +%FT%TZ))"
    # shellcheck disable=SC2086 # an option list
    "$B/gdrx-copylat" -v all -s 8,64,256,1K,4K,16K,64K -n 2000 ${GDRX_BENCH_ARGS:-} \
        -o "$tmp.lat" || rc=1
    # shellcheck disable=SC2086
    "$B/gdrx-copybw" -v all -s 64K,1M,4M,16M -n 50 ${GDRX_BENCH_ARGS:-} -o "$tmp.bw" || rc=1
    { cat "$tmp.lat" 2>/dev/null; tail -n +2 "$tmp.bw" 2>/dev/null; } > "$OUTDIR/variants.csv"
    rm -f "$tmp.lat" "$tmp.bw"
    return $rc
}

do_measure() {
    local rc=0
    # A machine given back between the calls starts bare: build again.
    if ! have_build; then
        echo "bench.sh: no build in $B${UCX_SRC:+ with the UCX plugin}: building first" \
             "(log in $OUTDIR/build.txt)"
        do_build > "$OUTDIR/build.txt" 2>&1 || { echo "bench.sh: the build failed"; return 1; }
    fi
    lscpu > "$OUTDIR/lscpu.txt" 2>&1
    nvidia-smi -q > "$OUTDIR/nvidia-smi.txt" 2>&1
    local head
    head="== measure ($(date -u +%FT%TZ)) $(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo 'git SHA unknown'); $(uname -r); $(nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader 2>/dev/null); GDRX_BACKEND=$GDRX_BACKEND; UCX plugin: $([ -f "$PLUGIN" ] && echo "$PLUGIN" || echo none)"
    echo "$head"
    # run-benchmarks.sh hands gdrx-apiperf the plugin of $B (GDRX_UCX_PLUGIN).
    GDRX_BENCH_BIN="$B" GDRX_BENCH_OUT="$OUTDIR" bash "$SRC/tools/run-benchmarks.sh" "$B" || rc=1
    # run-benchmarks.sh starts tables.txt afresh: the header goes on top.
    { echo "$head"; cat "$OUTDIR/tables.txt"; } > "$OUTDIR/tables.txt.new" &&
        mv "$OUTDIR/tables.txt.new" "$OUTDIR/tables.txt"
    # run-benchmarks.sh wrote tables.txt: the variant runs go after it.
    variants >> "$OUTDIR/tables.txt" 2>&1 || rc=1
    echo "== bench.sh measure exit status $rc" | tee -a "$OUTDIR/tables.txt"
    return $rc
}

case "$MODE" in
build)   do_build 2>&1 | tee "$OUTDIR/build.txt"; exit "${PIPESTATUS[0]}" ;;
measure) do_measure; exit $? ;;
*)       echo "usage: $0 build|measure" >&2; exit 2 ;;
esac
