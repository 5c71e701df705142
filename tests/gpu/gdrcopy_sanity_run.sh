#!/bin/bash
# gdrcopy_sanity_run.sh SANITY LIBDIR [TEST...] - run an already-built
# gdrcopy_sanity (NVIDIA gdrcopy's test program, built by hand against
# gdrcopy's own headers and linked to our libgdrapi.so.2) one test per
# process, each under a time limit in a session of its own, so that
# whatever a test leaves behind (its fork children, gdrcopy's executor
# process group) is killed before the next starts.  It builds nothing.
#
#   SANITY   the gdrcopy_sanity binary
#   LIBDIR   the directory holding our libgdrapi.so.2 and libgdrx.so.0
#            (tests/gpu/build.sh's output); put first on LD_LIBRARY_PATH
#   TEST...  tests to run; default: every test `SANITY -l` lists, the
#            extended ones included
# Environment: GDRCOPY_TEST_TIMEOUT (seconds per test, default 60),
# GDRCOPY_TEST_LOGS (a directory that keeps each test's output).
#
# Prints one line per test, "PASS|WAIVED|FAIL|TIMEOUT name (seconds)",
# then a total.  Exits 0 when no test failed or timed out.
set -u
SANITY=${1:?usage: gdrcopy_sanity_run.sh SANITY LIBDIR [TEST...]}
LIBDIR=${2:?usage: gdrcopy_sanity_run.sh SANITY LIBDIR [TEST...]}
shift 2
LIMIT=${GDRCOPY_TEST_TIMEOUT:-60}
LOGS=${GDRCOPY_TEST_LOGS:-}
export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -n "$LOGS" ] && mkdir -p "$LOGS"

if [ $# -gt 0 ]; then
    tests=("$@")
else
    # `-l` prints the names indented by four spaces, under two headings.
    mapfile -t tests < <("$SANITY" -l | sed -n 's/^    \([A-Za-z0-9_]*\)$/\1/p')
fi
if [ ${#tests[@]} -eq 0 ]; then
    echo "no tests listed by $SANITY -l" >&2
    exit 2
fi

# Kill every process of session sid, by pid.  setsid below makes the test
# the leader of a new session; gdrcopy's executor moves to a process group
# of its own, but stays in the session.
kill_session() {
    local sid=$1 pid
    for pid in $(ps -e -o pid=,sid= | awk -v s="$sid" '$2 == s { print $1 }'); do
        kill -KILL "$pid" 2>/dev/null
    done
    return 0
}

pass=0 waived=0 fail=0 timedout=0
for t in "${tests[@]}"; do
    log=$(mktemp)
    start=$SECONDS
    # In the background of a shell without job control, setsid is no
    # group leader, so it calls setsid() itself: its pid is the session id.
    setsid "$SANITY" -v -t "$t" >"$log" 2>&1 &
    pid=$!
    verdict=""
    while kill -0 "$pid" 2>/dev/null; do
        if [ $((SECONDS - start)) -ge "$LIMIT" ]; then
            verdict=TIMEOUT
            break
        fi
        sleep 0.2
    done
    kill_session "$pid"
    wait "$pid" 2>/dev/null
    rc=$?
    if [ -z "$verdict" ]; then
        if grep -q "^&&&& WAIVED $t\$" "$log"; then
            verdict=WAIVED
        elif [ "$rc" -eq 0 ] && grep -q "^&&&& PASSED $t\$" "$log"; then
            verdict=PASS
        else
            verdict=FAIL
        fi
    fi
    case $verdict in
    PASS) pass=$((pass + 1)) ;;
    WAIVED) waived=$((waived + 1)) ;;
    FAIL) fail=$((fail + 1)) ;;
    TIMEOUT) timedout=$((timedout + 1)) ;;
    esac
    echo "$verdict $t ($((SECONDS - start)) s)"
    [ -n "$LOGS" ] && cp "$log" "$LOGS/$t.log"
    rm -f "$log"
done
echo "total ${#tests[@]}: $pass passed, $waived waived, $fail failed, $timedout timed out" \
     "(limit ${LIMIT} s each)"
[ $((fail + timedout)) -eq 0 ]
