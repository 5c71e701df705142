# tests/hooks: the CUDA memory hooks (included from libgdr/src/hooks/local.mk).
HOOKS_TEST_LIB_LDFLAGS = $(AM_LDFLAGS) -rpath /nowhere -avoid-version -no-undefined
HOOKS_TEST_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -I$(top_srcdir)/libgdr/src -I$(top_srcdir)/libgdr/src/hooks

# Calls cuMemFree_v2 through its GOT; dlopen()ed by the cases.
check_LTLIBRARIES += tests/hooks/libhooks_late.la
tests_hooks_libhooks_late_la_SOURCES = tests/hooks/hooks_late.c
tests_hooks_libhooks_late_la_LDFLAGS = $(HOOKS_TEST_LIB_LDFLAGS)
tests_hooks_libhooks_late_la_LIBADD = $(top_builddir)/tests/sim/libcuda.la

# Links libgdrx, as a UCX transport does.
check_LTLIBRARIES += tests/hooks/libhooks_linked.la
tests_hooks_libhooks_linked_la_SOURCES = tests/hooks/hooks_linked.c
tests_hooks_libhooks_linked_la_LDFLAGS = $(HOOKS_TEST_LIB_LDFLAGS)
tests_hooks_libhooks_linked_la_LIBADD = $(top_builddir)/libgdr/libgdrx.la

# The relocator and patcher are built in (their functions are hidden in
# libgdrx); events go through libgdrx's public API.
check_PROGRAMS += tests/hooks/test_hooks
GDRX_SUITES    += tests/hooks/test_hooks
tests_hooks_test_hooks_SOURCES = \
	tests/hooks/test_hooks.h \
	tests/hooks/test_hooks.c \
	tests/hooks/hooks_util.c \
	tests/hooks/test_reloc.c \
	tests/hooks/test_events.h \
	tests/hooks/test_events.c \
	tests/hooks/test_unsubscribe.c \
	tests/hooks/ucx_double.h \
	tests/hooks/ucx_double.c \
	tests/hooks/test_coexist.c \
	libgdr/src/log.c \
	libgdr/src/hooks/insn_reloc.c \
	libgdr/src/hooks/entry_patch.c \
	libgdr/src/hooks/proc_maps.c \
	$(GDRX_GOT_IMPORT_SOURCES)
tests_hooks_test_hooks_CPPFLAGS = $(HOOKS_TEST_CPPFLAGS)
tests_hooks_test_hooks_CFLAGS = $(AM_CFLAGS) -pthread
tests_hooks_test_hooks_LDFLAGS = $(AM_LDFLAGS) -pthread
tests_hooks_test_hooks_LDADD = $(top_builddir)/libgdr/libgdrx.la $(top_builddir)/tests/sim/libcuda.la \
	$(GDRX_TEST_LIBS) $(DL_LIBS)
EXTRA_tests_hooks_test_hooks_DEPENDENCIES = tests/hooks/libhooks_late.la

# Links neither libgdrx nor libcuda: each case loads them itself.
check_PROGRAMS += tests/hooks/test_noside
GDRX_SUITES    += tests/hooks/test_noside
tests_hooks_test_noside_SOURCES = \
	tests/hooks/test_hooks.h \
	tests/hooks/hooks_util.c \
	tests/hooks/test_noside.c \
	libgdr/src/hooks/got_elf.h \
	libgdr/src/hooks/got_elf.c \
	libgdr/src/hooks/proc_maps.c
tests_hooks_test_noside_CPPFLAGS = $(HOOKS_TEST_CPPFLAGS)
tests_hooks_test_noside_LDADD = $(GDRX_TEST_LIBS) $(DL_LIBS)
# -rdynamic: the test's __register_atfork counts every fork handler.
tests_hooks_test_noside_LDFLAGS = $(AM_LDFLAGS) -rdynamic
EXTRA_tests_hooks_test_noside_DEPENDENCIES = tests/hooks/libhooks_late.la \
	tests/hooks/libhooks_linked.la libgdr/libgdrx.la tests/sim/libcuda.la

# Multi-threaded (unsubscribe while a callback runs, 8 freeing threads).
GDRX_THREAD_SUITES += tests/hooks/test_hooks

# The real libucm_cuda of a CUDA-enabled UCX 1.13.1 (a third-party build,
# found at run time; without it the cases are not registered: not run).
check_PROGRAMS += tests/hooks/test_ucx_cuda
GDRX_SUITES    += tests/hooks/test_ucx_cuda
tests_hooks_test_ucx_cuda_SOURCES = tests/hooks/test_ucx_cuda.c
tests_hooks_test_ucx_cuda_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -I$(top_srcdir)/tests/libgdr
tests_hooks_test_ucx_cuda_LDADD = $(top_builddir)/tests/libgdr/libtcuda.la \
	$(top_builddir)/libgdr/libgdrx.la $(top_builddir)/tests/sim/libcuda.la $(GDRX_TEST_LIBS) $(DL_LIBS)
EXTRA_DIST += tests/gpu/hooks_sanity.cu tests/gpu/hooks_stress.c tests/gpu/free_paths.c

# Installing the hooks while threads run every hooked entry point: this
# suite's own copy of the installer, armed and disarmed 100,000 times, and
# libgdrx in fresh processes (tests/hooks/test_stress.c).
check_PROGRAMS += tests/hooks/test_stress
GDRX_SUITES    += tests/hooks/test_stress
tests_hooks_test_stress_SOURCES = \
	tests/hooks/test_stress.c \
	tests/hooks/park.h \
	tests/hooks/park.c \
	libgdr/src/log.c \
	$(GDRX_HOOKS_SOURCES)
tests_hooks_test_stress_CPPFLAGS = $(HOOKS_TEST_CPPFLAGS)
tests_hooks_test_stress_CFLAGS = $(AM_CFLAGS) -pthread
tests_hooks_test_stress_LDFLAGS = $(AM_LDFLAGS) -pthread
tests_hooks_test_stress_LDADD = $(top_builddir)/libgdr/libgdrx.la $(top_builddir)/tests/sim/libcuda.la \
	$(GDRX_TEST_LIBS) $(DL_LIBS)

