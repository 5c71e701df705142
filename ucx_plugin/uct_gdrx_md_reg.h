/*
 * uct_gdrx_md_reg.h - the MD's registrations: through the cache when there
 * is one, else pinned each time; host memory and empty ranges map nothing.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_MD_REG_H
#define UCT_GDRX_MD_REG_H

#include "uct_gdrx_types.h"


/* mem_reg / mem_dereg of the MD (also of its allocations and of the
 * endpoint's key-less copies) */
ucs_status_t uct_gdrx_md_reg(uct_gdrx_md_t *md, void *address, size_t length,
                             unsigned reg_flags, uct_mem_h *memh_p);
ucs_status_t uct_gdrx_md_dereg(uct_gdrx_md_t *md, uct_gdrx_mem_t *mem);

#endif
