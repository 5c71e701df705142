# tests/mpi: gdrx under Open MPI (pml ucx) on the simulated GPU: two-rank
# latency and bandwidth programs (osu-style, data checked), the randomised
# data checks (one stream, and one stream a thread under
# MPI_THREAD_MULTIPLE; integrity_check.c is what they share) and the suite
# that runs them through mpirun with the plugin preloaded.
if HAVE_MPI
GDRX_MPI_PROG_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tools $(MPI_CFLAGS)
GDRX_MPI_PROG_LDADD = tools/libgdrx_tool.la $(MPI_LIBS) $(DL_LIBS)

check_PROGRAMS += tests/mpi/gdrx_mpi_latency tests/mpi/gdrx_mpi_bw tests/mpi/gdrx_mpi_integrity \
	tests/mpi/gdrx_mpi_threads
tests_mpi_gdrx_mpi_latency_SOURCES  = tests/mpi/gdrx_mpi_latency.c tests/mpi/mpi_bench.c tests/gpu/gpu_pattern.h \
	tests/mpi/mpi_bench.h
tests_mpi_gdrx_mpi_latency_CPPFLAGS = $(GDRX_MPI_PROG_CPPFLAGS)
tests_mpi_gdrx_mpi_latency_LDADD    = $(GDRX_MPI_PROG_LDADD)
tests_mpi_gdrx_mpi_bw_SOURCES       = tests/mpi/gdrx_mpi_bw.c tests/mpi/mpi_bench.c \
	tests/mpi/mpi_bench.h
tests_mpi_gdrx_mpi_bw_CPPFLAGS      = $(GDRX_MPI_PROG_CPPFLAGS)
tests_mpi_gdrx_mpi_bw_LDADD         = $(GDRX_MPI_PROG_LDADD)
tests_mpi_gdrx_mpi_integrity_SOURCES  = tests/mpi/gdrx_mpi_integrity.c tests/mpi/integrity_check.c \
	tests/mpi/integrity_check.h
tests_mpi_gdrx_mpi_integrity_CPPFLAGS = $(GDRX_MPI_PROG_CPPFLAGS)
tests_mpi_gdrx_mpi_integrity_LDADD    = $(GDRX_MPI_PROG_LDADD)
tests_mpi_gdrx_mpi_threads_SOURCES  = tests/mpi/gdrx_mpi_threads.c tests/mpi/integrity_check.c \
	tests/mpi/integrity_check.h
tests_mpi_gdrx_mpi_threads_CPPFLAGS = $(GDRX_MPI_PROG_CPPFLAGS)
tests_mpi_gdrx_mpi_threads_CFLAGS   = $(AM_CFLAGS) -pthread
tests_mpi_gdrx_mpi_threads_LDADD    = $(GDRX_MPI_PROG_LDADD) -lpthread

check_PROGRAMS += tests/mpi/test_mpi
GDRX_SUITES    += tests/mpi/test_mpi
tests_mpi_test_mpi_SOURCES  = tests/mpi/test_mpi.c
tests_mpi_test_mpi_CPPFLAGS = $(GDRX_UCX_TEST_CPPFLAGS) -I$(top_srcdir)/tests/ucx -DGDRX_MPIRUN='"$(MPIRUN)"' \
	-DGDRX_UCX_LIBDIR='"$(UCX_LIBDIR)"'
tests_mpi_test_mpi_CFLAGS   = $(GDRX_UCX_TEST_CFLAGS)
tests_mpi_test_mpi_LDADD    = $(GDRX_UCX_TEST_LIBS)
tests_mpi_test_mpi_LDFLAGS  = $(GDRX_UCX_TEST_LINK)
EXTRA_tests_mpi_test_mpi_DEPENDENCIES = ucx_plugin/libuct_gdrx.la tests/ucx/libuct_gdrx_wrongver.la \
	tests/ucx/libut_cuda_init.la \
	tests/mpi/gdrx_mpi_latency tests/mpi/gdrx_mpi_bw tests/mpi/gdrx_mpi_integrity \
	tests/mpi/gdrx_mpi_threads
endif
