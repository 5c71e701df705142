/*
 * uct_gdrx_rcache.c - the MD's registration cache (UCX's ucs_rcache).  It
 * listens to UCM_EVENT_MEM_TYPE_FREE, which UCX's CUDA hooks or gdrx's own
 * event bridge (uct_gdrx_events.c) raise before CUDA frees the memory.
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_md.h"
#include "uct_gdrx_events.h"

#include <errno.h>
#include <sys/mman.h>
#include <ucm/api/ucm.h>
#include <ucs/debug/log.h>
#include <ucs/type/class.h>


typedef struct uct_gdrx_rcache_region {
    ucs_rcache_region_t super;
    uct_gdrx_mem_t      mem;
} uct_gdrx_rcache_region_t;


static ucs_status_t
uct_gdrx_rcache_mem_reg_cb(void *context, ucs_rcache_t *rcache, void *arg,
                           ucs_rcache_region_t *rregion, uint16_t reg_flags)
{
    uct_gdrx_md_t *md                = context;
    uct_gdrx_rcache_region_t *region = ucs_derived_of(rregion,
                                                      uct_gdrx_rcache_region_t);
    uint64_t start                   = region->super.super.start;
    size_t length                    = region->super.super.end - start;
    int hide                         = (reg_flags &
                                        UCS_RCACHE_MEM_REG_HIDE_ERRORS) ||
                                       (*(unsigned*)arg &
                                        UCT_MD_MEM_FLAG_HIDE_ERRORS);

    if (uct_gdrx_mem_is_host((void*)(uintptr_t)start, length)) {
        region->mem.kind = UCT_GDRX_MEM_KIND_HOST;
        return UCS_OK;
    }

    return uct_gdrx_mem_map(md, start, length, hide, &region->mem);
}

static void uct_gdrx_rcache_mem_dereg_cb(void *context, ucs_rcache_t *rcache,
                                         ucs_rcache_region_t *rregion)
{
    uct_gdrx_rcache_region_t *region = ucs_derived_of(rregion,
                                                      uct_gdrx_rcache_region_t);

    uct_gdrx_mem_unmap(context, &region->mem);
}

static void uct_gdrx_rcache_dump_region_cb(void *context, ucs_rcache_t *rcache,
                                           ucs_rcache_region_t *rregion,
                                           char *buf, size_t max)
{
    uct_gdrx_rcache_region_t *region = ucs_derived_of(rregion,
                                                      uct_gdrx_rcache_region_t);

    snprintf(buf, max, "kind %d cpu %p length %zu", region->mem.kind,
             region->mem.cpu_ptr, region->mem.length);
}

static ucs_rcache_ops_t uct_gdrx_rcache_ops = {
    .mem_reg     = uct_gdrx_rcache_mem_reg_cb,
    .mem_dereg   = uct_gdrx_rcache_mem_dereg_cb,
#if UCT_GDRX_UCX_AT_LEAST(1, 18)
    .merge       = (void*)ucs_empty_function,
#endif
    .dump_region = uct_gdrx_rcache_dump_region_cb
};

/* At md_open: the configuration is gone by the time the cache is made. */
void uct_gdrx_rcache_params_init(ucs_rcache_params_t *params,
                                  const uct_gdrx_md_config_t *config)
{
    uct_gdrx_rcache_set_params(params, &config->rcache);
    params->region_struct_size = sizeof(uct_gdrx_rcache_region_t);
    UCT_GDRX_RCACHE_SET_MAX_ALIGNMENT(params, UCT_GDRX_GPU_PAGE);
    params->ops                = &uct_gdrx_rcache_ops;
    params->flags             |= UCT_GDRX_RCACHE_FLAGS;
}

ucs_status_t uct_gdrx_rcache_create(uct_gdrx_md_t *md)
{
    ucs_rcache_params_t params = md->setup.rcache;

    /* UCX's hooks raise the events where they work; otherwise gdrx's bridge
     * does (or nobody: hits are checked), and UCX must not try to install
     * hooks of its own for this cache */
    params.ucm_events         = UCM_EVENT_MEM_TYPE_FREE;
    if (md->events_state != UCT_GDRX_EVENTS_UCX_HOOKS) {
        params.ucm_events    |= UCM_EVENT_FLAG_NO_INSTALL;
    }
    params.context            = md;
    return ucs_rcache_create(&params, UCT_GDRX_NAME, NULL, &md->rcache);
}

/* Without CUDA free events a hit may name an allocation CUDA freed and gave
 * out again at the same address: compare the allocation's buffer id. */
static int uct_gdrx_rcache_region_is_current(uct_gdrx_md_t *md,
                                             uct_gdrx_rcache_region_t *region)
{
    struct gdrx_mem_info info;
    int ret;

    if (md->events || (region->mem.kind != UCT_GDRX_MEM_KIND_MAPPED)) {
        return 1;
    }

    ret = gdrx_mem_query(region->mem.dptr, &info);
    return (ret == 0) && (info.buffer_id == region->mem.buffer_id);
}

ucs_status_t uct_gdrx_rcache_reg(uct_gdrx_md_t *md, void *address,
                                 size_t length, unsigned flags,
                                 uct_mem_h *memh_p)
{
    uct_gdrx_rcache_region_t *region;
    ucs_rcache_region_t *rregion;
    ucs_status_t status;
    int attempt;

    for (attempt = 0; attempt < 2; ++attempt) {
        status = uct_gdrx_rcache_get(md->rcache, address, length,
                                     PROT_READ | PROT_WRITE, &flags,
                                     &rregion);
        if (status != UCS_OK) {
            return status;
        }

        region = ucs_derived_of(rregion, uct_gdrx_rcache_region_t);
        if (uct_gdrx_rcache_region_is_current(md, region)) {
            *memh_p = &region->mem;
            return UCS_OK;
        }

        /* out of the cache, then our own reference: the region goes (and
         * its pin with it) as soon as nobody else holds it */
        __atomic_fetch_add(&md->counters.stale_drops, 1, __ATOMIC_RELAXED);
        ucs_rcache_region_invalidate(md->rcache, rregion,
                                     (ucs_rcache_invalidate_comp_func_t)
                                     ucs_empty_function, NULL);
        ucs_rcache_region_put(md->rcache, rregion);
    }

    return UCS_ERR_IO_ERROR;
}

void uct_gdrx_rcache_dereg(uct_gdrx_md_t *md, uct_gdrx_mem_t *mem)
{
    uct_gdrx_rcache_region_t *region = ucs_container_of(mem,
                                                        uct_gdrx_rcache_region_t,
                                                        mem);

    ucs_rcache_region_put(md->rcache, &region->super);
}
