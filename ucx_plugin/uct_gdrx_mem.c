/*
 * uct_gdrx_mem.c - one registration: find the CUDA allocation, pin and map
 * the requested part of it through libgdrx, and undo that.
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_md.h"

#include <errno.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>


/* The memh of every host registration: UCX's memtype endpoint needs a lane
 * that registers host memory, and a CPU copy needs nothing registered. */
uct_gdrx_mem_t uct_gdrx_host_memh = {.kind = UCT_GDRX_MEM_KIND_HOST};

/* The memh of every registration that maps nothing: zero-length ones, and
 * all of them while the MD stands aside (a copy through it finds no byte
 * in range and fails). */
uct_gdrx_mem_t uct_gdrx_empty_memh = {.kind = UCT_GDRX_MEM_KIND_EMPTY};


static UCS_F_ALWAYS_INLINE void uct_gdrx_count(uint64_t *counter)
{
    __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* Host unless libgdrx knows the address as CUDA device memory (no CUDA
 * loaded in the process: host). */
int uct_gdrx_mem_is_host(void *address, size_t length)
{
    struct gdrx_mem_info info;
    int ret;

    (void)length;
    ret = gdrx_mem_query((uintptr_t)address, &info);
    return (ret == -ENOENT) || (ret == -ENODEV);
}

ucs_status_t uct_gdrx_mem_map(uct_gdrx_md_t *md, uint64_t dptr, size_t length,
                              int hide_errors, uct_gdrx_mem_t *mem)
{
    ucs_log_level_t level = hide_errors ? UCS_LOG_LEVEL_DEBUG :
                                          UCS_LOG_LEVEL_ERROR;
    struct gdrx_mem_info info = {0};
    uint64_t start        = dptr;
    uint64_t end          = dptr + length;
    gdrx_pin_t pin;
    void *cpu_ptr;
    int ret;

    /* The cache may have widened the range past the allocation (alignment,
     * merges): pin only what belongs to it. */
    ret = gdrx_mem_query(dptr, &info);
    if (ret == 0) {
        start = ucs_max(start, info.base);
        end   = ucs_min(end, info.base + info.size);
    } else {
        ucs_log(level, "gdrx: address 0x%" PRIx64 " is not device memory: %s",
                dptr, gdrx_strerror(ret));
        goto err;
    }

    ret = gdrx_pin(md->ctx, start, end - start, GDRX_PIN_FLAG_DEFAULT, &pin);
    if (ret != 0) {
        ucs_log(level, "gdrx: pin of 0x%" PRIx64 "..0x%" PRIx64 " failed: %s",
                start, end, gdrx_strerror(ret));
        goto err;
    }

    ret = gdrx_map(md->ctx, pin, &cpu_ptr);
    if (ret != 0) {
        ucs_log(level, "gdrx: map of 0x%" PRIx64 " length %zu failed: %s",
                start, (size_t)(end - start), gdrx_strerror(ret));
        gdrx_unpin(md->ctx, pin);
        goto err;
    }

    mem->kind      = UCT_GDRX_MEM_KIND_MAPPED;
    mem->pin       = pin;
    mem->dptr      = start;
    mem->length    = end - start;
    mem->cpu_ptr   = cpu_ptr;
    mem->buffer_id = info.buffer_id;
    uct_gdrx_count(&md->counters.pins);
    ucs_trace("gdrx: mapped 0x%" PRIx64 " length %zu at %p", start,
              mem->length, cpu_ptr);
    return UCS_OK;

err:
    uct_gdrx_count(&md->counters.reg_errors);
    return uct_gdrx_md_status(ret);
}

void uct_gdrx_mem_unmap(uct_gdrx_md_t *md, uct_gdrx_mem_t *mem)
{
    int ret;

    if (mem->kind != UCT_GDRX_MEM_KIND_MAPPED) {
        return;
    }

    /* gdrx_unpin unmaps first; a stale pin still has to be released. */
    ret = gdrx_unpin(md->ctx, mem->pin);
    if (ret != 0) {
        ucs_warn("gdrx: unpin of 0x%" PRIx64 " length %zu failed: %s",
                 mem->dptr, mem->length, gdrx_strerror(ret));
    }
    uct_gdrx_count(&md->counters.unpins);
    mem->kind = UCT_GDRX_MEM_KIND_EMPTY;
}

ucs_status_t uct_gdrx_mem_reg_nocache(uct_gdrx_md_t *md, void *address,
                                      size_t length, unsigned flags,
                                      uct_mem_h *memh_p)
{
    uct_gdrx_mem_t *mem;
    ucs_status_t status;

    mem = ucs_calloc(1, sizeof(*mem), "uct_gdrx_mem_t");
    if (mem == NULL) {
        ucs_error("gdrx: failed to allocate a memory handle");
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_gdrx_mem_map(md, (uintptr_t)address, length,
                              flags & UCT_MD_MEM_FLAG_HIDE_ERRORS, mem);
    if (status != UCS_OK) {
        ucs_free(mem);
        return status;
    }

    *memh_p = mem;
    return UCS_OK;
}

ucs_status_t uct_gdrx_mem_dereg_nocache(uct_gdrx_md_t *md, uct_gdrx_mem_t *mem)
{
    uct_gdrx_mem_unmap(md, mem);
    ucs_free(mem);
    return UCS_OK;
}
