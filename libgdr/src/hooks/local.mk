# libgdr/src/hooks: see every CUDA allocation and free by patching the
# entry of libcuda's own functions (installed lazily, never at load), and
# patch one named import of one object (the nvrm backend's ioctl trace).
# docs/free-interception.md explains the design and its limits.
GDRX_HOOKS_SOURCES = \
	libgdr/src/hooks/insn_reloc.h \
	libgdr/src/hooks/insn_reloc.c \
	libgdr/src/hooks/entry_patch.h \
	libgdr/src/hooks/entry_patch.c \
	libgdr/src/hooks/proc_maps.h \
	libgdr/src/hooks/proc_maps.c \
	libgdr/src/hooks/cuda_hooks.h \
	libgdr/src/hooks/cuda_hooks_priv.h \
	libgdr/src/hooks/cuda_hooks.c \
	libgdr/src/hooks/cuda_hooks_handlers.c
# The GOT import patcher, for the nvrm backend alone.
GDRX_GOT_IMPORT_SOURCES = \
	libgdr/src/hooks/got_elf.h \
	libgdr/src/hooks/got_elf.c \
	libgdr/src/hooks/got_import.h \
	libgdr/src/hooks/got_import.c
EXTRA_DIST += docs/free-interception.md

# The entry patches relocate x86-64 instructions: on aarch64 they are not
# built, and the library behaves as with GDRX_FREE_HOOKS=0 (configure's
# summary says so; docs/free-interception.md).
if GDRX_FREE_HOOKS
libgdr_libgdrx_la_SOURCES += $(GDRX_HOOKS_SOURCES) $(GDRX_GOT_IMPORT_SOURCES)
libgdr_libgdrx_la_CPPFLAGS += -I$(top_srcdir)/libgdr/src/hooks -DGDRX_HAVE_FREE_HOOKS=1

# The suite's rules live with the code they test (the top Makefile.am has
# no include for tests/hooks).
include $(srcdir)/tests/hooks/local.mk
else
# (the GOT patcher reads page protections from /proc/self/maps too)
libgdr_libgdrx_la_SOURCES += libgdr/src/hooks/proc_maps.h libgdr/src/hooks/proc_maps.c \
	$(GDRX_GOT_IMPORT_SOURCES)
libgdr_libgdrx_la_CPPFLAGS += -I$(top_srcdir)/libgdr/src/hooks
EXTRA_DIST += $(GDRX_HOOKS_SOURCES)
endif
