#!/bin/sh
# run-qemu.sh - boot a kernel under qemu (TCG) with gdrdrv, the mock NVIDIA
# P2P provider and the guest test programs, and report the results.
#
#   run-qemu.sh --qemu QEMU --kernel VMLINUZ --busybox BUSYBOX
#               --workdir DIR --mock MOCK.ko --gdrdrv GDRDRV.ko --kt KT
#               --once "SCENARIOS" --both "SCENARIOS" [--extra "PROGRAMS"]
#               [--suites "PROGRAMS" --libdirs "DIRS" --dlopen "LIBS"]
#               [--guest-env "VAR=VALUE..."] [--tools "PROGRAMS"]
#               [--imports-ko KO --symvers Module.symvers]
#               [--results FILE] [--label NAME] [--timeout SECONDS]
#
# --once scenarios run in callback mode only, --both in both pinning
# modes.  --extra names further static guest programs (copied to /extra),
# run in both modes; each counts as one result.  --suites names dynamically
# linked CUnit suites (the libgdrx API suites, libtool wrappers or real
# programs): they run in both modes with the gdrdrv backend on the
# simulated GPU whose memory is the mock's BAR, each is reported as
# libgdrx_NAME[MODE] (NAME without "test_") and adds its cases to the
# totals.  Their shared libraries, found by ldd with --libdirs (and the
# --dlopen ones, which ldd cannot see) first on the library path, go to
# /gdrx/lib, the ELF interpreter to its own path.  --tools copies programs
# the suites run (nm, readelf) to /gdrx/bin the same way.  --guest-env adds
# variables to the suites' environment.  --imports-ko adds a host
# result: that module imports no GPL-only symbol (check-imports.sh).  Prints one line per
# result ("PASS: kmod/NAME" or "FAIL: kmod/NAME"), then "N passed, N
# failed", appends "NAME N M" to FILE (NAME: --label, default
# check-kmod), and exits non-zero on any failure.  A guest that hangs,
# panics or stops early fails every result
# it did not report plus one for the crash itself.
set -u

die() { echo "run-qemu.sh: $*" >&2; exit 2; }

qemu= kernel= busybox= work= mock= gdrdrv= kt= once= both= extra= results= tmo=540
imports_ko= symvers= suites= libdirs= dlopen= guest_env= tools= label=check-kmod
while [ $# -gt 0 ]; do
	case $1 in
	--qemu) qemu=$2 ;;
	--kernel) kernel=$2 ;;
	--busybox) busybox=$2 ;;
	--workdir) work=$2 ;;
	--mock) mock=$2 ;;
	--gdrdrv) gdrdrv=$2 ;;
	--kt) kt=$2 ;;
	--once) once=$2 ;;
	--both) both=$2 ;;
	--extra) extra=$2 ;;
	--results) results=$2 ;;
	--timeout) tmo=$2 ;;
	--imports-ko) imports_ko=$2 ;;
	--symvers) symvers=$2 ;;
	--suites) suites=$2 ;;
	--libdirs) libdirs=$2 ;;
	--dlopen) dlopen=$2 ;;
	--guest-env) guest_env=$2 ;;
	--tools) tools=$2 ;;
	--label) label=$2 ;;
	*) die "unknown argument $1" ;;
	esac
	shift 2 || die "missing value for $1"
done
for v in qemu kernel busybox work mock gdrdrv kt; do
	eval "[ -n \"\$$v\" ]" || die "--$v is required"
done
here=$(cd "$(dirname "$0")" && pwd)

# ---- initramfs -----------------------------------------------------------
root=$work/initramfs
rm -rf "$root" && mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" \
	"$root/tmp" "$root/extra" || die "cannot create $root"
cp "$busybox" "$root/bin/busybox" &&
cp "$here/guest-init.sh" "$root/init" &&
cp "$mock" "$root/mock_nvp2p.ko" &&
cp "$gdrdrv" "$root/gdrdrv.ko" &&
cp "$kt" "$root/kt" || die "cannot populate the initramfs"
for p in $extra; do
	cp "$p" "$root/extra/" || die "cannot copy extra program $p"
done
chmod +x "$root/init" "$root/kt"
suite_names=
if [ -n "$suites" ]; then
	sh "$here/payload.sh" "$root" "$libdirs" "$dlopen" $suites ||
		die "cannot copy the suites and their libraries"
	for p in $suites; do suite_names="$suite_names $(basename "$p")"; done
	for p in $tools; do
		sh "$here/payload.sh" "$root" "" "" "$p" || die "cannot copy tool $p"
	done
	# The suites' GDRX_TEST_BUILDDIR (/gdrx) has the library where the
	# build tree has it, for the checks of its exports and soname.
	mkdir -p "$root/gdrx/libgdr/.libs" &&
	ln -sf ../../lib/libgdrx.so.0 "$root/gdrx/libgdr/.libs/libgdrx.so.0" ||
		die "cannot link libgdrx.so.0"
fi
{
	echo "KT_ONCE=\"$once\""
	echo "KT_BOTH=\"$both\""
	printf 'KT_EXTRA="'
	for p in $extra; do printf '%s ' "$(basename "$p")"; done
	echo '"'
	echo "KT_SUITES=\"$suite_names\""
	echo "KT_SUITE_ENV=\"$guest_env\""
} > "$root/kt.conf"
(cd "$root" && find . | cpio -o -H newc --quiet) > "$work/initramfs.cpio" ||
	die "cpio failed"

# ---- expected results ------------------------------------------------------
expected=$work/expected.txt
{
	echo load_mock
	for mode in callback persistent; do
		echo "load_gdrdrv[$mode]"
		echo "device_node[$mode]"
		if [ $mode = callback ]; then
			for s in $once; do echo "$s[$mode]"; done
		fi
		for s in $both; do echo "$s[$mode]"; done
		for p in $extra; do echo "extra:$(basename "$p")[$mode]"; done
		for p in $suite_names; do echo "libgdrx_${p#test_}[$mode]"; done
		echo "gdrcopy_node[$mode]"
		echo "counters_zero[$mode]"
		echo "rmmod_mock_refused[$mode]"
		echo "rmmod_gdrdrv[$mode]"
	done
	echo rmmod_mock
	echo no_kernel_warnings
} > "$expected"

# ---- boot ------------------------------------------------------------------
# A kernel that dies before /init never ran our code: TCG's emulation of
# the kernel's own text patching (an int3 oops in early initcalls) has done
# that.  Such a boot is retried, at most twice, and said so; a crash after
# @@INIT counts against the tests.
log=$work/console.log
t0=$(date +%s)
boot=1
while :; do
	rm -f "$log"
	timeout --foreground -k 10 "$tmo" "$qemu" -accel tcg -cpu max -smp 2 -m 1G \
		-kernel "$kernel" -initrd "$work/initramfs.cpio" \
		-append "console=ttyS0 quiet oops=panic panic_on_warn=1 slub_debug=FZP init_on_free=1 hung_task_panic=1 softlockup_panic=1 panic=-1" \
		-object memory-backend-memfd,id=bar,size=64M,share=on \
		-device ivshmem-plain,memdev=bar \
		-nographic -monitor none -serial "file:$log" -no-reboot -nic none \
		< /dev/null > "$work/qemu.out" 2>&1
	rc=$?
	grep -q '@@INIT' "$log" 2>/dev/null && break
	[ "$rc" -eq 0 ] && [ "$boot" -lt 3 ] || break
	echo "kmod: boot $boot: the guest kernel died before /init started; booting again"
	tr -d '\r' < "$log" 2>/dev/null | grep -m 3 -E 'Oops|BUG|RIP:|panic' | sed 's/^/  /'
	boot=$((boot + 1))
done
t1=$(date +%s)

# ---- verdict ---------------------------------------------------------------
pass=0 fail=0
if [ -n "$imports_ko" ]; then
	if sh "$here/check-imports.sh" "$imports_ko" "$symvers"; then
		pass=$((pass + 1)); echo "PASS: kmod/host:no_gpl_only_imports"
	else
		fail=$((fail + 1)); echo "FAIL: kmod/host:no_gpl_only_imports"
	fi
fi
tr -d '\r' < "$log" 2>/dev/null | sed -n 's/^.*@@RESULT \([^ ]*\) \(PASS\|FAIL\).*$/\1 \2/p' \
	> "$work/reported.txt"
# A suite's CUnit counts: "@@CASES NAME[MODE] PASSED FAILED".
tr -d '\r' < "$log" 2>/dev/null |
	sed -n 's/^.*@@CASES \([^ ]*\) \([0-9]*\) \([0-9]*\).*$/\1 \2 \3/p' > "$work/cases.txt"
while read -r name; do
	verdict=$(awk -v n="$name" '$1 == n { v = $2 } END { print v }' "$work/reported.txt")
	cases=$(awk -v n="$name" '$1 == n { c = $2 " " $3 } END { print c }' "$work/cases.txt")
	if [ -n "$cases" ] && [ -n "$verdict" ]; then
		# A suite: its cases count, and a failed verdict at least once.
		set -- $cases
		cp=$1 cf=$2
		[ "$verdict" = FAIL ] && [ "$cf" -eq 0 ] && cf=1
		pass=$((pass + cp)) fail=$((fail + cf))
		echo "$verdict: kmod/$name ($1 cases passed, $2 failed)"
		continue
	fi
	case $verdict in
	PASS) pass=$((pass + 1)); echo "PASS: kmod/$name" ;;
	FAIL) fail=$((fail + 1)); echo "FAIL: kmod/$name" ;;
	*) fail=$((fail + 1)); echo "FAIL: kmod/$name (not reported)" ;;
	esac
done < "$expected"
# Results the host did not expect (an unknown scenario, setup) also count.
awk 'NR == FNR { e[$1] = 1; next } !($1 in e) { print }' "$expected" "$work/reported.txt" |
while read -r name verdict; do
	echo "$verdict: kmod/$name (unexpected)"
done
extra_fail=$(awk 'NR == FNR { e[$1] = 1; next } !($1 in e) && $2 == "FAIL"' \
	"$expected" "$work/reported.txt" | wc -l)
fail=$((fail + extra_fail))
if ! grep -q '@@DONE' "$log" 2>/dev/null; then
	fail=$((fail + 1))
	echo "FAIL: kmod/guest_finished (qemu rc $rc: hang, panic or timeout)"
fi
echo "qemu ran $((t1 - t0)) s"
if [ "$fail" -ne 0 ]; then
	echo "---- console (last 60 lines of $log) ----"
	tr -d '\r' < "$log" 2>/dev/null | tail -n 60
	echo "----"
fi
[ -n "$results" ] && echo "$label $pass $fail" >> "$results"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
