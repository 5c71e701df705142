/*
 * uct_gdrx_stats.h - where gdrx's counters go when UCX_GDRX_STATS_DUMP asks.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_STATS_H
#define UCT_GDRX_STATS_H

#include <ucs/sys/compiler_def.h>


/* 1 unless UCX_GDRX_STATS_DUMP says no */
int uct_gdrx_stats_wanted(const char *where);
void uct_gdrx_stats_dump(const char *where, const char *fmt, ...)
    UCS_F_PRINTF(2, 3);

#endif
