# tests/info: gdrx-info on the simulated GPU (exit statuses, messages,
# fixes), with the nvrm emulator, a fake root for /proc and /sys, and a
# fake libnvidia-ml.so.1 and a stand-in for gdrcopy's libgdrapi.so.2 (never
# installed).
check_LTLIBRARIES += tests/info/libnvidia-ml.la
tests_info_libnvidia_ml_la_SOURCES = tests/info/fake_nvml.c
# -version-info 1:0:0 gives the soname gdrx-info dlopens: libnvidia-ml.so.1
tests_info_libnvidia_ml_la_LDFLAGS = $(AM_LDFLAGS) -rpath /nowhere -version-info 1:0:0 \
	-no-undefined

# A stand-in for NVIDIA gdrcopy's library: -version-info 2:0:0 gives the
# soname libgdrapi.so.2, in a directory of its own.
check_LTLIBRARIES += tests/info/nvgdrapi/libgdrapi.la
tests_info_nvgdrapi_libgdrapi_la_SOURCES = tests/info/fake_gdrapi.c
tests_info_nvgdrapi_libgdrapi_la_LDFLAGS = $(AM_LDFLAGS) -rpath /nowhere -version-info 2:0:0 \
	-no-undefined

check_PROGRAMS += tests/info/test_info
GDRX_SUITES    += tests/info/test_info
tests_info_test_info_SOURCES  = tests/info/test_info.c
tests_info_test_info_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
tests_info_test_info_LDADD    = $(GDRX_TEST_LIBS) $(DL_LIBS)
EXTRA_tests_info_test_info_DEPENDENCIES = tools/gdrx-info$(EXEEXT) \
	tests/info/libnvidia-ml.la tests/nvrm/libnvrm_emu.la tests/sim/libcuda.la \
	tests/info/nvgdrapi/libgdrapi.la libgdr/gdrapi/libgdrapi.la
if HAVE_UCX
tests_info_test_info_CPPFLAGS += -DGDRX_UCX_INFO='"$(UCX_INFO)"'
EXTRA_tests_info_test_info_DEPENDENCIES += ucx_plugin/libuct_gdrx.la tests/ucx/libut_cuda_init.la
endif
