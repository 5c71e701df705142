#!/bin/busybox sh
# guest-init.sh - /init of the qemu guest that runs the gdrdrv kernel tests.
#
# Loads the mock NVIDIA P2P provider and gdrdrv, runs the scenarios listed
# in /kt.conf once per pinning mode (callback, then persistent), checks
# unloading and the kernel's taint flags, and powers off.  Every line for
# the host starts with "@@" (tests/kmod/run-qemu.sh parses them):
#   @@RESULT NAME[MODE] PASS|FAIL ...      one per scenario or step
#   @@CASES NAME[MODE] PASSED FAILED       a libgdrx suite's CUnit counts
#   @@INIT                                 /init started (no module loaded yet)
#   @@DONE                                 the guest reached the end
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmp /tmp
# SeaBIOS leaves the console line unterminated.
echo
echo "@@INIT"

. /kt.conf

result() { echo "@@RESULT $1 $2 $3"; }

# step NAME COMMAND...: one result line for a shell-level check.
step() {
	name=$1
	shift
	if "$@" > /tmp/step.log 2>&1; then
		result "$name" PASS
	else
		result "$name" FAIL "(rc $?)"
		sed 's/^/  /' /tmp/step.log
	fi
}

live_counters_zero() {
	for c in files pins nv_pins pinned_bytes mappings; do
		v=$(cat /sys/class/misc/gdrdrv/stats/$c) || return 1
		[ "$v" = 0 ] || { echo "$c=$v"; return 1; }
	done
}

rmmod_refused() { ! rmmod "$1"; }

# gdrcopy_node MODE: what gdrcopy's insmod.sh and init scripts do (major
# from /proc/devices, rm, mknod c MAJOR 0) gives a working node; its
# /proc/driver/gdrdrv/params and dbg/info parameters exist.  The misc
# device's node is put back afterwards.
gdrcopy_node() {
	major=$(sed -n 's/^ *\([0-9]*\) gdrdrv$/\1/p' /proc/devices)
	[ -n "$major" ] || { echo "no gdrdrv line in /proc/devices"; return 1; }
	rm -f /dev/gdrdrv && mknod /dev/gdrdrv c "$major" 0 && chmod a+rw /dev/gdrdrv || return 1
	/kt pin_map_copy || return 1
	rm -f /dev/gdrdrv && mknod /dev/gdrdrv c $(tr ':' ' ' < /sys/class/misc/gdrdrv/dev) || return 1
	cat /proc/driver/gdrdrv/params || return 1
	grep -qx "use_persistent_mapping=$1" /proc/driver/gdrdrv/params || return 1
	[ -f /sys/module/gdrdrv/parameters/dbg_enabled ] &&
		[ -f /sys/module/gdrdrv/parameters/info_enabled ]
}

# run_suite PROGRAM MODE: a libgdrx CUnit suite (from /gdrx/bin) with the
# gdrdrv backend on the simulated GPU whose memory is the mock's BAR.  It
# passes when CUnit's summary shows cases run and none failed, the program
# exits 0, and gdrdrv and the mock are idle afterwards.
run_suite() {
	name="libgdrx_${1#test_}[$2]"
	t0=$(cut -d' ' -f1 /proc/uptime)
	env $KT_SUITE_ENV GDRX_BACKEND=gdrdrv GDRX_TEST_GDRDRV_MODE="$2" SIMCU_BACKING=mocknv \
		LD_LIBRARY_PATH=/gdrx/lib PATH=/gdrx/bin:/bin GDRX_TEST_BUILDDIR=/gdrx \
		"/gdrx/bin/$1" > /tmp/suite.log 2>&1
	rc=$?
	t1=$(cut -d' ' -f1 /proc/uptime)
	# CUnit: "               tests      5      5      5      0        0"
	line=$(grep -E '^[[:space:]]+tests[[:space:]]+[0-9]+' /tmp/suite.log | tail -n 1)
	why=
	if [ -z "$line" ]; then
		why="no CUnit summary (rc $rc)"
	else
		set -- $line
		echo "@@CASES $name $4 $5"
		if [ "$5" != 0 ]; then why="$5 cases failed"
		elif [ "$4" = 0 ]; then why="no case ran"
		elif [ $rc != 0 ]; then why="rc $rc"
		fi
	fi
	if ! /kt --idle > /tmp/idle.log 2>&1; then
		why="$why${why:+, }not idle afterwards: $(cat /tmp/idle.log)"
	fi
	if [ -z "$why" ]; then
		result "$name" PASS "($t0 -> $t1 s)"
	else
		result "$name" FAIL "($why; $t0 -> $t1 s)"
		# The suite's own diagnostics, without CUnit's passed cases.
		grep -v -E '\.\.\.[[:space:]]*passed$|^[[:space:]]*$' /tmp/suite.log |
			head -n 80 | sed 's/^/  /'
	fi
}

# WARN (9), oops/die (7), bad page (5), soft lockup (14).
no_bad_taint() {
	t=$(cat /proc/sys/kernel/tainted)
	echo "tainted=$t"
	[ $((t & ((1 << 9) | (1 << 7) | (1 << 5) | (1 << 14)))) = 0 ]
}

step load_mock insmod /mock_nvp2p.ko
for mode in callback persistent; do
	p=0
	[ $mode = persistent ] && p=1
	step "load_gdrdrv[$mode]" insmod /gdrdrv.ko use_persistent_mapping=$p
	step "device_node[$mode]" test -c /dev/gdrdrv
	if [ $mode = callback ]; then
		/kt $KT_ONCE $KT_BOTH
	else
		/kt $KT_BOTH
	fi
	# Extra guest programs (e.g. the libgdrx suites with the gdrdrv
	# backend), listed by the host in KT_EXTRA; each prints its own
	# "N passed, N failed" and is counted as one step here.
	for prog in $KT_EXTRA; do
		step "extra:$(basename $prog)[$mode]" "/extra/$prog"
	done
	for prog in $KT_SUITES; do
		run_suite "$prog" $mode
	done
	step "gdrcopy_node[$mode]" gdrcopy_node $p
	step "counters_zero[$mode]" live_counters_zero
	step "rmmod_mock_refused[$mode]" rmmod_refused mock_nvp2p
	step "rmmod_gdrdrv[$mode]" rmmod gdrdrv
done
step rmmod_mock rmmod mock_nvp2p
step no_kernel_warnings no_bad_taint
echo "@@DONE"
poweroff -f
