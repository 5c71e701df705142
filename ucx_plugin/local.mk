# ucx_plugin: the UCT transport `gdrx` (libuct_gdrx.so.0), built against one
# UCX release: its libraries plus its source tree's internal headers.
EXTRA_DIST += ucx_plugin/README.md ucx_plugin/ucx.conf.sample

# Lowest layer first (the list in uct_gdrx_types.h).
GDRX_UCX_PLUGIN_SOURCES = \
	ucx_plugin/uct_gdrx_compat.h \
	ucx_plugin/uct_gdrx_types.h \
	ucx_plugin/uct_gdrx_cuda.h \
	ucx_plugin/uct_gdrx_cuda.c \
	ucx_plugin/uct_gdrx_events.h \
	ucx_plugin/uct_gdrx_events.c \
	ucx_plugin/uct_gdrx_stats.h \
	ucx_plugin/uct_gdrx_stats.c \
	ucx_plugin/uct_gdrx_version.h \
	ucx_plugin/uct_gdrx_version.c \
	ucx_plugin/uct_gdrx_gpu.h \
	ucx_plugin/uct_gdrx_gpu.c \
	ucx_plugin/uct_gdrx_share.h \
	ucx_plugin/uct_gdrx_share.c \
	ucx_plugin/uct_gdrx_dma.h \
	ucx_plugin/uct_gdrx_dma.c \
	ucx_plugin/uct_gdrx_mem.h \
	ucx_plugin/uct_gdrx_mem.c \
	ucx_plugin/uct_gdrx_rcache.h \
	ucx_plugin/uct_gdrx_rcache.c \
	ucx_plugin/uct_gdrx_md_setup.h \
	ucx_plugin/uct_gdrx_md_setup.c \
	ucx_plugin/uct_gdrx_md_reg.h \
	ucx_plugin/uct_gdrx_md_reg.c \
	ucx_plugin/uct_gdrx_alloc.h \
	ucx_plugin/uct_gdrx_alloc.c \
	ucx_plugin/uct_gdrx_md.h \
	ucx_plugin/uct_gdrx_md.c \
	ucx_plugin/uct_gdrx_keycache.h \
	ucx_plugin/uct_gdrx_keycache.c \
	ucx_plugin/uct_gdrx_iface.h \
	ucx_plugin/uct_gdrx_ep_copy.h \
	ucx_plugin/uct_gdrx_ep_copy.c \
	ucx_plugin/uct_gdrx_ep.h \
	ucx_plugin/uct_gdrx_ep.c \
	ucx_plugin/uct_gdrx_iface.c
# UCX's headers are not ours to keep warning-free: -isystem.
GDRX_UCX_PLUGIN_CPPFLAGS = $(AM_CPPFLAGS) $(UCX_CPPFLAGS:-I%=-isystem %)
# UCX's file name scheme: lib<framework>_<name>.so.0 (see README.md).
# UCX headers use GNU asm; UCX callbacks ignore many of their arguments, and
# UCX idiom casts its empty functions to the op types.
GDRX_UCX_PLUGIN_CFLAGS = $(AM_CFLAGS) -std=gnu11 -Wno-unused-parameter \
	-Wno-cast-function-type
GDRX_UCX_PLUGIN_LDFLAGS = $(AM_LDFLAGS) -module \
	-no-undefined -export-symbols-regex '^uct_gdrx_(component|tl)$$'
GDRX_UCX_PLUGIN_LIBADD = $(top_builddir)/libgdr/libgdrx.la $(UCX_LIBS) $(DL_LIBS) -lpthread

if HAVE_UCX
ucxmodule_LTLIBRARIES = ucx_plugin/libuct_gdrx.la
ucx_plugin_libuct_gdrx_la_SOURCES  = $(GDRX_UCX_PLUGIN_SOURCES)
ucx_plugin_libuct_gdrx_la_CPPFLAGS = $(GDRX_UCX_PLUGIN_CPPFLAGS)
ucx_plugin_libuct_gdrx_la_CFLAGS   = $(GDRX_UCX_PLUGIN_CFLAGS)
ucx_plugin_libuct_gdrx_la_LDFLAGS  = $(GDRX_UCX_PLUGIN_LDFLAGS) -version-info 0:0:0
ucx_plugin_libuct_gdrx_la_LIBADD   = $(GDRX_UCX_PLUGIN_LIBADD)

ucxconf_DATA = ucx_plugin/ucx.conf.sample
endif
