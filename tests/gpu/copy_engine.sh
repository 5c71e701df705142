# copy_engine.sh - sourced by the GPU machine's build scripts (build.sh,
# build_tools.sh): the copy engine's files, each with the ISA flag its
# libtool library in libgdr/src/copy/local.mk is built with, so that no
# script keeps its own copy of that list.
#
# copy_engine CMD...: runs "CMD... FILE [FLAG]" for every file; SRC is the
# source tree.
copy_engine() {
    for f in copy_select copy_dispatch cpu_features copy_sse2; do
        "$@" "$SRC/libgdr/src/copy/$f.c"
    done
    "$@" "$SRC/libgdr/src/copy/copy_sse41.c" -msse4.1
    "$@" "$SRC/libgdr/src/copy/copy_avx2.c" -mavx2
    "$@" "$SRC/libgdr/src/copy/copy_avx512.c" -mavx512f
    "$@" "$SRC/libgdr/src/copy/copy_movdir64b.c" -mmovdir64b
}
