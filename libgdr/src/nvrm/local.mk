# libgdr/src/nvrm: the nvrm backend (BAR1 mappings through the NVIDIA
# driver's RM ioctls; docs/nvrm.md).  backend_select.c lists it when
# GDRX_HAVE_NVRM is defined.
GDRX_NVRM_SOURCES = \
	libgdr/src/nvrm/nvrm_abi.h \
	libgdr/src/nvrm/nvrm_layout.h \
	libgdr/src/nvrm/nvrm_layout.c \
	libgdr/src/nvrm/nvrm_rm.h \
	libgdr/src/nvrm/nvrm_rm.c \
	libgdr/src/nvrm/nvrm_cuda.h \
	libgdr/src/nvrm/nvrm_cuda.c \
	libgdr/src/nvrm/nvrm_client.h \
	libgdr/src/nvrm/nvrm_client.c \
	libgdr/src/nvrm/nvrm_hmap.h \
	libgdr/src/nvrm/nvrm_hmap.c \
	libgdr/src/nvrm/nvrm_trace.h \
	libgdr/src/nvrm/nvrm_trace.c \
	libgdr/src/nvrm/nvrm_object.h \
	libgdr/src/nvrm/nvrm_object.c \
	libgdr/src/nvrm/nvrm_discover.h \
	libgdr/src/nvrm/nvrm_discover.c \
	libgdr/src/nvrm/nvrm_selftest.h \
	libgdr/src/nvrm/nvrm_selftest.c \
	libgdr/src/nvrm/nvrm_backend.c
libgdr_libgdrx_la_SOURCES += $(GDRX_NVRM_SOURCES)
libgdr_libgdrx_la_CPPFLAGS += -I$(top_srcdir)/libgdr/src/nvrm -DGDRX_HAVE_NVRM=1
EXTRA_DIST += docs/nvrm.md
