#!/bin/sh
# bench_bare.sh SRCDIR WORKDIR [--ucx[=UCX_SRC]] [RESULTS]
#
# `make bench` where only `make` is promised to work (issue 31): SRCDIR is
# a copy of the distributed files (make distdir, what make dist's tarball
# holds), configured and built in WORKDIR as on a machine that has neither
# CUnit nor valgrind.  Both are hidden by headers that fail to compile
# (CUnit/CUnit.h, valgrind/memcheck.h) and a libcunit.so that fails to
# link, found first through CPPFLAGS and LDFLAGS; configure's own checks
# then see no CUnit, as on such a machine.  Checks
#   bare:gpu-build-files  every file tests/gpu/build.sh and the scripts it
#                    runs name is among SRCDIR's (the tarball's);
#   bare:configure   configure passes and its summary says the tests were
#                    left out, why and what make bench needs (with --ucx:
#                    that the UCX transport is built, valgrind or not);
#   bare:make        make passes;
#   bare:bench       make bench passes on the simulated GPU, with every
#                    benchmark in its summary (with --ucx: the UCX
#                    registration cache measured through the plugin);
#   bare:no-harness  nothing of the test suites (tests/harness, -lcunit)
#                    was built;
#   bare:check       make check fails at once, saying it needs CUnit;
#   bare:no-sim      configured as without memfd_create (no simulated GPU),
#                    make bench builds no simulated GPU and fails, saying why.
# gdrdrv.ko is left out (--with-kernel-headers=no): it needs neither, and
# its kernel build would only add time.  Prints PASS/FAIL lines and
# "N passed, N failed"; appends "check-bench-bare P F" to RESULTS; exits 1
# if anything failed.
set -u
[ $# -ge 2 ] || { echo "usage: bench_bare.sh SRCDIR WORKDIR [--ucx[=UCX_SRC]] [RESULTS]" >&2; exit 2; }
src=$(cd "$1" && pwd) work=$2
shift 2
ucx=0 ucx_src=""
case "${1:-}" in
--ucx) ucx=1; shift ;;
--ucx=*) ucx=1; ucx_src=${1#--ucx=}; shift ;;
esac
results=${1:-}
pass=0 fail=0
result() { # name ok [log]
    if [ "$2" = 1 ]; then
        pass=$((pass + 1)); echo "PASS $1"
    else
        fail=$((fail + 1)); echo "FAIL $1"
        [ -n "${3:-}" ] && [ -f "$3" ] && tail -n 40 "$3" | sed 's/^/    /'
    fi
}
finish() {
    echo "$pass passed, $fail failed"
    [ -z "$results" ] || echo "check-bench-bare $pass $fail" >> "$results"
    [ "$fail" -eq 0 ]
    exit
}

# The GPU machine's build (tests/gpu/build.sh and the scripts it runs)
# from the same files: every file or directory they name is there.
ok=1
for f in $(grep -ohE '\$(G|SRC|T|GA)/[A-Za-z0-9_./-]*[A-Za-z0-9_]' "$src/tests/gpu/build.sh" \
             "$src/tests/gpu/build_tools.sh" "$src/tests/gpu/build_plugin.sh" |
           sed 's|^\$G/|tests/gpu/|; s|^\$T/|tools/|; s|^\$GA/|libgdr/gdrapi/|; s|^\$SRC/||' |
           sort -u); do
    [ -e "$src/$f" ] || { echo "    not distributed: $f"; ok=0; }
done
result bare:gpu-build-files $ok

rm -rf "$work" && mkdir -p "$work/hide/CUnit" "$work/hide/valgrind" "$work/b" || exit 2
work=$(cd "$work" && pwd)
hide=$work/hide
echo '#error "CUnit is hidden: make bench must not need it (tests/tools/bench_bare.sh)"' \
    > "$hide/CUnit/CUnit.h"
echo '#error "valgrind is hidden: the build must not need it (tests/tools/bench_bare.sh)"' \
    > "$hide/valgrind/memcheck.h"
echo 'INPUT(-l:libcunit-is-hidden-by-bench_bare.so)' > "$hide/libcunit.so"
# A make of this build runs its own jobs, not the calling make's.
unset MAKEFLAGS MFLAGS MAKELEVEL
b=$work/b

(cd "$b" && "$src/configure" CPPFLAGS="-I$hide" LDFLAGS="-L$hide" CFLAGS="-O0 -g" \
     --with-kernel-headers=no ${ucx_src:+--with-ucx-src="$ucx_src"}) > "$work/configure.log" 2>&1
rc=$? ok=0
if [ "$rc" -eq 0 ] &&
   grep -q '^  tests (CUnit)  *no   CUnit not found$' "$work/configure.log" &&
   grep -q 'make check needs it, make bench does not' "$work/configure.log"; then
    ok=1
    [ "$ucx" = 0 ] || grep -q '^  UCX [0-9.]* transport  *yes' "$work/configure.log" || ok=0
fi
result bare:configure $ok "$work/configure.log"
[ "$ok" = 1 ] || finish

ok=0
make -C "$b" -j2 > "$work/make.log" 2>&1 && ok=1
result bare:make $ok "$work/make.log"
[ "$ok" = 1 ] || finish

ok=0
if GDRX_BENCH_SIM=1 make -C "$b" -j2 bench > "$work/bench.log" 2>&1 &&
   grep -q '^# SIMULATED GPU: no NVIDIA GPU here' "$work/bench.log" &&
   grep -q '^copy 8 B host->GPU ' "$work/bench.log" &&
   grep -q '^bandwidth 4 MiB host->GPU ' "$work/bench.log" &&
   grep -q '^pin+map 64 KiB (warm) ' "$work/bench.log" &&
   grep -q '^ping-pong (CPU writes) ' "$work/bench.log" &&
   ! grep -q '^FAILED:' "$work/bench.log"; then
    ok=1
    [ "$ucx" = 0 ] || grep -q '^UCX registration cache  *hit ' "$work/bench.log" || ok=0
fi
result bare:bench $ok "$work/bench.log"

ok=1
for f in "$b"/tests/harness/*.lo "$b"/tests/harness/*.o; do
    [ -e "$f" ] && { echo "    built: $f"; ok=0; }
done
grep -q -- '-lcunit' "$work/make.log" "$work/bench.log" && { echo "    linked -lcunit"; ok=0; }
result bare:no-harness $ok

ok=0
if ! make -C "$b" check > "$work/check.log" 2>&1 &&
   grep -q 'the test suites need CUnit, which configure did not find' "$work/check.log" &&
   ! grep -q 'CUnit is hidden' "$work/check.log"; then
    ok=1
fi
result bare:check $ok "$work/check.log"

# Without the simulated GPU (configure told memfd_create is missing) and
# without a GPU: configure says so, make bench fails saying why.  The same
# configure otherwise (the UCX tree included): a build whose UCX transport
# went away here linked the objects made with it (gdrx-apiperf's UCX part,
# which no configure change rebuilds) without UCX's libraries.
rm -rf "$b/tests/sim"
(cd "$b" && "$src/configure" CPPFLAGS="-I$hide" LDFLAGS="-L$hide" CFLAGS="-O0 -g" \
     --with-kernel-headers=no ${ucx_src:+--with-ucx-src="$ucx_src"} \
     ac_cv_have_decl_memfd_create=no) > "$work/configure-nosim.log" 2>&1
rc=$? ok=0
if [ "$rc" -eq 0 ] &&
   grep -q '^  simulated GPU  *no   memfd_create not declared' "$work/configure-nosim.log" &&
   ! GDRX_BENCH_SIM=1 make -C "$b" bench > "$work/bench-nosim.log" 2>&1 &&
   grep -q 'no NVIDIA driver here, and no simulated GPU' "$work/bench-nosim.log" &&
   [ ! -e "$b/tests/sim/.libs" ]; then
    ok=1
fi
result bare:no-sim $ok "$work/bench-nosim.log"
finish
