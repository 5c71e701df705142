/*
 * gdrx_test_proc.c - what the process holds, read from /proc/self, for
 * tests that check nothing is left behind.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "gdrx_test.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>

long gdrx_test_count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    long n = 0;

    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own */
}

/* The number of mappings (shared ones only, if asked); with holds_p, also
 * whether one holds the address p. */
static long scan_maps(int shared_only, uintptr_t p, int *holds_p)
{
    FILE *fp = fopen("/proc/self/maps", "re");
    char line[4096];
    long n = 0;

    if (!fp)
        return -1;
    while (fgets(line, sizeof(line), fp)) {
        unsigned long lo, hi;
        char perms[8] = "";
        if (!strchr(line, '\n') && !feof(fp)) {
            int c; /* a long path: skip the rest of the line */
            while ((c = fgetc(fp)) != '\n' && c != EOF)
                ;
        }
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3)
            continue;
        n += !shared_only || perms[3] == 's';
        if (holds_p && p >= lo && p < hi)
            *holds_p = 1;
    }
    fclose(fp);
    return n;
}

long gdrx_test_count_maps(int shared_only)
{
    return scan_maps(shared_only, 0, NULL);
}

int gdrx_test_is_mapped(const void *p)
{
    int holds = 0;

    return scan_maps(0, (uintptr_t)p, &holds) < 0 ? -1 : holds;
}
