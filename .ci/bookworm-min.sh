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
# The base system is cached for a week (.ci/chroot.sh), so a run downloads
# it at most once a week; the rest (the packages deps.sh installs, cuda.h)
# is fetched each run, as a user would.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

say() { echo "bookworm-min: $(date -u +%H:%M:%S) $*"; }
die() { echo "bookworm-min: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, chroot)"

# The README's command: the one indented line that ends in make bench.
cmd=$(sed -n 's/^    \(sh config\/deps\.sh.*make bench\)$/\1/p' "$repo/README.md")
[ "$(printf '%s\n' "$cmd" | grep -c .)" = 1 ] ||
    die "README.md: expected one indented command line ending in 'make bench', found: '$cmd'"

# shellcheck source=.ci/chroot.sh
. "$repo/.ci/chroot.sh"
chroot_make bookworm git,ca-certificates
git clone -q "$repo" "$root/root/gdrx"

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
