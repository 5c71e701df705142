#!/usr/bin/awk -f
# osu_table.awk OSU_TXT - the medians of ucx_runs.sh's alternating rounds
# (blocks "### MODE-rN-CONFIG ..." of osu_latency output), one table per
# MODE: per size, each configuration's median over its rounds, the fastest,
# and each configuration's ratio to the fastest (what issue 31's goal, 1.05,
# is about).  Blocks whose run failed (a line "rc N", N not 0) are left out
# and counted.  Not a test: a summary of a GPU run.
#
# SPDX-License-Identifier: MIT
function median(list,    n, v, i, j, t) {
    n = split(list, v, " ")
    for (i = 2; i <= n; i++)           # insertion sort: a handful of rounds
        for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
            t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
        }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
/^### / {
    name = $2
    if (match(name, /-r[0-9]+-/)) {
        mode = substr(name, 1, RSTART - 1)
        cfg = substr(name, RSTART + RLENGTH)
    } else {
        mode = ""
    }
    nblock = 0
    delete pending
    next
}
mode != "" && /^[0-9]+ [0-9.]+$/ {
    pending[$1] = $2
    nblock++
    next
}
mode != "" && /^rc / {
    if ($2 != 0) {
        failed[mode] = failed[mode] " " name
    } else {
        for (s in pending) {
            vals[mode, cfg, s] = vals[mode, cfg, s] " " pending[s]
            sizes[s] = 1
        }
        if (!((mode, cfg) in seen)) {
            seen[mode, cfg] = 1
            cfgs[mode] = cfgs[mode] " " cfg
            modes[mode] = 1
        }
    }
    mode = ""
}
END {
    ns = 0
    for (s in sizes)
        order[++ns] = s + 0
    for (i = 2; i <= ns; i++)
        for (j = i; j > 1 && order[j - 1] > order[j]; j--) {
            t = order[j]; order[j] = order[j - 1]; order[j - 1] = t
        }
    for (m in modes) {
        nc = split(cfgs[m], c, " ")
        printf "\n## %s (median of rounds, us; ratio to the fastest)\n| size |", m
        for (k = 1; k <= nc; k++)
            printf " %s |", c[k]
        printf " fastest |\n|---:|"
        for (k = 1; k <= nc; k++)
            printf "---:|"
        printf "---|\n"
        for (i = 1; i <= ns; i++) {
            s = order[i]
            best = ""
            for (k = 1; k <= nc; k++) {
                med[k] = ((m, c[k], s) in vals) ? median(vals[m, c[k], s]) : ""
                if (med[k] != "" && (best == "" || med[k] + 0 < best + 0)) {
                    best = med[k]; bestc = c[k]
                }
            }
            printf "| %s |", s
            for (k = 1; k <= nc; k++) {
                if (med[k] == "")
                    printf " - |"
                else
                    printf " %.2f (%.2f) |", med[k], (best > 0 ? med[k] / best : 0)
            }
            printf " %s |\n", bestc
        }
        if (failed[m] != "")
            printf "failed runs, left out:%s\n", failed[m]
    }
}
