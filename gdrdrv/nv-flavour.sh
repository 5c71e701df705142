#!/bin/sh
# nv-flavour.sh DIR: print "open" or "proprietary" for the NVIDIA kernel
# driver source whose nv-p2p.h lives in DIR.
#
# The open flavour declares a GPL-compatible MODULE_LICENSE ("Dual
# MIT/GPL"), the proprietary one "NVIDIA".  gdrdrv may use GPL-only kernel
# symbols only with the former (see gdrdrv_compat.h).  When in doubt the
# answer is "proprietary", which is safe for both.
dir=${1:?usage: nv-flavour.sh DIR}
if [ ! -f "$dir/nv-p2p.h" ]; then
	echo "nv-flavour.sh: no nv-p2p.h in $dir" >&2
	exit 1
fi
if grep -rhs 'MODULE_LICENSE' "$dir" | grep -q 'GPL'; then
	echo open
else
	echo proprietary
fi
