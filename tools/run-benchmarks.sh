#!/bin/sh
# run-benchmarks.sh BUILDDIR [gdrx-copylat options]: the main job.  Runs gdrx-copylat on the real
# GPU when the NVIDIA driver is loaded, otherwise on the simulated GPU
# (tests/sim), which the benchmark labels "simulated" on every line.
builddir=${1:-.}
[ $# -gt 0 ] && shift
bench="$builddir/tools/gdrx-copylat"
[ -x "$bench" ] || { echo "run-benchmarks: $bench not built (make first)" >&2; exit 1; }

if [ -e /dev/nvidiactl ] && [ -r /sys/module/nvidia/version ]; then
    echo "run-benchmarks: NVIDIA driver $(cat /sys/module/nvidia/version) found: real GPU"
    exec "$bench" "$@"
fi
echo "run-benchmarks: no NVIDIA GPU here: running on the SIMULATED GPU (tests/sim)"
LD_LIBRARY_PATH="$builddir/tests/sim/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$bench" "$@"
