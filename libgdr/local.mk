# libgdr: libgdrx.so, its public header, pkg-config file and man pages.
lib_LTLIBRARIES += libgdr/libgdrx.la
include_HEADERS += libgdr/include/gdrx.h
libgdr_libgdrx_la_SOURCES += \
	libgdr/src/backend.h \
	libgdr/src/core.h \
	libgdr/src/export.h \
	libgdr/src/gdrx.c \
	libgdr/src/context.c \
	libgdr/src/pin.c \
	libgdr/src/pin_state.c \
	libgdr/src/pin_index.h \
	libgdr/src/pin_index.c \
	libgdr/src/fastpath.c \
	libgdr/src/stale.c \
	libgdr/src/fork.c \
	libgdr/src/fork_defer.c \
	libgdr/src/fork_defer.h \
	libgdr/src/fork_guard.c \
	libgdr/src/lock_order.h \
	libgdr/src/lock_order.c \
	libgdr/src/range.h \
	libgdr/src/free_hook.h \
	libgdr/src/free_hook.c \
	libgdr/src/graph_mem.h \
	libgdr/src/graph_mem.c \
	libgdr/src/mem_events.h \
	libgdr/src/mem_events.c \
	libgdr/src/release_order.h \
	libgdr/src/release_order.c \
	libgdr/src/mem_query.c \
	libgdr/src/sync_memops.c \
	libgdr/src/sync_memops.h \
	libgdr/src/handle_table.h \
	libgdr/src/handle_table.c \
	libgdr/src/devctx.h \
	libgdr/src/devctx.c \
	libgdr/src/cuda_loader.h \
	libgdr/src/cuda_loader.c \
	libgdr/src/backend_select.c \
	libgdr/src/backend_gdrdrv.h \
	libgdr/src/backend_gdrdrv.c \
	libgdr/src/backend_dmabuf.c \
	libgdr/src/log.h \
	libgdr/src/log.c \
	libgdr/src/errors.c \
	libgdr/src/names.c \
	libgdr/src/ipoint.h
# The interleaving points' hook exists in test builds only (ipoint.h).
if GDRX_TEST_POINTS
libgdr_libgdrx_la_SOURCES += libgdr/src/ipoint.c
endif
# Other directories append: GDRX_HAVE_NVRM (libgdr/src/nvrm/local.mk, with the
# nvrm backend's sources), GDRX_HAVE_FREE_HOOKS (libgdr/src/hooks/local.mk).
libgdr_libgdrx_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/libgdr/src -I$(top_srcdir)/gdrdrv
libgdr_libgdrx_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden -pthread
# A lock taken out of the order (lock_order.h) aborts in the sanitizer
# builds (the thread suites run under TSan); elsewhere it is reported.
if GDRX_SANITIZED
libgdr_libgdrx_la_CPPFLAGS += -DGDRX_LOCK_ORDER_FATAL=1
endif
# Only gdrx_* is exported (a process may load NVIDIA's libgdrapi too).
# -z nodelete: once installed, the CUDA hooks patched into libcuda jump
# into libgdrx, so it must stay mapped even if a dlopen'ing program
# unloads it.
libgdr_libgdrx_la_LDFLAGS = $(AM_LDFLAGS) -version-info $(GDRX_LT_VERSION) -no-undefined \
	-Wl,--version-script=$(top_srcdir)/libgdr/libgdrx.map -Wl,-z,nodelete -pthread
libgdr_libgdrx_la_LIBADD = $(DL_LIBS)
EXTRA_libgdr_libgdrx_la_DEPENDENCIES = $(top_srcdir)/libgdr/libgdrx.map
EXTRA_DIST += libgdr/libgdrx.map libgdr/gdrx.pc.in

pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = libgdr/gdrx.pc

# One page per public function (gdrx_copy_from_mapping and the name
# functions are .so links to the page that documents them together).
GDRX_LIBGDR_MANS = \
	libgdr/man/gdrx_open_params_init.3 \
	libgdr/man/gdrx_open.3 \
	libgdr/man/gdrx_probe.3 \
	libgdr/man/gdrx_fork_handlers_register.3 \
	libgdr/man/gdrx_close.3 \
	libgdr/man/gdrx_pin.3 \
	libgdr/man/gdrx_unpin.3 \
	libgdr/man/gdrx_map.3 \
	libgdr/man/gdrx_unmap.3 \
	libgdr/man/gdrx_pin_query.3 \
	libgdr/man/gdrx_pin_copy_variants.3 \
	libgdr/man/gdrx_copy_to_mapping.3 \
	libgdr/man/gdrx_copy_from_mapping.3 \
	libgdr/man/gdrx_get_attr.3 \
	libgdr/man/gdrx_mem_events_hook.3 \
	libgdr/man/gdrx_get_version.3 \
	libgdr/man/gdrx_strerror.3 \
	libgdr/man/gdrx_backend_name.3 \
	libgdr/man/gdrx_mapping_type_name.3 \
	libgdr/man/gdrx_copy_variant_name.3 \
	libgdr/man/gdrx_mem_query.3 \
	libgdr/man/gdrx_mem_sync_memops.3 \
	libgdr/man/gdrx_mem_events_subscribe.3 \
	libgdr/man/gdrx_mem_events_unsubscribe.3
man3_MANS += $(GDRX_LIBGDR_MANS)
EXTRA_DIST += $(GDRX_LIBGDR_MANS)
# docs/api.md and docs/semantics.md: docs/local.mk installs every doc.
