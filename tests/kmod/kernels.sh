#!/bin/sh
# kernels.sh - build gdrdrv against every extra kernel unpacked by
# config/kheaders.sh and boot the qemu tests on those with an image.
#
#   kernels.sh --dir KHEADERS --src SRCDIR --work DIR [--nvidia-src DIR]
#              [--results FILE] -- RUN-QEMU-ARGS...
#
# Per kernel KVER in KHEADERS (the installed 6.1 is `make check-kmod`'s):
#   kbuild:mock[KVER]         the mock provider and gdrdrv (mock flavour)
#   kbuild:nvidia[KVER]       gdrdrv against --nvidia-src's nv-p2p.h
#   kbuild:propcheck[KVER]    the proprietary flavour, and it imports no
#                             GPL-only symbol of that kernel
# all with W=1 and -Werror; then, when KHEADERS/KVER/boot/vmlinuz-KVER
# exists, run-qemu.sh with RUN-QEMU-ARGS (scenarios, suites...) boots it
# with the modules just built, its results labelled check-kmod-KVER.
# Prints PASS/FAIL lines and "N passed, N failed"; appends
# "check-kmod-kernels P F" to FILE.  No kernel found is a skip (nothing
# recorded), or a failure with GDRX_REQUIRE_KERNELS=1 (.ci/run sets it: CI
# must not pass by building nothing).
set -u

die() { echo "kernels.sh: $*" >&2; exit 2; }

dir= src= work= nvsrc= results=
while [ $# -gt 0 ]; do
	case $1 in
	--dir) dir=$2; shift 2 ;;
	--src) src=$2; shift 2 ;;
	--work) work=$2; shift 2 ;;
	--nvidia-src) nvsrc=$2; shift 2 ;;
	--results) results=$2; shift 2 ;;
	--) shift; break ;;
	*) die "unknown argument $1" ;;
	esac
done
[ -n "$dir" ] && [ -n "$src" ] && [ -n "$work" ] || die "--dir, --src and --work are required"

pass=0 fail=0 kernels=0 boot_fail=0
result() {
	if [ "$1" = PASS ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
	echo "$1: kmod/$2"
}

ksrc="gdrdrv_main.c gdrdrv_pin.c gdrdrv_mmap.c gdrdrv_ioctl.c gdrdrv_stats.c
gdrdrv_table.c gdrdrv_gdrcopy.c gdrdrv.h gdrdrv_compat.h gdrdrv_nv.h gdrdrv_ioctl.h Kbuild"

# kmake HEADERS OUTDIR ARGS...: kbuild as gdrdrv/local.mk runs it.  CC=gcc:
# Debian's 5.10 headers name gcc-10, which bookworm does not have.
kmake() {
	h=$1 out=$2; shift 2
	nice make -C "$h" CC=gcc W=1 GDRDRV_WERROR=y CONFIG_DEBUG_INFO_BTF_MODULES= \
		M="$out" "$@" modules > "$out/build.log" 2>&1 ||
		{ tail -n 30 "$out/build.log"; return 1; }
}

# copy DEST FILE...: fresh copies of the sources.
copy() {
	d=$1; shift
	rm -rf "$d" && mkdir -p "$d" && cp "$@" "$d/"
}

for root in "$dir"/*; do
	[ -d "$root/usr/src" ] || continue
	kver=$(basename "$root")
	h=$root/usr/src/linux-headers-$kver
	[ -f "$h/Makefile" ] || continue
	kernels=$((kernels + 1))
	w=$work/$kver
	mock_ok=no

	copy "$w/mock" "$src"/tests/kmod/mock/* &&
	kmake "$h" "$w/mock" MOCK_NV_INC="$src/tests/kmod/include" &&
	copy "$w/gdrdrv-mock" $(for f in $ksrc; do echo "$src/gdrdrv/$f"; done) &&
	kmake "$h" "$w/gdrdrv-mock" GDRDRV_NV_INC="$src/tests/kmod/include" \
		GDRDRV_NV_FLAVOUR=mock KBUILD_EXTRA_SYMBOLS="$w/mock/Module.symvers" &&
	mock_ok=yes
	if [ $mock_ok = yes ]; then result PASS "kbuild:mock[$kver]"; else result FAIL "kbuild:mock[$kver]"; fi

	if [ -n "$nvsrc" ]; then
		flavour=$(sh "$src/gdrdrv/nv-flavour.sh" "$nvsrc") &&
		copy "$w/gdrdrv-nvidia" $(for f in $ksrc; do echo "$src/gdrdrv/$f"; done) \
			"$src/gdrdrv/gdrdrv-nvstub.c" &&
		kmake "$h" "$w/gdrdrv-nvidia" GDRDRV_NV_INC="$nvsrc" \
			GDRDRV_NV_FLAVOUR="$flavour" GDRDRV_NV_STUB=y &&
		result PASS "kbuild:nvidia[$kver]" || result FAIL "kbuild:nvidia[$kver]"
	fi

	if [ $mock_ok = yes ] &&
	   copy "$w/propcheck" $(for f in $ksrc; do echo "$src/gdrdrv/$f"; done) &&
	   kmake "$h" "$w/propcheck" GDRDRV_NV_INC="$src/tests/kmod/include" \
		GDRDRV_NV_FLAVOUR=proprietary KBUILD_EXTRA_SYMBOLS="$w/mock/Module.symvers" &&
	   sh "$src/tests/kmod/check-imports.sh" "$w/propcheck/gdrdrv.ko" "$h/Module.symvers"; then
		result PASS "kbuild:propcheck[$kver]"
	else
		result FAIL "kbuild:propcheck[$kver]"
	fi

	img=$root/boot/vmlinuz-$kver
	if [ -r "$img" ]; then
		if [ $mock_ok = yes ]; then
			mkdir -p "$w/run"
			sh "$src/tests/kmod/run-qemu.sh" "$@" --kernel "$img" \
				--workdir "$w/run" --mock "$w/mock/mock_nvp2p.ko" \
				--gdrdrv "$w/gdrdrv-mock/gdrdrv.ko" \
				--label "check-kmod-$kver" ${results:+--results "$results"} ||
				boot_fail=1
		else
			result FAIL "boot[$kver] (modules not built)"
		fi
	fi
done
if [ $kernels -eq 0 ]; then
	if [ "${GDRX_REQUIRE_KERNELS:-0}" != 1 ]; then
		echo "check-kmod-kernels: skipped: no kernel under $dir (run config/kheaders.sh)"
		exit 0
	fi
	result FAIL "kernels (none under $dir: run config/kheaders.sh)"
fi
[ -n "$results" ] && echo "check-kmod-kernels $pass $fail" >> "$results"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ] && [ $boot_fail -eq 0 ]
