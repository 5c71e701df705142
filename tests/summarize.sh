#!/bin/sh
# summarize.sh RESULTS: print a per-suite table and the final
# "N passed, N failed" line; exit 1 if anything failed or nothing ran.
results=$1
if [ ! -s "$results" ]; then
    echo "no test results recorded"
    echo "0 passed, 1 failed"
    exit 1
fi
echo "=== results by suite (passed failed)"
awk '{ printf "  %-40s %6d %6d\n", $1, $2, $3 }' "$results"
awk '{ p += $2; f += $3 } END {
        printf "%d passed, %d failed\n", p, f
        exit (f > 0 || p == 0) ? 1 : 0 }' "$results"
