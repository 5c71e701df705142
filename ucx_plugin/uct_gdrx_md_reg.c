/*
 * uct_gdrx_md_reg.c - the MD's registrations: through the registration
 * cache when there is one, else a pin of their own; host memory, empty
 * ranges, ranges no one allocation holds (each copy resolves its address)
 * and an MD standing aside map nothing.
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_md_reg.h"
#include "uct_gdrx_md_setup.h"
#include "uct_gdrx_mem.h"
#include "uct_gdrx_rcache.h"


ucs_status_t uct_gdrx_md_reg(uct_gdrx_md_t *md, void *address, size_t length,
                             unsigned reg_flags, uct_mem_h *memh_p)
{
    ucs_status_t status;

    if (length == 0) {
        *memh_p = &uct_gdrx_empty_memh;
        return UCS_OK;
    }

    status = uct_gdrx_md_activate(md);
    if (ucs_unlikely(status != UCS_OK)) {
        /* Standing aside.  UCP registers on every MD of the memory type and
         * drops the whole registration if one fails: succeed, mapping
         * nothing (a copy through it fails; UCP picks no gdrx lane that
         * would make one). */
        *memh_p = &uct_gdrx_empty_memh;
        return UCS_OK;
    }

    if (md->rcache != NULL) {
        uct_gdrx_count(&md->counters.reg_calls);
        return uct_gdrx_rcache_reg(md, address, length, reg_flags, memh_p);
    }

    uct_gdrx_count(&md->counters.reg_calls);
    return uct_gdrx_mem_reg_nocache(md, address, length, reg_flags, memh_p);
}

ucs_status_t uct_gdrx_md_dereg(uct_gdrx_md_t *md, uct_gdrx_mem_t *mem)
{
    if ((mem == &uct_gdrx_host_memh) || (mem == &uct_gdrx_empty_memh)) {
        return UCS_OK;
    }

    if ((md->rcache != NULL) && (mem->kind != UCT_GDRX_MEM_KIND_SPAN)) {
        uct_gdrx_rcache_dereg(md, mem);
        return UCS_OK;
    }

    /* a span's memh is never cached: it pins nothing */
    return uct_gdrx_mem_dereg_nocache(md, mem);
}
