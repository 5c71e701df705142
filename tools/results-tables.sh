#!/bin/sh
# results-tables.sh update|check SRCDIR
#
# The tables of the guides, made from the results tree.  In docs/*.md a
# generated table lies between two lines:
#
#   <!-- results-table KIND FOLDER CSV [ARG] -->
#   ... (written by this script; never edit by hand) ...
#   <!-- end results-table -->
#
# KIND osu, copy or defaults (tools/results-tables.awk), FOLDER a folder
# of results/, CSV a file in it, ARG the kind's argument (osu: the mode,
# nomps or mps; defaults: the direction, DD or HH).  update: rewrite every such block from its CSV.  check:
# exit 1, with a diff, if any block differs from what update would write
# (make check runs it, so that a table cannot drift from its data).
# `make docs-tables` runs update.  Needs only sh, awk, diff and mktemp.
set -eu
if [ $# -ne 2 ] || { [ "$1" != update ] && [ "$1" != check ]; }; then
    echo "usage: $0 update|check SRCDIR" >&2; exit 2
fi
mode=$1 src=$2
[ -d "$src/results" ] || { echo "$0: no results tree in $src" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

status=0 blocks=0
for doc in "$src"/docs/*.md; do
    grep -q '^<!-- results-table ' "$doc" || continue
    out=$tmp/$(basename "$doc")
    # Copy the guide, replacing each block's body by the table its CSV
    # makes now; any failure leaves an "ERROR" line that fails the run.
    awk -v src="$src" -v awkfile="$src/tools/results-tables.awk" '
        function table(kind, folder, csv, arg,    cmd, l, path) {
            path = "results/" folder "/" csv
            cmd = "awk -v kind=\"" kind "\" -v arg=\"" arg "\" -v src=\"" path "\" -f \"" awkfile "\" \"" src "/" path "\" 2>&1 || echo ERROR"
            while ((cmd | getline l) > 0) print l
            close(cmd)
        }
        /^<!-- results-table / {
            print
            if (NF < 6 || $NF != "-->") { print "ERROR: bad marker: " $0; skip = 1; next }
            table($3, $4, $5, NF == 7 ? $6 : "")
            skip = 1; next
        }
        /^<!-- end results-table -->$/ { skip = 0; print; next }
        !skip { print }
        END { if (skip) print "ERROR: a results-table block is not closed" }
    ' "$doc" > "$out"
    blocks=$((blocks + $(grep -c '^<!-- results-table ' "$doc")))
    if grep -q '^ERROR' "$out"; then
        echo "$doc:" >&2; grep '^ERROR\|^results-tables:' "$out" >&2; status=1; continue
    fi
    if [ "$mode" = update ]; then
        cmp -s "$out" "$doc" || { cp "$out" "$doc"; echo "updated $doc"; }
    elif ! diff -u "$doc" "$out" >&2; then
        echo "$doc: its results tables differ from results/ (make docs-tables rewrites them)" >&2
        status=1
    fi
done
[ "$blocks" -gt 0 ] || { echo "$0: no results-table block in $src/docs" >&2; exit 1; }
[ "$status" -ne 0 ] || echo "$blocks results tables match results/"
exit "$status"
