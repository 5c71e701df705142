#!/bin/bash
# run.sh build|run|all|bench - the nvrm backend's sanity check on a GPU
# machine (the H200 of the device tool).  From the repository root:
#   bash tests/gpu/run.sh build   # libgdrx, the sanity programs and
#                                 # gdrx-copylat into $GDRX_GPU_BUILD
#   bash tests/gpu/run.sh run     # as root, then as a fresh unprivileged user
#   bash tests/gpu/run.sh all     # build, then run
#   bash tests/gpu/run.sh bench   # gdrx-copylat on the nvrm backend, every
#                                 # copy variant (builds first if needed)
# Output goes to stdout and, when $OUT is set, to $OUT/{build,run}.txt,
# $OUT/copylat.txt and $OUT/copylat.csv.
# Exit status: non-zero if the build failed or any check failed.
set -uo pipefail
MODE=${1:-all}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
B=${GDRX_GPU_BUILD:-/tmp/gdrx-gpu}
LOGDIR=${OUT:-/tmp}
USER_NAME=gdrxnvrm

do_build() {
    echo "== build ($(date -u +%FT%TZ)) on $(hostname): $(gcc --version | head -1); $(nvcc --version | tail -1)"
    bash "$SRC/tests/gpu/build.sh" "$B" || return 1
    chmod -R a+rX "$B"
}

have_build() {
    local f
    for f in nvrm_sanity nvrm_vmm_probe nvrm_load_order gdrx-copylat gdrapi_sanity fork_stress; do
        [ -x "$B/$f" ] || return 1
    done
}

do_run() {
    local rc=0
    have_build || do_build || return 1
    echo "== run ($(date -u +%FT%TZ)): $(uname -r), $(nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader 2>/dev/null)"
    ls -l /dev/nvidia* 2>&1 | sed 's/^/   /'
    grep -E 'Device Minor|Bus Location' /proc/driver/nvidia/gpus/*/information 2>&1 | sed 's/^/   /'
    echo "== as root (uid $(id -u))"
    (cd "$B" && GDRX_LOG_LEVEL=3 GDRX_BACKEND=nvrm ./nvrm_sanity) || rc=1
    (cd "$B" && GDRX_LOG_LEVEL=2 GDRX_BACKEND=nvrm ./nvrm_sanity early) || rc=1
    (cd "$B" && GDRX_LOG_LEVEL=2 ./nvrm_vmm_probe) || rc=1
    for mode in cuda-late gdrx-late; do
        (cd "$B" && LD_LIBRARY_PATH="$B" GDRX_LOG_LEVEL=2 ./nvrm_load_order $mode) || rc=1
    done
    # gdrcopy's API (libgdrapi.so.2) with the backend gdrx picks by itself
    (cd "$B" && GDRX_LOG_LEVEL=2 ./gdrapi_sanity) || rc=1
    # fork() while 1, then 3 threads pin/map/copy/unpin: 1,000 forks each
    (cd "$B" && GDRX_LOG_LEVEL=2 GDRX_BACKEND=nvrm ./fork_stress 1000) || rc=1
    echo "== as an unprivileged user"
    id "$USER_NAME" >/dev/null 2>&1 || useradd -M -r -s /bin/sh "$USER_NAME" || rc=1
    local uid gid
    uid=$(id -u "$USER_NAME") gid=$(id -g "$USER_NAME")
    echo "   user $USER_NAME uid $uid gid $gid groups: $(id -Gn "$USER_NAME")"
    if command -v setpriv >/dev/null; then
        AS_USER="setpriv --reuid=$uid --regid=$gid --clear-groups"
    else
        AS_USER="runuser -u $USER_NAME --"
    fi
    for prog in "nvrm_sanity" "nvrm_sanity early" "nvrm_vmm_probe" \
                "nvrm_load_order cuda-late" "nvrm_load_order gdrx-late" "gdrapi_sanity" \
                "fork_stress 1000"; do
        (cd "$B" && env -i PATH=/usr/bin:/bin HOME=/tmp GDRX_LOG_LEVEL=2 GDRX_BACKEND=nvrm \
            LD_LIBRARY_PATH="$B" $AS_USER ./$prog) || rc=1
    done
    echo "== run.sh exit status $rc"
    return $rc
}

do_bench() {
    have_build || do_build || return 1
    local cmd=(./gdrx-copylat -b nvrm -v all -s 1,8,64,256,1K,4K,16K,64K -o "$LOGDIR/copylat.csv")
    echo "== bench ($(date -u +%FT%TZ)): $(uname -r), $(nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader 2>/dev/null)"
    echo "   (cd $B && ${cmd[*]})"
    (cd "$B" && "${cmd[@]}")
}

case "$MODE" in
build) do_build 2>&1 | tee "$LOGDIR/build.txt"; exit "${PIPESTATUS[0]}" ;;
run)   do_run 2>&1 | tee "$LOGDIR/run.txt"; exit "${PIPESTATUS[0]}" ;;
all)   { do_build && do_run; } 2>&1 | tee "$LOGDIR/run.txt"; exit "${PIPESTATUS[0]}" ;;
bench) do_bench 2>&1 | tee "$LOGDIR/copylat.txt"; exit "${PIPESTATUS[0]}" ;;
*)     echo "usage: $0 build|run|all|bench" >&2; exit 2 ;;
esac
