/*
 * uct_gdrx_alloc.c - CUDA memory allocated by the gdrx MD, so that a UCX
 * built without CUDA (no cuda_copy) can still hand CUDA buffers to its
 * users (ucp_mem_map with UCS_MEMORY_TYPE_CUDA, UCP's fragments).
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_alloc.h"
#include "uct_gdrx_cuda.h"
#include "uct_gdrx_md_reg.h"
#include "uct_gdrx_md_setup.h"
#include "uct_gdrx_mem.h"

#include <inttypes.h>
#include <ucs/debug/log.h>


ucs_status_t uct_gdrx_md_mem_alloc(uct_md_h tl_md, size_t *length_p,
                                   void **address_p, UCT_GDRX_MEM_ALLOC_ARGS,
                                   const char *alloc_name, uct_mem_h *memh_p)
{
    uct_gdrx_md_t *md = ucs_derived_of(tl_md, uct_gdrx_md_t);
    ucs_status_t status;
    uct_mem_h memh;
    uint64_t dptr;

    if ((mem_type != UCS_MEMORY_TYPE_CUDA) ||
        (flags & UCT_MD_MEM_FLAG_FIXED)) {
        return UCS_ERR_UNSUPPORTED;
    }

    if (*length_p == 0) {
        return UCS_ERR_INVALID_PARAM;
    }

    /* libcuda loaded and the memory events on before the allocation, so
     * UCX's memory-type cache learns of it; standing aside, gdrx allocates
     * nothing (its query stops offering it from then on) */
    if (uct_gdrx_md_activate(md) != UCS_OK) {
        return UCS_ERR_UNSUPPORTED;
    }

    /* as UCX's cuda_copy: in the calling thread's current context */
    status = uct_gdrx_cuda_alloc(*length_p, &dptr);
    if (status != UCS_OK) {
        return status;
    }

    /* UCP uses the allocating MD's memh as its registration there */
    status = uct_gdrx_md_reg(md, (void*)(uintptr_t)dptr, *length_p, flags,
                             &memh);
    if (status != UCS_OK) {
        uct_gdrx_cuda_free(dptr);
        return status;
    }

    uct_gdrx_count(&md->counters.allocs);
    ucs_trace("gdrx: allocated 0x%" PRIx64 " length %zu for %s", dptr,
              *length_p, alloc_name);
    *address_p = (void*)(uintptr_t)dptr;
    *memh_p    = memh;
    return UCS_OK;
}

ucs_status_t uct_gdrx_md_mem_free(uct_md_h tl_md, uct_mem_h memh)
{
    uct_gdrx_md_t *md   = ucs_derived_of(tl_md, uct_gdrx_md_t);
    uct_gdrx_mem_t *mem = memh;
    struct gdrx_mem_info info;
    int ret;

    if ((mem == NULL) || ((mem->kind != UCT_GDRX_MEM_KIND_MAPPED) &&
                          (mem->kind != UCT_GDRX_MEM_KIND_UNPINNED))) {
        return UCS_ERR_INVALID_PARAM;
    }

    /* the memh may cover a window of the allocation: free by its base */
    ret = gdrx_mem_query(mem->dptr, &info);
    if (ret != 0) {
        ucs_error("gdrx: memory 0x%" PRIx64 " to free is not device memory: "
                  "%s", mem->dptr, gdrx_strerror(ret));
        return UCS_ERR_INVALID_PARAM;
    }

    uct_gdrx_md_dereg(md, mem);
    return uct_gdrx_cuda_free(info.base);
}
