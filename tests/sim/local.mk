# tests/sim: the simulated GPU, a test-only libcuda.so.1 (never installed),
# and its own suite.  `make check` puts tests/sim/.libs first on
# LD_LIBRARY_PATH, so libgdrx's dlopen("libcuda.so.1") and programs linked
# with tests/sim/libcuda.la share one instance.
check_LTLIBRARIES += tests/sim/libcuda.la
tests_sim_libcuda_la_SOURCES = \
	tests/sim/simcu.h \
	tests/sim/sim_internal.h \
	tests/sim/sim_legacy.h \
	tests/sim/sim_entry.h \
	tests/sim/sim_backing.h \
	tests/sim/sim_backing.c \
	tests/sim/sim_backing_memfd.c \
	tests/sim/sim_backing_mocknv.c \
	tests/sim/sim_rm.h \
	tests/sim/sim_rm.c \
	libgdr/src/nvrm/nvrm_layout.c \
	tests/sim/sim_control.c \
	tests/sim/sim_device.c \
	tests/sim/sim_context.c \
	tests/sim/sim_vmm.c \
	tests/sim/sim_ipc.c \
	tests/sim/sim_memory.c \
	tests/sim/sim_dmabuf.c \
	tests/sim/sim_mem_api.c \
	tests/sim/sim_copy.c \
	tests/sim/sim_stream.c \
	tests/sim/sim_event.c \
	tests/sim/sim_pointer.c \
	tests/sim/sim_errors.c \
	tests/sim/sim_graph.c \
	tests/sim/sim_procaddr.c \
	tests/sim/sim_host.c \
	tests/sim/sim_mempool.c \
	tests/sim/sim_callback.c
# mocknv backing: the mock NVIDIA P2P provider's control ioctls.
tests_sim_libcuda_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/kmod/mock \
	-I$(top_srcdir)/libgdr/src/nvrm
tests_sim_libcuda_la_CFLAGS = $(AM_CFLAGS) -pthread
# Export only what the real library names (cu*) plus the control API.
tests_sim_libcuda_la_LDFLAGS = $(AM_LDFLAGS) -rpath /nowhere -version-info 1:0:0 \
	-no-undefined -export-symbols-regex '^(cu[A-Z]|simcu_)' -pthread

# The simulated runtime (tests/sim/sim_cudart.c): libcudart.so.MAJOR of
# this CUDA, so that a CUDA-enabled UCX's own transports run on the
# simulated GPU in the suites (tests/ucx/test_ucx_defaults).
check_LTLIBRARIES += tests/sim/libcudart.la
tests_sim_libcudart_la_SOURCES = tests/sim/sim_cudart.c
tests_sim_libcudart_la_CFLAGS = $(AM_CFLAGS) -pthread
tests_sim_libcudart_la_LIBADD = $(top_builddir)/tests/sim/libcuda.la
# Its symbols carry the runtime's version node, as the modules linked
# against the real one ask for it (else ld.so warns at each load).
tests_sim_libcudart_la_LDFLAGS = $(AM_LDFLAGS) -rpath /nowhere \
	-version-info $(SIM_CUDART_MAJOR):0:0 -no-undefined -pthread \
	-Wl,--version-script=$(top_builddir)/tests/sim/sim_cudart.map
EXTRA_tests_sim_libcudart_la_DEPENDENCIES = tests/sim/sim_cudart.map
tests/sim/sim_cudart.map: Makefile
	$(AM_V_GEN)$(MKDIR_P) tests/sim && \
	echo 'libcudart.so.$(SIM_CUDART_MAJOR) { global: cuda*; local: *; };' > $@
CLEANFILES += tests/sim/sim_cudart.map

check_PROGRAMS += tests/sim/test_sim
GDRX_SUITES    += tests/sim/test_sim
tests_sim_test_sim_SOURCES = \
	tests/sim/test_sim.h \
	tests/sim/test_sim.c \
	tests/sim/test_sim_memory.c \
	tests/sim/test_sim_api.c \
	tests/sim/test_sim_stream.c \
	tests/sim/test_sim_context.c \
	tests/sim/test_sim_vmm.c \
	tests/sim/test_sim_cudart.c \
	tests/sim/test_sim_host.c \
	tests/sim/test_sim_pointer.c
tests_sim_test_sim_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -I$(top_srcdir)/tests/sim
tests_sim_test_sim_CFLAGS = $(AM_CFLAGS) -pthread
tests_sim_test_sim_LDADD = $(top_builddir)/tests/sim/libcuda.la $(GDRX_TEST_LIBS) $(DL_LIBS)
EXTRA_tests_sim_test_sim_DEPENDENCIES = tests/sim/libcudart.la
tests_sim_test_sim_LDFLAGS = $(AM_LDFLAGS) -pthread

# Without memfd_create (configure's summary says so) there is no simulated
# GPU, and no suite can run: say so before make check tries to build it.
gdrx-needs-sim:
	@echo "make: the test suites run on the simulated GPU, which needs memfd_create" \
	  "(glibc 2.27 or newer); configure did not find it." >&2; exit 1
.PHONY: gdrx-needs-sim
if !HAVE_SIM
check-am check-threads: gdrx-needs-sim
endif
