# tests/ucx: the gdrx UCX transport through UCT and UCP, on the simulated
# GPU.  Without a configured UCX the suites are reported as not run.
EXTRA_DIST += tests/ucx/check_layers.sh tests/ucx/sid_leg.sh tests/ucx/cuda_leg.sh
if HAVE_UCX
GDRX_UCX_TEST_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -I$(top_srcdir)/tests/libgdr \
	-I$(top_srcdir)/tests/sim $(UCX_CPPFLAGS:-I%=-isystem %)
GDRX_UCX_TEST_CFLAGS = $(AM_CFLAGS) -std=gnu11 -pthread
GDRX_UCX_TEST_LIBS = $(top_builddir)/tests/ucx/libut_uct.la \
	$(top_builddir)/tests/libgdr/libtcuda.la $(top_builddir)/libgdr/libgdrx.la \
	$(GDRX_TEST_LIBS) $(UCX_LIBS) $(UCP_LIBS) $(DL_LIBS) -lpthread
# UCX_LIBDIR may hold another UCX than the system's (1.16, 1.22 builds).
GDRX_UCX_TEST_LINK = $(AM_LDFLAGS) -pthread -Wl,-rpath,$(UCX_LIBDIR)

check_LTLIBRARIES += tests/ucx/libut_uct.la
tests_ucx_libut_uct_la_SOURCES  = tests/ucx/ut_uct.h tests/ucx/ut_uct.c tests/ucx/ut_version.h \
	tests/ucx/ut_ucp.h tests/ucx/ut_ucp.c tests/ucx/ut_ucx_hooks.h tests/ucx/ut_ucx_hooks.c
tests_ucx_libut_uct_la_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS)
tests_ucx_libut_uct_la_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)

check_PROGRAMS += tests/ucx/test_uct
GDRX_SUITES    += tests/ucx/test_uct
tests_ucx_test_uct_SOURCES  = tests/ucx/test_uct.c
tests_ucx_test_uct_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS)
tests_ucx_test_uct_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_test_uct_LDADD    = $(GDRX_UCX_TEST_LIBS)
tests_ucx_test_uct_LDFLAGS  = $(GDRX_UCX_TEST_LINK)
EXTRA_tests_ucx_test_uct_DEPENDENCIES = ucx_plugin/libuct_gdrx.la

check_PROGRAMS += tests/ucx/test_dma
GDRX_SUITES    += tests/ucx/test_dma
tests_ucx_test_dma_SOURCES  = tests/ucx/test_dma.c
tests_ucx_test_dma_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS)
tests_ucx_test_dma_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_test_dma_LDADD    = $(GDRX_UCX_TEST_LIBS)
tests_ucx_test_dma_LDFLAGS  = $(GDRX_UCX_TEST_LINK)
EXTRA_tests_ucx_test_dma_DEPENDENCIES = ucx_plugin/libuct_gdrx.la

check_PROGRAMS += tests/ucx/test_ep
GDRX_SUITES    += tests/ucx/test_ep
tests_ucx_test_ep_SOURCES  = tests/ucx/test_ep.c
tests_ucx_test_ep_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS)
tests_ucx_test_ep_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_test_ep_LDADD    = $(GDRX_UCX_TEST_LIBS)
tests_ucx_test_ep_LDFLAGS  = $(GDRX_UCX_TEST_LINK)
EXTRA_tests_ucx_test_ep_DEPENDENCIES = ucx_plugin/libuct_gdrx.la

check_PROGRAMS += tests/ucx/test_md_setup
GDRX_SUITES    += tests/ucx/test_md_setup
tests_ucx_test_md_setup_SOURCES  = tests/ucx/test_md_setup.c
tests_ucx_test_md_setup_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS)
tests_ucx_test_md_setup_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_test_md_setup_LDADD    = $(GDRX_UCX_TEST_LIBS)
tests_ucx_test_md_setup_LDFLAGS  = $(GDRX_UCX_TEST_LINK)
EXTRA_tests_ucx_test_md_setup_DEPENDENCIES = ucx_plugin/libuct_gdrx.la

check_PROGRAMS += tests/ucx/test_rcache
GDRX_SUITES    += tests/ucx/test_rcache
tests_ucx_test_rcache_SOURCES  = tests/ucx/test_rcache.c
tests_ucx_test_rcache_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS)
tests_ucx_test_rcache_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_test_rcache_LDADD    = $(GDRX_UCX_TEST_LIBS)
# exports its ucs_rcache_create, which sees the flags gdrx passes
tests_ucx_test_rcache_LDFLAGS  = $(GDRX_UCX_TEST_LINK) -Wl,--export-dynamic
EXTRA_tests_ucx_test_rcache_DEPENDENCIES = ucx_plugin/libuct_gdrx.la

# Forks: libgdrx's handlers registered when UCX loads the plugin, and
# again with a purging UCX cache made before that (fork_defer.c's case).
check_PROGRAMS += tests/ucx/test_rcache_fork tests/ucx/test_rcache_fork_cache_first
GDRX_SUITES    += tests/ucx/test_rcache_fork tests/ucx/test_rcache_fork_cache_first
tests_ucx_test_rcache_fork_SOURCES  = tests/ucx/test_rcache_fork.c
tests_ucx_test_rcache_fork_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS)
tests_ucx_test_rcache_fork_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_test_rcache_fork_LDADD    = $(GDRX_UCX_TEST_LIBS)
tests_ucx_test_rcache_fork_LDFLAGS  = $(GDRX_UCX_TEST_LINK)
EXTRA_tests_ucx_test_rcache_fork_DEPENDENCIES = ucx_plugin/libuct_gdrx.la
tests_ucx_test_rcache_fork_cache_first_SOURCES  = tests/ucx/test_rcache_fork.c
tests_ucx_test_rcache_fork_cache_first_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS) -DUT_CACHE_FIRST
tests_ucx_test_rcache_fork_cache_first_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_test_rcache_fork_cache_first_LDADD    = $(GDRX_UCX_TEST_LIBS)
tests_ucx_test_rcache_fork_cache_first_LDFLAGS  = $(GDRX_UCX_TEST_LINK)
EXTRA_tests_ucx_test_rcache_fork_cache_first_DEPENDENCIES = ucx_plugin/libuct_gdrx.la

# The same cases next to a CUDA-enabled UCX (its own CUDA hooks on): the
# program runs itself again with that UCX's libraries first.
check_PROGRAMS += tests/ucx/test_rcache_ucx_hooks
GDRX_SUITES    += tests/ucx/test_rcache_ucx_hooks
tests_ucx_test_rcache_ucx_hooks_SOURCES  = tests/ucx/test_rcache.c
tests_ucx_test_rcache_ucx_hooks_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS) -DUT_UCX_HOOKS
tests_ucx_test_rcache_ucx_hooks_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_test_rcache_ucx_hooks_LDADD    = $(GDRX_UCX_TEST_LIBS)
tests_ucx_test_rcache_ucx_hooks_LDFLAGS  = $(GDRX_UCX_TEST_LINK) -Wl,--export-dynamic
EXTRA_tests_ucx_test_rcache_ucx_hooks_DEPENDENCIES = ucx_plugin/libuct_gdrx.la

check_PROGRAMS += tests/ucx/test_reg
GDRX_SUITES    += tests/ucx/test_reg
tests_ucx_test_reg_SOURCES  = tests/ucx/test_reg.c
tests_ucx_test_reg_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS)
tests_ucx_test_reg_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_test_reg_LDADD    = $(GDRX_UCX_TEST_LIBS)
tests_ucx_test_reg_LDFLAGS  = $(GDRX_UCX_TEST_LINK)
EXTRA_tests_ucx_test_reg_DEPENDENCIES = ucx_plugin/libuct_gdrx.la

# Registrations no one allocation holds, keys that outlive theirs.
check_PROGRAMS += tests/ucx/test_span
GDRX_SUITES    += tests/ucx/test_span
tests_ucx_test_span_SOURCES  = tests/ucx/test_span.c
tests_ucx_test_span_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS)
tests_ucx_test_span_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_test_span_LDADD    = $(GDRX_UCX_TEST_LIBS)
tests_ucx_test_span_LDFLAGS  = $(GDRX_UCX_TEST_LINK)
EXTRA_tests_ucx_test_span_DEPENDENCIES = ucx_plugin/libuct_gdrx.la

check_PROGRAMS += tests/ucx/test_ucp
GDRX_SUITES    += tests/ucx/test_ucp
tests_ucx_test_ucp_SOURCES  = tests/ucx/test_ucp.c
tests_ucx_test_ucp_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS)
tests_ucx_test_ucp_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_test_ucp_LDADD    = $(GDRX_UCX_TEST_LIBS)
tests_ucx_test_ucp_LDFLAGS  = $(GDRX_UCX_TEST_LINK)
EXTRA_tests_ucx_test_ucp_DEPENDENCIES = ucx_plugin/libuct_gdrx.la

check_PROGRAMS += tests/ucx/test_ucp_lifetime
GDRX_SUITES    += tests/ucx/test_ucp_lifetime
tests_ucx_test_ucp_lifetime_SOURCES  = tests/ucx/test_ucp_lifetime.c
tests_ucx_test_ucp_lifetime_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS)
tests_ucx_test_ucp_lifetime_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_test_ucp_lifetime_LDADD    = $(GDRX_UCX_TEST_LIBS)
tests_ucx_test_ucp_lifetime_LDFLAGS  = $(GDRX_UCX_TEST_LINK)
EXTRA_tests_ucx_test_ucp_lifetime_DEPENDENCIES = ucx_plugin/libuct_gdrx.la

# gdrx that cannot serve (backend forced to one that does not open, CUDA
# failing at first use) steps aside.
check_PROGRAMS += tests/ucx/test_ucp_aside
GDRX_SUITES    += tests/ucx/test_ucp_aside
tests_ucx_test_ucp_aside_SOURCES  = tests/ucx/test_ucp_aside.c
tests_ucx_test_ucp_aside_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS)
tests_ucx_test_ucp_aside_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_test_ucp_aside_LDADD    = $(GDRX_UCX_TEST_LIBS)
tests_ucx_test_ucp_aside_LDFLAGS  = $(GDRX_UCX_TEST_LINK)
EXTRA_tests_ucx_test_ucp_aside_DEPENDENCIES = ucx_plugin/libuct_gdrx.la

# Benchmark, not a test: `make check` builds it, nobody runs it there.
check_PROGRAMS += tests/ucx/bench_uct
tests_ucx_bench_uct_SOURCES  = tests/ucx/bench_uct.c
tests_ucx_bench_uct_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS)
tests_ucx_bench_uct_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_bench_uct_LDADD    = $(GDRX_UCX_TEST_LIBS)
tests_ucx_bench_uct_LDFLAGS  = $(GDRX_UCX_TEST_LINK)
EXTRA_tests_ucx_bench_uct_DEPENDENCIES = ucx_plugin/libuct_gdrx.la

# ucx_info with LD_PRELOAD, ucx.conf, and a plugin that records the wrong
# UCX release (built only for this test).
# A two-rank UCP job over whatever UCX the library path gives, and the
# suite that runs it in the configurations users leave or set (UCX_TLS
# unset, all, ^gdr_copy, the network path), next to the system's UCX and,
# where config/deps.sh built it, a CUDA-enabled one with gdr_copy over
# gdrx's libgdrapi (tests/ucx/test_ucp_defaults.c).
check_PROGRAMS += tests/ucx/ucp_job
tests_ucx_ucp_job_SOURCES  = tests/ucx/ucp_job.c
tests_ucx_ucp_job_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS)
tests_ucx_ucp_job_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_ucp_job_LDADD    = $(top_builddir)/tests/sim/libcuda.la $(UCP_LIBS) $(UCX_LIBS)
tests_ucx_ucp_job_LDFLAGS  = $(GDRX_UCX_TEST_LINK)

check_PROGRAMS += tests/ucx/test_ucp_defaults
GDRX_SUITES    += tests/ucx/test_ucp_defaults
tests_ucx_test_ucp_defaults_SOURCES  = tests/ucx/test_ucp_defaults.c
tests_ucx_test_ucp_defaults_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS) -DGDRX_UCX_LIBDIR='"$(UCX_LIBDIR)"'
tests_ucx_test_ucp_defaults_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_test_ucp_defaults_LDADD    = $(GDRX_UCX_TEST_LIBS)
tests_ucx_test_ucp_defaults_LDFLAGS  = $(GDRX_UCX_TEST_LINK)
EXTRA_tests_ucx_test_ucp_defaults_DEPENDENCIES = ucx_plugin/libuct_gdrx.la \
	tests/ucx/ucp_job tests/sim/libcudart.la libgdr/gdrapi/libgdrapi.la \
	tests/info/libnvidia-ml.la

check_PROGRAMS += tests/ucx/test_tools
GDRX_SUITES    += tests/ucx/test_tools
tests_ucx_test_tools_SOURCES  = tests/ucx/test_tools.c
tests_ucx_test_tools_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS) -DGDRX_UCX_INFO='"$(UCX_INFO)"' \
	-DGDRX_UCX_LIBDIR='"$(UCX_LIBDIR)"'
tests_ucx_test_tools_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_test_tools_LDADD    = $(GDRX_UCX_TEST_LIBS)
tests_ucx_test_tools_LDFLAGS  = $(GDRX_UCX_TEST_LINK)
EXTRA_tests_ucx_test_tools_DEPENDENCIES = ucx_plugin/libuct_gdrx.la \
	tests/ucx/libuct_gdrx_wrongver.la tests/ucx/libut_cuda_init.la \
	tests/ucx/ut_uct_only tests/ucx/libut_fake_ucp.la

# test_tools's UCT-only program: libuct and libucs, never libucp.
check_PROGRAMS += tests/ucx/ut_uct_only
tests_ucx_ut_uct_only_SOURCES  = tests/ucx/ut_uct_only.c
tests_ucx_ut_uct_only_CPPFLAGS = $(UCX_CPPFLAGS:-I%=-isystem %)
tests_ucx_ut_uct_only_CFLAGS   = $(AM_CFLAGS)
tests_ucx_ut_uct_only_LDADD    = $(UCX_LIBS) $(DL_LIBS)
tests_ucx_ut_uct_only_LDFLAGS  = $(GDRX_UCX_TEST_LINK)

# Preloaded by the suites that run programs of their own (ucx_info, MPI
# ranks): CUDA initialised at load, as a CUDA program does early.
check_LTLIBRARIES += tests/ucx/libut_cuda_init.la
tests_ucx_libut_cuda_init_la_SOURCES = tests/ucx/ut_cuda_init.c
tests_ucx_libut_cuda_init_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -rpath /nowhere \
	-no-undefined
tests_ucx_libut_cuda_init_la_LIBADD  = $(DL_LIBS)

check_LTLIBRARIES += tests/ucx/libuct_gdrx_wrongver.la
tests_ucx_libuct_gdrx_wrongver_la_SOURCES  = $(GDRX_UCX_PLUGIN_SOURCES)
tests_ucx_libuct_gdrx_wrongver_la_CPPFLAGS = $(GDRX_UCX_PLUGIN_CPPFLAGS) \
	-DUCT_GDRX_TEST_FAKE_UCX_VERSION='"1.12.0"'
tests_ucx_libuct_gdrx_wrongver_la_CFLAGS   = $(GDRX_UCX_PLUGIN_CFLAGS)
tests_ucx_libuct_gdrx_wrongver_la_LDFLAGS  = $(GDRX_UCX_PLUGIN_LDFLAGS) -rpath /nowhere -avoid-version
tests_ucx_libuct_gdrx_wrongver_la_LIBADD   = $(GDRX_UCX_PLUGIN_LIBADD)

# test_tools's stand-in libucp.so.0 (only ucp_get_version, answering
# $UT_FAKE_UCP_VERSION or nothing), linked next to a libuct by the case.
check_LTLIBRARIES += tests/ucx/libut_fake_ucp.la
tests_ucx_libut_fake_ucp_la_SOURCES = tests/ucx/ut_fake_ucp.c
tests_ucx_libut_fake_ucp_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -rpath /nowhere \
	-no-undefined

# Races forced with the interleaving points (test-point builds): the
# memory-type cache under a free and an allocation at one address, with
# gdrx's bridge and next to a CUDA-enabled UCX's own hooks.
if GDRX_TEST_POINTS
check_PROGRAMS     += tests/ucx/test_memtype_race tests/ucx/test_memtype_race_ucx_hooks
GDRX_SUITES        += tests/ucx/test_memtype_race tests/ucx/test_memtype_race_ucx_hooks
# Not among the TSan suites: UCX's own madvise hook (UCM) takes a lock as
# glibc frees an exiting thread's stack, after TSan let go of that thread,
# and TSan's runtime crashes there (a UCX/TSan clash, not this test's).
tests_ucx_test_memtype_race_SOURCES  = tests/ucx/test_memtype_race.c
tests_ucx_test_memtype_race_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS)
tests_ucx_test_memtype_race_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_test_memtype_race_LDADD    = $(GDRX_IPOINT_LIBS) $(GDRX_UCX_TEST_LIBS)
tests_ucx_test_memtype_race_LDFLAGS  = $(GDRX_UCX_TEST_LINK)
EXTRA_tests_ucx_test_memtype_race_DEPENDENCIES = ucx_plugin/libuct_gdrx.la
tests_ucx_test_memtype_race_ucx_hooks_SOURCES  = tests/ucx/test_memtype_race.c
tests_ucx_test_memtype_race_ucx_hooks_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS) -DUT_UCX_HOOKS
tests_ucx_test_memtype_race_ucx_hooks_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_ucx_test_memtype_race_ucx_hooks_LDADD    = $(GDRX_IPOINT_LIBS) $(GDRX_UCX_TEST_LIBS)
tests_ucx_test_memtype_race_ucx_hooks_LDFLAGS  = $(GDRX_UCX_TEST_LINK)
EXTRA_tests_ucx_test_memtype_race_ucx_hooks_DEPENDENCIES = ucx_plugin/libuct_gdrx.la
endif

# The plugin's layers (the list in ucx_plugin/uct_gdrx_types.h): includes,
# declarations and the built objects' references go only downward, and
# nothing loops.
check-ucx-layers: ucx_plugin/libuct_gdrx.la
	@$(SHELL) $(srcdir)/tests/ucx/check_layers.sh $(srcdir)/ucx_plugin \
	  ucx_plugin/.libs "$(GDRX_RESULTS)"
GDRX_CHECK_EXTRA += check-ucx-layers
else
check-ucx-not-run:
	@echo "=== suite tests/ucx: NOT RUN (UCX not configured: see configure's summary)"
	@echo "tests/ucx(not-run) 0 0" >> $(GDRX_RESULTS)
GDRX_CHECK_EXTRA += check-ucx-not-run
endif
.PHONY: check-ucx-layers check-ucx-not-run
