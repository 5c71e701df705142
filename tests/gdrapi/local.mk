# tests/gdrapi: libgdrapi.so.2 (libgdr/gdrapi) through the gdrcopy API only,
# compiled with our gdrapi.h and linked like a gdrcopy user's program:
# -lgdrapi and the CUDA driver (the simulated GPU's libcuda.so.1).
GDRX_GDRAPI_TEST_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -I$(top_srcdir)/libgdr/gdrapi
GDRX_GDRAPI_TEST_LIBS = $(top_builddir)/libgdr/gdrapi/libgdrapi.la \
	$(top_builddir)/tests/sim/libcuda.la $(GDRX_TEST_LIBS)
GDRX_GDRAPI_HELPERS = tests/gdrapi/gapi.h tests/gdrapi/gapi.c tests/gpu/gpu_pattern.h
# The suites that hold on every backend (both programs run them).
GDRX_GDRAPI_CASES = tests/gdrapi/test_gdrapi.h tests/gdrapi/test_calls.c \
	tests/gdrapi/test_errors.c tests/gdrapi/test_copy.c tests/gdrapi/test_ranges.c \
	tests/gdrapi/test_info_v1.c

# Every call, the errors, the copies at any alignment, the pinned ranges,
# both info versions and the ABI, on the default backend (dmabuf on the
# simulated GPU; gdrdrv in the qemu guest, tests/kmod).
check_PROGRAMS += tests/gdrapi/test_gdrapi
GDRX_SUITES    += tests/gdrapi/test_gdrapi
tests_gdrapi_test_gdrapi_SOURCES = $(GDRX_GDRAPI_HELPERS) $(GDRX_GDRAPI_CASES) \
	tests/gdrapi/test_gdrapi.c tests/gdrapi/test_abi.c tests/gdrapi/test_compat.c \
	tests/gdrapi/test_coherent.c tests/gdrapi/elf_dyn.h tests/gdrapi/elf_dyn.c
tests_gdrapi_test_gdrapi_CPPFLAGS = $(GDRX_GDRAPI_TEST_CPPFLAGS) -I$(top_srcdir)/tests/sim
tests_gdrapi_test_gdrapi_CFLAGS   = $(AM_CFLAGS) -pthread
tests_gdrapi_test_gdrapi_LDADD    = $(GDRX_GDRAPI_TEST_LIBS) $(DL_LIBS) -lpthread
GDRX_THREAD_SUITES += tests/gdrapi/test_gdrapi

# The nvrm backend under the RM-ioctl emulator (tests/nvrm/emu): memory
# allocated before gdr_open, and the suites above.
check_PROGRAMS += tests/gdrapi/test_gdrapi_nvrm
GDRX_SUITES    += tests/gdrapi/test_gdrapi_nvrm
tests_gdrapi_test_gdrapi_nvrm_SOURCES = $(GDRX_GDRAPI_HELPERS) $(GDRX_GDRAPI_CASES) \
	tests/gdrapi/test_gdrapi_nvrm.c tests/nvrm/nvrm_reexec.h tests/nvrm/nvrm_reexec.c
tests_gdrapi_test_gdrapi_nvrm_CPPFLAGS = $(GDRX_GDRAPI_TEST_CPPFLAGS) \
	-I$(top_srcdir)/tests/nvrm -I$(top_srcdir)/tests/nvrm/emu
tests_gdrapi_test_gdrapi_nvrm_CFLAGS = $(AM_CFLAGS) -pthread
tests_gdrapi_test_gdrapi_nvrm_LDADD = $(GDRX_GDRAPI_TEST_LIBS) -lpthread
EXTRA_tests_gdrapi_test_gdrapi_nvrm_DEPENDENCIES = tests/nvrm/libnvrm_emu.la

# The GPU machine's program written to the gdrcopy API (tests/gpu/build.sh
# builds it with gcc alone, run.sh runs it; not run by make check).
EXTRA_DIST += tests/gpu/gdrapi_sanity.c tests/gpu/gdrcopy_sanity_run.sh
