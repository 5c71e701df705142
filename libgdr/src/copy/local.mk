# libgdr/src/copy: the CPU copy engine.  Every ISA variant is a libtool
# convenience library of its own, so its file alone is compiled with that
# ISA's -m flags (the dispatcher runs it only on CPUs that have it).  The
# test suite links these libraries directly, not libgdrx.
GDRX_COPY_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden -pthread

noinst_LTLIBRARIES += libgdr/src/copy/libcopy.la

# Dispatch and CPU detection, and the baseline variant of the architecture.
libgdr_src_copy_libcopy_la_SOURCES = \
	libgdr/src/copy/copy.h \
	libgdr/src/copy/copy_driver.h \
	libgdr/src/copy/copy_arm_order.h \
	libgdr/src/copy/copy_variants.h \
	libgdr/src/copy/copy_select.h \
	libgdr/src/copy/copy_select.c \
	libgdr/src/copy/copy_dispatch.c \
	libgdr/src/copy/cpu_features.h \
	libgdr/src/copy/cpu_features.c
libgdr_src_copy_libcopy_la_CFLAGS = $(GDRX_COPY_CFLAGS)

if GDRX_ARCH_AARCH64
# aarch64: Advanced SIMD is baseline; the ordering is in copy_arm_order.h.
libgdr_src_copy_libcopy_la_SOURCES += libgdr/src/copy/copy_neon.c
GDRX_COPY_LIBS = $(top_builddir)/libgdr/src/copy/libcopy.la
else
noinst_LTLIBRARIES += \
	libgdr/src/copy/libcopy_sse41.la \
	libgdr/src/copy/libcopy_avx2.la \
	libgdr/src/copy/libcopy_avx512.la \
	libgdr/src/copy/libcopy_movdir64b.la

# Baseline x86-64: SSE2.
libgdr_src_copy_libcopy_la_SOURCES += libgdr/src/copy/copy_sse2.c

libgdr_src_copy_libcopy_sse41_la_SOURCES = libgdr/src/copy/copy_sse41.c
libgdr_src_copy_libcopy_sse41_la_CFLAGS = $(GDRX_COPY_CFLAGS) -msse4.1

libgdr_src_copy_libcopy_avx2_la_SOURCES = libgdr/src/copy/copy_avx2.c
libgdr_src_copy_libcopy_avx2_la_CFLAGS = $(GDRX_COPY_CFLAGS) -mavx2

libgdr_src_copy_libcopy_avx512_la_SOURCES = libgdr/src/copy/copy_avx512.c
libgdr_src_copy_libcopy_avx512_la_CFLAGS = $(GDRX_COPY_CFLAGS) -mavx512f

libgdr_src_copy_libcopy_movdir64b_la_SOURCES = libgdr/src/copy/copy_movdir64b.c
libgdr_src_copy_libcopy_movdir64b_la_CFLAGS = $(GDRX_COPY_CFLAGS) -mmovdir64b

# Everything above, for libgdrx and for tests/copy.
GDRX_COPY_LIBS = \
	$(top_builddir)/libgdr/src/copy/libcopy.la \
	$(top_builddir)/libgdr/src/copy/libcopy_sse41.la \
	$(top_builddir)/libgdr/src/copy/libcopy_avx2.la \
	$(top_builddir)/libgdr/src/copy/libcopy_avx512.la \
	$(top_builddir)/libgdr/src/copy/libcopy_movdir64b.la
endif
libgdr_libgdrx_la_LIBADD += $(GDRX_COPY_LIBS)
