#!/bin/bash
# mpi_osu.sh [nomps|mps|mixed|tune|repeat] - gdrx under Open MPI on the GPU machine: the OSU
# micro-benchmarks (osu_latency, osu_bw; D D and H D) and tests/mpi's own
# programs, two ranks on one GPU, with
#   - the distribution's UCX (no CUDA): UCX_TLS=sm,gdrx, the plugin preloaded;
#   - a CUDA-enabled UCX: sm,cuda_copy (baseline), sm,cuda_copy,gdrx, sm,gdrx.
# "mps" starts the MPS daemon first (and stops it at the end); "mixed" runs
# the CUDA-enabled UCX with and without gdrx at UCX_PROTO_INFO=y.
# Everything third-party comes from the environment (never from this tree):
#   OSU_DIR       folder with osu_latency and osu_bw (built with CUDA)
#   MPI_PROGS     folder with gdrx_mpi_latency and gdrx_mpi_bw (tests/mpi)
#   UCX_SYS_SRC   configured source tree (headers) of the distribution's UCX
#   UCX_SYS_LIB   its library folder (default /usr/lib/x86_64-linux-gnu)
#   UCX_CUDA      prefix of the CUDA-enabled UCX (lib/, lib/ucx/, headers
#                 tree in src/ + config.h; bin/ucx_info)
# Output: $OUT/<run>.txt per run, $OUT/counters-<run>.txt (gdrx's counters),
# $OUT/summary.txt.  Exit status 1 if any run failed.
set -uo pipefail
MODE=${1:-nomps}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
B=${GDRX_GPU_BUILD:-/tmp/gdrx-gpu}
O=${OUT:-/tmp/out}
CUDA=${CUDA_HOME:-/usr/local/cuda}
UCX_SYS_LIB=${UCX_SYS_LIB:-/usr/lib/x86_64-linux-gnu}
: "${OSU_DIR:?}" "${MPI_PROGS:?}" "${UCX_SYS_SRC:?}" "${UCX_CUDA:?}"
ITERS=${ITERS:-1000}
BW_ITERS=${BW_ITERS:-100}
MAXSIZE=${MAXSIZE:-4194304}
mkdir -p "$O"
rc=0

build() {
    bash "$SRC/tests/gpu/build.sh" "$B" >"$O/build.txt" 2>&1 &&
    bash "$SRC/tests/gpu/build_plugin.sh" "$UCX_SYS_SRC" "$UCX_SYS_LIB" "$B/ucx-sys" \
        >>"$O/build.txt" 2>&1 &&
    bash "$SRC/tests/gpu/build_plugin.sh" "$UCX_CUDA" "$UCX_CUDA/lib" "$B/ucx-cuda" \
        >>"$O/build.txt" 2>&1
}

# run NAME STACK TLS PROGRAM ARGS... : STACK is sys or cuda; gdrx is preloaded
# when TLS names it.
run() {
    local name=$1 stack=$2 tls=$3 preload="" libs
    shift 3
    if [ "$stack" = sys ]; then
        libs="$B"
        [[ $tls == *gdrx* ]] && preload="$B/ucx-sys/libuct_gdrx.so.0"
    else
        libs="$UCX_CUDA/lib:$CUDA/lib64:$B"
        [[ $tls == *gdrx* ]] && preload="$B/ucx-cuda/libuct_gdrx.so.0"
    fi
    rm -f "$O/counters-$name.txt"
    echo "### $name: UCX_TLS=$tls ($stack UCX) $*" | tee -a "$O/summary.txt"
    env LD_LIBRARY_PATH="$libs" LD_PRELOAD="$preload" UCX_TLS="$tls" GDRX_BACKEND=nvrm \
        UCX_GDRX_STATS_DUMP="$O/counters-$name.txt" timeout 240 \
        mpirun -np 2 --allow-run-as-root --bind-to core --map-by core \
        --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca btl self,vader \
        -x LD_LIBRARY_PATH -x LD_PRELOAD -x UCX_TLS -x GDRX_BACKEND -x UCX_GDRX_STATS_DUMP \
        ${EXTRA:+$EXTRA} "$@" >"$O/$name.txt" 2>&1
    local st=$?
    grep -E "^(${SIZES_RE:-1|8|256|4096|65536|1048576|4194304}) " "$O/$name.txt" | tr -s ' ' |
        sed 's/^/    /' | tee -a "$O/summary.txt"
    if [ $st -ne 0 ]; then
        echo "    FAILED (exit $st): $(grep -m3 -iE 'error|assert|fail' "$O/$name.txt" | tr '\n' ' ')" |
            tee -a "$O/summary.txt"
        rc=1
    fi
}

lat() { run "$1" "$2" "$3" "$OSU_DIR/osu_latency" -d cuda -m "1:$MAXSIZE" -i "$ITERS" -x 100 $4; }
bw()  { run "$1" "$2" "$3" "$OSU_DIR/osu_bw" -d cuda -m "1:$MAXSIZE" -i "$BW_ITERS" -x 10 $4; }

echo "== mpi_osu.sh $MODE ($(date -u +%FT%TZ)): $(nvidia-smi --query-gpu=name,driver_version \
    --format=csv,noheader 2>/dev/null); $(mpirun --version | head -n1)" | tee "$O/summary.txt"
build || { echo "build failed:"; tail -20 "$O/build.txt"; exit 1; }
if [ "$MODE" = mps ]; then
    nvidia-cuda-mps-control -d && echo "MPS daemon started" | tee -a "$O/summary.txt"
fi

if [ "$MODE" = mixed ]; then
    # Where sm,cuda_copy,gdrx differs from sm,cuda_copy: protocols and counters.
    ITERS=200
    EXTRA="-x UCX_PROTO_INFO=y" lat mixed-lat-dd-cuda_copy_gdrx cuda sm,cuda_copy,gdrx "D D"
    EXTRA="-x UCX_PROTO_INFO=y" lat mixed-lat-dd-cuda_copy      cuda sm,cuda_copy      "D D"
    EXTRA="-x UCX_PROTO_INFO=y" lat mixed-lat-hd-cuda_copy_gdrx cuda sm,cuda_copy,gdrx "H D"
    ITERS=1000
    lat mixed-lat-dd-gdrx-sys  sys  sm,gdrx           "D D"
    bw  mixed-bw-dd-cuda_copy  cuda sm,cuda_copy      "D D"
    bw  mixed-bw-dd-cuda_copy_gdrx cuda sm,cuda_copy,gdrx "D D"
elif [ "$MODE" = tune ]; then
    # sm,cuda_copy,gdrx above the eager sizes, with gdrx's knobs varied.
    ITERS=200
    MAXSIZE=4194304
    EXTRA="-x UCX_PROTO_INFO=y" lat tune-default cuda sm,cuda_copy,gdrx "D D"
    grep -h -A12 'ucp_tag_send\*(fast-completion) from cuda' "$O/tune-default.txt" |
        cut -c37- | head -n 14 | tee -a "$O/summary.txt"
    grep -h 'md reg_calls' "$O/counters-tune-default.txt" | tee -a "$O/summary.txt"
    EXTRA="-x UCX_PROTO_INFO=y" lat tune-base cuda sm,cuda_copy "D D"
    grep -h -A12 'ucp_tag_send\*(fast-completion) from cuda' "$O/tune-base.txt" |
        cut -c37- | head -n 14 | tee -a "$O/summary.txt"
    EXTRA="-x UCX_GDRX_DETECT_MEM_TYPES=n" lat tune-nodetect cuda sm,cuda_copy,gdrx "D D"
    EXTRA="-x UCX_GDRX_GET_BW=100MBs -x UCX_GDRX_PUT_BW=1000MBs" \
        lat tune-lowbw cuda sm,cuda_copy,gdrx "D D"
elif [ "$MODE" = repeat ]; then
    # Noise of the mixed configuration against the baseline: bandwidth of
    # the sizes where gdrx hands over to cuda_copy, alternated, with MPS.
    nvidia-cuda-mps-control -d && echo "MPS daemon started" | tee -a "$O/summary.txt"
    SIZES_RE="[0-9]+"
    for r in 1 2 3; do
        run rep$r-bw-cuda_copy      cuda sm,cuda_copy      "$OSU_DIR/osu_bw" -d cuda \
            -m 1024:262144 -i 1000 -x 100 D D
        run rep$r-bw-cuda_copy_gdrx cuda sm,cuda_copy,gdrx "$OSU_DIR/osu_bw" -d cuda \
            -m 1024:262144 -i 1000 -x 100 D D
    done
    echo quit | nvidia-cuda-mps-control
elif [ "$MODE" = mps ]; then
    lat mps-lat-dd-cuda_copy         cuda sm,cuda_copy      "D D"
    lat mps-lat-dd-cuda_copy_gdrx    cuda sm,cuda_copy,gdrx "D D"
    lat mps-lat-dd-gdrx-sys          sys  sm,gdrx           "D D"
    bw  mps-bw-dd-cuda_copy          cuda sm,cuda_copy      "D D"
    bw  mps-bw-dd-cuda_copy_gdrx     cuda sm,cuda_copy,gdrx "D D"
    echo quit | nvidia-cuda-mps-control
else
    lat lat-dd-gdrx-sys          sys  sm,gdrx           "D D"
    lat lat-hd-gdrx-sys          sys  sm,gdrx           "H D"
    lat lat-dd-cuda_copy         cuda sm,cuda_copy      "D D"
    lat lat-dd-cuda_copy_gdrx    cuda sm,cuda_copy,gdrx "D D"
    lat lat-dd-gdrx-cuda         cuda sm,gdrx           "D D"
    lat lat-hd-cuda_copy         cuda sm,cuda_copy      "H D"
    lat lat-hd-cuda_copy_gdrx    cuda sm,cuda_copy,gdrx "H D"
    bw  bw-dd-gdrx-sys           sys  sm,gdrx           "D D"
    bw  bw-dd-cuda_copy_gdrx     cuda sm,cuda_copy,gdrx "D D"
    bw  bw-hd-gdrx-sys           sys  sm,gdrx           "H D"
    # Our own programs: every byte of every message checked on the real GPU.
    run own-lat-dd-checked sys sm,gdrx "$MPI_PROGS/gdrx_mpi_latency" -m 0:4M -i 20 -x 2 -c D D
    run own-bw-dd-checked  sys sm,gdrx "$MPI_PROGS/gdrx_mpi_bw" -m 1:4M -i 4 -x 1 -w 16 -c D D
    run own-lat-dd         sys sm,gdrx "$MPI_PROGS/gdrx_mpi_latency" -m 0:4M -i "$ITERS" -x 100 D D
    # Which protocols carry 8-byte device messages (UCX 1.22: v2 protocols).
    EXTRA="-x UCX_PROTO_INFO=y" UCX_PROTO_INFO=y \
        run proto-info cuda sm,cuda_copy,gdrx "$OSU_DIR/osu_latency" -d cuda -m 8:8 -i 100 D D
fi
tar -czf "$O/results.tgz" -C "$O" --exclude results.tgz . 2>/dev/null
exit $rc
