/*
 * uct_gdrx_stats.c - where gdrx's counters go when UCX_GDRX_STATS_DUMP asks
 * (tests read them to see which copies went through gdrx).
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_stats.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <ucs/debug/log.h>


static int uct_gdrx_stats_is(const char *where, const char *const *names)
{
    for (; *names != NULL; ++names) {
        if (strcasecmp(where, *names) == 0) {
            return 1;
        }
    }
    return 0;
}

int uct_gdrx_stats_wanted(const char *where)
{
    static const char *const off[] = {"", "n", "no", "off", "0", NULL};

    return (where != NULL) && !uct_gdrx_stats_is(where, off);
}

void uct_gdrx_stats_dump(const char *where, const char *fmt, ...)
{
    static const char *const err[] = {"y", "yes", "on", "1", "stderr", NULL};
    char line[512];
    va_list ap;
    FILE *file;

    if (!uct_gdrx_stats_wanted(where)) {
        return;
    }

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);

    if (uct_gdrx_stats_is(where, err)) {
        fprintf(stderr, "[gdrx %d] %s", (int)getpid(), line);
        return;
    }

    file = fopen(where, "a");
    if (file == NULL) {
        ucs_warn("gdrx: cannot append counters to %s: %m", where);
        return;
    }
    fprintf(file, "[gdrx %d] %s", (int)getpid(), line);
    fclose(file);
}
