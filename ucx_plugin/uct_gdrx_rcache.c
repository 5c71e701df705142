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

#include "uct_gdrx_rcache.h"
#include "uct_gdrx_events.h"
#include "uct_gdrx_mem.h"

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
    const uct_gdrx_mem_req_t *req    = arg;
    uct_gdrx_rcache_region_t *region = ucs_derived_of(rregion,
                                                      uct_gdrx_rcache_region_t);
    uint64_t start                   = region->super.super.start;
    size_t length                    = region->super.super.end - start;
    int hide                         = (reg_flags &
                                        UCS_RCACHE_MEM_REG_HIDE_ERRORS) ||
                                       (req->flags &
                                        UCT_MD_MEM_FLAG_HIDE_ERRORS);

    /* only device windows get here (uct_gdrx_rcache_reg); req's own
     * allocation is pinned: the widened start may lie in another, or none */
    return uct_gdrx_mem_map(md, start, length, req, hide, &region->mem);
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

/* A hit must cover all of the request: a region the cache widened (its
 * alignment, merges, a stale window hint) into a neighbouring allocation
 * holds only its own allocation's part.
 * Without CUDA free events, or after a graph launch (whose free nodes raise
 * none), it may also name an allocation CUDA freed and gave out again at
 * the same address: then the allocation's buffer id decides. */
static int uct_gdrx_rcache_region_is_current(uct_gdrx_md_t *md,
                                             uct_gdrx_rcache_region_t *region,
                                             const uct_gdrx_mem_req_t *req)
{
    return uct_gdrx_range_holds(region->mem.dptr, region->mem.length,
                                req->address, req->length) &&
           uct_gdrx_mem_is_current(md, &region->mem);
}

/* A recent window holding [addr, addr + length): the cache's key for it
 * without asking CUDA.  Entries are read and written unlocked; a stale or
 * torn one only makes the lookup miss or the region not hold the range,
 * and uct_gdrx_rcache_reg checks both. */
static int uct_gdrx_rcache_window_find(uct_gdrx_md_t *md, uint64_t addr,
                                       size_t length, uct_gdrx_window_t *win)
{
    unsigned i;

    for (i = 0; i < UCT_GDRX_WINDOW_HINTS; ++i) {
        win->start = __atomic_load_n(&md->windows[i].start, __ATOMIC_RELAXED);
        win->end   = __atomic_load_n(&md->windows[i].end, __ATOMIC_RELAXED);
        if ((win->end > win->start) &&
            uct_gdrx_range_holds(win->start, win->end - win->start, addr,
                                 length)) {
            return 1;
        }
    }
    return 0;
}

static void uct_gdrx_rcache_window_add(uct_gdrx_md_t *md,
                                       const uct_gdrx_window_t *win)
{
    unsigned i = __atomic_fetch_add(&md->window_next, 1, __ATOMIC_RELAXED) %
                 UCT_GDRX_WINDOW_HINTS;

    __atomic_store_n(&md->windows[i].start, win->start, __ATOMIC_RELAXED);
    __atomic_store_n(&md->windows[i].end, win->end, __ATOMIC_RELAXED);
}

/* Drop a region that cannot serve this registration (stale, or from a
 * wrong window): out of the cache, then our own reference, so it goes (and
 * its pin with it) as soon as nobody else holds it. */
static void uct_gdrx_rcache_region_drop(uct_gdrx_md_t *md,
                                        ucs_rcache_region_t *rregion)
{
    ucs_rcache_region_invalidate(md->rcache, rregion,
                                 (ucs_rcache_invalidate_comp_func_t)
                                 ucs_empty_function, NULL);
    ucs_rcache_region_put(md->rcache, rregion);
}

/* Device memory is registered by whole allocation (or aligned window of a
 * large one, see uct_gdrx_mem_window), so every message of a buffer, at
 * any offset and length, hits the one region and its one pin. */
ucs_status_t uct_gdrx_rcache_reg(uct_gdrx_md_t *md, void *address,
                                 size_t length, unsigned flags,
                                 uct_mem_h *memh_p)
{
    uct_gdrx_mem_req_t req = {(uintptr_t)address, length, flags};
    uct_gdrx_rcache_region_t *region;
    ucs_rcache_region_t *rregion;
    uct_gdrx_window_t win;
    ucs_status_t status;
    uct_gdrx_mem_kind_t kind;
    int attempt, hinted;

    for (attempt = 0; attempt < 3; ++attempt) {
        /* a remembered window first (no CUDA call), then CUDA's answer */
        hinted = (attempt == 0) &&
                 uct_gdrx_rcache_window_find(md, req.address, req.length,
                                             &win);
        if (!hinted) {
            /* req.length: what the allocation serves of the request */
            status = uct_gdrx_mem_window(md, req.address, &req.length,
                                         flags & UCT_MD_MEM_FLAG_HIDE_ERRORS,
                                         &win, &kind);
            if (status != UCS_OK) {
                return status;
            } else if (kind != UCT_GDRX_MEM_KIND_MAPPED) {
                /* host memory, or a span: nothing to pin or cache */
                return uct_gdrx_mem_reg_unmapped(md, kind, address, length,
                                                 memh_p);
            }
            uct_gdrx_rcache_window_add(md, &win);
        }

        status = uct_gdrx_rcache_get(md->rcache, (void*)(uintptr_t)win.start,
                                     win.end - win.start,
                                     PROT_READ | PROT_WRITE, &req, &rregion);
        if (status != UCS_OK) {
            if (hinted) {
                continue; /* the window may be stale: ask CUDA */
            }
            return status;
        }

        region = ucs_derived_of(rregion, uct_gdrx_rcache_region_t);
        if (uct_gdrx_rcache_region_is_current(md, region, &req)) {
            *memh_p = &region->mem;
            return UCS_OK;
        }

        uct_gdrx_count(&md->counters.stale_drops);
        uct_gdrx_rcache_region_drop(md, rregion);
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
