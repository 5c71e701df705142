# libgdr: libgdrx.so, its public header, pkg-config file and man pages.
lib_LTLIBRARIES += libgdr/libgdrx.la
include_HEADERS += libgdr/include/gdrx.h
libgdr_libgdrx_la_SOURCES += \
	libgdr/src/backend.h
libgdr_libgdrx_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/libgdr/src -I$(top_srcdir)/gdrdrv
libgdr_libgdrx_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden -pthread
# Only gdrx_* is exported (a process may load NVIDIA's libgdrapi too).
libgdr_libgdrx_la_LDFLAGS = $(AM_LDFLAGS) -version-info $(GDRX_LT_VERSION) -no-undefined \
	-Wl,--version-script=$(top_srcdir)/libgdr/libgdrx.map -pthread
libgdr_libgdrx_la_LIBADD = $(DL_LIBS)
EXTRA_libgdr_libgdrx_la_DEPENDENCIES = $(top_srcdir)/libgdr/libgdrx.map
EXTRA_DIST += libgdr/libgdrx.map libgdr/gdrx.pc.in

pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = libgdr/gdrx.pc
