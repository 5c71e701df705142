# bench-summary.awk results.csv: the summary of run-benchmarks.sh, about a
# dozen lines of headline figures (P50) from the suite's CSV (tool_out.h:
# tool,test,op,dir,variant,size_B,batch,samples,p0_ns,p50_ns,p99_ns,ref,
# ref_p50_ns,ratio,...; cells hold no commas).
BEGIN { FS = "," }
NR > 1 { key = $2 "|" $3 "|" $4 "|" $6; p50[key] = $10; ref[key] = $13; seen[key] = 1 }
function has(k) { return k in seen }
function us(ns) { return sprintf("%.3f us", ns / 1000) }
function copy(dir, size, label, goal,   k, z) {
    k = "copy|gdrx|" dir "|" size; z = "copy|gdrx-0B|" dir "|" size
    if (!has(k)) return
    printf "%-26s gdrx %8.1f ns  floor %8.1f ns  gdrx/floor %5.2f  0 B %6.1f ns  %s\n", label,
        p50[k], ref[k], (ref[k] > 0 ? p50[k] / ref[k] : 0), p50[z], goal
}
function bw(dir, label,   k, c) {
    k = "bw|gdrx|" dir "|4194304"; c = "bw|cuMemcpy|" dir "|4194304"
    if (!has(k) || !has(c)) return
    printf "%-26s gdrx %6.2f GB/s  cuMemcpy %6.2f GB/s  gdrx/cuMemcpy %5.2f\n", label,
        4194304 / p50[k], 4194304 / p50[c], p50[c] / p50[k]
}
function pp(dir, label,   k) {
    k = "pingpong|gdrx|" dir "|8"
    if (!has(k)) return
    printf "%-26s gdrx %s  floor %s  gdrx/floor %5.3f  (goal: within 5%% of the floor)\n",
        label, us(p50[k]), us(ref[k]), (ref[k] > 0 ? p50[k] / ref[k] : 0)
}
function api(test, op, size, label, goal,   k) {
    k = test "|" op "|-|" size
    if (!has(k)) return
    printf "%-26s %s  %s\n", label, us(p50[k]), goal
}
END {
    copy("H->D", 8, "copy 8 B host->GPU", "(goal: <= 1.3x floor)")
    copy("D->H", 8, "copy 8 B GPU->host", "(goal: gdrx <= 1.1 us)")
    copy("H->D", 4096, "copy 4 KiB host->GPU", "(goal: gdrx <= 0.3 us)")
    copy("D->H", 4096, "copy 4 KiB GPU->host", "(goal: gdrx <= 4 us)")
    bw("H->D", "bandwidth 4 MiB host->GPU")
    bw("D->H", "bandwidth 4 MiB GPU->host")
    pp("write", "ping-pong (CPU writes)")
    pp("poll", "ping-pong (CPU polls)")
    api("api-warm", "pin+map", 65536, "pin+map 64 KiB (warm)", "(goal: <= 10 us)")
    api("api-warm", "unmap+unpin", 65536, "unmap+unpin 64 KiB (warm)", "(goal: <= 10 us)")
    api("api-first", "pin+map", 65536, "first pin+map of process", "")
    k = "rcache|hit|-|65536"
    if (has(k))
        printf "%-26s hit %.1f ns  miss %s  (goal: hit <= 50 ns)\n", "UCX registration cache",
            p50[k], us(p50["rcache|miss|-|65536"])
    else
        print "UCX registration cache     not run (no UCX, or the gdrx plugin not found)"
}
