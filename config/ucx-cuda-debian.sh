#!/bin/sh
# config/ucx-cuda-debian.sh - build the distribution's own UCX source package
# (same version as the installed libucx0) with CUDA support into PREFIX, so
# tests can run UCX's cuda transports and libucm_cuda hooks next to gdrx.
# Its gdr_copy transport is built too, against gdrx's gdrapi.h and a link
# stub of libgdrapi.so.2 that stays in WORKDIR: at run time the tests put
# gdrx's own libgdrapi.so.2 on the library path, so UCX's gdr_copy runs over
# gdrx as it does where a site installs gdrx's libgdrapi (docs/compat.md);
# without it on the path the gdr_copy module does not load and UCX runs
# without that transport.
#
#   usage: config/ucx-cuda-debian.sh PREFIX [WORKDIR]
#   env:   CUDA_HOME (default /usr/local/cuda), JOBS (make -j, default 2)
#
# Needs what config/deps.sh sets up (deb-src stanza, dpkg-dev, autotools,
# ucx-utils) plus the CUDA toolkit.  Changes nothing outside PREFIX and
# WORKDIR (default PREFIX.build): nvml.h and libnvidia-ml come from Debian's
# non-free packages unpacked into WORKDIR, because installing them would pull
# in driver alternatives.  Safe to run again: it stops early when PREFIX
# already holds this UCX version built against this toolkit.
set -eu

die() { echo "ucx-cuda-debian.sh: $*" >&2; exit 1; }
say() { echo "ucx-cuda-debian.sh: $*"; }

case $# in 1|2) ;; *) die "usage: $0 PREFIX [WORKDIR]" ;; esac
case $1 in /*) prefix=$1 ;; *) prefix=$(pwd)/$1 ;; esac
workdir=${2:-$prefix.build}
cuda=${CUDA_HOME:-/usr/local/cuda}
jobs=${JOBS:-2}

[ -f "$cuda/include/cuda.h" ] || die "no CUDA toolkit at $cuda (set CUDA_HOME)"
ver=$(dpkg-query -W -f='${Version}' libucx0 2>/dev/null) ||
    die "libucx0 is not installed (run config/deps.sh)"
upstream=${ver%-*}
upstream=${upstream#*:}
command -v ucx_info >/dev/null || die "ucx_info not found (install ucx-utils)"

stamp=$prefix/.ucx-cuda-debian
gdrapi_h=$(cd "$(dirname "$0")/.." && pwd)/libgdr/gdrapi/gdrapi.h
[ -f "$gdrapi_h" ] || die "gdrx's gdrapi.h not found at $gdrapi_h"
want="ucx $ver cuda $(readlink -f "$cuda") gdrcopy $(sha256sum < "$gdrapi_h" | cut -c1-12)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    say "$prefix already has $want"
    exit 0
fi

mkdir -p "$workdir"
workdir=$(cd "$workdir" && pwd)

# apt downloads as the _apt user, so fetch into a world-readable temp dir.
fetch() {
    tmp=$(mktemp -d)
    chmod 755 "$tmp"
    (cd "$tmp" && "$@" >/dev/null) || { rm -rf "$tmp"; return 1; }
}

src=$workdir/ucx-$upstream
if [ ! -f "$src/.unpacked" ]; then
    say "fetching the ucx $ver source package"
    fetch apt-get source -q "ucx=$ver" ||
        die "apt-get source ucx=$ver failed (deb-src enabled? see config/deps.sh)"
    rm -rf "$src"
    mv "$tmp/ucx-$upstream" "$src"
    rm -rf "$tmp"
    touch "$src/.unpacked"
fi

# nvml.h: from the toolkit when it ships it (cuda-nvml-dev), else unpacked.
cppflags=
ldflags=
if [ ! -f "$cuda/include/nvml.h" ]; then
    nv=$workdir/nvml
    if [ ! -f "$nv/usr/include/nvml.h" ]; then
        say "unpacking libnvidia-ml-dev and libnvidia-ml1 into $nv"
        fetch apt-get download -q libnvidia-ml-dev libnvidia-ml1 ||
            die "apt-get download libnvidia-ml-dev libnvidia-ml1 failed (non-free enabled?)"
        rm -rf "$nv"
        for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$nv"; done
        rm -rf "$tmp"
    fi
    nvlib=$(dirname "$(find "$nv" -name 'libnvidia-ml.so' | head -n1)")
    if [ ! -f "$nv/usr/include/nvml.h" ] || [ "$nvlib" = . ]; then
        die "nvml.h or libnvidia-ml.so missing from the unpacked packages"
    fi
    cppflags="-I$nv/usr/include"
    ldflags="-L$nvlib"
fi

# CUDA 13 dropped unversioned PFN_ typedefs that some UCX releases (1.16) use.
if grep -rqs 'PFN_cuMemGetHandleForAddressRange ' "$src/src/uct/cuda" &&
   ! grep -qs 'PFN_cuMemGetHandleForAddressRange[[:space:]]' "$cuda/include/cudaTypedefs.h"; then
    cppflags="$cppflags -DPFN_cuMemGetHandleForAddressRange=PFN_cuMemGetHandleForAddressRange_v11070"
fi

# gdr_copy's build needs gdrapi.h and a libgdrapi to link: gdrx's header
# and a stub of the same soname whose gdr_open fails (never found at run
# time: it is not installed, and nothing records its directory).
gdr=$workdir/gdrapi
mkdir -p "$gdr/include" "$gdr/lib"
cp "$gdrapi_h" "$gdr/include/gdrapi.h"
for f in $(grep -o 'gdr_[a-z0-9_]*(' "$gdrapi_h" | tr -d '(' | sort -u); do
    echo "void *$f(void); void *$f(void) { return 0; }"
done > "$gdr/stub.c"
cc -shared -fPIC -Wl,-soname,libgdrapi.so.2 -o "$gdr/lib/libgdrapi.so" "$gdr/stub.c" ||
    die "compiling the libgdrapi link stub failed"

# The distribution's own configure flags (from its ucx_info), without paths
# and without features whose headers are absent here; then CUDA on.
have() { [ -f "/usr/include/$1" ]; }
flags=
for f in $(ucx_info -v | sed -n 's/^# Configured with: //p'); do
    case $f in
        --with-verbs*|--with-rc|--with-ud|--with-dc|--with-mlx5*|--with-ib-hw-tm|--with-dm|--with-devx)
            have infiniband/verbs.h || continue ;;
        --with-rdmacm*) have rdma/rdma_cma.h || continue ;;
        --with-mad*)    have infiniband/mad.h || continue ;;
        --with-cuda*|--with-gdrcopy*|--with-rocm*|--with-java*|--with-jdk-dir*|--with-go*) continue ;;
        --enable-doxygen*|--enable-lcov|--enable-gcov) continue ;;
        --enable-*|--disable-*|--with-*|--without-*) ;;
        *) continue ;;
    esac
    flags="$flags $f"
done
have infiniband/verbs.h || flags="$flags --without-verbs"
have rdma/rdma_cma.h || flags="$flags --without-rdmacm"
flags="--prefix=$prefix$flags --with-cuda=$cuda --with-gdrcopy=$gdr --without-rocm --without-java --without-go --disable-doxygen-doc"

cd "$src"
[ -x configure ] || { say "autogen"; ./autogen.sh >autogen.out 2>&1 || die "autogen failed, see $src/autogen.out"; }
if [ ! -f config.status ] ||
   [ "$(cat .configured 2>/dev/null)" != "$flags CPPFLAGS=$cppflags LDFLAGS=$ldflags" ]; then
    [ -f Makefile ] && make distclean >/dev/null
    say "configure $flags"
    # shellcheck disable=SC2086 # word splitting of the flag list is intended
    ./configure $flags CPPFLAGS="$cppflags" LDFLAGS="$ldflags" >configure.out 2>&1 ||
        die "configure failed, see $src/config.log"
    echo "$flags CPPFLAGS=$cppflags LDFLAGS=$ldflags" > .configured
fi

# noinst_PROGRAMS= skips UCX's uninstalled test apps: test_cuda_hook.c calls
# the 3-argument cuCtxCreate, which CUDA 13 redefined (cuCtxCreate_v4).
say "make -j$jobs install (log: $src/make.out)"
make -j"$jobs" noinst_PROGRAMS= >make.out 2>&1 || die "make failed, see $src/make.out"
make -j"$jobs" noinst_PROGRAMS= install >>make.out 2>&1 || die "make install failed, see $src/make.out"
[ -f "$prefix/lib/ucx/libucm_cuda.so.0" ] || die "libucm_cuda was not built (CUDA not detected?)"
[ -f "$prefix/lib/ucx/libuct_cuda_gdrcopy.so.0" ] || die "UCX's gdr_copy was not built (see $src/config.log)"
if readelf -d "$prefix/lib/ucx/libuct_cuda_gdrcopy.so.0" | grep -q "$gdr"; then
    die "UCX's gdr_copy records the stub's directory $gdr/lib"
fi

# where the tests find libnvidia-ml.so.1 for UCX's CUDA modules
if [ -n "$ldflags" ]; then echo "$nvlib" > "$prefix/.nvml-libdir"; else rm -f "$prefix/.nvml-libdir"; fi
echo "$want" > "$stamp"
say "installed $want into $prefix"
[ -z "$ldflags" ] ||
    say "runtime: libuct_cuda needs libnvidia-ml.so.1 (driver, or LD_LIBRARY_PATH=$nvlib)"
