#!/bin/sh
# check-imports.sh MODULE.ko Module.symvers: fail if the module imports a
# symbol the kernel exports GPL-only.  A module that links against the
# proprietary NVIDIA driver may not use any (the kernel refuses to load
# it), so gdrdrv's proprietary-flavour build must pass this.
ko=${1:?usage: check-imports.sh MODULE.ko Module.symvers}
symvers=${2:?usage: check-imports.sh MODULE.ko Module.symvers}
[ -r "$ko" ] && [ -r "$symvers" ] || { echo "check-imports.sh: cannot read $ko or $symvers"; exit 2; }
gpl=$(nm -u "$ko" | awk '{ print $2 }' | sort -u |
	awk 'NR == FNR { want[$1] = 1; next }
	     ($2 in want) && $4 ~ /_GPL$/ { print $2 }' - "$symvers")
if [ -n "$gpl" ]; then
	echo "GPL-only imports in $ko:" $gpl
	exit 1
fi
echo "no GPL-only imports in $ko ($(nm -u "$ko" | wc -l) imports checked)"
