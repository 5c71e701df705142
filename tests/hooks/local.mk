# tests/hooks: the free-hook suite (included from libgdr/src/hooks/local.mk).
#
# The hook sources are built into a test-only shared library rather than
# into the program: the patcher skips the object that holds it (as libgdrx
# skips itself), and the program must be an ordinary caller whose GOT gets
# patched.  The small libraries are loaded by the cases at run time.
HOOKS_TEST_LIB_LDFLAGS = $(AM_LDFLAGS) -rpath /nowhere -avoid-version -no-undefined

check_LTLIBRARIES += tests/hooks/libgdrx_hooks_test.la
tests_hooks_libgdrx_hooks_test_la_SOURCES = $(GDRX_HOOKS_SOURCES)
tests_hooks_libgdrx_hooks_test_la_CFLAGS = $(AM_CFLAGS) -pthread
tests_hooks_libgdrx_hooks_test_la_LDFLAGS = $(HOOKS_TEST_LIB_LDFLAGS) -pthread
tests_hooks_libgdrx_hooks_test_la_LIBADD = $(DL_LIBS)

# Calls cuMemFree_v2 through its GOT; dlopen()ed after installation.
check_LTLIBRARIES += tests/hooks/libhooks_late.la
tests_hooks_libhooks_late_la_SOURCES = tests/hooks/hooks_late.c
tests_hooks_libhooks_late_la_LDFLAGS = $(HOOKS_TEST_LIB_LDFLAGS)
tests_hooks_libhooks_late_la_LIBADD = $(top_builddir)/tests/sim/libcuda.la

# Imports getpid: the synthetic target of the got_patch cases.
check_LTLIBRARIES += tests/hooks/libhooks_getpid.la
tests_hooks_libhooks_getpid_la_SOURCES = tests/hooks/hooks_getpid.c
tests_hooks_libhooks_getpid_la_LDFLAGS = $(HOOKS_TEST_LIB_LDFLAGS)

# Calls dlopen/dlsym itself; DT_RUNPATH $ORIGIN, DT_NEEDED libhooks_getpid.
check_LTLIBRARIES += tests/hooks/libhooks_opener.la
tests_hooks_libhooks_opener_la_SOURCES = tests/hooks/hooks_opener.c
tests_hooks_libhooks_opener_la_LDFLAGS = $(HOOKS_TEST_LIB_LDFLAGS) -Wl,-rpath,'$$ORIGIN'
tests_hooks_libhooks_opener_la_LIBADD = tests/hooks/libhooks_getpid.la $(DL_LIBS)

# cuMemUnmap, cuMemFreeAsync_ptsz and legacy cuMemFree, which the sim lacks.
check_LTLIBRARIES += tests/hooks/libhooks_custub.la
tests_hooks_libhooks_custub_la_SOURCES = tests/hooks/hooks_custub.c tests/hooks/hooks_custub.h
tests_hooks_libhooks_custub_la_LDFLAGS = $(HOOKS_TEST_LIB_LDFLAGS)
tests_hooks_libhooks_custub_la_LIBADD = $(top_builddir)/tests/sim/libcuda.la

check_PROGRAMS += tests/hooks/test_free_hooks
GDRX_SUITES    += tests/hooks/test_free_hooks
tests_hooks_test_free_hooks_SOURCES = \
	tests/hooks/test_hooks.h \
	tests/hooks/test_free_hooks.c \
	tests/hooks/test_got_patch.c
tests_hooks_test_free_hooks_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -I$(top_srcdir)/libgdr/src/hooks
tests_hooks_test_free_hooks_CFLAGS = $(AM_CFLAGS) -pthread
tests_hooks_test_free_hooks_LDFLAGS = $(AM_LDFLAGS) -pthread
tests_hooks_test_free_hooks_LDADD = tests/hooks/libgdrx_hooks_test.la tests/hooks/libhooks_custub.la \
	$(top_builddir)/tests/sim/libcuda.la $(GDRX_TEST_LIBS) $(DL_LIBS)
# Loaded with dlopen by the cases, so not on the link line.
EXTRA_tests_hooks_test_free_hooks_DEPENDENCIES = tests/hooks/libhooks_late.la \
	tests/hooks/libhooks_getpid.la tests/hooks/libhooks_opener.la

# Multi-threaded (8 threads freeing concurrently): also run under TSan.
GDRX_THREAD_SUITES += tests/hooks/test_free_hooks
