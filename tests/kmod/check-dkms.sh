#!/bin/sh
# check-dkms.sh DKMS_SRC KERNEL_HEADERS KVER NVIDIA_SRC WORK [RESULTS]
#
# Builds the installed DKMS source (`make install-dkms` into a staging
# root) as DKMS would, against two fake NVIDIA driver trees made from
# NVIDIA_SRC (versions 535.1 and 999.9), and checks that
#   dkms:installed_driver   the tree of the installed driver (535.1 here,
#                           given as GDRDRV_NV_VERSION) is used, not the
#                           newest;
#   dkms:newest_fallback    with no driver version known, the newest;
#   dkms:depends_nvidia     gdrdrv.ko depends on nvidia, never on the
#                           build-only stub module.
# Prints PASS/FAIL lines and "N passed, N failed"; appends
# "check-dkms P F" to RESULTS.
set -u
[ $# -ge 5 ] || { echo "usage: check-dkms.sh DKMS_SRC KHEADERS KVER NVIDIA_SRC WORK [RESULTS]" >&2; exit 2; }
src=$1 kdir=$2 kver=$3 nvsrc=$4 work=$5 results=${6:-}
# modinfo is in /usr/sbin, which a normal user's PATH lacks.
PATH=$PATH:/usr/sbin:/sbin
pass=0 fail=0
result() {
	if [ "$1" = PASS ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
	echo "$1: kmod/$2"
}

rm -rf "$work" && mkdir -p "$work/search"
for v in 535.1 999.9; do
	mkdir -p "$work/search/nvidia-$v/nvidia" &&
	cp "$nvsrc"/nv-p2p.h "$work/search/nvidia-$v/nvidia/" || exit 2
done

# build NAME [ENV...]: a fresh copy of the DKMS source built as DKMS does.
build() {
	name=$1; shift
	rm -rf "$work/$name" && cp -a "$src" "$work/$name" &&
	(cd "$work/$name" && env GDRDRV_NV_SEARCH="$work/search" GDRDRV_KVER="$kver" "$@" \
		sh ./dkms-build.sh "$kdir") > "$work/$name.log" 2>&1
}

if build installed GDRDRV_NV_VERSION=535.1 &&
   grep -q "nv-p2p.h from $work/search/nvidia-535.1/nvidia " "$work/installed.log"; then
	result PASS dkms:installed_driver
else
	result FAIL dkms:installed_driver; tail -n 20 "$work/installed.log"
fi
deps=$(modinfo -F depends "$work/installed/gdrdrv.ko" 2>/dev/null)
if [ "$deps" = nvidia ]; then
	result PASS dkms:depends_nvidia
else
	result FAIL "dkms:depends_nvidia (depends: '$deps')"
fi
if build newest GDRDRV_NV_VERSION=0.0.none &&
   grep -q "nv-p2p.h from $work/search/nvidia-999.9/nvidia " "$work/newest.log"; then
	result PASS dkms:newest_fallback
else
	result FAIL dkms:newest_fallback; tail -n 20 "$work/newest.log"
fi
[ -n "$results" ] && echo "check-dkms $pass $fail" >> "$results"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
