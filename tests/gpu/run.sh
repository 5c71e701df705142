#!/bin/bash
# run.sh build|run|all - the nvrm backend's sanity check on a GPU machine
# (the H200 of the device tool).  From the repository root:
#   bash tests/gpu/run.sh build   # libgdrx + tests/gpu/nvrm_sanity into $GDRX_GPU_BUILD
#   bash tests/gpu/run.sh run     # as root, then as a fresh unprivileged user
# Output goes to stdout and, when $OUT is set, to $OUT/{build,run}.txt.
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

do_run() {
    local rc=0
    [ -x "$B/nvrm_sanity" ] && [ -x "$B/nvrm_vmm_probe" ] || do_build || return 1
    echo "== run ($(date -u +%FT%TZ)): $(uname -r), $(nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader 2>/dev/null)"
    ls -l /dev/nvidia* 2>&1 | sed 's/^/   /'
    grep -E 'Device Minor|Bus Location' /proc/driver/nvidia/gpus/*/information 2>&1 | sed 's/^/   /'
    echo "== as root (uid $(id -u))"
    (cd "$B" && GDRX_LOG_LEVEL=3 GDRX_BACKEND=nvrm ./nvrm_sanity) || rc=1
    (cd "$B" && GDRX_LOG_LEVEL=2 GDRX_BACKEND=nvrm ./nvrm_sanity early) || rc=1
    (cd "$B" && GDRX_LOG_LEVEL=2 ./nvrm_vmm_probe) || rc=1
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
    for prog in "nvrm_sanity" "nvrm_sanity early" "nvrm_vmm_probe"; do
        (cd "$B" && env -i PATH=/usr/bin:/bin HOME=/tmp GDRX_LOG_LEVEL=2 GDRX_BACKEND=nvrm \
            $AS_USER ./$prog) || rc=1
    done
    echo "== run.sh exit status $rc"
    return $rc
}

case "$MODE" in
build) do_build 2>&1 | tee "$LOGDIR/build.txt"; exit "${PIPESTATUS[0]}" ;;
run)   do_run 2>&1 | tee "$LOGDIR/run.txt"; exit "${PIPESTATUS[0]}" ;;
all)   { do_build && do_run; } 2>&1 | tee "$LOGDIR/run.txt"; exit "${PIPESTATUS[0]}" ;;
*)     echo "usage: $0 build|run|all" >&2; exit 2 ;;
esac
