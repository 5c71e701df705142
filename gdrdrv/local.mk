# gdrdrv: rules for this directory (included by the top-level Makefile.am)
#
# gdrdrv.ko is built by kbuild, not by automake.  `make` copies the module
# sources into build directories of the build tree (the source tree may be
# read-only, as under distcheck) and runs kbuild there:
#   gdrdrv/kbuild-mock/     against the mock NVIDIA provider (tests/kmod),
#                           the module `make check-kmod` boots
#   gdrdrv/kbuild-nvidia/   against nv-p2p.h of the configured NVIDIA driver
#                           source (NVIDIA_SRC), open or proprietary flavour
# Both are compiled with W=1 and -Werror.  `make install-dkms` installs the
# module source for DKMS (docs/gdrdrv.md).

GDRDRV_KSOURCES = \
	gdrdrv/gdrdrv_main.c gdrdrv/gdrdrv_pin.c gdrdrv/gdrdrv_mmap.c \
	gdrdrv/gdrdrv_ioctl.c gdrdrv/gdrdrv_stats.c gdrdrv/gdrdrv_table.c \
	gdrdrv/gdrdrv_gdrcopy.c \
	gdrdrv/gdrdrv.h gdrdrv/gdrdrv_compat.h gdrdrv/gdrdrv_nv.h \
	gdrdrv/gdrdrv_ioctl.h gdrdrv/Kbuild
# Build helpers that travel with the sources (DKMS included).
GDRDRV_KHELPERS = gdrdrv/gdrdrv-nvstub.c gdrdrv/nv-flavour.sh gdrdrv/dkms-build.sh

EXTRA_DIST += $(GDRDRV_KSOURCES) $(GDRDRV_KHELPERS) \
	config/dkms.conf config/99-gdrdrv.rules docs/gdrdrv.md config/kheaders.sh

# $(GDRDRV_SYNC) DIR FILE...: copy FILEs into DIR, leaving unchanged ones
# alone so that kbuild only rebuilds what changed.
GDRDRV_SYNC = gdrdrv_sync() { \
	d=$$1; shift; $(MKDIR_P) "$$d" || return 1; \
	for f in "$$@"; do \
	  b=`basename "$$f"`; \
	  cmp -s "$$f" "$$d/$$b" && continue; \
	  rm -f "$$d/$$b" && cp "$$f" "$$d/$$b" && chmod u+w "$$d/$$b" || return 1; \
	done; }; gdrdrv_sync

# kbuild; CONFIG_DEBUG_INFO_BTF_MODULES= skips BTF (Debian's header
# packages have no vmlinux, so kbuild would only print a notice).
GDRDRV_KMAKE = $(MAKE) -C $(KERNEL_HEADERS) W=1 GDRDRV_WERROR=y \
	CONFIG_DEBUG_INFO_BTF_MODULES=

GDRDRV_MOCK_DIR   = $(abs_top_builddir)/gdrdrv/kbuild-mock
GDRDRV_NVIDIA_DIR = $(abs_top_builddir)/gdrdrv/kbuild-nvidia
GDRDRV_MODULE_TARGETS =

if HAVE_KERNEL_HEADERS
GDRDRV_MODULE_TARGETS += gdrdrv-module-mock

# Depends on the mock provider's Module.symvers (tests/kmod/local.mk).
gdrdrv-module-mock: kmod-mock-module
	@$(GDRDRV_SYNC) $(GDRDRV_MOCK_DIR) $(GDRDRV_KSOURCES:%=$(srcdir)/%)
	+$(GDRDRV_KMAKE) M=$(GDRDRV_MOCK_DIR) \
	  GDRDRV_NV_INC=$(abs_top_srcdir)/tests/kmod/include GDRDRV_NV_FLAVOUR=mock \
	  KBUILD_EXTRA_SYMBOLS=$(KMOD_MOCK_DIR)/Module.symvers modules

if HAVE_NVIDIA_SRC
GDRDRV_MODULE_TARGETS += gdrdrv-module-nvidia

gdrdrv-module-nvidia:
	@$(GDRDRV_SYNC) $(GDRDRV_NVIDIA_DIR) \
	  $(GDRDRV_KSOURCES:%=$(srcdir)/%) $(srcdir)/gdrdrv/gdrdrv-nvstub.c
	+flavour=`$(SHELL) $(srcdir)/gdrdrv/nv-flavour.sh $(NVIDIA_SRC)` && \
	echo "gdrdrv: nv-p2p.h from $(NVIDIA_SRC) ($$flavour flavour)" && \
	$(GDRDRV_KMAKE) M=$(GDRDRV_NVIDIA_DIR) GDRDRV_NV_INC=$(NVIDIA_SRC) \
	  GDRDRV_NV_FLAVOUR=$$flavour GDRDRV_NV_STUB=y modules

# The DKMS source as installed, built as DKMS builds it (driver source
# choice, no dependency on the stub): tests/kmod/check-dkms.sh.
GDRDRV_DKMS_CHECK = $(abs_top_builddir)/gdrdrv/dkms-check
check-dkms:
	rm -rf $(GDRDRV_DKMS_CHECK)
	$(MAKE) $(AM_MAKEFLAGS) install-dkms DESTDIR=$(GDRDRV_DKMS_CHECK)/root
	$(SHELL) $(srcdir)/tests/kmod/check-dkms.sh \
	  $(GDRDRV_DKMS_CHECK)/root$(dkmsdir)/gdrdrv-$(VERSION) $(KERNEL_HEADERS) \
	  $(KERNEL_VERSION) $(NVIDIA_SRC) $(GDRDRV_DKMS_CHECK)/work "$(GDRX_RESULTS)"

GDRX_CHECK_EXTRA += check-dkms
endif

endif

gdrdrv-modules: $(GDRDRV_MODULE_TARGETS)
all-local: gdrdrv-modules
clean-local: gdrdrv-clean
gdrdrv-clean:
	rm -rf $(GDRDRV_MOCK_DIR) $(GDRDRV_NVIDIA_DIR) $(abs_top_builddir)/gdrdrv/dkms-check

# DKMS: the module source, the build helpers and dkms.conf with this
# version, in $(dkmsdir)/gdrdrv-$(VERSION).  Then:
#   dkms install gdrdrv/$(VERSION)
GDRDRV_DKMS_DIR = $(DESTDIR)$(dkmsdir)/gdrdrv-$(VERSION)
install-dkms:
	$(MKDIR_P) $(GDRDRV_DKMS_DIR)
	for f in $(GDRDRV_KSOURCES) $(GDRDRV_KHELPERS); do \
	  $(INSTALL_DATA) $(srcdir)/$$f $(GDRDRV_DKMS_DIR)/ || exit 1; \
	done
	chmod +x $(GDRDRV_DKMS_DIR)/nv-flavour.sh $(GDRDRV_DKMS_DIR)/dkms-build.sh
	sed 's/[@]VERSION[@]/$(VERSION)/' $(srcdir)/config/dkms.conf > $(GDRDRV_DKMS_DIR)/dkms.conf
	@echo "gdrdrv $(VERSION) source installed in $(GDRDRV_DKMS_DIR);"
	@echo "now: dkms install gdrdrv/$(VERSION)"

uninstall-dkms:
	rm -rf $(GDRDRV_DKMS_DIR)

# The udev rule creating /dev/gdrdrv (mode and group: docs/gdrdrv.md).
udevrules_DATA = config/99-gdrdrv.rules

.PHONY: gdrdrv-modules gdrdrv-clean gdrdrv-module-mock gdrdrv-module-nvidia check-dkms \
	install-dkms uninstall-dkms
