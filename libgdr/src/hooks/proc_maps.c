/*
 * proc_maps.c - read a mapping's protection from /proc/self/maps with
 * read(2) into a stack buffer (no stdio, no allocation: callers may be
 * inside the dynamic linker's iteration lock).
 *
 * SPDX-License-Identifier: MIT
 */
#include "proc_maps.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int gdrx_maps_prot(uintptr_t addr)
{
    char buf[4096];
    size_t have = 0;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    int prot = -ENOENT;

    if (fd < 0)
        return -errno;
    for (;;) {
        ssize_t got = read(fd, buf + have, sizeof(buf) - 1 - have);
        char *line = buf, *nl;

        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        have += (size_t)got;
        buf[have] = '\0';
        while ((nl = strchr(line, '\n'))) {
            char *p;
            uintptr_t lo = strtoumax(line, &p, 16), hi = 0;

            if (*p == '-')
                hi = strtoumax(p + 1, &p, 16);
            if (addr >= lo && addr < hi && p[0] == ' ') {
                prot = (p[1] == 'r' ? PROT_READ : 0) | (p[2] == 'w' ? PROT_WRITE : 0) |
                       (p[3] == 'x' ? PROT_EXEC : 0);
                goto out;
            }
            line = nl + 1;
        }
        /* Keep the partial last line; a line longer than the buffer
         * (a huge path) is dropped, its range was parsed already. */
        have -= (size_t)(line - buf);
        if (have >= sizeof(buf) - 1)
            have = 0;
        memmove(buf, line, have);
    }
out:
    close(fd);
    return prot;
}
