/*
 * uct_gdrx_mem.c - one registration: find the CUDA allocation, pin and map
 * the requested part of it through libgdrx, and undo that; its remote key;
 * libgdrx's errors as UCX statuses.
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_mem.h"
#include "uct_gdrx_cuda.h"

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


ucs_status_t uct_gdrx_mem_status(int err)
{
    switch (err) {
    case 0:
        return UCS_OK;
    case -ENOMEM:
        return UCS_ERR_NO_MEMORY;
    case -EINVAL:
    case -ENOENT:
    case -ESTALE: /* CUDA freed the memory: a key must not be used again */
        return UCS_ERR_INVALID_ADDR;
    case -ERANGE:
        return UCS_ERR_OUT_OF_RANGE;
    case -ENODEV:
    case -ELIBACC:
        return UCS_ERR_NO_DEVICE;
    case -ENOSYS:
    case -EOPNOTSUPP:
        return UCS_ERR_UNSUPPORTED;
    case -EBUSY:
    case -EAGAIN:
        return UCS_ERR_BUSY;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

/* What gdrx_mem_query answers for memory that is not CUDA device memory
 * (or where no GPU is there to own it). */
static UCS_F_ALWAYS_INLINE int uct_gdrx_mem_query_is_host(int ret)
{
    return (ret == -ENOENT) || (ret == -ENODEV);
}

/* Host unless libgdrx knows the address as CUDA device memory (no CUDA
 * loaded in the process: host). */
int uct_gdrx_mem_is_host(void *address, size_t length)
{
    struct gdrx_mem_info info;

    (void)length;
    return uct_gdrx_mem_query_is_host(gdrx_mem_query((uintptr_t)address,
                                                     &info));
}

/* The part of [addr, addr + length) that addr's allocation serves, in
 * *served_p; 0 if the range reaches past it.  CUDA starts allocations on
 * UCT_GDRX_CUDA_ALLOC_ALIGN boundaries, so the bytes from an allocation's
 * end to the next such boundary belong to no other allocation and lie in
 * the GPU page of its last byte (mapped, and pinned with it): a request
 * ending there is one that a caller's alignment widened (UCP 1.23's
 * registration cache aligns to 16 bytes, so a 1-byte allocation registers
 * as 16), and it is served by the allocation's part. */
static int uct_gdrx_mem_alloc_serves(const struct gdrx_mem_info *info,
                                     uint64_t addr, size_t length,
                                     size_t *served_p)
{
    uint64_t alloc_end = info->base + info->size;
    uint64_t slack     = ucs_align_up_pow2(alloc_end,
                                           UCT_GDRX_CUDA_ALLOC_ALIGN) -
                         alloc_end;

    if (!uct_gdrx_range_holds(info->base, info->size + slack, addr, length) ||
        (addr >= alloc_end)) {
        return 0;
    }
    *served_p = ucs_min(length, alloc_end - addr);
    return 1;
}

/* One pin maps one allocation: a pin asked for a range reaching into
 * another allocation (or past every allocation) is refused.  UCS_OK and
 * the length served, or the error. */
static ucs_status_t
uct_gdrx_mem_check_alloc(const struct gdrx_mem_info *info, uint64_t addr,
                         size_t length, ucs_log_level_t level,
                         size_t *served_p)
{
    if (uct_gdrx_mem_alloc_serves(info, addr, length, served_p)) {
        return UCS_OK;
    }

    ucs_log(level, "gdrx: 0x%" PRIx64 " length %zu reaches past its CUDA "
            "allocation 0x%" PRIx64 " length %zu", addr, length, info->base,
            info->size);
    return UCS_ERR_INVALID_ADDR;
}

/* A range that does not start in device memory: host memory, unless its
 * last byte is device memory (UCX's memory-type cache kept the extent of
 * a freed allocation in front of a live one: a host memh would have the
 * CPU copy device memory). */
static uct_gdrx_mem_kind_t uct_gdrx_mem_kind_from_host(uint64_t addr,
                                                       size_t length)
{
    struct gdrx_mem_info info;

    return ((length > 1) &&
            !uct_gdrx_mem_query_is_host(gdrx_mem_query(addr + length - 1,
                                                       &info))) ?
           UCT_GDRX_MEM_KIND_SPAN : UCT_GDRX_MEM_KIND_HOST;
}

ucs_status_t uct_gdrx_mem_window(uct_gdrx_md_t *md, uint64_t addr,
                                 size_t *length_p, int hide_errors,
                                 uct_gdrx_window_t *window,
                                 uct_gdrx_mem_kind_t *kind_p)
{
    size_t length = *length_p;
    struct gdrx_mem_info info;
    uint64_t alloc_end;
    int ret;

    ret = gdrx_mem_query(addr, &info);
    if (uct_gdrx_mem_query_is_host(ret)) {
        *kind_p = uct_gdrx_mem_kind_from_host(addr, length);
        return UCS_OK;
    } else if (ret != 0) {
        uct_gdrx_count(&md->counters.reg_errors);
        return uct_gdrx_mem_status(ret);
    } else if (!uct_gdrx_mem_alloc_serves(&info, addr, length, length_p)) {
        /* UCX registers what its memory-type cache or another transport's
         * alignment made of the buffer: which allocation holds the data is
         * known only at the copy */
        ucs_debug("gdrx: 0x%" PRIx64 " length %zu reaches past its CUDA "
                  "allocation 0x%" PRIx64 " length %zu: resolved per copy",
                  addr, length, info.base, info.size);
        *kind_p = UCT_GDRX_MEM_KIND_SPAN;
        return UCS_OK;
    }

    /* the whole allocation: every message of a buffer shares one pin; a
     * large one in aligned windows, so the BAR space pinned stays near
     * what is used */
    length    = *length_p;
    alloc_end = info.base + info.size;
    if (info.size <= md->reg_window) {
        window->start = info.base;
        window->end   = alloc_end;
    } else {
        window->start = ucs_max(info.base,
                                ucs_align_down_pow2(addr, md->reg_window));
        window->end   = ucs_min(alloc_end,
                                ucs_align_up_pow2(addr + length,
                                                  md->reg_window));
    }
    *kind_p = UCT_GDRX_MEM_KIND_MAPPED;
    return UCS_OK;
}

ucs_status_t uct_gdrx_mem_reg_unmapped(uct_gdrx_md_t *md,
                                       uct_gdrx_mem_kind_t kind,
                                       void *address, size_t length,
                                       uct_mem_h *memh_p)
{
    uct_gdrx_mem_t *mem;

    if (kind == UCT_GDRX_MEM_KIND_HOST) {
        uct_gdrx_count(&md->counters.host_regs);
        *memh_p = &uct_gdrx_host_memh;
        return UCS_OK;
    }

    /* a memh of its own: its key names the range UCX may copy in */
    mem = ucs_calloc(1, sizeof(*mem), "uct_gdrx_span_mem_t");
    if (mem == NULL) {
        ucs_error("gdrx: failed to allocate a memory handle");
        return UCS_ERR_NO_MEMORY;
    }
    mem->kind   = UCT_GDRX_MEM_KIND_SPAN;
    mem->dptr   = (uintptr_t)address;
    mem->length = length;
    uct_gdrx_count(&md->counters.span_regs);
    *memh_p = mem;
    return UCS_OK;
}

/* Pin and map [start, start + length) of one allocation: 0 or libgdrx's
 * error, nothing changed. */
static int uct_gdrx_mem_pin(uct_gdrx_md_t *md, uint64_t start, size_t length,
                            ucs_log_level_t level, uct_gdrx_mem_t *mem)
{
    gdrx_pin_t pin;
    void *cpu_ptr;
    int ret;

    ret = gdrx_pin(md->ctx, start, length, GDRX_PIN_FLAG_DEFAULT, &pin);
    if (ret != 0) {
        ucs_log(level, "gdrx: pin of 0x%" PRIx64 " length %zu failed: %s",
                start, length, gdrx_strerror(ret));
        return ret;
    }

    ret = gdrx_map(md->ctx, pin, &cpu_ptr);
    if (ret != 0) {
        ucs_log(level, "gdrx: map of 0x%" PRIx64 " length %zu failed: %s",
                start, length, gdrx_strerror(ret));
        gdrx_unpin(md->ctx, pin);
        return ret;
    }

    mem->kind    = UCT_GDRX_MEM_KIND_MAPPED;
    mem->pin     = pin;
    mem->cpu_ptr = cpu_ptr;
    return 0;
}

int uct_gdrx_mem_confirm(uct_gdrx_md_t *md, uct_gdrx_mem_t *mem)
{
    uint64_t checked = uct_gdrx_events_graph_epoch();
    struct gdrx_mem_info info;

    if ((gdrx_mem_query(mem->dptr, &info) != 0) ||
        (info.buffer_id != mem->buffer_id)) {
        return 0;
    }
    if (md->events) { /* read only then: no shared-line store per hit else */
        __atomic_store_n(&mem->checked, checked, __ATOMIC_RELAXED);
    }
    return 1;
}

ucs_status_t uct_gdrx_mem_map(uct_gdrx_md_t *md, uint64_t dptr, size_t length,
                              const uct_gdrx_mem_req_t *req, int hide_errors,
                              uct_gdrx_mem_t *mem)
{
    ucs_log_level_t level = hide_errors ? UCS_LOG_LEVEL_DEBUG :
                                          UCS_LOG_LEVEL_ERROR;
    /* counted before the query: a launch during it forces a re-check */
    uint64_t checked          = uct_gdrx_events_graph_epoch();
    struct gdrx_mem_info info = {0};
    uint64_t start, end;
    ucs_status_t status;
    size_t served;
    int ret;

    /* The allocation of the address asked for (the widened range may start
     * in another one, or in none). */
    ret = gdrx_mem_query(req->address, &info);
    if (ret != 0) {
        ucs_log(level, "gdrx: address 0x%" PRIx64 " is not device memory: %s",
                req->address, gdrx_strerror(ret));
        status = uct_gdrx_mem_status(ret);
        goto err;
    }

    status = uct_gdrx_mem_check_alloc(&info, req->address, req->length,
                                      level, &served);
    if (status != UCS_OK) {
        goto err;
    }

    start = ucs_max(dptr, info.base);
    end   = ucs_min(dptr + length, info.base + info.size);
    ret   = uct_gdrx_mem_pin(md, start, end - start,
                             /* a refused pin is no error when CUDA can copy */
                             (uct_gdrx_cuda_api() != NULL) ?
                             UCS_LOG_LEVEL_DEBUG : level, mem);
    if (ret == 0) {
        mem->dptr      = start;
        mem->length    = end - start;
        mem->buffer_id = info.buffer_id;
        mem->checked   = checked;
        uct_gdrx_count(&md->counters.pins);
        ucs_trace("gdrx: mapped 0x%" PRIx64 " length %zu at %p", start,
                  mem->length, mem->cpu_ptr);
        return UCS_OK;
    }

    if (uct_gdrx_cuda_api() == NULL) {
        status = uct_gdrx_mem_status(ret);
        goto err;
    }

    /* Step aside rather than fail the job (UCP aborts or drops the whole
     * registration): this memory is copied by CUDA, as cuda_copy would. */
    uct_gdrx_count(&md->counters.reg_errors);
    if (__atomic_fetch_add(&md->counters.reg_fallbacks, 1,
                           __ATOMIC_RELAXED) == 0) {
        ucs_diag("gdrx: cannot pin 0x%" PRIx64 " length %zu (%s): copying "
                 "such memory with the copy engine", start,
                 (size_t)(end - start), gdrx_strerror(ret));
    }
    mem->kind      = UCT_GDRX_MEM_KIND_UNPINNED;
    mem->dptr      = start;
    mem->length    = end - start;
    mem->buffer_id = info.buffer_id;
    mem->checked   = checked;
    mem->pin.id    = 0;
    mem->cpu_ptr   = NULL;
    return UCS_OK;

err:
    uct_gdrx_count(&md->counters.reg_errors);
    return status;
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
    size_t served = length;
    uct_gdrx_mem_kind_t kind;
    uct_gdrx_window_t window;
    uct_gdrx_mem_req_t req;
    uct_gdrx_mem_t *mem;
    ucs_status_t status;

    status = uct_gdrx_mem_window(md, (uintptr_t)address, &served,
                                 flags & UCT_MD_MEM_FLAG_HIDE_ERRORS, &window,
                                 &kind);
    if (status != UCS_OK) {
        return status;
    } else if (kind != UCT_GDRX_MEM_KIND_MAPPED) {
        return uct_gdrx_mem_reg_unmapped(md, kind, address, length, memh_p);
    }

    mem = ucs_calloc(1, sizeof(*mem), "uct_gdrx_mem_t");
    if (mem == NULL) {
        ucs_error("gdrx: failed to allocate a memory handle");
        return UCS_ERR_NO_MEMORY;
    }

    req.address = (uintptr_t)address;
    req.length  = length;
    req.flags   = flags;
    status      = uct_gdrx_mem_map(md, req.address, length, &req,
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
    uct_gdrx_mem_unmap(md, mem); /* nothing for a span's memh */
    ucs_free(mem);
    return UCS_OK;
}

void uct_gdrx_mem_pack_key(const uct_gdrx_mem_t *mem, uct_gdrx_key_t *key)
{
    key->kind    = mem->kind;
    key->pin_id  = mem->pin.id;
    key->dptr    = mem->dptr;
    key->length  = mem->length;
    key->cpu_ptr = (uintptr_t)mem->cpu_ptr;
    key->checked = mem->checked;
}
