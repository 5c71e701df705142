#!/bin/bash
# concurrency.sh - issue 43's library defects 6, 7 and 8 on a real GPU
# (nvrm backend), with the programs tests/gpu/build.sh builds:
#   graph-*        graph_alias: a graph's free node under a live pin (gdrx
#                  and libgdrapi.so.2), the pages handed to a relaunch at
#                  the same address and to another graph's node (defect 6)
#   fork-alloc-*   fork_conc alloc: 2 and 4 threads in cuMemAlloc/Free and
#                  cuMemAllocAsync/FreeAsync while the main thread copies and
#                  forks 200 times, a CUDA-calling prepare handler after
#                  libgdrx's (defect 7)
#   fork-park-alloc  fork_conc park-alloc: the same with a thread parked
#                  inside cuMemAlloc's traced RM ioctl (test-point libgdrx)
#   copyfree       fork_conc copyfree: a handler's copies while another
#                  thread frees the pin, left to the scheduler (defect 8)
#   park-free      fork_conc park-free: the same, the free parked (test points)
# From the repository root, after bash tests/gpu/build.sh $B:
#   GDRX_GPU_BUILD=$B OUT=/some/dir bash tests/gpu/concurrency.sh
# SEED (default: the time) makes every size, offset, pattern and count
# again.  GDRX_CONC_SIM=<build dir configured --enable-all>: run on the
# simulated GPU (its libcuda.so.1, the RM emulator for nvrm) instead, a
# smoke test.  Output: $OUT/concurrency/<case>.log and summary.txt, one line
# per case "PASS|FAIL|SKIP <case> <counts>".  Exit 1 if any case failed.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "${GDRX_GPU_BUILD:-/tmp/gdrx-gpu}" 2>/dev/null && pwd) || B=${GDRX_GPU_BUILD:-/tmp/gdrx-gpu}
SEED=${SEED:-$(date +%s)}
SIM=${GDRX_CONC_SIM:-}
D=${OUT:-/tmp/out}/concurrency
BUDGET_S=220 # cases not started by then are reported as not run
mkdir -p "$D"
SUMMARY="$D/summary.txt"
: > "$SUMMARY"

for f in graph_alias fork_conc tp/libgdrx.so.0 libgdrx.so.0 libgdrapi.so.2; do
    if [ ! -e "$B/$f" ]; then
        echo "FAIL setup: $B/$f missing: run bash tests/gpu/build.sh $B first" | tee -a "$SUMMARY"
        exit 1
    fi
done
# Which libgdrx each case loads: $B's (what the programs link), or the
# test-point build first; on the simulated GPU its libcuda.so.1 before both.
LIBS="$B" TP="$B/tp:$B" NVRM=(GDRX_BACKEND=nvrm)
if [ -n "$SIM" ]; then
    LIBS="$SIM/tests/sim/.libs:$B" TP="$SIM/tests/sim/.libs:$B/tp:$B"
    NVRM+=(LD_PRELOAD="$SIM/tests/nvrm/.libs/libnvrm_emu.so")
fi

{
    echo "== concurrency.sh $(date -u +%FT%TZ) on $(hostname), seed $SEED${SIM:+, SIMULATED GPU ($SIM)}"
    echo "   $(uname -r); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"
    echo "   $(cd "$SRC" && git log -1 --format='%h %s' 2>/dev/null)"
} | tee "$D/header.txt"

START=$SECONDS
FAILED=0
# run_case NAME TIMEOUT_S LIBPATH ENV... -- PROGRAM ARGS...: one line in
# the summary, from the program's RESULT line; a crash, a kill by the
# timeout or a RESULT line that contradicts the exit status is a FAIL.
run_case() {
    local name=$1 t=$2 libs=$3; shift 3
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    local log="$D/$name.log" line status rest
    if (( SECONDS - START > BUDGET_S )); then
        echo "FAIL $name not run: the ${BUDGET_S} s budget was spent" | tee -a "$SUMMARY"
        FAILED=1
        return
    fi
    local t0=$SECONDS
    (cd "$B" && env LD_LIBRARY_PATH="$libs" GDRX_LOG_LEVEL=1 "${envs[@]}" \
        timeout -k 5 "$t" "./$1" "${@:2}") > "$log" 2>&1
    local rc=$?
    line=$(grep '^RESULT ' "$log" | tail -1)
    if [ -z "$line" ]; then
        status=FAIL
        rest="rc=$rc: no RESULT line ($([ $rc = 124 ] || [ $rc = 137 ] && echo "killed after $t s: hang" || echo "crashed"))"
    else
        status=$(echo "$line" | awk '{print $3}')
        rest=$(echo "$line" | cut -d' ' -f4-)
        if [ "$status" = PASS ] && [ $rc != 0 ]; then status=FAIL rest="rc=$rc $rest"; fi
        if [ "$status" = FAIL ] && [ $rc = 0 ]; then rest="rc=0 $rest"; fi
    fi
    [ "$status" = FAIL ] && FAILED=1
    echo "$status $name ($((SECONDS - t0)) s) $rest" | tee -a "$SUMMARY"
    [ "$status" = FAIL ] && tail -n 15 "$log" | sed 's/^/    | /'
}

ITERS=$((12 + SEED % 9))
run_case graph-nvrm 90 "$LIBS" "${NVRM[@]}" -- graph_alias -s "$SEED" -n "$ITERS" -c graph-nvrm
# dmabuf too where this machine has it (optional: SKIP if it cannot open).
run_case graph-dmabuf 90 "$LIBS" GDRX_BACKEND=dmabuf -- \
    graph_alias -s "$((SEED + 1))" -n "$ITERS" -c graph-dmabuf -o
for t in 2 4; do
    run_case fork-alloc-${t}t 60 "$LIBS" "${NVRM[@]}" -- \
        fork_conc alloc -t $t -n 200 -s "$((SEED + t))" -c fork-alloc-${t}t
done
run_case fork-park-alloc 60 "$TP" "${NVRM[@]}" -- \
    fork_conc park-alloc -n 8 -s "$SEED" -c fork-park-alloc
run_case copyfree 60 "$LIBS" "${NVRM[@]}" -- fork_conc copyfree -n 200 -s "$SEED" -c copyfree
run_case park-free 60 "$TP" "${NVRM[@]}" -- fork_conc park-free -n 8 -s "$SEED" -c park-free

echo "== $(grep -c '^PASS' "$SUMMARY") passed, $(grep -c '^FAIL' "$SUMMARY") failed," \
     "$(grep -c '^SKIP' "$SUMMARY") skipped in $((SECONDS - START)) s (seed $SEED)" | tee -a "$SUMMARY"
exit $FAILED
