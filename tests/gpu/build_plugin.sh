#!/bin/bash
# build_plugin.sh UCX_SRC UCX_LIBDIR OUTDIR - build libuct_gdrx.so.0 with gcc
# alone (the GPU machine has no autotools) against the UCX whose libraries
# are in UCX_LIBDIR.  UCX_SRC: a configured source tree of that release
# (its headers and config.h are enough).  libgdrx comes from
# $GDRX_GPU_BUILD (tests/gpu/build.sh builds it there when missing).
# UCX_VERSION (default MAJOR.MINOR.0 of the tree) is the release recorded
# in the plugin; PLUGIN_CFLAGS, more compiler flags (an experiment's
# macros).  Prints the flags it used, for the caller's UCXF/UCX_LIBS.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
UCX_SRC=$(cd "${1:?usage: build_plugin.sh UCX_SRC UCX_LIBDIR OUTDIR}" && pwd)
UCX_LIBDIR=${2:?UCX_LIBDIR}
OUTDIR=${3:?OUTDIR}
B=${GDRX_GPU_BUILD:-/tmp/gdrx-gpu}
[ -f "$B/libgdrx.so.0" ] || bash "$SRC/tests/gpu/build.sh" "$B" >/dev/null

V="$UCX_SRC/src/ucp/api/ucp_version.h"
ver=${UCX_VERSION:-$(sed -n 's/^#define UCP_API_MAJOR *\([0-9]*\)/\1/p' "$V").$(sed -n \
      's/^#define UCP_API_MINOR *\([0-9]*\)/\1/p' "$V").0}
# The ABI-relevant build macros of that UCX (what configure takes from it),
# and NVALGRIND: a UCX built without valgrind wants no valgrind headers.
flags=
for m in ENABLE_PARAMS_CHECK ENABLE_DEBUG_DATA ENABLE_ASSERT ENABLE_MT ENABLE_STATS \
         UCS_MAX_LOG_LEVEL NVALGRIND; do
    v=$(sed -n "s/^#define $m \(.*\)/\1/p" "$UCX_SRC/config.h")
    [ -n "$v" ] && flags="$flags -D$m=$v"
done
mkdir -p "$OUTDIR"
# shellcheck disable=SC2086 # flag lists
gcc -std=gnu11 -D_GNU_SOURCE -O2 -g -fPIC -shared -Wall -Wextra -Wno-unused-parameter \
    -Wno-cast-function-type -I"$SRC/libgdr/include" -isystem "$UCX_SRC/src" \
    -isystem "$UCX_SRC" $flags ${PLUGIN_CFLAGS:-} -DGDRX_UCX_BUILD_VERSION="\"$ver\"" \
    "$SRC"/ucx_plugin/*.c \
    -o "$OUTDIR/libuct_gdrx.so.0" -Wl,-soname,libuct_gdrx.so.0 -L"$B" -l:libgdrx.so.0 \
    -L"$UCX_LIBDIR" -l:libuct.so.0 -l:libucs.so.0 -l:libucm.so.0 -ldl -pthread -Wl,-rpath,"$B"
echo "UCX_VERSION=$ver"
echo "UCXF=-isystem $UCX_SRC/src -isystem $UCX_SRC$flags"
