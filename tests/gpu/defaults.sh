#!/bin/bash
# defaults.sh matrix|bench [nomps|mps] - gdrx installed the way sites
# install it (the plugin in the module directory of a CUDA-enabled UCX that
# also has gdr_copy) and UCX_TLS left as users leave it.
#
#   matrix  never break a job: with and without gdrx in the module
#           directory, UCX_TLS unset, all, ^gdr_copy and the network path
#           (tcp,cuda_copy[,gdrx] over lo): tests/ucx/ucp_job host-only and
#           mixed (its memory-type lanes, every byte checked) and
#           tests/mpi/gdrx_mpi_integrity under mpirun, host-only and all
#           directions; and with UCX_TLS unset, with and without gdrx,
#           tests/mpi/gdrx_mpi_threads (8 threads a rank under
#           MPI_THREAD_MULTIPLE, each freeing and allocating its buffers
#           while the others send; rc 4: the MPI gave less than
#           MPI_THREAD_MULTIPLE).  matrix.csv: one row per run, rc and bad
#           bytes.
#   bench   fast by default: osu_latency D D and H H, ROUNDS (default 3)
#           rounds that alternate the configurations (UCX_TLS unset
#           without gdrx, unset with gdrx, the best named one, and the
#           remedies for a GPU shared without MPS); bench.csv holds every
#           figure (config, dir, size, round, usec), bench.md the medians
#           and their ratios to "unset without gdrx"; xgdrx: gdrx in
#           the module directory but excluded (UCX_TLS=^gdrx), H H only.
# nomps (default) or mps: MPS daemon off, or started first and stopped at
# the end.  proto: UCP's protocols for 256 B - 1 KiB (PROTO_SIZES) per
# configuration.  ROUNDS, ITERS (osu's -i), BENCH_ONLY (config names),
# BENCH_DIRS (DD and/or HH), BENCH_SIZES (osu's -m, 1:4194304) for
# bench; MATRIX_TLS (the UCX_TLS values) for matrix.  N_UCP, N_INT, N_THR: messages of matrix's ucp_job (400),
# gdrx_mpi_integrity (3000) and gdrx_mpi_threads runs (2000 a thread).
#
# Everything third-party comes from the environment, built by hand (see
# docs/ucx-flavours.md), never from this tree:
#   UCX_PREFIX  installed UCX with CUDA and gdr_copy (--with-gdrcopy=
#               $GDRX_GPU_BUILD/gdrapi-prefix, i.e. over gdrx's libgdrapi)
#   UCX_SRC     its configured source tree (headers, config.h)
#   OSU_DIR     folder with osu_latency built with CUDA (bench only)
# Output under $OUT (default /tmp/out).  Exit 1 if any run failed.
set -uo pipefail
MODE=${1:?usage: defaults.sh matrix|bench [nomps|mps]}
MPS=${2:-nomps}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
B=${GDRX_GPU_BUILD:-/tmp/gdrx-gpu}
O=${OUT:-/tmp/out}
CUDA=${CUDA_HOME:-/usr/local/cuda}
: "${UCX_PREFIX:?}" "${UCX_SRC:?}"
mkdir -p "$O"
rc=0

# Two module directories: UCX's own modules, and the same with gdrx.
prepare() {
    [ -f "$B/libgdrx.so.0" ] || bash "$SRC/tests/gpu/build.sh" "$B" >>"$O/build.txt" 2>&1 ||
        return 1
    bash "$SRC/tests/gpu/build_plugin.sh" "$UCX_SRC" "$UCX_PREFIX/lib" "$B/p-defaults" \
        >>"$O/build.txt" 2>&1 || return 1
    rm -rf "$B/mods-off" "$B/mods-on"
    mkdir -p "$B/mods-off" "$B/mods-on"
    local m
    for m in "$UCX_PREFIX"/lib/ucx/lib*.so*; do
        ln -s "$m" "$B/mods-off/"
        ln -s "$m" "$B/mods-on/"
    done
    cp "$B/p-defaults/libuct_gdrx.so.0" "$B/mods-on/"
    mkdir -p "$B/dprog"
    # UCP's internal headers want that UCX's build macros (build_plugin.sh's)
    local ucxf
    ucxf=$(sed -n 's/^UCXF=//p' "$O/build.txt" | tail -n 1)
    # shellcheck disable=SC2086 # ucxf: a flag list
    gcc -std=gnu11 -O2 $ucxf -I"$UCX_SRC/src" -I"$UCX_SRC" -I"$UCX_PREFIX/include" -I"$CUDA/include" \
        "$SRC/tests/ucx/ucp_job.c" -L"$UCX_PREFIX/lib" -lucp -lucs -L"$CUDA/lib64/stubs" \
        -lcuda -o "$B/dprog/ucp_job" >>"$O/build.txt" 2>&1 || return 1
    mpicc -std=gnu11 -D_GNU_SOURCE -O2 -I"$SRC/tests/mpi" -I"$SRC/tools" -I"$CUDA/include" \
        "$SRC/tests/mpi/gdrx_mpi_integrity.c" "$SRC/tests/mpi/integrity_check.c" \
        "$SRC/tools/tool_cuda.c" -ldl -o "$B/dprog/gdrx_mpi_integrity" >>"$O/build.txt" 2>&1 ||
        return 1
    mpicc -std=gnu11 -D_GNU_SOURCE -O2 -pthread -I"$SRC/tests/mpi" -I"$SRC/tools" -I"$CUDA/include" \
        "$SRC/tests/mpi/gdrx_mpi_threads.c" "$SRC/tests/mpi/integrity_check.c" \
        "$SRC/tools/tool_cuda.c" -ldl -o "$B/dprog/gdrx_mpi_threads" >>"$O/build.txt" 2>&1 ||
        return 1
    LD_LIBRARY_PATH="$UCX_PREFIX/lib:$B" UCX_MODULE_DIR="$B/mods-on" \
        "$UCX_PREFIX/bin/ucx_info" -d >"$O/ucx_info.txt" 2>&1
    grep -q "Transport: gdr_copy" "$O/ucx_info.txt" || { echo "no gdr_copy in $UCX_PREFIX"; return 1; }
    grep -q "Transport: gdrx" "$O/ucx_info.txt" || { echo "gdrx not loaded from mods-on"; return 1; }
}

# with GDRX TLS CMD...: run CMD with gdrx installed or not (on|off) and
# UCX_TLS=TLS, "unset" leaving it out of the environment; SET: one more
# NAME=VALUE setting, or empty.
SET=
with() {
    local gdrx=$1 tls=$2
    shift 2
    local env=(env -u UCX_TLS LD_LIBRARY_PATH="$UCX_PREFIX/lib:$B:$CUDA/lib64"
               UCX_MODULE_DIR="$B/mods-$gdrx" GDRX_BACKEND=nvrm UCX_NET_DEVICES=all)
    [ "$tls" = unset ] || env+=(UCX_TLS="$tls")
    [[ $tls == tcp* ]] && env+=(UCX_NET_DEVICES=lo)
    [ -z "$SET" ] || env+=("$SET")
    "${env[@]}" "$@"
}

mpi() {
    local gdrx=$1 tls=$2
    shift 2
    local x=(-x LD_LIBRARY_PATH -x UCX_MODULE_DIR -x GDRX_BACKEND -x UCX_NET_DEVICES)
    [ "$tls" = unset ] || x+=(-x UCX_TLS)
    [ -z "$SET" ] || x+=(-x "${SET%%=*}")
    # pml_ucx_tls/devices any: Open MPI 4.1's UCX PML otherwise declines a
    # UCX without an RDMA or cuda_ipc transport (the tcp path, named lists)
    with "$gdrx" "$tls" timeout 300 mpirun -np 2 --allow-run-as-root --bind-to core \
        --map-by core --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca btl self,vader "${x[@]}" "$@"
}

# row FIELDS STATUS SUMMARY OUT: a matrix.csv row for an MPI data check:
# its exit status and the bad count of OUT's line "SUMMARY: N messages, B
# bad" (none: no such line, the run did not get that far).
row() {
    local bad
    bad=$(sed -n "s/^$3: [0-9]* messages, \([0-9]*\) bad.*/\1/p" "$4")
    echo "$1,$2,${bad:-none}," >>"$O/matrix.csv"
    [ "$2" = 0 ] || rc=1
}

matrix() {
    local gdrx tls mode kinds out st bad
    echo "gdrx,tls,program,mode,rc,bad,lanes" >"$O/matrix.csv"
    for gdrx in off on; do
        for tls in ${MATRIX_TLS:-unset all ^gdr_copy tcp,cuda_copy}; do
            [ "$gdrx" = on ] && [ "$tls" = tcp,cuda_copy ] && tls=tcp,cuda_copy,gdrx
            for mode in host mix; do
                out="$O/ucp_job-$gdrx-${tls//[,^]/_}-$mode.txt"
                with "$gdrx" "$tls" timeout 300 "$B/dprog/ucp_job" -m "$mode" -n "${N_UCP:-400}" >"$out" 2>&1
                st=$?
                bad=$(awk '/ bad$/ { s += $(NF-1) } END { print s + 0 }' "$out")
                lanes=$(sed -n 's/^memtype lanes cuda [0-9]*: //p' "$out" | tr ',' ' ')
                echo "$gdrx,\"$tls\",ucp_job,$mode,$st,$bad,$lanes" >>"$O/matrix.csv"
                [ "$st" = 0 ] || rc=1
            done
            for kinds in HH DD,HD,DH,HH; do
                out="$O/integrity-$gdrx-${tls//[,^]/_}-${kinds//,/}.txt"
                mpi "$gdrx" "$tls" "$B/dprog/gdrx_mpi_integrity" -R -n "${N_INT:-3000}" -k "$kinds" >"$out" 2>&1
                row "$gdrx,\"$tls\",gdrx_mpi_integrity,$kinds" $? integrity "$out"
            done
        done
    done
    # threads: each rank bound to one core (mpi's --bind-to core), so its 8
    # threads take turns there; mpi_yield_when_idle keeps a polling thread
    # from spinning out the one that holds UCX's worker lock
    for gdrx in off on; do
        out="$O/threads-$gdrx-unset.txt"
        mpi "$gdrx" unset --mca mpi_yield_when_idle 1 "$B/dprog/gdrx_mpi_threads" -t 8 -n "${N_THR:-2000}" \
            -W 120 >"$out" 2>&1
        row "$gdrx,\"unset\",gdrx_mpi_threads,t8" $? "total: threads" "$out"
    done
    cat "$O/matrix.csv"
}

# The configurations of bench: NAME GDRX TLS EXTRA-UCX-SETTINGS
CONFIGS=(
    "unset-nogdrx off unset"
    "unset-gdrx on unset"
    "named-best on sm,cuda_copy,gdrx UCX_RNDV_THRESH=32k"
    "noipc-gdrx on ^cuda_ipc"
    "noipc-nogdrx off ^cuda_ipc"
    "xgdrx on ^gdrx"
)
bench() {
    local r c name gdrx tls dir out
    [ -f "$O/bench.csv" ] || echo "config,mps,dir,size,round,usec" >"$O/bench.csv"
    local n=${#CONFIGS[@]} i
    for r in $(seq "${ROUNDS:-3}"); do
        # each round starts at another configuration: the first job after
        # MPS starts (or the machine settles) ran 2x faster once (H200,
        # H H), which no configuration should always get
        for i in $(seq 0 $((n - 1))); do
            c=${CONFIGS[$(((i + r - 1) % n))]}
            [ -z "${BENCH_ONLY:-}" ] || [[ " $BENCH_ONLY " == *" ${c%% *} "* ]] || continue
            read -r name gdrx tls SET <<<"$c"
            for d in ${BENCH_DIRS:-DD HH}; do
                dir="${d:0:1} ${d:1:1}"
                # H H only matters for "no slower than without gdrx";
                # xgdrx (gdrx loaded, excluded by UCX_TLS) only for H H:
                # does loading the module cost host messages anything
                [ "$dir" = "H H" ] && [[ $name != unset-* && $name != xgdrx ]] && continue
                [ "$dir" = "D D" ] && [ "$name" = xgdrx ] && continue
                out="$O/osu-$MPS-$name-${dir// /}-$r.txt"
                # shellcheck disable=SC2086 # dir: two words
                mpi "$gdrx" "$tls" "$OSU_DIR/osu_latency" -d cuda -m "${BENCH_SIZES:-1:4194304}" \
                    -i "${ITERS:-1000}" -x 100 $dir >"$out" 2>&1 || { echo "FAILED: $out"; tail -5 "$out"; rc=1; }
                awk -v c="$name" -v m="$MPS" -v d="${dir// /}" -v r="$r" \
                    '/^[0-9]+ +[0-9.]+$/ { print c "," m "," d "," $1 "," r "," $2 }' \
                    "$out" >>"$O/bench.csv"
            done
        done
    done
    SET=
    # medians per (config, dir, size), ratio to unset-nogdrx (sort and
    # plain awk: the GPU machine's awk is mawk)
    awk -F, -v m="$MPS" 'NR > 1 && $2 == m { print $1 "," $3 "," $4 "," $6 }' "$O/bench.csv" |
        sort -t, -k1,1 -k2,2 -k3,3n -k4,4g |
        awk -F, -v m="$MPS" '
            function flush() { if (n) { med[key] = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
                                        keys[++nk] = key } n = 0 }
            { k = $1 FS $2 FS $3; if (k != key) { flush(); key = k } v[++n] = $4 }
            END { flush()
                  for (i = 1; i <= nk; i++) { split(keys[i], p, FS); b = "unset-nogdrx" FS p[2] FS p[3]
                      printf "%s,%s,%s,%s,%.2f,%.3f\n", m, p[1], p[2], p[3], med[keys[i]],
                             (b in med && med[b] > 0) ? med[keys[i]] / med[b] : 0 } }' \
        >>"$O/bench-medians.csv"
}

# UCP's protocol choices for device messages (UCX_PROTO_INFO), per config
proto() {
    local c name gdrx tls
    for c in "${CONFIGS[@]}"; do
        read -r name gdrx tls SET <<<"$c"
        mpi "$gdrx" "$tls" -x UCX_PROTO_INFO=used "$OSU_DIR/osu_latency" -d cuda \
            -m "${PROTO_SIZES:-256:1024}" -i 100 -x 10 D D >"$O/proto-$MPS-$name.txt" 2>&1
    done
    SET=
}

echo "== defaults.sh $MODE $MPS ($(date -u +%FT%TZ)): $(nvidia-smi --query-gpu=name,driver_version \
    --format=csv,noheader 2>/dev/null); $(mpirun --version | head -n1); UCX $UCX_PREFIX"
# REUSE_PREPARED=1: keep what an earlier run in this call prepared
if [ -z "${REUSE_PREPARED:-}" ] || [ ! -f "$B/dprog/.prepared" ]; then
    prepare || { echo "prepare failed:"; tail -30 "$O/build.txt"; exit 1; }
    touch "$B/dprog/.prepared"
fi
if [ "$MPS" = mps ]; then
    nvidia-cuda-mps-control -d && sleep 1 && echo "MPS daemon started"
fi
case "$MODE" in
matrix) matrix ;;
proto) : "${OSU_DIR:?}"; proto ;;
bench) : "${OSU_DIR:?}"; bench ;;
*) echo "usage: $0 matrix|bench|proto [nomps|mps]" >&2; rc=2 ;;
esac
[ "$MPS" = mps ] && echo quit | nvidia-cuda-mps-control
exit $rc
