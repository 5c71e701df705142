/*
 * uct_gdrx_share.h - the warning for a GPU shared by several processes
 * without MPS (uct_gdrx_share.c says why and when).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_SHARE_H
#define UCT_GDRX_SHARE_H

#include <stdint.h>

/* At gdrx's first pin in the process, of GPU memory at dptr: warn if that
 * GPU is shared by several processes without MPS.  Later calls return. */
void uct_gdrx_share_check(uint64_t dptr);

#endif
