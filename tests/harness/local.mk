# tests/harness: the CUnit fork-per-case runner every suite links.
check_LTLIBRARIES += tests/harness/libgdrx_test.la
tests_harness_libgdrx_test_la_SOURCES = tests/harness/gdrx_test.c tests/harness/gdrx_test.h \
	tests/harness/gdrx_test_proc.c
tests_harness_libgdrx_test_la_LIBADD = -lcunit
# Suites link GDRX_TEST_LIBS and use GDRX_TEST_CPPFLAGS.
GDRX_TEST_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/harness
GDRX_TEST_LIBS = $(top_builddir)/tests/harness/libgdrx_test.la -lcunit

# The runner's own suite: hung cases are killed and failed.
check_PROGRAMS += tests/harness/test_harness
GDRX_SUITES    += tests/harness/test_harness
tests_harness_test_harness_SOURCES  = tests/harness/test_harness.c
tests_harness_test_harness_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
tests_harness_test_harness_LDADD    = $(GDRX_TEST_LIBS)

# Without CUnit (configure's summary says so) the suites cannot be built:
# say what is missing before make check tries to compile them.
gdrx-needs-cunit:
	@echo "make: the test suites need CUnit, which configure did not find:" \
	  "apt-get install libcunit1-dev (sh config/deps.sh), then configure again." \
	  "make bench does not need it." >&2; exit 1
.PHONY: gdrx-needs-cunit
if !HAVE_CUNIT
check-am check-threads: gdrx-needs-cunit
endif

# Interleaving points (tests/harness/ipoint.h): test-point builds only, as
# libgdrx's hook is.  A suite that parks threads links GDRX_IPOINT_LIBS.
if GDRX_TEST_POINTS
check_LTLIBRARIES += tests/harness/libgdrx_ipoint.la
tests_harness_libgdrx_ipoint_la_SOURCES = tests/harness/ipoint.c tests/harness/ipoint.h
tests_harness_libgdrx_ipoint_la_CFLAGS  = $(AM_CFLAGS) -pthread
tests_harness_libgdrx_ipoint_la_LIBADD  = $(top_builddir)/libgdr/libgdrx.la -lpthread
GDRX_IPOINT_LIBS = $(top_builddir)/tests/harness/libgdrx_ipoint.la

check_PROGRAMS     += tests/harness/test_ipoint
GDRX_SUITES        += tests/harness/test_ipoint
GDRX_THREAD_SUITES += tests/harness/test_ipoint
tests_harness_test_ipoint_SOURCES  = tests/harness/test_ipoint.c
tests_harness_test_ipoint_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
tests_harness_test_ipoint_CFLAGS   = $(AM_CFLAGS) -pthread
tests_harness_test_ipoint_LDADD    = $(GDRX_IPOINT_LIBS) $(top_builddir)/libgdr/libgdrx.la \
	$(GDRX_TEST_LIBS) -lpthread
endif
