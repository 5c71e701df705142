# doc-messages.awk: the format strings of the calls to the functions in
# `fn` (an awk alternation) in one C file; see doc-messages.sh.
# Prints "NAME:LINE<TAB>FUNCTION<TAB>FORMAT" per call.
{ buf = buf $0 "\n" }

# The argument that holds the format: info_problem(r, part, fix, FMT, ...),
# fprintf(stderr, FMT, ...), ucs_log(LEVEL, FMT, ...), the others FMT first.
function fmt_arg(f) { return f == "info_problem" ? 3 : (f == "fprintf" || f == "ucs_log") ? 1 : 0 }

# A macro between two literals, as the reader sees it printed.
function macro(id) {
    if (id ~ /^PRI[diouxX](8|16|32|64)$/) return "l" substr(id, 4, 1)
    if (id == "GDRDRV_NAME") return "gdrdrv"
    if (id == "TOOL") return "%s"          # the tool's name, as the others print it
    return "{" id "}"
}

function line_of(pos,   s, n) {
    s = substr(buf, 1, pos)
    n = gsub(/\n/, "", s)
    return n + 1
}

END {
    re = "(^|[^A-Za-z0-9_])(" fn ")[ \t]*\\("
    off = 0
    while (match(substr(buf, off + 1), re)) {
        start = off + RSTART
        hit = substr(buf, start, RLENGTH)
        off = start + RLENGTH - 1          # at the "("
        sub(/^[^A-Za-z0-9_]/, "", hit)
        sub(/[ \t]*\($/, "", hit)
        want = fmt_arg(hit)
        # walk the arguments
        depth = 1; arg = 0; fmt = ""; lits = 0; first = ""
        i = off + 1; n = length(buf)
        while (i <= n && depth > 0) {
            c = substr(buf, i, 1)
            if (c == "\"") {
                j = i + 1; s = ""
                while (j <= n) {
                    d = substr(buf, j, 1)
                    if (d == "\\") { s = s substr(buf, j, 2); j += 2; continue }
                    if (d == "\"") break
                    s = s d; j++
                }
                if (depth == 1 && arg == want) { fmt = fmt s; lits++ }
                i = j + 1; continue
            }
            if (c == "'") {
                j = i + 1
                while (j <= n && substr(buf, j, 1) != "'") j += (substr(buf, j, 1) == "\\") ? 2 : 1
                i = j + 1; continue
            }
            if (c ~ /[A-Za-z_]/) {
                j = i
                while (j <= n && substr(buf, j, 1) ~ /[A-Za-z0-9_]/) j++
                id = substr(buf, i, j - i)
                if (depth == 1 && arg == 0 && first == "") first = id
                if (depth == 1 && arg == want && id ~ /^(PRI[diouxX][0-9]+|[A-Z][A-Z0-9_]*)$/) fmt = fmt macro(id)
                i = j; continue
            }
            if (c == "(") depth++
            else if (c == ")") depth--
            else if (c == "," && depth == 1) arg++
            i++
        }
        if (hit == "fprintf" && first != "stderr") continue
        if (lits == 0) continue
        sub(/(\\n)+$/, "", fmt)
        gsub(/\\n/, " ", fmt)
        gsub(/\\"/, "\"", fmt)
        gsub(/\\\\/, "\\", fmt)
        bare = fmt
        gsub(/%[-+ #0-9.*]*[hlLzjt]*[diouxXeEfgGcspm%]/, "", bare)
        if (bare !~ /[A-Za-z]/) continue
        printf "%s:%d\t%s\t%s\n", name, line_of(start + 1), hit, fmt
    }
}
