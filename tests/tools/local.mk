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
if HAVE_UCX
tests_tools_test_bench_tools_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -I$(top_srcdir)/tools \
	-DGDRX_TEST_HAVE_UCX=1 -DGDRX_TEST_CUDA_DIR='"$(CUDA_DIR)"'
EXTRA_tests_tools_test_bench_tools_DEPENDENCIES += ucx_plugin/libuct_gdrx.la
else
tests_tools_test_bench_tools_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -I$(top_srcdir)/tools \
	-DGDRX_TEST_CUDA_DIR='"$(CUDA_DIR)"'
endif
EXTRA_DIST += tests/gpu/bench.sh tests/gpu/build_tools.sh
