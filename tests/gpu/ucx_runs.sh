#!/bin/bash
# ucx_runs.sh MODE - the GPU runs behind docs/performance.md's osu_latency
# tables and the runs under results/ (table, churn, gdrcopy, ...).  Builds
# libgdrx, libgdrapi and the plugins (tests/gpu/build.sh, build_plugin.sh);
# everything third-party comes prebuilt from the environment, never from
# this tree (built by hand; each results/*/command says how):
#   UCX_PREFIX_122, UCX_PREFIX_118  installed UCX 1.22 / 1.18 with CUDA
#                                   (1.22 --with-gdrcopy=$B/gdrapi-prefix for "gdrcopy")
#   UCX_SRC_122, UCX_SRC_118        their configured source trees (headers)
#   UCX_SRC_116                     configured 1.16.0 headers matching Ubuntu's
#   OSU_DIR                         folder with osu_latency (built with CUDA)
# MODE: versions  osu_latency D D, sm,cuda_copy / sm,cuda_copy,gdrx / sm,gdrx
#                 on 1.22, 1.18 and Ubuntu's 1.16, without then with MPS
#       gdrcopy   sm,cuda_copy,gdr_copy (UCX's transport on our libgdrapi)
#                 against sm,cuda_copy,gdrx: OSU's data check (-c) first, then
#                 small sizes and the whole range alternating, without then
#                 with MPS; ucx_perftest -t tag_lat -m cuda -s 8 / 1024 through both
#       small     why gdrx and gdr_copy differ at 128-512 B: the protocols
#                 UCP uses with each (proto.txt), alternating runs of both
#                 and of gdrx given gdr_copy's performance estimates (no MPS)
#       cachedev  a plugin whose memory-type cache entries name cuda_copy's
#                 device: OSU's data check, then 64 B-1 KiB; without then with MPS
#       large     8 KiB-1 MiB, alternating pairs of gdr_copy and gdrx, then
#                 gdrx's counters; without then with MPS
#       churn     tests/mpi/gdrx_mpi_latency 8 B, with and without -r 100,
#                 alternating three times (UCX 1.16, sm,gdrx)
#       aside     sm,cuda_copy,gdrx with gdrx's backend forced to a missing
#                 gdrdrv: the job must run on cuda_copy
#       table     issue 31's table: osu_latency 1 B-4 MiB, sm,gdrx (1.16),
#                 sm,cuda_copy, sm,cuda_copy,gdrx, sm,cuda_copy,gdr_copy (1.22),
#                 with TABLE_TUNED=1 (default) also sm,gdrx with
#                 UCX_RNDV_THRESH=8k and sm,cuda_copy,gdrx with 32k (16k
#                 under MPS), docs/mpi.md's advice;
#                 TABLE_ROUNDS (default 3) alternating rounds, without then
#                 with MPS; then the protocols UCP picks (proto.txt) and
#                 gdrx's counters per size class; summarise with
#                 tests/gpu/osu_table.awk
#       rndv      sm,cuda_copy,gdrx at 2-64 KiB: UCP's own choice against
#                 UCX_RNDV_THRESH=16k and =32k (eager copy-in/out through
#                 gdrx below it), alternating rounds, without then with MPS
#       rndv116   sm,gdrx on UCX 1.16 at 64 B-32 KiB: UCP's own choice (its
#                 rendezvous from 128 B) against UCX_RNDV_THRESH=2k/8k/32k
#       large116  sm,gdrx on UCX 1.16 at 16 KiB-4 MiB: the copy engine from
#                 each UCX_GDRX_DMA_THRESH of LARGE_THRESH (default "32k 16k
#                 inf": the default, 16 KiB, never); LARGE_SIZES, osu's -m
#                 (default 16384:4194304)
#       shmppln   UCP's two-stage shared-memory pipeline (rndv/rkey_ptr/mtype),
#                 whose estimate leaves out the sender's GPU-to-host copy:
#                 osu_latency 1 B-4 MiB, sm,gdrx (1.16) and sm,cuda_copy,gdrx
#                 (1.22) as they are, with UCX_RNDV_PIPELINE_SHM_ENABLE=n, and
#                 with docs/mpi.md's UCX_RNDV_THRESH (8k; 32k, 16k under MPS);
#                 TABLE_ROUNDS alternating rounds, without then with MPS;
#                 SHMPPLN_UCX: the releases to run (default "116 122")
#       floor     8 B's floor: osu_latency H H over sm against D D over sm,gdrx
#                 (1.16) and, where UCX_PREFIX_122 is set, sm,cuda_copy,gdrx
#                 (1.22), 1-64 B, rounds that each start at the next
#                 configuration (no MPS)
#       rndvproto why UCX_RNDV_THRESH=32k slows sm,cuda_copy,gdrx (1.22) at
#                 32-256 KiB: osu_latency 16 KiB-512 KiB as it is and with
#                 32k, alternating twice, with the protocols UCP used and
#                 gdrx's counters (proto.txt; no MPS)
#       integrity tests/mpi/gdrx_mpi_integrity (cudaMalloc/cudaFree, -R) in
#                 sm,gdrx (UCX 1.16), sm,cuda_copy,gdrx, sm,cuda_copy,gdr_copy
#                 and sm,cuda_copy (1.22), each with UCX_MEMTYPE_CACHE=y then
#                 n; INTEGRITY_ARGS (default "-n 20000"), INTEGRITY_SEEDS
#                 (default 1); integrity.txt
# Output in $OUT (osu.txt, proto.txt, perftest.txt, churn.txt, build.txt).
set -uo pipefail
MODE=${1:?usage: ucx_runs.sh versions|table|rndv|rndv116|shmppln|large116|floor|rndvproto|gdrcopy|small|cachedev|large|churn|aside|integrity}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
O=${OUT:-/tmp/out}
B=${GDRX_GPU_BUILD:-/tmp/gdrx-gpu}
mkdir -p "$O"
export PATH=/usr/local/cuda/bin:$PATH

plugin() { # NAME UCX_SRC UCX_LIBDIR [VERSION]
    [ -n "$2" ] || return 0
    GDRX_GPU_BUILD=$B UCX_VERSION=${4:-} bash "$SRC/tests/gpu/build_plugin.sh" "$2" "$3" \
        "/tmp/p$1" >>"$O/build.txt" 2>&1
}
bash "$SRC/tests/gpu/build.sh" "$B" >"$O/build.txt" 2>&1 || { echo "build failed"; exit 1; }
plugin 122 "${UCX_SRC_122:-}" "${UCX_PREFIX_122:-}/lib"
plugin 118 "${UCX_SRC_118:-}" "${UCX_PREFIX_118:-}/lib"
plugin 116 "${UCX_SRC_116:-}" /usr/lib/x86_64-linux-gnu 1.16.0

# mpi NAME UCX(122|118|116) TLS PROGRAM ARGS...: two ranks on one GPU,
# the plugin (PLUGIN, default the one built for that UCX) preloaded when TLS
# names gdrx; EXTRA: more mpirun arguments; output to $O/${MPI_OUT:-osu.txt}.
mpi() {
    local name=$1 u=$2 tls=$3 libs pre="" out=$O/${MPI_OUT:-osu.txt}
    shift 3
    if [ "$u" = 116 ]; then libs=$B; else eval "libs=\${UCX_PREFIX_$u}/lib:$B"; fi
    [[ $tls == *gdrx* ]] && pre=${PLUGIN:-/tmp/p$u/libuct_gdrx.so.0}
    echo "### $name UCX $u UCX_TLS=$tls ${EXTRA:-} $*" >>"$out"
    env LD_LIBRARY_PATH="$libs" LD_PRELOAD="$pre" UCX_TLS="$tls" GDRX_BACKEND=nvrm \
        timeout "${MPI_TIMEOUT:-60}" \
        mpirun -np 2 --allow-run-as-root --bind-to core --map-by core --mca pml ucx \
        --mca pml_ucx_tls any --mca pml_ucx_devices any --mca btl self,vader \
        -x LD_LIBRARY_PATH -x LD_PRELOAD -x UCX_TLS -x GDRX_BACKEND ${EXTRA:-} "$@" 2>&1 |
        grep -v '^$' | tr -s ' ' >>"$out"
    echo "rc ${PIPESTATUS[0]}" >>"$out"
}

# perftest NAME TLS ARGS...: ucx_perftest server and client on UCX 1.22.
perftest() {
    local name=$1 tls=$2 pre="" p=${UCX_PREFIX_122:?}
    shift 2
    [[ $tls == *gdrx* ]] && pre=/tmp/p122/libuct_gdrx.so.0
    local run=(env LD_LIBRARY_PATH="$p/lib:$B" LD_PRELOAD="$pre" UCX_TLS="$tls" GDRX_BACKEND=nvrm
               timeout 60 "$p/bin/ucx_perftest")
    "${run[@]}" "$@" -p 13400 >/tmp/srv.txt 2>&1 &
    sleep 2
    "${run[@]}" 127.0.0.1 "$@" -p 13400 >/tmp/cli.txt 2>&1
    local rc=$?
    wait
    { echo "### $name UCX_TLS=$tls ucx_perftest $* : rc $rc"; grep -i "final\|error" /tmp/cli.txt;
      grep -i error /tmp/srv.txt; } >>"$O/perftest.txt"
}

# mpiprog NAME [SOURCES...]: tests/mpi/NAME.c built with mpicc into /tmp/mp
mpiprog() {
    local name=$1
    shift
    mkdir -p /tmp/mp
    mpicc -std=gnu11 -D_GNU_SOURCE -O2 -I"$SRC/tests/mpi" -I"$SRC/tools" -I"$SRC/tests/gpu" \
        -I/usr/local/cuda/include "$SRC/tests/mpi/$name.c" "$SRC/tools/tool_cuda.c" "$@" -ldl \
        -o "/tmp/mp/$name" >>"$O/build.txt" 2>&1
}

with_mps() { # FUNCTION: run it without MPS, then (unless WITH_MPS=0) with the MPS daemon up
    "$1" nomps
    [ "${WITH_MPS:-1}" = 1 ] || return 0
    nvidia-cuda-mps-control -d && sleep 1 && "$1" mps
    echo quit | nvidia-cuda-mps-control
}

L="${OSU_DIR:-}/osu_latency -d cuda -m 1:4194304 -i 500 -x 50 D D"
versions() {
    mpi "$1-122-cc" 122 sm,cuda_copy $L
    mpi "$1-122-ccgdrx" 122 sm,cuda_copy,gdrx $L
    mpi "$1-122-gdrx" 122 sm,gdrx $L
    mpi "$1-118-ccgdrx" 118 sm,cuda_copy,gdrx $L
    mpi "$1-118-cc" 118 sm,cuda_copy $L
    mpi "$1-116-gdrx" 116 sm,gdrx $L
}
# alternate N PREFIX PROGRAM ARGS...: N pairs of runs, UCX's gdr_copy then
# gdrx (both beside cuda_copy), named PREFIXgdrcopyI and PREFIXgdrxI
alternate() {
    local n=$1 prefix=$2 i
    shift 2
    for ((i = 1; i <= n; i++)); do
        mpi "${prefix}gdrcopy$i" 122 sm,cuda_copy,gdr_copy "$@"
        mpi "${prefix}gdrx$i" 122 sm,cuda_copy,gdrx "$@"
    done
}

S="${OSU_DIR:-}/osu_latency -d cuda -m 1:1024 -i 3000 -x 300 D D"
V="${OSU_DIR:-}/osu_latency -d cuda -m 1:4194304 -i 20 -x 2 -c D D"
gdrcopy() {
    # OSU's data check first: a fast figure means nothing if data was lost
    mpi "$1-valid-gdrx" 122 sm,cuda_copy,gdrx $V
    mpi "$1-valid-gdrcopy" 122 sm,cuda_copy,gdr_copy $V
    alternate 3 "$1-small-" $S
    alternate 2 "$1-" $L
}

M="${OSU_DIR:-}/osu_latency -d cuda -m 64:1024 -i 3000 -x 300 D D"
# gdr_copy's default estimates (UCX 1.22's UCX_GDR_COPY_LAT and _BW)
GDR_COPY_EST="-x UCX_GDRX_GET_LAT=1.4us -x UCX_GDRX_PUT_LAT=0.4us"
GDR_COPY_EST="$GDR_COPY_EST -x UCX_GDRX_GET_BW=250MBs -x UCX_GDRX_PUT_BW=6911MBs"
small() {
    local p="${OSU_DIR:-}/osu_latency -d cuda -m 128:512 -i 200 -x 20 D D"
    MPI_OUT=proto.txt EXTRA="-x UCX_PROTO_INFO=used" mpi proto-gdrcopy 122 sm,cuda_copy,gdr_copy $p
    MPI_OUT=proto.txt EXTRA="-x UCX_PROTO_INFO=used" mpi proto-gdrx 122 sm,cuda_copy,gdrx $p
    MPI_OUT=proto.txt EXTRA="-x UCX_PROTO_INFO=used $GDR_COPY_EST" \
        mpi proto-gdrx-est 122 sm,cuda_copy,gdrx $p
    for i in 1 2 3; do
        mpi "small-gdrcopy$i" 122 sm,cuda_copy,gdr_copy $M
        mpi "small-gdrx$i" 122 sm,cuda_copy,gdrx $M
        EXTRA="$GDR_COPY_EST" mpi "small-gdrx-est$i" 122 sm,cuda_copy,gdrx $M
    done
}

# cachedev: a plugin whose memory-type cache entries name cuda_copy's device,
# under OSU's data check (twice, the second with 100 iterations) then at
# 64 B-1 KiB
cachedev() {
    local PLUGIN=/tmp/p122dev/libuct_gdrx.so.0 # mpi() preloads it
    mpi "$1-valid-cachedev" 122 sm,cuda_copy,gdrx $V
    mpi "$1-valid100-cachedev" 122 sm,cuda_copy,gdrx ${V/-i 20 -x 2/-i 100 -x 10}
    mpi "$1-small-cachedev" 122 sm,cuda_copy,gdrx $M
}

# large: 8 KiB-1 MiB, where both transports leave the data to cuda_copy's
# rendezvous; alternating pairs, then gdrx's counters (what it still does
# per message there)
large() {
    local l="${OSU_DIR:-}/osu_latency -d cuda -m 8192:1048576 -i 1000 -x 100 D D"
    alternate 3 "$1-large-" $l
    EXTRA="-x UCX_GDRX_STATS_DUMP=y" mpi "$1-large-gdrx-stats" 122 sm,cuda_copy,gdrx $l
}

T="${OSU_DIR:-}/osu_latency -d cuda -m 1:4194304 -i 500 -x 50 D D"
table() {
    local i
    for ((i = 1; i <= ${TABLE_ROUNDS:-3}; i++)); do
        mpi "$1-r$i-116-gdrx" 116 sm,gdrx $T
        mpi "$1-r$i-122-cc" 122 sm,cuda_copy $T
        mpi "$1-r$i-122-ccgdrx" 122 sm,cuda_copy,gdrx $T
        mpi "$1-r$i-122-ccgdrcopy" 122 sm,cuda_copy,gdr_copy $T
        [ "${TABLE_TUNED:-1}" = 1 ] || continue
        # docs/mpi.md's UCX_RNDV_THRESH advice, as a user would apply it
        local t=32k
        [ "$1" = mps ] && t=16k
        EXTRA="-x UCX_RNDV_THRESH=8k" mpi "$1-r$i-116-gdrx-rndv8k" 116 sm,gdrx $T
        EXTRA="-x UCX_RNDV_THRESH=$t" mpi "$1-r$i-122-ccgdrx-rndv$t" 122 sm,cuda_copy,gdrx $T
    done
}
R="${OSU_DIR:-}/osu_latency -d cuda -m 2048:65536 -i 500 -x 50 D D"
rndv() {
    local i t
    for ((i = 1; i <= ${TABLE_ROUNDS:-3}; i++)); do
        mpi "$1-r$i-auto" 122 sm,cuda_copy,gdrx $R
        for t in 16k 32k; do
            EXTRA="-x UCX_RNDV_THRESH=$t" mpi "$1-r$i-thresh$t" 122 sm,cuda_copy,gdrx $R
        done
    done
}
P="${OSU_DIR:-}/osu_latency -d cuda -m 1:4194304 -i 200 -x 20 D D"
SHM_UCX=${SHMPPLN_UCX:-116 122}
# shmppln_three PREFIX UCX TLS THRESH: as is, the pipeline off, UCX_RNDV_THRESH
shmppln_three() {
    mpi "$1" "$2" "$3" $P
    EXTRA="-x UCX_RNDV_PIPELINE_SHM_ENABLE=n" mpi "$1-noppln" "$2" "$3" $P
    EXTRA="-x UCX_RNDV_THRESH=$4" mpi "$1-rndv$4" "$2" "$3" $P
}
shmppln() {
    local i t=32k
    [ "$1" = mps ] && t=16k
    for ((i = 1; i <= ${TABLE_ROUNDS:-3}; i++)); do
        [[ $SHM_UCX == *116* ]] && shmppln_three "$1-r$i-116-gdrx" 116 sm,gdrx 8k
        [[ $SHM_UCX == *122* ]] && shmppln_three "$1-r$i-122-ccgdrx" 122 sm,cuda_copy,gdrx "$t"
    done
}
R116="${OSU_DIR:-}/osu_latency -d cuda -m 64:32768 -i 1000 -x 100 D D"
rndv116() {
    local i t
    for ((i = 1; i <= ${TABLE_ROUNDS:-3}; i++)); do
        mpi "$1-r$i-116auto" 116 sm,gdrx $R116
        for t in 2k 8k 32k; do
            EXTRA="-x UCX_RNDV_THRESH=$t" mpi "$1-r$i-116thresh$t" 116 sm,gdrx $R116
        done
    done
}
L116="${OSU_DIR:-}/osu_latency -d cuda -m ${LARGE_SIZES:-16384:4194304} -i 200 -x 20 D D"
large116() {
    local i t
    for ((i = 1; i <= ${TABLE_ROUNDS:-3}; i++)); do
        for t in ${LARGE_THRESH:-32k 16k inf}; do
            EXTRA="-x UCX_GDRX_DMA_THRESH=$t" mpi "$1-r$i-116dma$t" 116 sm,gdrx $L116
        done
    done
}
# floor: what an 8 B GPU message costs beyond its two copies.  osu_latency
# H H over sm (UCX's own host path: UCP plus shared memory) beside D D over
# sm,gdrx (1.16) and sm,cuda_copy,gdrx (1.22), 1-64 B; each round starts at
# the next configuration, so no configuration always runs first
F="${OSU_DIR:-}/osu_latency -d cuda -m 1:64 -i 20000 -x 2000"
floor() {
    local m=$1 i j cfg=("116-sm-HH 116 sm H H" "116-gdrx 116 sm,gdrx D D")
    # UCX 1.22's two only where it was built (UCX_PREFIX_122)
    [ -n "${UCX_PREFIX_122:-}" ] && cfg+=("122-sm-HH 122 sm H H" "122-ccgdrx 122 sm,cuda_copy,gdrx D D")
    for ((i = 0; i < ${TABLE_ROUNDS:-3}; i++)); do
        for ((j = 0; j < ${#cfg[@]}; j++)); do
            # shellcheck disable=SC2086 # a configuration: five words
            set -- ${cfg[$(((i + j) % ${#cfg[@]}))]}
            mpi "$m-r$((i + 1))-$1" "$2" "$3" $F "$4" "$5"
        done
    done
}
# which protocol UCP takes per size, and what gdrx did (its counters)
protocols() {
    local p="${OSU_DIR:-}/osu_latency -d cuda -m 1:4194304 -i 20 -x 2 D D" c
    for c in "116 sm,gdrx" "122 sm,cuda_copy,gdrx" "122 sm,cuda_copy,gdr_copy" "122 sm,cuda_copy"; do
        set -- $c
        MPI_OUT=proto.txt EXTRA="-x UCX_PROTO_ENABLE=y -x UCX_PROTO_INFO=used -x UCX_GDRX_STATS_DUMP=y" \
            mpi "proto-$1-$2" "$1" "$2" $p
    done
}

case "$MODE" in
versions) with_mps versions ;;
table) with_mps table; protocols ;;
rndv) with_mps rndv ;;
rndv116) rndv116 nomps ;;
shmppln) with_mps shmppln
    [[ $SHM_UCX == *122* ]] || exit 0
    p="${OSU_DIR:-}/osu_latency -d cuda -m 1:4194304 -i 20 -x 2 D D"
    MPI_OUT=proto.txt EXTRA="-x UCX_PROTO_INFO=used -x UCX_RNDV_PIPELINE_SHM_ENABLE=n" \
        mpi proto-122-noppln 122 sm,cuda_copy,gdrx $p ;;
large116) large116 nomps ;;
floor) floor nomps ;;
rndvproto)
    p="${OSU_DIR:-}/osu_latency -d cuda -m 16384:524288 -i 500 -x 50 D D"
    for t in auto 32k auto 32k; do
        e="-x UCX_PROTO_ENABLE=y -x UCX_PROTO_INFO=used -x UCX_GDRX_STATS_DUMP=y"
        [ "$t" = auto ] || e="$e -x UCX_RNDV_THRESH=$t"
        # shellcheck disable=SC2086 # p: a command line
        MPI_OUT=proto.txt EXTRA=$e mpi "rndvproto-122-$t" 122 sm,cuda_copy,gdrx $p
    done ;;
gdrcopy)
    LD_LIBRARY_PATH="${UCX_PREFIX_122:?}/lib:$B" "$UCX_PREFIX_122/bin/ucx_info" -d 2>&1 |
        grep -B3 -A16 "Transport: gdr_copy" >"$O/ucx_info.txt"
    for s in 8 1024; do
        perftest gdrcopy sm,cuda_copy,gdr_copy -t tag_lat -m cuda -s $s -n 20000
        perftest gdrx sm,cuda_copy,gdrx -t tag_lat -m cuda -s $s -n 20000
    done
    with_mps gdrcopy ;;
small) small ;;
cachedev)
    PLUGIN_CFLAGS='-DUCT_GDRX_MEMTYPE_CACHE_SYS_DEV(d)=uct_gdrx_cuda_sys_dev(d)' \
        plugin 122dev "${UCX_SRC_122:?}" "${UCX_PREFIX_122:?}/lib"
    with_mps cachedev ;;
large) with_mps large ;;
churn)
    mpiprog gdrx_mpi_latency "$SRC/tests/mpi/mpi_bench.c" "$SRC/tools/tool_sys.c" || exit 1
    for r in "" "-r 100" "" "-r 100" "" "-r 100"; do
        # shellcheck disable=SC2086 # r: zero or two words
        mpi "churn${r// /}" 116 sm,gdrx /tmp/mp/gdrx_mpi_latency -m 8:8 -i 20000 -x 100 $r D D
    done ;;
integrity)
    mpiprog gdrx_mpi_integrity "$SRC/tests/mpi/integrity_check.c" || exit 1
    for seed in ${INTEGRITY_SEEDS:-1}; do
        for cache in y n; do
            export EXTRA="-x UCX_MEMTYPE_CACHE=$cache" MPI_OUT=integrity.txt MPI_TIMEOUT=580
            # shellcheck disable=SC2086 # INTEGRITY_ARGS: a word list
            for c in "116 sm,gdrx" "122 sm,cuda_copy,gdrx" "122 sm,cuda_copy,gdr_copy" \
                     "122 sm,cuda_copy"; do
                set -- $c
                [ "$1" = 116 ] || [ -n "${UCX_PREFIX_122:-}" ] || continue
                mpi "integrity-$1-$2-cache$cache-seed$seed" "$1" "$2" /tmp/mp/gdrx_mpi_integrity \
                    -R -s "$seed" ${INTEGRITY_ARGS:--n 20000}
            done
        done
    done ;;
aside)
    EXTRA="-x UCX_GDRX_BACKEND=gdrdrv -x GDRX_GDRDRV_PATH=/nonexistent" \
        mpi aside-122 122 sm,cuda_copy,gdrx "${OSU_DIR:?}/osu_latency" -d cuda -m 1:64 -i 100 -x 10 D D ;;
*) echo "usage: $0 versions|table|rndv|rndv116|shmppln|large116|floor|rndvproto|gdrcopy|small|cachedev|large|churn|aside|integrity" >&2; exit 2 ;;
esac
