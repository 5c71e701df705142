/*
 * uct_gdrx_rcache.h - the MD's registration cache (UCX's ucs_rcache) of
 * whole-allocation (or window) registrations.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_RCACHE_H
#define UCT_GDRX_RCACHE_H

#include "uct_gdrx_types.h"


/* At md_open: the cache's parameters, from the configuration. */
void uct_gdrx_rcache_params_init(ucs_rcache_params_t *params,
                                  const uct_gdrx_md_config_t *config);
ucs_status_t uct_gdrx_rcache_create(uct_gdrx_md_t *md);
ucs_status_t uct_gdrx_rcache_reg(uct_gdrx_md_t *md, void *address,
                                 size_t length, unsigned flags,
                                 uct_mem_h *memh_p);
void uct_gdrx_rcache_dereg(uct_gdrx_md_t *md, uct_gdrx_mem_t *mem);

#endif
