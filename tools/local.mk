# tools: the benchmark suite (gdrx-copylat, gdrx-copybw, gdrx-apiperf,
# gdrx-pplat; public API only), gdrx-info, and gdrx-hookcost (what the CUDA
# hooks cost dlsym, dlopen and cuMemFree; not installed).  All dlopen
# libcuda.so.1 and link libgdrx; none links a CUDA library.
bin_PROGRAMS += tools/gdrx-copylat tools/gdrx-copybw tools/gdrx-apiperf tools/gdrx-pplat \
	tools/gdrx-info
noinst_PROGRAMS += tools/gdrx-hookcost
GDRX_TOOL_MANS = tools/man/gdrx-copylat.1 tools/man/gdrx-copybw.1 tools/man/gdrx-apiperf.1 \
	tools/man/gdrx-pplat.1
man1_MANS += $(GDRX_TOOL_MANS)
EXTRA_DIST += $(GDRX_TOOL_MANS)

# What the tools share: the dlopen'ed CUDA API, host facts and CPU pinning,
# the clock and the batch method, the command line, the table/CSV/JSON
# writers, the copies and their floor, and -v all.
noinst_LTLIBRARIES += tools/libgdrx_tool.la
tools_libgdrx_tool_la_SOURCES = tools/tool_cuda.c tools/tool_cuda.h \
	tools/tool_sys.c tools/tool_sys.h tools/tool_clock.c tools/tool_clock.h \
	tools/tool_measure.c tools/tool_measure.h tools/tool_opts.c tools/tool_opts.h \
	tools/tool_table.c tools/tool_table.h tools/tool_out.c tools/tool_out.h \
	tools/tool_env.c tools/tool_env.h tools/tool_copy.c tools/tool_copy.h \
	tools/tool_floor.c tools/tool_floor.h tools/tool_variants.c tools/tool_variants.h \
	tools/copy_tool.c tools/copy_tool.h
tools_libgdrx_tool_la_LIBADD = $(DL_LIBS)
GDRX_TOOL_LIBS = tools/libgdrx_tool.la $(top_builddir)/libgdr/libgdrx.la $(DL_LIBS)

tools_gdrx_copylat_SOURCES = tools/gdrx-copylat.c
tools_gdrx_copylat_LDADD = $(GDRX_TOOL_LIBS)

tools_gdrx_copybw_SOURCES = tools/gdrx-copybw.c
tools_gdrx_copybw_LDADD = $(GDRX_TOOL_LIBS)

# The registration-cache part needs UCX (and the plugin it loads).
tools_gdrx_apiperf_SOURCES = tools/gdrx-apiperf.c tools/apiperf.h tools/apiperf_ucx.c
tools_gdrx_apiperf_LDADD = $(GDRX_TOOL_LIBS)
if HAVE_UCX
tools_gdrx_apiperf_CPPFLAGS = $(AM_CPPFLAGS) $(UCX_CPPFLAGS:-I%=-isystem %) -DGDRX_APIPERF_UCX=1 \
	-DGDRX_UCX_PLUGIN_DIR='"$(ucxmoduledir)"'
tools_gdrx_apiperf_CFLAGS = $(AM_CFLAGS) -std=gnu11
tools_gdrx_apiperf_LDADD += $(UCX_LIBS)
tools_gdrx_apiperf_LDFLAGS = $(AM_LDFLAGS) -Wl,-rpath,$(UCX_LIBDIR)
else
tools_gdrx_apiperf_CPPFLAGS = $(AM_CPPFLAGS)
tools_gdrx_apiperf_CFLAGS = $(AM_CFLAGS)
tools_gdrx_apiperf_LDFLAGS = $(AM_LDFLAGS)
endif

# The ping-pong: its GPU kernel is compiled by nvcc into a fatbin that the
# program embeds and loads with cuModuleLoadData (no CUDA library linked).
# Without nvcc the program is built without it and reports "not run".
tools_gdrx_pplat_SOURCES = tools/gdrx-pplat.c tools/pplat.h tools/pplat_gpu.c \
	tools/pplat_sim.c tools/pplat_image.c
tools_gdrx_pplat_LDADD = $(GDRX_TOOL_LIBS) -lpthread
tools_gdrx_pplat_CFLAGS = $(AM_CFLAGS) -pthread
EXTRA_DIST += tools/pplat_kernel.cu
if HAVE_NVCC
tools_gdrx_pplat_CPPFLAGS = $(AM_CPPFLAGS) -DGDRX_PPLAT_FATBIN='"tools/pplat_kernel.fatbin"'
tools/pplat_kernel.fatbin: $(srcdir)/tools/pplat_kernel.cu
	$(AM_V_GEN)$(MKDIR_P) tools && $(NVCC) $(GDRX_NVCC_ARCH) --fatbin -o $@ $(srcdir)/tools/pplat_kernel.cu
tools/gdrx_pplat-pplat_image.$(OBJEXT): tools/pplat_kernel.fatbin
CLEANFILES += tools/pplat_kernel.fatbin
else
tools_gdrx_pplat_CPPFLAGS = $(AM_CPPFLAGS)
endif

# gdrx-info: one file per concern (info.h says which); it also links the
# copy engine's detection (see gdrx-info.c) and reads the nvrm backend's
# driver-branch layout table (nvrm_layout.c).  GDRX_UCX_MODULEDIR is where
# `make install` puts the UCX transport, for the fixes it prints.
tools_gdrx_info_SOURCES = tools/gdrx-info.c tools/info.h tools/info_report.c \
	tools/info_driver.c tools/info_gpus.c tools/info_backends.c tools/info_hooks.c tools/info_ucx.c \
	tools/info_gdrapi.c libgdr/src/nvrm/nvrm_layout.c
tools_gdrx_info_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/libgdr/src/copy \
	-I$(top_srcdir)/libgdr/src/nvrm -DGDRX_UCX_MODULEDIR='"$(ucxmoduledir)"'
tools_gdrx_info_LDADD = tools/libgdrx_tool.la $(GDRX_COPY_LIBS) \
	$(top_builddir)/libgdr/libgdrx.la $(DL_LIBS) -lpthread
man1_MANS += tools/man/gdrx-info.1
EXTRA_DIST += tools/man/gdrx-info.1

# Instruction counts of the copy path and of a CUDA free, under callgrind
# (tools/fastpath/callgrind.sh BUILDDIR; not built by make), and the
# copy check's latency on a real GPU (tools/fastpath/lat.c).
EXTRA_DIST += tools/fastpath/callgrind.sh tools/fastpath/cost.c tools/fastpath/va_shim.c \
	tools/fastpath/lat.c

tools_gdrx_hookcost_SOURCES = tools/gdrx-hookcost.c
tools_gdrx_hookcost_LDADD = tools/libgdrx_tool.la $(top_builddir)/libgdr/libgdrx.la $(DL_LIBS)
