/*
 * uct_gdrx_share.h - the warning for a GPU shared by several processes
 * without MPS (uct_gdrx_share.c says why and when).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_SHARE_H
#define UCT_GDRX_SHARE_H

#include <stdint.h>
#include <ucs/sys/compiler_def.h>

/* 1 once the check ran (uct_gdrx_share.c) */
extern int uct_gdrx_share_checked;

void uct_gdrx_share_check_first(uint64_t dptr);

/* At gdrx's first copy in the process of GPU memory at dptr: warn if that
 * GPU is shared by several processes without MPS.  Every later copy only
 * loads the flag (no store to a shared line per copy). */
static UCS_F_ALWAYS_INLINE void uct_gdrx_share_check(uint64_t dptr)
{
    if (ucs_unlikely(!__atomic_load_n(&uct_gdrx_share_checked,
                                      __ATOMIC_RELAXED))) {
        uct_gdrx_share_check_first(dptr);
    }
}

#endif
