# libgdr/gdrapi: libgdrapi.so.2, gdrcopy's API (gdrapi.h, 2.6) over the
# public gdrx.h, for programs built against NVIDIA gdrcopy.  Always built and
# tested; installed (library, header, gdrapi.pc) only with
# --enable-gdrapi-install, so that it never takes the place of an installed
# gdrcopy by accident.  Not installed, it is still a shared library: -rpath.
GDRAPI_SOURCES = \
	libgdr/gdrapi/gdrapi.h \
	libgdr/gdrapi/gdrapi_internal.h \
	libgdr/gdrapi/open.c \
	libgdr/gdrapi/range.c \
	libgdr/gdrapi/pin.c \
	libgdr/gdrapi/info.c \
	libgdr/gdrapi/info_v1.c \
	libgdr/gdrapi/map.c \
	libgdr/gdrapi/copy.c
if GDRX_GDRAPI_INSTALL
lib_LTLIBRARIES += libgdr/gdrapi/libgdrapi.la
include_HEADERS += libgdr/gdrapi/gdrapi.h
pkgconfig_DATA  += libgdr/gdrapi/gdrapi.pc
else
noinst_LTLIBRARIES += libgdr/gdrapi/libgdrapi.la
endif
libgdr_gdrapi_libgdrapi_la_SOURCES = $(GDRAPI_SOURCES)
libgdr_gdrapi_libgdrapi_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/libgdr/gdrapi
libgdr_gdrapi_libgdrapi_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
# -version-info 8:0:6: soname libgdrapi.so.2, file libgdrapi.so.2.6.0, as
# gdrcopy 2.6's.  The map exports gdr_* and the marker, unversioned.
libgdr_gdrapi_libgdrapi_la_LDFLAGS = $(AM_LDFLAGS) -rpath '$(libdir)' \
	-version-info $(GDRAPI_LT_VERSION) -no-undefined \
	-Wl,--version-script=$(top_srcdir)/libgdr/gdrapi/libgdrapi.map
libgdr_gdrapi_libgdrapi_la_LIBADD = $(top_builddir)/libgdr/libgdrx.la
EXTRA_libgdr_gdrapi_libgdrapi_la_DEPENDENCIES = $(top_srcdir)/libgdr/gdrapi/libgdrapi.map
EXTRA_DIST += libgdr/gdrapi/libgdrapi.map libgdr/gdrapi/gdrapi.pc.in
