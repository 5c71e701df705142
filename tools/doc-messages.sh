#!/bin/sh
# doc-messages.sh list|check SRCDIR
#
# The messages gdrx can print to a user, taken from the sources, and the
# check that docs/troubleshooting.md lists each one.  "The messages" are
# the format strings of these calls (docs/troubleshooting.md, "Which
# messages this page lists", says the same to readers):
#
#   libgdr/      gdrx_err, gdrx_warn          (GDRX_LOG_LEVEL 1 and 2)
#   ucx_plugin/  ucs_error, ucs_warn, ucs_diag, ucs_log (its level chosen at
#                run time: warning once, diagnostic after), fprintf(stderr,
#                ...) (before UCX's logging can be used)
#   tools/       info_problem (gdrx-info's problems; the 4th argument),
#                fprintf(stderr, ...) of the installed tools (the benchmarks
#                and gdrx-info; not tools/fastpath or gdrx-hookcost)
#   gdrdrv/      pr_err, pr_warn and their _ratelimited forms
#
# Debug and info levels (gdrx_info, gdrx_dbg, ucs_debug, gdrdrv_info, ...)
# are not messages a user acts on and are left out.  A format is the
# concatenation of the string literals of its argument; a macro between
# them becomes what it expands to for the reader (PRIx64: lx, GDRDRV_NAME:
# gdrdrv) or {NAME}.  A format with no text besides conversions ("%s") is
# left out: its text is made elsewhere.
#
# list:  one line per message, "FILE:LINE<TAB>FUNCTION<TAB>FORMAT".
# check: exit 1, naming each one, if a FORMAT (verbatim, after C's \" and
#        \\ are undone) is not in SRCDIR/docs/troubleshooting.md.
# Needs only sh, find, sort and awk (POSIX awk; mawk and gawk both do).
set -eu
if [ $# -ne 2 ] || { [ "$1" != list ] && [ "$1" != check ]; }; then
    echo "usage: $0 list|check SRCDIR" >&2; exit 2
fi
mode=$1 src=$2
if [ ! -d "$src/libgdr" ] || [ ! -d "$src/ucx_plugin" ]; then
    echo "$0: $src is not a gdrx source tree" >&2; exit 2
fi

extract() {
    # $1: directory, $2: the functions (awk regular expression).  Not
    # installed, so left out: tools/fastpath (measurements behind the docs)
    # and gdrx-hookcost.
    find "$src/$1" -name '*.[ch]' ! -path '*/tools/fastpath/*' ! -name gdrx-hookcost.c | LC_ALL=C sort | while IFS= read -r f; do
        awk -v fn="$2" -v name="${f#"$src"/}" -f "$src/tools/doc-messages.awk" "$f"
    done
}

list() {
    extract libgdr 'gdrx_err|gdrx_warn'
    extract ucx_plugin 'ucs_error|ucs_warn|ucs_diag|ucs_log|fprintf'
    extract tools 'info_problem|fprintf'
    extract gdrdrv 'pr_err|pr_warn|pr_err_ratelimited|pr_warn_ratelimited'
}

if [ "$mode" = list ]; then
    list
    exit 0
fi
doc=$src/docs/troubleshooting.md
[ -f "$doc" ] || { echo "$0: $doc is missing" >&2; exit 1; }
list | awk -F '\t' -v doc="$doc" '
    BEGIN { while ((getline l < doc) > 0) text = text l "\n" }
    { n++; if (index(text, $3) == 0) { miss++; printf "not in %s: %s (%s, %s)\n", doc, $3, $2, $1 } }
    END {
        if (n == 0) { print "no messages found in the sources"; exit 1 }
        printf "%d messages, %d missing from %s\n", n, miss, doc
        exit miss > 0
    }'
