# shellcheck shell=bash
# .ci/chroot.sh - sourced by the CI legs that run in another Debian
# (bookworm-min.sh, bullseye-fork.sh): a debootstrap'ed root, cached for a
# week, its mounts, cleanup on exit, and in_root to run a command there.
#
#   chroot_make SUITE INCLUDE: fills $root (a new directory under /var/tmp)
#   with `debootstrap --variant=minbase --include=INCLUDE SUITE`, from the
#   cache GDRX_CI_CACHE (default /var/cache/gdrx-ci) when it is less than a
#   week old; mounts proc, sys (read-only) and a tmpfs /dev/shm.
#   chroot_bind DIR: DIR of this machine, read-only at the same path there.
#   in_root [--offline] SCRIPT: SCRIPT with sh as root there, in a clean
#   environment (and without network with --offline).
# The caller defines say() and die() first.

root=
mounts=()

chroot_cleanup() {
    local m
    for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null || true; done
    [ -n "$root" ] || return 0
    # never delete through a mount that is still there
    if grep -q " $root/" /proc/mounts; then
        echo "chroot: $root still has mounts; left in place" >&2
    else
        rm -rf "$root"
    fi
}

chroot_make() {
    local suite=$1 include=$2 cache=${GDRX_CI_CACHE:-/var/cache/gdrx-ci}
    local base=$cache/$suite-minbase.tar mirror=http://deb.debian.org/debian m
    root=$(mktemp -d "/var/tmp/gdrx-$suite.XXXXXX")
    trap chroot_cleanup EXIT
    if [ -f "$base" ] && [ -n "$(find "$base" -mtime -7)" ]; then
        say "base system from $base"
        tar -xf "$base" -C "$root"
    else
        say "debootstrap --variant=minbase --include=$include $suite"
        command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null
        debootstrap --variant=minbase --include="$include" "$suite" "$root" "$mirror" \
            > "$root.debootstrap.log" 2>&1 ||
            { tail -n 20 "$root.debootstrap.log"; die "debootstrap $suite failed"; }
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
}

chroot_bind() {
    mkdir -p "$root$1"
    mount --bind "$1" "$root$1" && mount -o remount,bind,ro "$root$1"
    mounts=("$root$1" "${mounts[@]}")
}

in_root() {
    local net=()
    [ "$1" = --offline ] && { net=(unshare --net); shift; }
    "${net[@]}" chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/sh -c "$1"
}
