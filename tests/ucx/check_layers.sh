#!/bin/sh
# check_layers.sh [--layers FILE] SRCDIR OBJDIR [RESULTS]
#
# Checks that the UCX plugin's files are layered as declared: the list
# between the lines "layers:" and "end of layers" of SRCDIR/uct_gdrx_types.h
# (or of FILE), lowest layer first, one "name: files" line per layer
# (continued on lines without a colon); a file named without .h or .c
# stands for whichever of the two exist.  Checks
#   layers:list             every SRCDIR/*.c and *.h is in exactly one layer,
#                           and every listed file exists;
#   layers:include:FILE     each #include "uct_gdrx_*.h" of FILE (.c or .h)
#                           names a header of FILE's layer or one below;
#   layers:calls:FILE.c     each uct_gdrx_* symbol FILE.c's object needs
#                           (nm) is defined by an object of its layer or
#                           one below;
#   layers:header:FILE.h    FILE.h declares only what FILE.c defines (the
#                           uct_gdrx_* symbols of any object it names on a
#                           line of its own, comments aside), and otherwise
#                           (inline functions) names only symbols of its
#                           layer or below;
#   layers:acyclic:includes no cycle among the includes,
#   layers:acyclic:calls    nor among the objects, also within a layer.
# Objects: OBJDIR/libuct_gdrx_la-FILE.o (libtool's, ucx_plugin/.libs) or
# OBJDIR/FILE.o.  Prints PASS/FAIL lines and "N passed, N failed";
# appends "check-ucx-layers P F" to RESULTS; exits 1 if anything failed.
set -u
layers=
if [ "${1:-}" = --layers ]; then
    layers=${2:?--layers FILE}
    shift 2
fi
[ $# -ge 2 ] || { echo "usage: check_layers.sh [--layers FILE] SRCDIR OBJDIR [RESULTS]" >&2; exit 2; }
src=$1 objdir=$2 results=${3:-}
[ -n "$layers" ] || layers=$src/uct_gdrx_types.h
pass=0 fail=0
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT

result() {
    echo "$1 $2"
    if [ "$1" = PASS ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
}

# verdict NAME BAD: NAME passes when BAD (what was found wrong) is empty.
verdict() {
    if [ -z "$2" ]; then result PASS "$1"; else result FAIL "$1:$2"; fi
}

finish() {
    [ -n "$results" ] && echo "check-ucx-layers $pass $fail" >> "$results"
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit
}

# "file index layer-name" for each declared file, in declaration order.
awk -v src="$src" '
    /^[ \t*]*layers:[ \t]*$/ { on = 1; next }
    /^[ \t*]*end of layers/  { on = 0 }
    !on { next }
    {
        sub(/^[ \t*]*/, "")
        if (match($0, /^[^:]*:/)) {
            name = substr($0, 1, RLENGTH - 1); $0 = substr($0, RLENGTH + 1)
            gsub(/[ \t]+/, "_", name)
            ++n
        }
        for (i = 1; i <= NF; ++i) {
            if ($i ~ /\.[ch]$/) { print $i, n, name; continue }
            found = 0
            for (e = 1; e <= 2; ++e) {
                f = $i (e == 1 ? ".h" : ".c")
                if ((getline line < (src "/" f)) >= 0) {
                    close(src "/" f); print f, n, name; found = 1
                }
            }
            if (!found) print $i, n, name
        }
    }' "$layers" > "$work/map"

if [ ! -s "$work/map" ]; then
    result FAIL "layers:list (no layer list in $layers)"
    finish
fi

layer_of() { awk -v f="$1" '$1 == f { print $2; exit }' "$work/map"; }
name_of() { awk -v f="$1" '$1 == f { print $3; exit }' "$work/map"; }
# The file of the plugin whose object defines symbol $1.
def_of() { awk -v s="$1" '$1 == s { print $2; exit }' "$work/defs"; }
# above LAYER TARGET FILE: "layer X, above Y" (and true) when TARGET, which
# FILE of layer LAYER uses, lies in a higher layer.
above() {
    _tl=$(layer_of "$2")
    [ -n "$_tl" ] && [ "$_tl" -gt "$1" ] || return 1
    echo "layer $(name_of "$2"), above $(name_of "$3")"
}

# layers:list
bad=
for f in $(awk '{ print $1 }' "$work/map" | sort | uniq -d); do
    bad="$bad $f (listed twice)"
done
for f in $(awk '{ print $1 }' "$work/map"); do
    [ -f "$src/$f" ] || bad="$bad $f (listed, no such file)"
done
for p in "$src"/*.c "$src"/*.h; do
    [ -f "$p" ] || continue
    f=${p##*/}
    [ -n "$(layer_of "$f")" ] || bad="$bad $f (in no layer)"
done
verdict layers:list "$bad"

# layers:include:FILE
: > "$work/include-edges"
for p in "$src"/*.c "$src"/*.h; do
    [ -f "$p" ] || continue
    f=${p##*/} l=$(layer_of "$f")
    [ -n "$l" ] || continue
    bad=
    for h in $(sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\(uct_gdrx_[A-Za-z0-9_]*\.h\)".*/\1/p' "$p"); do
        echo "$f $h" >> "$work/include-edges"
        if [ -z "$(layer_of "$h")" ]; then
            bad="$bad $h (in no layer)"
        elif a=$(above "$l" "$h" "$f"); then
            bad="$bad $h ($a)"
        fi
    done
    verdict "layers:include:$f" "$bad"
done

# layers:calls:FILE.c: "symbol file" of every global definition, then the
# undefined uct_gdrx_* symbols of each object.
: > "$work/defs"
: > "$work/call-edges"
for p in "$src"/*.c; do
    [ -f "$p" ] || continue
    f=${p##*/} o=
    for c in "$objdir/libuct_gdrx_la-${f%.c}.o" "$objdir/${f%.c}.o"; do
        [ -f "$c" ] && { o=$c; break; }
    done
    if [ -z "$o" ]; then
        echo "$f" >> "$work/no-object"
        continue
    fi
    echo "$f $o" >> "$work/objects"
    nm -P "$o" | awk -v f="$f" '$2 ~ /^[A-TV-Z]$/ { print $1, f }' >> "$work/defs"
done
if [ -s "$work/no-object" ]; then
    for f in $(cat "$work/no-object"); do
        result FAIL "layers:calls:$f (no object in $objdir: build the plugin first)"
    done
fi
if [ -s "$work/objects" ]; then
    while read -r f o; do
        l=$(layer_of "$f")
        [ -n "$l" ] || continue
        bad=
        for s in $(nm -P "$o" | awk '$2 == "U" && $1 ~ /^uct_gdrx_/ { print $1 }'); do
            d=$(def_of "$s")
            if [ -z "$d" ]; then
                bad="$bad $s (defined by no object of the plugin)"
                continue
            fi
            echo "$f $d" >> "$work/call-edges"
            if a=$(above "$l" "$d" "$f"); then
                bad="$bad $s (of $d, $a)"
            fi
        done
        verdict "layers:calls:$f" "$bad"
    done < "$work/objects"
fi

# layers:header:FILE.h: "DECL NAME" for each uct_gdrx_* name outside
# comments, DECL 1 on a declaration's line (code from column 0).
[ -s "$work/defs" ] && for p in "$src"/*.h; do
    [ -f "$p" ] || continue
    f=${p##*/} l=$(layer_of "$f")
    [ -n "$l" ] || continue
    bad=
    awk '{
            line = $0; out = ""
            while (line != "") {
                if (incomment) {
                    i = index(line, "*/")
                    if (i == 0) { line = ""; break }
                    line = substr(line, i + 2); incomment = 0; continue
                }
                i = index(line, "/*")
                if (i == 0) { out = out line; break }
                out = out substr(line, 1, i - 1); line = substr(line, i + 2)
                incomment = 1
            }
            decl = (out ~ /^[A-Za-z_]/)
            while (match(out, /uct_gdrx_[A-Za-z0-9_]*/)) {
                print decl, substr(out, RSTART, RLENGTH)
                out = substr(out, RSTART + RLENGTH)
            }
        }' "$p" | sort -u > "$work/names"
    while read -r decl s; do
        d=$(def_of "$s")
        [ -n "$d" ] || continue
        if [ "$decl" = 1 ] && [ "$d" != "${f%.h}.c" ]; then
            bad="$bad declares $s (of $d)"
        elif a=$(above "$l" "$d" "$f"); then
            bad="$bad names $s (of $d, $a)"
        fi
    done < "$work/names"
    verdict "layers:header:$f" "$bad"
done

# layers:acyclic:*: tsort names the files of a cycle
for g in include call; do
    e=$work/$g-edges
    if sort -u "$e" | awk '$1 != $2' | tsort > /dev/null 2> "$work/tsort"; then
        result PASS "layers:acyclic:${g}s"
    else
        result FAIL "layers:acyclic:${g}s: $(sed -n 's/^tsort: //p' "$work/tsort" | \
                                         grep -v 'input contains a loop' | sort -u | tr '\n' ' ')"
    fi
done

finish
