#!/bin/sh
# dkms-build.sh KERNEL_BUILD_DIR [NVIDIA_SRC]: build gdrdrv.ko here.
#
# Used by DKMS (config/dkms.conf passes GDRDRV_KVER=${kernelver}) and for
# manual builds.  NVIDIA_SRC is the directory holding the NVIDIA driver's
# nv-p2p.h.  By default it is the /usr/src/nvidia-* tree of the driver
# installed for the kernel being built for (the version of its nvidia
# module, else of the running kernel's), and only when that cannot be
# told, the newest tree: a 535 source next to an installed 580 driver
# would give symbol versions the loaded driver does not have.
#
# The nvidia_p2p_* symbol versions come from the driver's Module.symvers
# when a built tree has one.  Otherwise a stub module (gdrdrv-nvstub.c) is
# built in nvstub/, from the same nv-p2p.h, only for its CRCs; its
# Module.symvers is rewritten to name the real exporter, nvidia, so that
# gdrdrv.ko depends on nvidia and never on the stub (never installed).
#
# Test hooks: GDRDRV_NV_SEARCH (default /usr/src) and GDRDRV_NV_VERSION
# (default: from modinfo) replace the search root and the driver version.
set -eu
kdir=${1:?usage: dkms-build.sh KERNEL_BUILD_DIR [NVIDIA_SRC]}
here=$(cd "$(dirname "$0")" && pwd)
nvsrc=${2:-}
search=${GDRDRV_NV_SEARCH:-/usr/src}
kver=${GDRDRV_KVER:-}
if [ -z "$kver" ] && [ -f "$kdir/include/generated/utsrelease.h" ]; then
	kver=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' "$kdir/include/generated/utsrelease.h")
fi

# The nv-p2p.h directory of an NVIDIA source tree, if any.
nv_dir() {
	for d in "$1/nvidia" "$1/kernel-open/nvidia" "$1"; do
		[ -f "$d/nv-p2p.h" ] && { echo "$d"; return 0; }
	done
	return 1
}

if [ -z "$nvsrc" ]; then
	nvver=${GDRDRV_NV_VERSION:-}
	if [ -z "$nvver" ] && command -v modinfo >/dev/null; then
		nvver=$( (modinfo -k "$kver" -F version nvidia 2>/dev/null ||
			  modinfo -F version nvidia 2>/dev/null) | head -n1)
	fi
	if [ -n "$nvver" ]; then
		for t in "$search"/nvidia-*"$nvver"; do
			[ -d "$t" ] && nvsrc=$(nv_dir "$t") && break
		done
		[ -n "$nvsrc" ] ||
			echo "dkms-build.sh: no $search/nvidia-*$nvver for the installed driver $nvver; using the newest source" >&2
	fi
	if [ -z "$nvsrc" ]; then
		for t in $(ls -d "$search"/nvidia-* 2>/dev/null | sort -V -r); do
			nvsrc=$(nv_dir "$t") && break
		done
	fi
fi
if [ -z "$nvsrc" ] || [ ! -f "$nvsrc/nv-p2p.h" ]; then
	echo "dkms-build.sh: nv-p2p.h not found; pass the NVIDIA driver source directory" >&2
	exit 1
fi
flavour=$(sh "$here/nv-flavour.sh" "$nvsrc")
echo "dkms-build.sh: nv-p2p.h from $nvsrc ($flavour flavour) for kernel ${kver:-?}"

symvers=
for f in "$nvsrc/Module.symvers" "$nvsrc/../Module.symvers"; do
	if [ -f "$f" ] && grep -q nvidia_p2p_get_pages "$f"; then
		symvers=$f
		break
	fi
done
if [ -z "$symvers" ]; then
	stub=$here/nvstub
	rm -rf "$stub" && mkdir -p "$stub"
	cp "$here/gdrdrv-nvstub.c" "$stub/"
	printf 'obj-m := gdrdrv-nvstub.o\nccflags-y := -I%s\n' "$nvsrc" > "$stub/Kbuild"
	make -C "$kdir" M="$stub" modules
	# Column 3 names the exporting module: the real one is nvidia.
	awk 'BEGIN { FS = OFS = "\t" } $3 ~ /gdrdrv-nvstub$/ { $3 = "nvidia" } { print }' \
		"$stub/Module.symvers" > "$stub/Module.symvers.nvidia"
	symvers=$stub/Module.symvers.nvidia
fi
exec make -C "$kdir" M="$here" GDRDRV_NV_INC="$nvsrc" \
	GDRDRV_NV_FLAVOUR="$flavour" KBUILD_EXTRA_SYMBOLS="$symvers" modules
