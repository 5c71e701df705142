# tests/nvrm: the nvrm backend's suites and their test double of the
# NVIDIA kernel driver, the RM-ioctl emulator (LD_PRELOADed; the suite
# programs re-exec themselves under it, see tests/nvrm/nvrm_test.h).

# The emulator: a shared object for LD_PRELOAD, never installed.
check_LTLIBRARIES += tests/nvrm/libnvrm_emu.la
tests_nvrm_libnvrm_emu_la_SOURCES = \
	tests/nvrm/emu/nvrm_emu.h \
	tests/nvrm/emu/emu_internal.h \
	tests/nvrm/emu/emu_libc.c \
	tests/nvrm/emu/emu_config.c \
	tests/nvrm/emu/emu_rm.c \
	tests/nvrm/emu/emu_ctrl.c \
	tests/nvrm/emu/emu_uvm.c \
	tests/nvrm/emu/emu_layout.h \
	libgdr/src/nvrm/nvrm_layout.c
tests_nvrm_libnvrm_emu_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/nvrm/emu \
	-I$(top_srcdir)/libgdr/src/nvrm
tests_nvrm_libnvrm_emu_la_CFLAGS = $(AM_CFLAGS) -pthread
tests_nvrm_libnvrm_emu_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -rpath /nowhere \
	-no-undefined -pthread
tests_nvrm_libnvrm_emu_la_LIBADD = $(DL_LIBS)

GDRX_NVRM_TEST_CPPFLAGS = $(GDRX_TEST_CPPFLAGS) -I$(top_srcdir)/tests/nvrm \
	-I$(top_srcdir)/tests/nvrm/emu -I$(top_srcdir)/tests/libgdr -I$(top_srcdir)/libgdr/src/nvrm

# End to end through the public API: libgdrx (nvrm backend), the simulated
# GPU, the emulator.
check_PROGRAMS += tests/nvrm/test_nvrm
GDRX_SUITES    += tests/nvrm/test_nvrm
tests_nvrm_test_nvrm_SOURCES = \
	tests/nvrm/nvrm_test.h \
	tests/nvrm/nvrm_test.c \
	tests/nvrm/nvrm_reexec.h \
	tests/nvrm/nvrm_reexec.c \
	tests/nvrm/test_nvrm.c \
	tests/nvrm/test_nvrm_open.c \
	tests/nvrm/test_nvrm_map.c \
	tests/nvrm/test_nvrm_errors.c \
	tests/nvrm/test_nvrm_life.c \
	tests/nvrm/test_nvrm_load.c \
	tests/nvrm/test_nvrm_window.c \
	tests/nvrm/test_nvrm_branch.c \
	libgdr/src/nvrm/nvrm_layout.c
tests_nvrm_test_nvrm_CPPFLAGS = $(GDRX_NVRM_TEST_CPPFLAGS)
tests_nvrm_test_nvrm_LDADD = $(top_builddir)/tests/libgdr/libtcuda.la \
	$(top_builddir)/libgdr/libgdrx.la $(GDRX_TEST_LIBS) $(DL_LIBS)
EXTRA_tests_nvrm_test_nvrm_DEPENDENCIES = tests/nvrm/libnvrm_emu.la tests/sim/libcuda.la \
	tests/nvrm/nvrm_load_order$(EXEEXT)

# Run by test_nvrm_load.c (and on the GPU machine by tests/gpu/run.sh):
# links neither libgdrx nor libcuda, it dlopens both in a chosen order.
check_PROGRAMS += tests/nvrm/nvrm_load_order
tests_nvrm_nvrm_load_order_SOURCES = tests/nvrm/nvrm_load_order.c
tests_nvrm_nvrm_load_order_CPPFLAGS = $(GDRX_TEST_CPPFLAGS)
tests_nvrm_nvrm_load_order_LDADD = $(DL_LIBS)

# The backend's parts built into the program (no libgdrx): unit tests of
# the trace, the version policy, the import route and the view rules.
check_PROGRAMS += tests/nvrm/test_nvrm_unit
GDRX_SUITES    += tests/nvrm/test_nvrm_unit
tests_nvrm_test_nvrm_unit_SOURCES = \
	tests/nvrm/nvrm_test.h \
	tests/nvrm/nvrm_test.c \
	tests/nvrm/nvrm_reexec.h \
	tests/nvrm/nvrm_reexec.c \
	tests/nvrm/test_nvrm_unit.c \
	tests/nvrm/test_nvrm_unit_trace.c \
	tests/nvrm/test_nvrm_unit_view.c \
	$(GDRX_NVRM_SOURCES) \
	libgdr/src/log.c \
	libgdr/src/cuda_loader.c \
	libgdr/src/lock_order.c \
	libgdr/src/hooks/proc_maps.c \
	libgdr/src/hooks/got_import.c \
	libgdr/src/hooks/got_elf.c
tests_nvrm_test_nvrm_unit_CPPFLAGS = $(GDRX_NVRM_TEST_CPPFLAGS) -I$(top_srcdir)/libgdr/src \
	-I$(top_srcdir)/libgdr/src/nvrm -I$(top_srcdir)/libgdr/src/hooks
tests_nvrm_test_nvrm_unit_CFLAGS = $(AM_CFLAGS) -pthread
# libgdrx only for the shared helpers (tcuda, nvrm_test.c); no case opens
# a gdrx context, so its copy of the backend stays idle.
tests_nvrm_test_nvrm_unit_LDADD = $(top_builddir)/tests/libgdr/libtcuda.la \
	$(top_builddir)/libgdr/libgdrx.la $(GDRX_TEST_LIBS) $(DL_LIBS) -lpthread
tests_nvrm_test_nvrm_unit_LDFLAGS = $(AM_LDFLAGS) -pthread
EXTRA_tests_nvrm_test_nvrm_unit_DEPENDENCIES = tests/nvrm/libnvrm_emu.la tests/sim/libcuda.la

# The GPU machine's sanity check (tests/gpu/run.sh; not run by make check).
EXTRA_DIST += tests/gpu/build.sh tests/gpu/run.sh tests/gpu/gpu_pattern.h \
	tests/gpu/gpu_kernels.cu tests/gpu/nvrm_sanity.h tests/gpu/nvrm_sanity.c \
	tests/gpu/nvrm_sanity_life.c tests/gpu/nvrm_vmm_probe.c tests/gpu/gpu_vmm.h \
	tests/gpu/gpu_vmm.c tests/gpu/nvrm_export_probe.c tests/gpu/ucx_runs.sh tests/gpu/defaults.sh \
	tests/gpu/ce_share.c \
	tests/gpu/osu_table.awk

# The nvrm suite against every driver branch the layout table knows
# (libgdr/src/nvrm/nvrm_layout.c): the emulator and the simulated libcuda
# speak the layouts of the version they report.  The plain suite run is
# 580 (the emulator's default).  The whole suite runs once per distinct
# set of layouts (535; 545 = 550.40.07; 550.40.53 to 565; 570 = 575); the
# other versions run the map suite (open, self-test, pin, map, copies),
# which keeps this step to about a minute.
GDRX_NVRM_BRANCHES_FULL = 535.288.01 545.29.06 560.35.03 570.211.01
GDRX_NVRM_BRANCHES_MAP  = 535.43.02 550.40.07 550.163.01 555.58.02 565.77 575.64.05 580.65.06
check-nvrm-branches: tests/nvrm/test_nvrm$(EXEEXT) tests/nvrm/libnvrm_emu.la tests/sim/libcuda.la
	@for v in $(GDRX_NVRM_BRANCHES_FULL) $(GDRX_NVRM_BRANCHES_MAP); do \
	  f=; case " $(GDRX_NVRM_BRANCHES_MAP) " in *" $$v "*) f=nvrm_map/;; esac; \
	  $(GDRX_TEST_ENV) GDRX_RESULTS=$(GDRX_RESULTS) NVRM_EMU_VERSION=$$v \
	    GDRX_TEST_FILTER=$$f $(SHELL) $(srcdir)/tests/run-suites.sh tests/nvrm/test_nvrm \
	    | sed "s|^=== suite tests/nvrm/test_nvrm|=== suite tests/nvrm/test_nvrm (driver $$v)|"; \
	  if [ -n "$(GDRX_RESULTS)" ] && [ -f "$(GDRX_RESULTS)" ]; then \
	    sed -i '$$s|^tests/nvrm/test_nvrm |tests/nvrm/test_nvrm@'"$$v"' |' $(GDRX_RESULTS); fi; \
	done
GDRX_CHECK_EXTRA += check-nvrm-branches
