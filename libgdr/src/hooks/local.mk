# libgdr/src/hooks: learn of every CUDA free before the memory can be reused
# (GOT patching of cuMemFree*, cudaFree*, dlsym, dlopen, cuGetProcAddress).
# docs/free-interception.md explains the design and its limits.
GDRX_HOOKS_SOURCES = \
	libgdr/src/hooks/got_patch.h \
	libgdr/src/hooks/got_patch.c \
	libgdr/src/hooks/got_elf.h \
	libgdr/src/hooks/got_elf.c \
	libgdr/src/hooks/dl_caller.h \
	libgdr/src/hooks/dl_caller.c \
	libgdr/src/hooks/cuda_free_hooks.h \
	libgdr/src/hooks/cuda_free_hooks.c
libgdr_libgdrx_la_SOURCES += $(GDRX_HOOKS_SOURCES)
libgdr_libgdrx_la_CPPFLAGS += -I$(top_srcdir)/libgdr/src/hooks -DGDRX_HAVE_FREE_HOOKS=1
EXTRA_DIST += docs/free-interception.md

# The suite's rules live with the code they test (the top Makefile.am has
# no include for tests/hooks).
include $(srcdir)/tests/hooks/local.mk
