#!/bin/sh
# run-benchmarks.sh BUILDDIR: the main job (`make bench`).  Runs the suite
# (gdrx-copylat, gdrx-copybw, gdrx-apiperf, gdrx-pplat) on the real GPU
# when the NVIDIA driver is loaded, otherwise on the simulated GPU
# (tests/sim) under a banner saying its numbers mean nothing; writes the
# tables and one CSV of every result, and ends with a summary of the
# headline figures.  Environment:
#   GDRX_BENCH_BIN    directory of the four tools (default BUILDDIR/tools)
#   GDRX_BENCH_OUT    where tables.txt and results.csv go (default BUILDDIR/bench)
#   GDRX_BENCH_QUICK  1: few samples and sizes (the default on the simulated GPU)
#   GDRX_BENCH_ARGS   extra options for every tool (e.g. "-c 12 -b nvrm")
# Exit status: 0 every tool that ran passed (a tool that could not run,
# e.g. gdrx-pplat without nvcc, is listed as NOT RUN), 1 otherwise.
#
# run-benchmarks.sh --real-gpu: exit 0 when the suite would run on the real
# GPU, 1 when on the simulated one (`make bench` builds the simulated GPU
# only then: the main job needs nothing that `make` does not build).

# GDRX_BENCH_SIM=1: the simulated GPU even where a driver is loaded (make
# check on a GPU host: the tools load tests/sim's libcuda there anyway).
real_gpu() {
    [ "${GDRX_BENCH_SIM:-0}" != 1 ] && [ -e /dev/nvidiactl ] && [ -r /sys/module/nvidia/version ]
}
[ "${1:-}" = --real-gpu ] && { real_gpu; exit; }

builddir=${1:-.}
bin=${GDRX_BENCH_BIN:-$builddir/tools}
out=${GDRX_BENCH_OUT:-$builddir/bench}
for t in gdrx-copylat gdrx-copybw gdrx-apiperf gdrx-pplat; do
    [ -x "$bin/$t" ] || { echo "run-benchmarks: $bin/$t not built (make first)" >&2; exit 1; }
done
mkdir -p "$out" || exit 1
tables="$out/tables.txt" csv="$out/results.csv"
: > "$tables"
rm -f "$csv"

if real_gpu; then
    sim=0
    echo "run-benchmarks: NVIDIA driver $(cat /sys/module/nvidia/version) found: real GPU" | tee -a "$tables"
else
    sim=1
    [ -e "$builddir/tests/sim/.libs/libcuda.so.1" ] || {
        echo "run-benchmarks: no NVIDIA driver here, and no simulated GPU" \
             "($builddir/tests/sim/.libs/libcuda.so.1: make bench builds it where" \
             "configure's summary lists it)" >&2; exit 1; }
    LD_LIBRARY_PATH="$builddir/tests/sim/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
    cat <<'BANNER' | tee -a "$tables"
########################################################################
# SIMULATED GPU: no NVIDIA GPU here.  The suite runs on tests/sim's
# fake libcuda; every number below times host memory and means NOTHING
# about a GPU.  It shows only that the tools work.
########################################################################
BANNER
fi
quick=${GDRX_BENCH_QUICK:-$sim}
plugin="$builddir/ucx_plugin/.libs/libuct_gdrx.so.0"
[ -z "${GDRX_UCX_PLUGIN:-}" ] && [ -f "$plugin" ] && GDRX_UCX_PLUGIN=$plugin && export GDRX_UCX_PLUGIN

if [ "$quick" = 1 ]; then
    n="-n 50 -w 20"
    copylat="-s 8,64,4K" copybw="-s 64K,4M" apiperf="-s 64K -n 20" pplat=""
else
    n=""
    copylat="-s 1,8,64,256,1K,4K,16K,64K" copybw="-s 4K,64K,1M,4M,16M,64M"
    apiperf="-s 4K,64K,1M,16M" pplat="-n 2000"
fi

failed="" notrun=""
run() { # tool options...
    t=$1; shift
    echo "" >> "$tables"
    echo "== $t $n $* ${GDRX_BENCH_ARGS:-}" | tee -a "$tables"
    # shellcheck disable=SC2086 # option lists
    "$bin/$t" $n "$@" ${GDRX_BENCH_ARGS:-} -o "$out/$t.csv" > "$out/$t.txt" 2>&1
    rc=$?
    tee -a "$tables" < "$out/$t.txt"
    case $rc in
    0) tail -n +2 "$out/$t.csv" >> "$csv.body"; head -n 1 "$out/$t.csv" > "$csv.head" ;;
    3) notrun="$notrun $t" ;;
    *) failed="$failed $t(exit $rc)" ;;
    esac
    rm -f "$out/$t.txt" "$out/$t.csv"
}
rm -f "$csv.body" "$csv.head"
# shellcheck disable=SC2086
run gdrx-copylat $copylat
# shellcheck disable=SC2086
run gdrx-copybw $copybw
# shellcheck disable=SC2086
run gdrx-apiperf $apiperf
# shellcheck disable=SC2086
run gdrx-pplat $pplat
[ -f "$csv.head" ] && cat "$csv.head" "$csv.body" > "$csv"
rm -f "$csv.body" "$csv.head"

{
    echo ""
    if [ "$sim" = 1 ]; then
        echo "== summary (P50) -- SIMULATED GPU: these numbers mean NOTHING about a GPU"
    else
        echo "== summary (P50; goals are the H200's of issue 12)"
    fi
    [ -f "$csv" ] && awk -f "$(dirname "$0")/bench-summary.awk" "$csv"
    [ -n "$notrun" ] && echo "NOT RUN:$notrun"
    [ -n "$failed" ] && echo "FAILED:$failed"
    echo "tables: $tables; every result: $csv"
} | tee -a "$tables"
[ -z "$failed" ]
