#!/bin/sh
# dkms-build.sh KERNEL_BUILD_DIR [NVIDIA_SRC]: build gdrdrv.ko here.
#
# Used by DKMS (config/dkms.conf) and for manual builds.  NVIDIA_SRC is the
# directory holding the NVIDIA driver's nv-p2p.h; by default the newest
# /usr/src/nvidia-*/nvidia (the tree the NVIDIA DKMS package installs).
# If that tree has a Module.symvers (a built driver), its symbol versions
# are used; otherwise the stub module gdrdrv-nvstub.ko is built alongside
# (never installed) so modpost can resolve the nvidia_p2p_* symbols.
set -eu
kdir=${1:?usage: dkms-build.sh KERNEL_BUILD_DIR [NVIDIA_SRC]}
here=$(cd "$(dirname "$0")" && pwd)
nvsrc=${2:-}
if [ -z "$nvsrc" ]; then
	for d in $(ls -d /usr/src/nvidia-*/nvidia /usr/src/nvidia-*/kernel-open/nvidia \
			/usr/src/nvidia-* 2>/dev/null | sort -V -r); do
		if [ -f "$d/nv-p2p.h" ]; then
			nvsrc=$d
			break
		fi
	done
fi
if [ -z "$nvsrc" ] || [ ! -f "$nvsrc/nv-p2p.h" ]; then
	echo "dkms-build.sh: nv-p2p.h not found; pass the NVIDIA driver source directory" >&2
	exit 1
fi
flavour=$(sh "$here/nv-flavour.sh" "$nvsrc")
echo "dkms-build.sh: nv-p2p.h from $nvsrc ($flavour flavour)"
symvers=
for f in "$nvsrc/Module.symvers" "$nvsrc/../Module.symvers"; do
	if [ -f "$f" ] && grep -q nvidia_p2p_get_pages "$f"; then
		symvers=$f
		break
	fi
done
if [ -n "$symvers" ]; then
	exec make -C "$kdir" M="$here" GDRDRV_NV_INC="$nvsrc" \
		GDRDRV_NV_FLAVOUR="$flavour" KBUILD_EXTRA_SYMBOLS="$symvers" modules
fi
exec make -C "$kdir" M="$here" GDRDRV_NV_INC="$nvsrc" \
	GDRDRV_NV_FLAVOUR="$flavour" GDRDRV_NV_STUB=y modules
