/*
 * va_shim.c - LD_PRELOAD for callgrind.sh only: valgrind's address space cannot
 * hold the simulated GPU's 64 GiB PROT_NONE device-VA reservation, so any
 * PROT_NONE mapping over 16 GiB is made 1 GiB (the sim uses its start).
 *
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/types.h>

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    static void *(*next)(void *, size_t, int, int, int, off_t);

    if (!next)
        *(void **)&next = dlsym(RTLD_NEXT, "mmap");
    if (prot == PROT_NONE && len > ((size_t)16 << 30))
        len = (size_t)1 << 30;
    return next(addr, len, prot, flags, fd, off);
}
