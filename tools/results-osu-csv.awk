#!/usr/bin/awk -f
# results-osu-csv.awk OSU_TXT: the raw output of tests/gpu/ucx_runs.sh
# (blocks "### MODE-rN-CONFIG UCX VER UCX_TLS=... [-x VAR=VAL ...] COMMAND",
# osu_latency's "SIZE LATENCY" lines, then "rc N") as CSV, one row per size
# and block:
#
#   mode,round,config,ucx,size_B,latency_us,rc,tls,options
#
# mode: nomps or mps (or the block's prefix); options: the -x settings
# besides UCX_TLS, space-separated; rc: the block's exit status (rows of a
# failed block are kept, marked; the tables leave them out).  tls and
# options, last, are quoted (they hold commas); the columns before them
# never do.  Blocks whose
# name has no "-rN-" round are not osu_latency rounds and are skipped.
# For results/*/osu.csv; tools/results-tables.sh reads it.
BEGIN { print "mode,round,config,ucx,size_B,latency_us,rc,tls,options" }
function flush(rc,    i) {
    for (i = 1; i <= n; i++)
        printf "%s,%s,%s,%s,%s,%s,%s,\"%s\",\"%s\"\n", mode, round, cfg, ucx, sz[i], lat[i], rc, tls, opts
    n = 0
}
/^### / {
    if (mode != "") flush("?")
    mode = ""; n = 0
    if (!match($2, /-r[0-9]+-/)) next
    mode = substr($2, 1, RSTART - 1)
    round = substr($2, RSTART + 2, RLENGTH - 3)
    cfg = substr($2, RSTART + RLENGTH)
    ucx = ($3 == "UCX") ? $4 : ""
    tls = ""; opts = ""
    for (i = 5; i <= NF; i++) {        # up to the command (a path)
        if ($i ~ /^\//) break
        if ($i ~ /^UCX_TLS=/) tls = substr($i, 9)
        else if ($i == "-x" && i < NF) { opts = opts (opts == "" ? "" : " ") $(i + 1); i++ }
    }
    next
}
mode != "" && /^[0-9]+ +[0-9.]+$/ { sz[++n] = $1; lat[n] = $2; next }
mode != "" && /^rc / { flush($2); mode = "" }
END { if (mode != "") flush("?") }
