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

/* The number of mappings; with p, also whether one holds the address. */
static long scan_maps(uintptr_t p, int *holds_p)
{
    FILE *fp = fopen("/proc/self/maps", "re");
    char line[4096];
    long n = 0;

    if (!fp)
        return -1;
    while (fgets(line, sizeof(line), fp)) {
        unsigned long lo, hi;
        if (!strchr(line, '\n') && !feof(fp)) {
            int c; /* a long path: skip the rest of the line */
            while ((c = fgetc(fp)) != '\n' && c != EOF)
                ;
        }
        if (sscanf(line, "%lx-%lx", &lo, &hi) != 2)
            continue;
        n++;
        if (holds_p && p >= lo && p < hi)
            *holds_p = 1;
    }
    fclose(fp);
    return n;
}

long gdrx_test_count_maps(void)
{
    return scan_maps(0, NULL);
}

int gdrx_test_is_mapped(const void *p)
{
    int holds = 0;

    return scan_maps((uintptr_t)p, &holds) < 0 ? -1 : holds;
}
