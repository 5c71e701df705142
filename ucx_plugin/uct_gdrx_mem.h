/*
 * uct_gdrx_mem.h - pinning: one registration of device memory, pinned and
 * mapped through libgdrx, its remote key, and libgdrx's errors as UCX
 * statuses.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_MEM_H
#define UCT_GDRX_MEM_H

#include "uct_gdrx_events.h"
#include "uct_gdrx_types.h"
#include "../libgdr/src/range.h"


/* The memh of every host registration, and of every one that maps
 * nothing. */
extern uct_gdrx_mem_t uct_gdrx_host_memh;
extern uct_gdrx_mem_t uct_gdrx_empty_memh;


/* 1 if [addr, addr + length) lies inside [base, base + size), without
 * overflow (every range check of keys and registrations): libgdrx's one
 * range check, so that the plugin and the library agree on every edge. */
static UCS_F_ALWAYS_INLINE int
uct_gdrx_range_holds(uint64_t base, uint64_t size, uint64_t addr, size_t length)
{
    return gdrx_range_within(base, size, addr, length);
}

/* One more in an MD counter (md->counters; printed by UCX_GDRX_STATS_DUMP). */
static UCS_F_ALWAYS_INLINE void uct_gdrx_count(uint64_t *counter)
{
    __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* The status of a libgdrx error code, on every path. */
ucs_status_t uct_gdrx_mem_status(int err);

int uct_gdrx_mem_is_host(void *address, size_t length);

/* CUDA's alignment of every allocation's start (cudaMalloc's documented
 * 256 bytes; cuMemAlloc's allocations are aligned at least as much). */
#define UCT_GDRX_CUDA_ALLOC_ALIGN 256

/* Pin/map one range, and undo it.  uct_gdrx_mem_window says what a
 * registration of [addr, addr + *length_p) is (*kind_p): host memory, a
 * span no one allocation holds (UCT_GDRX_MEM_KIND_SPAN), or device memory
 * of one allocation (UCT_GDRX_MEM_KIND_MAPPED): then the range it pins
 * (its whole allocation, or a window of it), and *length_p shortened to
 * the part inside the allocation (a request may end up to
 * UCT_GDRX_CUDA_ALLOC_ALIGN past it, see uct_gdrx_mem.c); [dptr, dptr +
 * length) of uct_gdrx_mem_map holds what req asks for and may reach past its
 * allocation (the cache's alignment and merges): the part in req's
 * allocation is pinned. */
ucs_status_t uct_gdrx_mem_window(uct_gdrx_md_t *md, uint64_t addr,
                                 size_t *length_p, int hide_errors,
                                 uct_gdrx_window_t *window,
                                 uct_gdrx_mem_kind_t *kind_p);
ucs_status_t uct_gdrx_mem_map(uct_gdrx_md_t *md, uint64_t dptr, size_t length,
                              const uct_gdrx_mem_req_t *req, int hide_errors,
                              uct_gdrx_mem_t *mem);
void uct_gdrx_mem_unmap(uct_gdrx_md_t *md, uct_gdrx_mem_t *mem);

/* The memh of a registration uct_gdrx_mem_window found to need no pin
 * (kind HOST or SPAN); uct_gdrx_mem_dereg_nocache releases it. */
ucs_status_t uct_gdrx_mem_reg_unmapped(uct_gdrx_md_t *md,
                                       uct_gdrx_mem_kind_t kind,
                                       void *address, size_t length,
                                       uct_mem_h *memh_p);

/* A registration of its own, without the cache, and its release. */
ucs_status_t uct_gdrx_mem_reg_nocache(uct_gdrx_md_t *md, void *address,
                                      size_t length, unsigned flags,
                                      uct_mem_h *memh_p);
ucs_status_t uct_gdrx_mem_dereg_nocache(uct_gdrx_md_t *md, uct_gdrx_mem_t *mem);

void uct_gdrx_mem_pack_key(const uct_gdrx_mem_t *mem, uct_gdrx_key_t *key);

/* Whether mem still names the allocation it was made for (confirming it by
 * the buffer id where events cannot vouch for it). */
int uct_gdrx_mem_confirm(uct_gdrx_md_t *md, uct_gdrx_mem_t *mem);

/* Trusted on events alone while no graph launched since it was confirmed
 * (a graph's free nodes raise no FREE event); else asks CUDA once. */
static UCS_F_ALWAYS_INLINE int
uct_gdrx_mem_is_current(uct_gdrx_md_t *md, uct_gdrx_mem_t *mem)
{
    if (ucs_likely(md->events &&
                   (__atomic_load_n(&mem->checked, __ATOMIC_RELAXED) ==
                    uct_gdrx_events_graph_epoch()))) {
        return 1;
    }
    return uct_gdrx_mem_confirm(md, mem);
}

#endif
