# tests/libgdr: the libgdrx suites.  They dlopen libcuda.so.1 (the simulated
# GPU under `make check`) and select the backend from GDRX_BACKEND (default
# dmabuf), so the same programs run in the kernel tests' qemu guest with
# GDRX_BACKEND=gdrdrv.
check_LTLIBRARIES += tests/libgdr/libtcuda.la
tests_libgdr_libtcuda_la_SOURCES = tests/libgdr/tcuda.h tests/libgdr/tcuda.c tests/gpu/gpu_pattern.h
tests_libgdr_libtcuda_la_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
# Self-contained (tc_open uses libgdrx): other suites (tests/nvrm) link it too.
tests_libgdr_libtcuda_la_LIBADD = $(top_builddir)/libgdr/libgdrx.la $(DL_LIBS)

GDRX_LIBGDR_TEST_LIBS = $(top_builddir)/tests/libgdr/libtcuda.la \
	$(top_builddir)/libgdr/libgdrx.la $(GDRX_TEST_LIBS) $(DL_LIBS)

check_PROGRAMS += tests/libgdr/test_api
GDRX_SUITES    += tests/libgdr/test_api
tests_libgdr_test_api_SOURCES  = tests/libgdr/test_api.h tests/libgdr/test_api.c \
	tests/libgdr/test_api_meta.c tests/libgdr/test_leaks.c tests/libgdr/test_api_compat.c
tests_libgdr_test_api_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
tests_libgdr_test_api_CFLAGS   = $(AM_CFLAGS) -pthread
tests_libgdr_test_api_LDADD    = $(GDRX_LIBGDR_TEST_LIBS) -lpthread

check_PROGRAMS += tests/libgdr/test_pin_align
GDRX_SUITES    += tests/libgdr/test_pin_align
tests_libgdr_test_pin_align_SOURCES  = tests/libgdr/test_pin_align.c
tests_libgdr_test_pin_align_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
tests_libgdr_test_pin_align_LDADD    = $(GDRX_LIBGDR_TEST_LIBS)

check_PROGRAMS += tests/libgdr/test_pin_span
GDRX_SUITES    += tests/libgdr/test_pin_span
tests_libgdr_test_pin_span_SOURCES  = tests/libgdr/test_pin_span.c
tests_libgdr_test_pin_span_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
tests_libgdr_test_pin_span_LDADD    = $(GDRX_LIBGDR_TEST_LIBS)

check_PROGRAMS += tests/libgdr/test_pin_span_nvrm
GDRX_SUITES    += tests/libgdr/test_pin_span_nvrm
tests_libgdr_test_pin_span_nvrm_SOURCES  = tests/libgdr/test_pin_span.c \
	tests/nvrm/nvrm_reexec.h tests/nvrm/nvrm_reexec.c
tests_libgdr_test_pin_span_nvrm_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -DPIN_SPAN_NVRM \
	-I$(top_srcdir)/tests/nvrm -I$(top_srcdir)/tests/nvrm/emu
tests_libgdr_test_pin_span_nvrm_LDADD    = $(GDRX_LIBGDR_TEST_LIBS)
EXTRA_tests_libgdr_test_pin_span_nvrm_DEPENDENCIES = tests/nvrm/libnvrm_emu.la

check_PROGRAMS += tests/libgdr/test_coherent
GDRX_SUITES    += tests/libgdr/test_coherent
tests_libgdr_test_coherent_SOURCES  = tests/libgdr/test_coherent.c
tests_libgdr_test_coherent_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -I$(top_srcdir)/tests/sim
tests_libgdr_test_coherent_LDADD    = $(GDRX_LIBGDR_TEST_LIBS)

check_PROGRAMS += tests/libgdr/test_stale
GDRX_SUITES    += tests/libgdr/test_stale
tests_libgdr_test_stale_SOURCES  = tests/libgdr/test_stale.c
tests_libgdr_test_stale_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
tests_libgdr_test_stale_LDADD    = $(GDRX_LIBGDR_TEST_LIBS)

check_PROGRAMS += tests/libgdr/test_refused
GDRX_SUITES    += tests/libgdr/test_refused
tests_libgdr_test_refused_SOURCES  = tests/libgdr/test_refused.c
tests_libgdr_test_refused_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -I$(top_srcdir)/tests/sim
tests_libgdr_test_refused_CFLAGS   = $(AM_CFLAGS) -pthread
tests_libgdr_test_refused_LDADD    = $(GDRX_LIBGDR_TEST_LIBS) -lpthread

check_PROGRAMS += tests/libgdr/test_contexts
GDRX_SUITES    += tests/libgdr/test_contexts
tests_libgdr_test_contexts_SOURCES  = tests/libgdr/test_contexts.c
tests_libgdr_test_contexts_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
tests_libgdr_test_contexts_LDADD    = $(GDRX_LIBGDR_TEST_LIBS)

check_PROGRAMS += tests/libgdr/test_vmm_free
GDRX_SUITES    += tests/libgdr/test_vmm_free
tests_libgdr_test_vmm_free_SOURCES  = tests/libgdr/test_vmm_free.c
tests_libgdr_test_vmm_free_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
tests_libgdr_test_vmm_free_LDADD    = $(GDRX_LIBGDR_TEST_LIBS)

check_PROGRAMS += tests/libgdr/test_concurrent
GDRX_SUITES    += tests/libgdr/test_concurrent
GDRX_THREAD_SUITES += tests/libgdr/test_concurrent
GDRX_FORK_SUITES += tests/libgdr/test_concurrent
tests_libgdr_test_concurrent_SOURCES  = tests/libgdr/test_concurrent.c
tests_libgdr_test_concurrent_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
tests_libgdr_test_concurrent_CFLAGS   = $(AM_CFLAGS) -pthread
tests_libgdr_test_concurrent_LDADD    = $(GDRX_LIBGDR_TEST_LIBS) $(DL_LIBS) -lpthread

check_PROGRAMS += tests/libgdr/test_threads
GDRX_SUITES    += tests/libgdr/test_threads
tests_libgdr_test_threads_SOURCES  = tests/libgdr/test_threads.c
tests_libgdr_test_threads_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
tests_libgdr_test_threads_CFLAGS   = $(AM_CFLAGS) -pthread
tests_libgdr_test_threads_LDADD    = $(GDRX_LIBGDR_TEST_LIBS) -lpthread

check_PROGRAMS += tests/libgdr/test_multi_gpu
GDRX_SUITES    += tests/libgdr/test_multi_gpu
tests_libgdr_test_multi_gpu_SOURCES  = tests/libgdr/test_multi_gpu.c
tests_libgdr_test_multi_gpu_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
tests_libgdr_test_multi_gpu_LDADD    = $(GDRX_LIBGDR_TEST_LIBS)

# The gdrdrv backend against a fake driver (no module, no CUDA).
check_PROGRAMS += tests/libgdr/test_gdrdrv
GDRX_SUITES    += tests/libgdr/test_gdrdrv
tests_libgdr_test_gdrdrv_SOURCES  = tests/libgdr/test_gdrdrv.c \
	libgdr/src/backend_gdrdrv.c libgdr/src/log.c
tests_libgdr_test_gdrdrv_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -DGDRX_GDRDRV_TEST_SEAM \
	-I$(top_srcdir)/libgdr/src -I$(top_srcdir)/gdrdrv
tests_libgdr_test_gdrdrv_CFLAGS   = $(AM_CFLAGS) -pthread
tests_libgdr_test_gdrdrv_LDADD    = $(GDRX_TEST_LIBS)

# The dmabuf backend against a fake CUDA driver (mmap refusals, fallbacks).
check_PROGRAMS += tests/libgdr/test_dmabuf
GDRX_SUITES    += tests/libgdr/test_dmabuf
tests_libgdr_test_dmabuf_SOURCES  = tests/libgdr/test_dmabuf.c \
	libgdr/src/backend_dmabuf.c libgdr/src/log.c
tests_libgdr_test_dmabuf_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -DGDRX_DMABUF_TEST_SEAM \
	-I$(top_srcdir)/libgdr/src
tests_libgdr_test_dmabuf_CFLAGS   = $(AM_CFLAGS) -pthread
tests_libgdr_test_dmabuf_LDADD    = $(GDRX_TEST_LIBS)

# Multi-threaded suites, also run under TSan (make check-threads).
GDRX_THREAD_SUITES += tests/libgdr/test_threads

# The core's sources on a fake CUDA driver and backend (white-box: state
# machine, revocation, fast-path checks, the free hook's index).
GDRX_CORE_UNIT_SOURCES = libgdr/src/pin.c libgdr/src/sync_memops.c libgdr/src/pin_state.c libgdr/src/pin_index.c \
	libgdr/src/fastpath.c libgdr/src/stale.c libgdr/src/handle_table.c \
	libgdr/src/devctx.c libgdr/src/cuda_loader.c libgdr/src/lock_order.c libgdr/src/log.c
if GDRX_TEST_POINTS
GDRX_CORE_UNIT_SOURCES += libgdr/src/ipoint.c
endif
check_PROGRAMS += tests/libgdr/test_core_unit
GDRX_SUITES    += tests/libgdr/test_core_unit
tests_libgdr_test_core_unit_SOURCES  = tests/libgdr/test_core_unit.c tests/libgdr/core_fake.h \
	tests/libgdr/core_fake.c $(GDRX_CORE_UNIT_SOURCES)
tests_libgdr_test_core_unit_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -DGDRX_CORE_TEST_SEAM -DGDRX_LOCK_ORDER_FATAL \
	-I$(top_srcdir)/libgdr/src -I$(top_srcdir)/libgdr/include
tests_libgdr_test_core_unit_CFLAGS   = $(AM_CFLAGS) -pthread
tests_libgdr_test_core_unit_LDADD    = $(GDRX_TEST_LIBS) $(DL_LIBS) -lpthread
GDRX_THREAD_SUITES += tests/libgdr/test_core_unit

check_PROGRAMS += tests/libgdr/test_fork tests/libgdr/test_fork_nvrm
GDRX_SUITES    += tests/libgdr/test_fork tests/libgdr/test_fork_nvrm
GDRX_FORK_SUITES += tests/libgdr/test_fork tests/libgdr/test_fork_nvrm
tests_libgdr_test_fork_SOURCES  = tests/libgdr/test_fork.c
tests_libgdr_test_fork_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
tests_libgdr_test_fork_LDADD    = $(GDRX_LIBGDR_TEST_LIBS) -lpthread
# -rdynamic: its madvise (a fork in the middle of a map) is the one libgdrx calls.
tests_libgdr_test_fork_LDFLAGS  = $(AM_LDFLAGS) -rdynamic
tests_libgdr_test_fork_nvrm_SOURCES  = tests/libgdr/test_fork.c \
	tests/nvrm/nvrm_reexec.h tests/nvrm/nvrm_reexec.c
tests_libgdr_test_fork_nvrm_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -DFORK_NVRM \
	-I$(top_srcdir)/tests/nvrm -I$(top_srcdir)/tests/nvrm/emu
tests_libgdr_test_fork_nvrm_LDADD    = $(GDRX_LIBGDR_TEST_LIBS) -lpthread
tests_libgdr_test_fork_nvrm_LDFLAGS  = $(AM_LDFLAGS) -rdynamic
EXTRA_tests_libgdr_test_fork_nvrm_DEPENDENCIES = tests/nvrm/libnvrm_emu.la

# fork() while another thread is parked at an interleaving point where the
# forking thread must not wait for it (issue 43, defects 7 to 10); each
# case in a process of its own under alarm().  -rdynamic: its
# __register_atfork (glibc < 2.36's rule) is the one libcuda calls.
if GDRX_TEST_POINTS
# A free parked inside its hook (before and after the driver's free) holds
# a copy started through its pin until the pin is revoked.
check_PROGRAMS += tests/libgdr/test_free_hold
GDRX_SUITES    += tests/libgdr/test_free_hold
GDRX_THREAD_SUITES += tests/libgdr/test_free_hold
tests_libgdr_test_free_hold_SOURCES  = tests/libgdr/test_free_hold.c \
	tests/libgdr/parked_call.h tests/libgdr/parked_call.c
tests_libgdr_test_free_hold_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -I$(top_srcdir)/tests/harness
tests_libgdr_test_free_hold_CFLAGS   = $(AM_CFLAGS) -pthread
tests_libgdr_test_free_hold_LDADD    = $(GDRX_IPOINT_LIBS) $(GDRX_LIBGDR_TEST_LIBS) -lpthread

check_PROGRAMS += tests/libgdr/test_fork_race tests/libgdr/test_fork_race_nvrm
GDRX_SUITES    += tests/libgdr/test_fork_race tests/libgdr/test_fork_race_nvrm
GDRX_THREAD_SUITES += tests/libgdr/test_fork_race tests/libgdr/test_fork_race_nvrm
GDRX_FORK_SUITES += tests/libgdr/test_fork_race tests/libgdr/test_fork_race_nvrm
tests_libgdr_test_fork_race_SOURCES  = tests/libgdr/test_fork_race.c \
	tests/libgdr/parked_call.h tests/libgdr/parked_call.c
tests_libgdr_test_fork_race_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -I$(top_srcdir)/tests/harness
tests_libgdr_test_fork_race_CFLAGS   = $(AM_CFLAGS) -pthread
tests_libgdr_test_fork_race_LDADD    = $(GDRX_IPOINT_LIBS) $(GDRX_LIBGDR_TEST_LIBS) $(DL_LIBS) -lpthread
tests_libgdr_test_fork_race_LDFLAGS  = $(AM_LDFLAGS) -rdynamic
tests_libgdr_test_fork_race_nvrm_SOURCES  = tests/libgdr/test_fork_race.c \
	tests/libgdr/parked_call.h tests/libgdr/parked_call.c \
	tests/nvrm/nvrm_reexec.h tests/nvrm/nvrm_reexec.c
tests_libgdr_test_fork_race_nvrm_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -DFORK_RACE_NVRM \
	-I$(top_srcdir)/tests/harness -I$(top_srcdir)/tests/nvrm -I$(top_srcdir)/tests/nvrm/emu
tests_libgdr_test_fork_race_nvrm_CFLAGS   = $(AM_CFLAGS) -pthread
tests_libgdr_test_fork_race_nvrm_LDADD    = $(GDRX_IPOINT_LIBS) $(GDRX_LIBGDR_TEST_LIBS) \
	$(DL_LIBS) -lpthread
tests_libgdr_test_fork_race_nvrm_LDFLAGS  = $(AM_LDFLAGS) -rdynamic
EXTRA_tests_libgdr_test_fork_race_nvrm_DEPENDENCIES = tests/nvrm/libnvrm_emu.la
endif

# fork() while threads pin, map, copy and unpin (1,000 forks per case), on
# the default backend and on nvrm under the RM-ioctl emulator; threaded, so
# under TSan too.
check_PROGRAMS += tests/libgdr/test_fork_stress tests/libgdr/test_fork_stress_nvrm
GDRX_SUITES    += tests/libgdr/test_fork_stress tests/libgdr/test_fork_stress_nvrm
GDRX_THREAD_SUITES += tests/libgdr/test_fork_stress tests/libgdr/test_fork_stress_nvrm
GDRX_FORK_SUITES += tests/libgdr/test_fork_stress tests/libgdr/test_fork_stress_nvrm
tests_libgdr_test_fork_stress_SOURCES  = tests/libgdr/test_fork_stress.c
tests_libgdr_test_fork_stress_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
tests_libgdr_test_fork_stress_CFLAGS   = $(AM_CFLAGS) -pthread
tests_libgdr_test_fork_stress_LDADD    = $(GDRX_LIBGDR_TEST_LIBS) -lpthread
tests_libgdr_test_fork_stress_nvrm_SOURCES  = tests/libgdr/test_fork_stress.c \
	tests/nvrm/nvrm_reexec.h tests/nvrm/nvrm_reexec.c
tests_libgdr_test_fork_stress_nvrm_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -DFORK_STRESS_NVRM \
	-I$(top_srcdir)/tests/nvrm -I$(top_srcdir)/tests/nvrm/emu
tests_libgdr_test_fork_stress_nvrm_CFLAGS   = $(AM_CFLAGS) -pthread
tests_libgdr_test_fork_stress_nvrm_LDADD    = $(GDRX_LIBGDR_TEST_LIBS) -lpthread
EXTRA_tests_libgdr_test_fork_stress_nvrm_DEPENDENCIES = tests/nvrm/libnvrm_emu.la

check_PROGRAMS += tests/libgdr/test_cuda_load
GDRX_SUITES    += tests/libgdr/test_cuda_load
tests_libgdr_test_cuda_load_SOURCES  = tests/libgdr/test_cuda_load.c
tests_libgdr_test_cuda_load_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
tests_libgdr_test_cuda_load_LDADD    = $(top_builddir)/libgdr/libgdrx.la $(GDRX_TEST_LIBS) $(DL_LIBS)

check_PROGRAMS += tests/libgdr/test_handles
GDRX_SUITES    += tests/libgdr/test_handles
tests_libgdr_test_handles_SOURCES  = tests/libgdr/test_handles.c
tests_libgdr_test_handles_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
tests_libgdr_test_handles_LDADD    = $(GDRX_LIBGDR_TEST_LIBS)

# GDRX_* ignored in an AT_SECURE process (a setgid copy of env_probe run by
# user 65534; as root only), and no plain getenv of them in libgdrx.
check_PROGRAMS += tests/libgdr/env_probe tests/libgdr/test_env
GDRX_SUITES    += tests/libgdr/test_env
tests_libgdr_env_probe_SOURCES  = tests/libgdr/env_probe.c libgdr/src/log.c
tests_libgdr_env_probe_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/libgdr/src
tests_libgdr_env_probe_LDADD    = -lpthread
tests_libgdr_test_env_SOURCES   = tests/libgdr/test_env.c
tests_libgdr_test_env_CPPFLAGS  = $(GDRX_TEST_CPPFLAGS)
tests_libgdr_test_env_LDADD     = $(GDRX_TEST_LIBS)

# CUDA graph memory and pools (issue 43, defects 6 and 13).
check_PROGRAMS += tests/libgdr/test_graph_mem
GDRX_SUITES    += tests/libgdr/test_graph_mem
tests_libgdr_test_graph_mem_SOURCES  = tests/libgdr/test_graph_mem.c
tests_libgdr_test_graph_mem_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
tests_libgdr_test_graph_mem_LDADD    = $(GDRX_LIBGDR_TEST_LIBS)
