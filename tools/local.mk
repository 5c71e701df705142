# tools: gdrx-copylat (the latency benchmark, public API only),
# gdrx-info, and gdrx-hookcost (what the CUDA hooks cost dlsym, dlopen and
# cuMemFree; not installed).  All dlopen libcuda.so.1 and link libgdrx.
bin_PROGRAMS += tools/gdrx-copylat tools/gdrx-info
noinst_PROGRAMS += tools/gdrx-hookcost

# What both tools share: the dlopen'ed CUDA API, host facts, the clock.
noinst_LTLIBRARIES += tools/libgdrx_tool.la
tools_libgdrx_tool_la_SOURCES = tools/tool_cuda.c tools/tool_cuda.h \
	tools/tool_sys.c tools/tool_sys.h
tools_libgdrx_tool_la_LIBADD = $(DL_LIBS)

tools_gdrx_copylat_SOURCES = tools/gdrx-copylat.c tools/copylat.h \
	tools/copylat_opts.c tools/copylat_measure.c
tools_gdrx_copylat_LDADD = tools/libgdrx_tool.la $(top_builddir)/libgdr/libgdrx.la

# gdrx-info: one file per concern (info.h says which); it also links the
# copy engine's detection (see gdrx-info.c) and reads the nvrm backend's
# list of validated driver branches.  GDRX_UCX_MODULEDIR is where
# `make install` puts the UCX transport, for the fixes it prints.
tools_gdrx_info_SOURCES = tools/gdrx-info.c tools/info.h tools/info_report.c \
	tools/info_driver.c tools/info_gpus.c tools/info_backends.c tools/info_ucx.c
tools_gdrx_info_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/libgdr/src/copy \
	-I$(top_srcdir)/libgdr/src/nvrm -DGDRX_UCX_MODULEDIR='"$(ucxmoduledir)"'
tools_gdrx_info_LDADD = tools/libgdrx_tool.la $(GDRX_COPY_LIBS) \
	$(top_builddir)/libgdr/libgdrx.la $(DL_LIBS) -lpthread
man1_MANS += tools/gdrx-info.1
EXTRA_DIST += tools/gdrx-info.1

# Instruction counts of the copy path and of a CUDA free, under callgrind
# (tools/fastpath/callgrind.sh BUILDDIR; not built by make), and the
# copy check's latency on a real GPU (tools/fastpath/lat.c).
EXTRA_DIST += tools/fastpath/callgrind.sh tools/fastpath/cost.c tools/fastpath/va_shim.c \
	tools/fastpath/lat.c

tools_gdrx_hookcost_SOURCES = tools/gdrx-hookcost.c
tools_gdrx_hookcost_LDADD = tools/libgdrx_tool.la $(top_builddir)/libgdr/libgdrx.la $(DL_LIBS)
