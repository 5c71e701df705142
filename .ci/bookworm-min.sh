#!/bin/bash
# .ci/bookworm-min.sh: the README's main-job command (the one that ends in
# `make bench`), as a new user meets it, in a minimal Debian 12: a
# `debootstrap --variant=minbase bookworm` system with only git and
# ca-certificates added (issue 31: its only apt source is bookworm main, no
# security or updates; no valgrind, CUnit or kernel headers).  From a
# clone of HEAD, as root, the command as the README writes it.  Then, in
# that system and without network, make dist's tarball: ./configure && make
# && make bench (the offline GPU-node route of the README; no CUnit there).
#
# The base system is cached in GDRX_CI_CACHE (default /var/cache/gdrx-ci)
# for a week, so a run downloads it at most once a week; the rest (the
# packages deps.sh installs, cuda.h) is fetched each run, as a user would.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${GDRX_CI_CACHE:-/var/cache/gdrx-ci}
base=$cache/bookworm-minbase.tar
mirror=http://deb.debian.org/debian

say() { echo "bookworm-min: $(date -u +%H:%M:%S) $*"; }
die() { echo "bookworm-min: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, chroot)"

# The README's command: the one indented line that ends in make bench.
cmd=$(sed -n 's/^    \(sh config\/deps\.sh.*make bench\)$/\1/p' "$repo/README.md")
[ "$(printf '%s\n' "$cmd" | grep -c .)" = 1 ] ||
    die "README.md: expected one indented command line ending in 'make bench', found: '$cmd'"

root=$(mktemp -d /var/tmp/gdrx-bookworm-min.XXXXXX)
mounts=()
cleanup() {
    local m
    for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null || true; done
    # never delete through a mount that is still there
    if grep -q " $root/" /proc/mounts; then
        echo "bookworm-min: $root still has mounts; left in place" >&2
    else
        rm -rf "$root"
    fi
}
trap cleanup EXIT

if [ -f "$base" ] && [ -n "$(find "$base" -mtime -7)" ]; then
    say "base system from $base"
    tar -xf "$base" -C "$root"
else
    say "debootstrap --variant=minbase --include=git,ca-certificates bookworm"
    command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null
    debootstrap --variant=minbase --include=git,ca-certificates bookworm "$root" "$mirror" \
        > "$root.debootstrap.log" 2>&1 || { tail -n 20 "$root.debootstrap.log"; die "debootstrap failed"; }
    rm -f "$root.debootstrap.log"
    mkdir -p "$cache"
    tar -cf "$base.tmp" -C "$root" . && mv "$base.tmp" "$base"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
for m in proc sys dev/shm; do
    case $m in
    proc) mount -t proc proc "$root/proc" ;;
    sys) mount -t sysfs -o ro sysfs "$root/sys" ;;
    dev/shm) mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm" ;;
    esac
    mounts=("$root/$m" "${mounts[@]}")
done
git clone -q "$repo" "$root/root/gdrx"

# in_root [--offline] SCRIPT: run SCRIPT with sh as root of the minimal
# system, with a clean environment (and no network with --offline).
in_root() {
    local net=()
    [ "$1" = --offline ] && { net=(unshare --net); shift; }
    "${net[@]}" chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/sh -c "$1"
}

say "the README's main job: $cmd"
log=$root/command1.log
in_root "cd /root/gdrx && $cmd" > "$log" 2>&1 ||
    { tail -n 60 "$log"; die "the README's main-job command failed in minimal bookworm"; }
grep '^deps.sh: \|^  [a-zA-Z].*  \(yes\|no\) ' "$log"
sed -n '/^== summary/,$p' "$log"
for f in /usr/include/CUnit/CUnit.h /usr/include/valgrind/memcheck.h; do
    [ ! -e "$root$f" ] || die "$f is in the minimal system: the run did not show make bench without it"
done
grep -q '^  tests (CUnit)  *no ' "$log" ||
    die "configure's summary does not say the tests were left out"
grep -q '^# SIMULATED GPU' "$log" && [ -s "$root/root/gdrx/bench/results.csv" ] ||
    die "make bench did not run the suite on the simulated GPU"

say "make dist; its tarball offline: ./configure && make && make bench"
in_root "cd /root/gdrx && make dist >/dev/null && mkdir -p /root/t && tar -xzf gdrx-*.tar.gz -C /root/t" ||
    die "make dist failed"
log=$root/tarball.log
in_root --offline "cd /root/t/gdrx-* && ./configure && make -j2 && make bench" > "$log" 2>&1 ||
    { tail -n 60 "$log"; die "make bench from make dist's tarball failed (offline, no CUnit)"; }
sed -n '/^== summary/,$p' "$log"
say "passed"
