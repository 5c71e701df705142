#!/bin/sh
# run-suites.sh PROGRAM...: run each CUnit suite program, show its output,
# and append "name passed failed" to $GDRX_RESULTS.  A program that dies
# without printing CUnit's run summary counts as one failed test.
# Always exits 0: tests/summarize.sh gives the verdict.
: "${GDRX_RESULTS:=tests/results.txt}"
mkdir -p tests/logs
for prog in "$@"; do
    name=$(echo "$prog" | sed 's|^\./||; s|/|_|g')
    log="tests/logs/$name.log"
    echo "=== suite $prog"
    "./$prog" >"$log" 2>&1
    rc=$?
    cat "$log"
    # CUnit: "               tests      5      5      5      0        0"
    line=$(grep -E '^[[:space:]]+tests[[:space:]]+[0-9]+' "$log" | tail -n1)
    if [ -z "$line" ]; then
        echo "=== suite $prog: no CUnit summary (exit status $rc): counted as 1 failure"
        echo "$prog 0 1" >>"$GDRX_RESULTS"
        continue
    fi
    passed=$(echo "$line" | awk '{print $4}')
    failed=$(echo "$line" | awk '{print $5}')
    if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
        echo "=== suite $prog: exit status $rc with no failed test: counted as 1 failure"
        failed=1
    fi
    echo "$prog $passed $failed" >>"$GDRX_RESULTS"
done
exit 0
