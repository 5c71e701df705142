/*
 * uct_gdrx_alloc.h - device memory allocated by the MD (UCT_MD_FLAG_ALLOC).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_ALLOC_H
#define UCT_GDRX_ALLOC_H

#include "uct_gdrx_types.h"


/* md_ops.mem_alloc / mem_free */
ucs_status_t uct_gdrx_md_mem_alloc(uct_md_h tl_md, size_t *length_p,
                                   void **address_p, UCT_GDRX_MEM_ALLOC_ARGS,
                                   const char *alloc_name, uct_mem_h *memh_p);
ucs_status_t uct_gdrx_md_mem_free(uct_md_h tl_md, uct_mem_h memh);

#endif
