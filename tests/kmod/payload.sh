#!/bin/sh
# payload.sh ROOT "LIBDIRS" "DLOPEN" PROGRAM... - copy dynamically linked
# test programs into the guest's initramfs at ROOT, with every shared
# library they need (tests/kmod/run-qemu.sh --suites).
#
# Programs go to ROOT/gdrx/bin; a libtool wrapper script is replaced by the
# real program in .libs/ next to it, and a bare name is looked up on PATH
# (tools the suites run, e.g. nm).  Libraries are found by ldd, with the
# space-separated LIBDIRS first on LD_LIBRARY_PATH (the build tree's .libs
# directories), for each program and for each library named in DLOPEN
# (loaded with dlopen, so ldd cannot see them: the simulated GPU's
# libcuda.so.1).  They are copied, links resolved, to ROOT/gdrx/lib under
# the name the dynamic linker looks for; the ELF interpreter is copied to
# its absolute path.  The guest runs the programs with
# LD_LIBRARY_PATH=/gdrx/lib.
set -u
root=$1 libdirs=$2 dlopen=$3
shift 3
die() { echo "payload.sh: $*" >&2; exit 1; }

lp=$(echo $libdirs | tr ' ' ':')
mkdir -p "$root/gdrx/bin" "$root/gdrx/lib" || die "cannot create $root/gdrx"

# copy_deps ELF: its libraries (ldd: "name => /path (addr)" or
# "/interp (addr)"); a library ldd cannot find is an error.
copy_deps() {
	out=$(LD_LIBRARY_PATH="$lp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$1" 2>&1) ||
		die "ldd $1 failed: $out"
	echo "$out" | grep -q 'not found' && die "ldd $1: $out"
	echo "$out" | while read -r a b c d; do
		case "$a $b" in
		*' =>')	[ -f "$c" ] || continue   # linux-vdso.so.1 => (none)
			cp -L "$c" "$root/gdrx/lib/$a" || exit 1 ;;
		/*)	mkdir -p "$root$(dirname "$a")" &&
			cp -L "$a" "$root$a" || exit 1 ;;
		esac
	done || die "cannot copy the libraries of $1"
}

for prog in "$@"; do
	case $prog in
	*/*) ;;
	*) prog=$(command -v "$prog") || die "$prog not found on PATH" ;;
	esac
	real=$prog
	if ! od -An -c -N4 "$prog" | grep -q 'E   L   F'; then
		real=$(dirname "$prog")/.libs/$(basename "$prog")
		[ -f "$real" ] || die "$prog is not ELF and $real does not exist"
	fi
	cp "$real" "$root/gdrx/bin/$(basename "$prog")" || die "cannot copy $real"
	copy_deps "$real"
done
for lib in $dlopen; do
	path=
	for d in $libdirs; do
		[ -f "$d/$lib" ] && { path=$d/$lib; break; }
	done
	[ -n "$path" ] || die "$lib not found in $libdirs"
	cp -L "$path" "$root/gdrx/lib/$lib" || die "cannot copy $path"
	copy_deps "$path"
done
chmod -R a+rX "$root/gdrx"
