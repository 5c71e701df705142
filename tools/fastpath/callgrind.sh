#!/bin/sh
# callgrind.sh BUILDDIR: instructions (Ir), conditional branches (Bc) and indirect
# branches (Bi) per call of the copy entry points (0 and 8 bytes), and per
# CUDA free what the free hook does before and after the driver's call
# (gdrx_mem_events_release_begin/_end), on the simulated GPU under
# callgrind.  Use a build without --enable-debug.
set -e
b=$(cd "${1:?usage: callgrind.sh BUILDDIR}" && pwd)
src=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc=${CC:-cc}
$cc -O2 -I"$src/../../libgdr/include" -I/usr/local/cuda/include "$src/cost.c" -o "$tmp/cost" \
    -L"$b/libgdr/.libs" -lgdrx -ldl
$cc -O2 -shared -fPIC "$src/va_shim.c" -o "$tmp/va_shim.so" -ldl
run() { # out-file toggle... -- args
    out=$1; shift
    LD_PRELOAD="$tmp/va_shim.so" LD_LIBRARY_PATH="$b/tests/sim/.libs:$b/libgdr/.libs" \
        GDRX_BACKEND=dmabuf valgrind --tool=callgrind --branch-sim=yes \
        --callgrind-out-file="$tmp/$out" "$@" >/dev/null 2>&1
}
per_call() { # out-file calls: "Ir Bc Bi" per call of each function in the file
    callgrind_annotate --inclusive=yes --show=Ir,Bc,Bi "$tmp/$1" 2>/dev/null |
        awk -v n="$2" '/fastpath.c:gdrx_copy|mem_events.c:gdrx_mem_events_release_/ && $NF ~ /^\[/ {
            gsub(",", ""); f = $(NF-1); sub(/.*:/, "", f)
            printf "  %-24s Ir %8.1f  Bc %7.1f  Bi %6.1f\n", f, $1/n, $3/n, ($5 ~ /^[0-9]/ ? $5 : 0)/n }'
}
for bytes in 0 8; do
    run copy$bytes --toggle-collect=gdrx_copy_to_mapping --toggle-collect=gdrx_copy_from_mapping \
        "$tmp/cost" copy $bytes 1000
    echo "copy of $bytes bytes, per call (copy routine included):"
    per_call copy$bytes 1000
done
for slots in 100 10000; do
    run free$slots --toggle-collect=gdrx_mem_events_release_begin \
        --toggle-collect=gdrx_mem_events_release_end "$tmp/cost" free $slots 10 1000
    echo "CUDA free with $slots pins ever alive at once, 10 live, per free:"
    per_call free$slots 1000
done
