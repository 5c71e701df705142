# tests/tools: the benchmark tools and `make bench` on the simulated GPU.
check_PROGRAMS += tests/tools/test_bench_tools
GDRX_SUITES    += tests/tools/test_bench_tools
tests_tools_test_bench_tools_SOURCES = tests/tools/test_bench_tools.c \
	tests/tools/test_bench_script.c tests/tools/test_tool_method.c tests/tools/tt.c \
	tests/tools/tt.h tests/tools/json_check.c tests/tools/json_check.h
# test_tool_method.c calls the tools' method (libgdrx_tool) in process.
tests_tools_test_bench_tools_LDADD = $(GDRX_TEST_LIBS) $(GDRX_TOOL_LIBS)
# The tools and the plugin they load are run, not linked.
EXTRA_tests_tools_test_bench_tools_DEPENDENCIES = $(bin_PROGRAMS) tests/sim/libcuda.la
# GDRX_TEST_CUDA_DIR: where configure found cuda.h (CUDA_HOME for the GPU
# machine's build scripts).
tests_tools_test_bench_tools_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -I$(top_srcdir)/tools \
	-DGDRX_TEST_CUDA_DIR='"$(CUDA_DIR)"'
if HAVE_UCX
tests_tools_test_bench_tools_CPPFLAGS += -DGDRX_TEST_HAVE_UCX=1
EXTRA_tests_tools_test_bench_tools_DEPENDENCIES += ucx_plugin/libuct_gdrx.la
endif
EXTRA_DIST += tests/gpu/bench.sh tests/gpu/build_tools.sh tests/gpu/copy_engine.sh \
	tests/gpu/build_plugin.sh tests/gpu/fork_stress.c tests/gpu/gdrx_costs.c tests/gpu/mpi_osu.sh \
	tests/gpu/ucx_smoke.sh tests/gpu/concurrency.sh tests/gpu/graph_alias.c tests/gpu/fork_conc.c \
	tests/gpu/gpu_conc.h

# make bench from the distributed files on a machine without CUnit or
# valgrind (tests/tools/bench_bare.sh): a copy made by make distdir,
# configured and built in tests/bench-bare.
# That build is never sanitized: a sanitized make check leaves it to the
# plain one (CI runs both) rather than repeat it.
GDRX_BARE_DIR = tests/bench-bare
if GDRX_SANITIZED
check-bench-bare:
	@echo "=== suite check-bench-bare: NOT RUN (a sanitized build; the plain make check runs it)"
	@echo "check-bench-bare(not-run) 0 0" >> $(GDRX_RESULTS)
else
check-bench-bare:
	@rm -rf $(GDRX_BARE_DIR) && $(MKDIR_P) $(GDRX_BARE_DIR)
	@$(MAKE) $(AM_MAKEFLAGS) distdir distdir=$(GDRX_BARE_DIR)/src >/dev/null
	@echo "=== suite check-bench-bare"
	@$(SHELL) $(srcdir)/tests/tools/bench_bare.sh $(GDRX_BARE_DIR)/src $(GDRX_BARE_DIR)/work \
	  $(GDRX_BARE_UCX) "$(GDRX_RESULTS)" && rm -rf $(GDRX_BARE_DIR)
endif
GDRX_CHECK_EXTRA += check-bench-bare
.PHONY: check-bench-bare
# --ucx=DIR: the UCX source tree this configure found (or was given), so
# that a tree given with --with-ucx-src (as sid_leg.sh does) counts there
# too.
if HAVE_UCX
GDRX_BARE_UCX = --ucx=$(GDRX_UCX_SRC)
endif
EXTRA_DIST += tests/tools/bench_bare.sh
