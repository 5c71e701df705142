# tests/kmod: rules for this directory (included by the top-level Makefile.am)
#
# `make check-kmod` (also part of `make check`) boots the kernel the
# headers belong to under qemu (TCG) with the mock NVIDIA P2P provider, the
# gdrdrv.ko built against it and static guest test programs, runs every
# scenario in both pinning modes and reports one result per scenario.  See
# tests/kmod/README.md.

KMOD_MOCK_SRCS = tests/kmod/mock/mock_p2p.c tests/kmod/mock/mock_ctl.c \
	tests/kmod/mock/mock_internal.h \
	tests/kmod/mock/mock_nvp2p_ioctl.h tests/kmod/mock/Kbuild
KMOD_GUEST_SRCS = tests/kmod/guest/kt_main.c tests/kmod/guest/kt_common.c \
	tests/kmod/guest/kt_basic.c tests/kmod/guest/kt_revoke.c \
	tests/kmod/guest/kt_proc.c tests/kmod/guest/kt_stress.c \
	tests/kmod/guest/kt_list.c tests/kmod/guest/kt_edge.c \
	tests/kmod/guest/kt_cgroup.c tests/kmod/guest/kt_types.c
KMOD_GUEST_HDRS = tests/kmod/guest/kt.h gdrdrv/gdrdrv_ioctl.h \
	tests/kmod/mock/mock_nvp2p_ioctl.h

EXTRA_DIST += $(KMOD_MOCK_SRCS) $(KMOD_GUEST_SRCS) tests/kmod/guest/kt.h \
	tests/kmod/include/nv-p2p.h tests/kmod/guest-init.sh tests/kmod/run-qemu.sh \
	tests/kmod/check-imports.sh tests/kmod/payload.sh tests/kmod/README.md \
	tests/kmod/DEPS.txt tests/kmod/kernels.sh tests/kmod/check-dkms.sh

KMOD_DIR      = $(abs_top_builddir)/tests/kmod
KMOD_MOCK_DIR = $(KMOD_DIR)/kbuild-mock
# A build of gdrdrv as for the proprietary NVIDIA flavour, only to check
# that it imports no GPL-only kernel symbol (it is never loaded).
KMOD_PROP_DIR = $(KMOD_DIR)/kbuild-propcheck

# Scenarios run in callback mode only, and in both pinning modes.
KMOD_ONCE = get_version free_during_touch put_pages_error memcg_account
KMOD_BOTH = handles_wrap large_map map_readonly wc_conflict caching \
	pin_map_copy wc_pat handles_disjoint pin_args free_while_mapped \
	free_during_copy free_during_unpin unpin_close_exit fork fd_passing \
	threads16 fuzz cycles100k
# Hook: further static guest programs run in both modes, one result each
# (e.g. the libgdrx suites built with the gdrdrv backend).  Paths relative
# to the build tree or absolute; add with KMOD_GUEST_EXTRA += ...
KMOD_GUEST_EXTRA =
# The libgdrx API suites and libgdrapi's (gdrcopy's API over libgdrx), run
# in the guest in both modes with the gdrdrv backend on the simulated GPU (SIMCU_BACKING=mocknv: its memory is the
# mock's BAR), as dynamically linked programs with their libraries; each is
# one scenario libgdrx_NAME[MODE] and adds its cases to the totals.
# test_copy is not run: it copies between host buffers only, while these
# suites copy through gdrdrv's mappings.
KMOD_LIBGDR_SUITES = tests/libgdr/test_api$(EXEEXT) \
	tests/libgdr/test_pin_align$(EXEEXT) tests/libgdr/test_stale$(EXEEXT) \
	tests/libgdr/test_threads$(EXEEXT) tests/libgdr/test_multi_gpu$(EXEEXT) \
	tests/libgdr/test_fork_stress$(EXEEXT) \
	tests/gdrapi/test_gdrapi$(EXEEXT)
# Their environment in the guest: the sanitizer settings `make check` uses
# (a sanitized build's payload carries its runtime, found by ldd), and a
# per-case limit: a hung case fails after 120 s instead of 300.  The
# slowest suite, fork_stress (1000 forks beside one and three pinning
# threads), took 20 s for its four cases on an idle 2-core host under TCG,
# and its three-thread case passed 60 s once while that host also ran two
# other builds (2026-12-06).
KMOD_SUITE_ENV = GDRX_TEST_TIMEOUT=120 GDRX_SANITIZE=$(GDRX_SANITIZE) \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Wall-clock limit of the whole guest run (measured: about 40 s).
KMOD_TIMEOUT = 540

if HAVE_KERNEL_HEADERS
kmod-mock-module:
	@$(GDRDRV_SYNC) $(KMOD_MOCK_DIR) $(KMOD_MOCK_SRCS:%=$(srcdir)/%)
	+$(GDRDRV_KMAKE) M=$(KMOD_MOCK_DIR) \
	  MOCK_NV_INC=$(abs_top_srcdir)/tests/kmod/include modules

kmod-propcheck-module: kmod-mock-module
	@$(GDRDRV_SYNC) $(KMOD_PROP_DIR) $(GDRDRV_KSOURCES:%=$(srcdir)/%)
	+$(GDRDRV_KMAKE) M=$(KMOD_PROP_DIR) \
	  GDRDRV_NV_INC=$(abs_top_srcdir)/tests/kmod/include \
	  GDRDRV_NV_FLAVOUR=proprietary \
	  KBUILD_EXTRA_SYMBOLS=$(KMOD_MOCK_DIR)/Module.symvers modules

endif

clean-local: kmod-clean
kmod-clean:
	rm -rf $(KMOD_MOCK_DIR) $(KMOD_PROP_DIR) $(KMOD_DIR)/run $(KMOD_DIR)/kernels \
	  tests/kmod/kt

if HAVE_KMOD_TESTS
# The guest test program: static, so the initramfs needs no libraries.
tests/kmod/kt: $(KMOD_GUEST_SRCS:%=$(srcdir)/%) $(KMOD_GUEST_HDRS:%=$(srcdir)/%)
	@$(MKDIR_P) tests/kmod
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -static -pthread \
	  -I$(srcdir)/gdrdrv -I$(srcdir)/tests/kmod/mock \
	  -o $@ $(KMOD_GUEST_SRCS:%=$(srcdir)/%)

check-kmod: gdrdrv-module-mock kmod-propcheck-module tests/kmod/kt $(KMOD_GUEST_EXTRA) \
	  $(KMOD_LIBGDR_SUITES) tests/sim/libcuda.la
	@$(MKDIR_P) $(KMOD_DIR)/run
	$(SHELL) $(srcdir)/tests/kmod/run-qemu.sh --qemu "$(QEMU)" \
	  --kernel "$(KERNEL_IMAGE)" --busybox "$(BUSYBOX)" \
	  --workdir $(KMOD_DIR)/run --mock $(KMOD_MOCK_DIR)/mock_nvp2p.ko \
	  --gdrdrv $(GDRDRV_MOCK_DIR)/gdrdrv.ko --kt tests/kmod/kt \
	  --once "$(KMOD_ONCE)" --both "$(KMOD_BOTH)" \
	  --extra "$(KMOD_GUEST_EXTRA)" \
	  --suites "$(KMOD_LIBGDR_SUITES)" --dlopen libcuda.so.1 \
	  --libdirs "$(abs_top_builddir)/tests/sim/.libs $(abs_top_builddir)/libgdr/.libs $(abs_top_builddir)/libgdr/gdrapi/.libs" \
	  --guest-env "$(KMOD_SUITE_ENV)" --tools "nm readelf" \
	  --imports-ko $(KMOD_PROP_DIR)/gdrdrv.ko \
	  --symvers $(KERNEL_HEADERS)/Module.symvers \
	  --results "$(GDRX_RESULTS)" --timeout $(KMOD_TIMEOUT)

GDRX_CHECK_EXTRA += check-kmod

# The extra kernels of config/kheaders.sh (Debian 11's 5.10, Debian 12's
# 6.12): gdrdrv built against each (mock, NVIDIA and proprietary-import
# checks, W=1 -Werror) and the same qemu run booted on those with an image.
KMOD_KHEADERS = /opt/gdrx-kheaders
check-kmod-kernels: tests/kmod/kt $(KMOD_LIBGDR_SUITES) tests/sim/libcuda.la
	$(SHELL) $(srcdir)/tests/kmod/kernels.sh --dir "$(KMOD_KHEADERS)" \
	  --src "$(abs_top_srcdir)" --work "$(KMOD_DIR)/kernels" \
	  $(NVIDIA_SRC:%=--nvidia-src %) --results "$(GDRX_RESULTS)" -- \
	  --qemu "$(QEMU)" --busybox "$(BUSYBOX)" --kt tests/kmod/kt \
	  --once "$(KMOD_ONCE)" --both "$(KMOD_BOTH)" \
	  --suites "$(KMOD_LIBGDR_SUITES)" --dlopen libcuda.so.1 \
	  --libdirs "$(abs_top_builddir)/tests/sim/.libs $(abs_top_builddir)/libgdr/.libs $(abs_top_builddir)/libgdr/gdrapi/.libs" \
	  --guest-env "$(KMOD_SUITE_ENV)" --tools "nm readelf" \
	  --timeout $(KMOD_TIMEOUT)

GDRX_CHECK_EXTRA += check-kmod-kernels
else
check-kmod check-kmod-kernels:
	@echo "$@: skipped: kernel headers, qemu, busybox or the kernel image missing (see configure's summary)"
endif

.PHONY: check-kmod check-kmod-kernels kmod-clean kmod-mock-module kmod-propcheck-module
