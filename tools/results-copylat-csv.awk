#!/usr/bin/awk -f
# results-copylat-csv.awk OUTPUT: gdrx-copylat's printed tables (one or
# more runs; a line "== round N ..." starts round N) as CSV, one row per
# size, direction and measured operation:
#
#   tool,test,op,dir,variant,size_B,round,p50_ns
#
# with the column names of the tools' own --csv output (make bench's
# bench/results.csv), for runs whose CSV did not come back: op is gdrx,
# floor or cuMemcpy, dir H->D or D->H, size_B in bytes.
# For results/*/copylat.csv; tools/results-tables.sh reads it.
BEGIN { print "tool,test,op,dir,variant,size_B,round,p50_ns"; round = 1 }
function bytes(s) {
    if (s ~ /K$/) return substr(s, 1, length(s) - 1) * 1024
    if (s ~ /M$/) return substr(s, 1, length(s) - 1) * 1048576
    return s + 0
}
/^== round [0-9]+/ { round = $3 + 0; dir = ""; next }
/^host -> GPU \(gdrx_copy_to_mapping/ { dir = "H->D"; variant = $NF; sub(/:$/, "", variant); next }
/^GPU -> host \(gdrx_copy_from_mapping/ { dir = "D->H"; variant = $NF; sub(/:$/, "", variant); next }
/^size \(B\)/ { next }
dir != "" && /^[0-9]+[KM]? +[0-9]+ +[0-9.]+/ && NF == 11 {
    n = bytes($1)
    printf "gdrx-copylat,copy,gdrx,%s,%s,%d,%s,%s\n", dir, variant, n, round, $4
    printf "gdrx-copylat,copy,floor,%s,%s,%d,%s,%s\n", dir, variant, n, round, $6
    printf "gdrx-copylat,copy,cuMemcpy,%s,-,%d,%s,%s\n", dir, n, round, $10
    next
}
dir != "" && !/^[0-9]/ { dir = "" }
