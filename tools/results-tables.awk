# results-tables.awk: one Markdown table from one CSV of the results tree
# (tools/results-tables.sh runs it; see there).  Variables:
#   kind   osu:  osu_latency, median over rounds per configuration and size
#                (CSV of tools/results-osu-csv.awk); arg = the mode (nomps,
#                mps); rows of failed blocks (rc not 0) are left out
#          copy: gdrx-copylat's P50 per size, both directions, with its
#                floor and cuMemcpy (the tools' CSV columns tool, test, op,
#                dir, size_B, p50_ns; round when there are several runs:
#                median over them)
#          defaults: tests/gpu/defaults.sh's bench.csv (config, mps, dir,
#                size, round, usec): median over rounds per configuration,
#                MPS state and size; arg = the direction (DD, HH)
#   arg    see kind
#   src    the CSV's path as the caption names it
BEGIN { FS = "," }
function median(list,    n, v, i, j, t) {
    n = split(list, v, " ")
    for (i = 2; i <= n; i++)
        for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function human(b) {
    if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) " MiB"
    if (b >= 1024 && b % 1024 == 0) return (b / 1024) " KiB"
    return b " B"
}
function addsize(s) { if (!(s in have)) { have[s] = 1; sizes[++ns] = s + 0 } }
function sortsizes(    i, j, t) {
    for (i = 2; i <= ns; i++)
        for (j = i; j > 1 && sizes[j - 1] > sizes[j]; j--) { t = sizes[j]; sizes[j] = sizes[j - 1]; sizes[j - 1] = t }
}
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
kind == "osu" && $(col["mode"]) == arg && $(col["rc"]) == "0" {
    c = $(col["config"]); s = $(col["size_B"])
    if (!(c in seen)) {
        seen[c] = 1; cfg[++nc] = c
        q = $0; sub(/^[^"]*"/, "", q)          # "tls","options" at the end
        split(q, part, "\"")
        v = $(col["ucx"]); v = (v ~ /^1[0-9][0-9]$/) ? "1." substr(v, 2) : v
        head[c] = "UCX " v " `" part[1] "`" (part[3] != "" ? " " part[3] : "")
    }
    val[c, s] = val[c, s] " " $(col["latency_us"])
    r = $(col["round"]); if (!((c, r) in rounds)) { rounds[c, r] = 1; nr[c]++ }
    addsize(s)
    next
}
kind == "defaults" && $(col["dir"]) == arg {
    c = $(col["config"]) " (" ($(col["mps"]) == "mps" ? "MPS" : "no MPS") ")"; s = $(col["size"])
    if (!(c in seen)) { seen[c] = 1; cfg[++nc] = c; head[c] = c }
    val[c, s] = val[c, s] " " $(col["usec"])
    r = $(col["round"]); if (!((c, r) in rounds)) { rounds[c, r] = 1; nr[c]++ }
    addsize(s)
    next
}
kind == "copy" && $(col["tool"]) == "gdrx-copylat" && $(col["test"]) == "copy" {
    o = $(col["op"]); if (o != "gdrx" && o != "floor" && o != "cuMemcpy") next
    d = $(col["dir"]); s = $(col["size_B"])
    val[o, d, s] = val[o, d, s] " " $(col["p50_ns"])
    r = ("round" in col) ? $(col["round"]) : 1
    if (!(r in rounds)) { rounds[r] = 1; nrounds++ }
    addsize(s)
    next
}
END {
    if (ns == 0) { print "results-tables: no rows for " kind " " arg " in " src > "/dev/stderr"; exit 1 }
    sortsizes()
    if (kind == "osu" || kind == "defaults") {
        line = "| size |"; sep = "| ---: |"
        for (i = 1; i <= nc; i++) { line = line " " head[cfg[i]] " |"; sep = sep " ---: |" }
        print line; print sep
        for (k = 1; k <= ns; k++) {
            line = "| " human(sizes[k]) " |"
            for (i = 1; i <= nc; i++) {
                x = val[cfg[i], sizes[k]]
                line = line " " (x == "" ? "–" : sprintf("%.2f", median(x))) " |"
            }
            print line
        }
        m = 0; for (i = 1; i <= nc; i++) if (nr[cfg[i]] > m) m = nr[cfg[i]]
        if (kind == "osu")
            printf "\nosu_latency D D, µs (median of %d round%s), %s; from `%s`.\n", m,
                m == 1 ? "" : "s", arg == "mps" ? "MPS running" : "no MPS", src
        else
            printf "\nosu_latency %s, µs (median of up to %d rounds); from `%s`.\n",
                arg == "HH" ? "H H" : "D D", m, src
    } else {
        print "| size | host→GPU gdrx | floor | cuMemcpyHtoD | GPU→host gdrx | floor | cuMemcpyDtoH |"
        print "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        for (k = 1; k <= ns; k++) {
            s = sizes[k]; line = "| " human(s) " |"
            for (d = 1; d <= 2; d++)
                for (o = 1; o <= 3; o++) {
                    op = (o == 1) ? "gdrx" : (o == 2) ? "floor" : "cuMemcpy"
                    dir = (d == 1) ? "H->D" : "D->H"
                    x = val[op, dir, s]
                    line = line " " (x == "" ? "–" : sprintf("%.0f", median(x))) " |"
                }
            print line
        }
        printf "\ngdrx-copylat, P50 ns per copy%s; from `%s`.\n",
            (nrounds > 1) ? sprintf(" (median of %d runs)", nrounds) : "", src
    }
}
