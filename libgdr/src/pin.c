/*
 * pin.c - the life of a pin: create (validate the range against its CUDA
 * allocation, align it to GPU pages, pin through the backend), map and
 * query; the state changes themselves are in pin_state.c.  Every function
 * here but gdrx_pin_create() runs with pin->lock held.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "core.h"
#include "free_hook.h"
#include "graph_mem.h"
#include "ipoint.h"
#include "log.h"
#include "pin_index.h"
#include "sync_memops.h"

/* A span's walk over its neighbours (sync_span): CUDA's allocation
 * granule, and the most addresses looked up. */
#define SPAN_GRANULE     256u
#define SPAN_MAX_LOOKUPS 65536u

static void pin_slot_init(struct gdrx_hslot *s)
{
    struct gdrx_pin *pin = (struct gdrx_pin *)s;

    /* Never destroyed: the slot outlives every pin it holds. */
    pthread_mutex_init(&pin->lock, NULL);
}

struct gdrx_htable gdrx_pin_table = GDRX_HTABLE_INIT(GDRX_PIN_TAG, struct gdrx_pin, pin_slot_init,
                                                    GDRX_LOCK_PIN_TABLE);

int gdrx_pin_get_locked(struct gdrx_ctx *ctx, uint64_t id, struct gdrx_pin **out)
{
    struct gdrx_pin *pin = (struct gdrx_pin *)gdrx_ht_lookup(&gdrx_pin_table, id);

    if (!pin)
        return -EINVAL;
    /* A fork parent's pin: its lock may have been held by a thread that
     * does not exist here, so do not take it. */
    if (atomic_load_explicit(&pin->fp.err, memory_order_relaxed) == -ECHILD)
        return -ECHILD;
    gdrx_mutex_lock(&pin->lock, GDRX_LOCK_PIN);
    /* Held by a thread a fork child does not have (issue 43, defect 10). */
    GDRX_IPOINT("pin.get_locked");
    if (!gdrx_ht_is_live(&pin->h, id) || pin->ctx != ctx) {
        gdrx_mutex_unlock(&pin->lock, GDRX_LOCK_PIN);
        return -EINVAL;
    }
    *out = pin;
    return 0;
}

/* The device that owns dptr; -EINVAL if dptr is not device memory. */
static int pointer_device(const struct gdrx_cuda *cu, uint64_t dptr, int *device)
{
    unsigned int memtype = 0;
    int ordinal = -1;

    if (cu->PointerGetAttribute(&memtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr) != CUDA_SUCCESS ||
        memtype != CU_MEMORYTYPE_DEVICE) {
        gdrx_dbg("%#llx is not CUDA device memory", (unsigned long long)dptr);
        return -EINVAL;
    }
    CUresult res = cu->PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dptr);
    if (res != CUDA_SUCCESS || ordinal < 0) {
        gdrx_err("no device ordinal for %#llx: CUDA error %d", (unsigned long long)dptr, (int)res);
        return res != CUDA_SUCCESS ? gdrx_cuda_errno(res) : -EINVAL;
    }
    *device = ordinal;
    return 0;
}

/* SYNC_MEMOPS on the allocation holding dptr, as GPUDirect RDMA requires.
 * VMM memory refuses it, and is pinned anyway (sync_memops.c says why). */
static int set_sync_memops(const struct gdrx_cuda *cu, uint64_t dptr)
{
    int rc = gdrx_sync_memops_set(cu, dptr);

    return rc == -EOPNOTSUPP ? 0 : rc;
}

/* Fill the allocation, window and buffer id of req (device context
 * current).  SYNC_MEMOPS waits for the backend's pin (pin_into_slot). */
static int describe_allocation(const struct gdrx_cuda *cu, struct gdrx_pin_req *req)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult res = cu->MemGetAddressRange(&base, &size, (CUdeviceptr)req->dptr);

    if (res != CUDA_SUCCESS) {
        gdrx_dbg("cuMemGetAddressRange(%#llx) failed: CUDA error %d",
                 (unsigned long long)req->dptr, (int)res);
        return -EINVAL;
    }
    /* [dptr, dptr+len) must lie inside [base, base+size) (a SPAN only
     * needs dptr there). */
    int span = (req->flags & GDRX_PIN_FLAG_SPAN) != 0;
    if (!gdrx_range_within(base, size, req->dptr, span ? 1 : req->len)) {
        gdrx_dbg("[%#llx, +%zu) crosses the end of its allocation [%#llx, +%zu)",
                 (unsigned long long)req->dptr, req->len, (unsigned long long)base, size);
        return -EINVAL;
    }
    uint64_t end = req->dptr + req->len;
    if (end > UINT64_MAX - (GDRX_GPU_PAGE_SIZE - 1))
        return -EINVAL;
    req->alloc_base = base;
    req->alloc_size = size;
    req->win_base = req->dptr & ~(GDRX_GPU_PAGE_SIZE - 1);
    req->win_size = ((end + GDRX_GPU_PAGE_SIZE - 1) & ~(GDRX_GPU_PAGE_SIZE - 1)) - req->win_base;

    unsigned long long buffer_id = 0;
    res = cu->PointerGetAttribute(&buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, req->dptr);
    if (res != CUDA_SUCCESS) {
        gdrx_err("no buffer id for %#llx: CUDA error %d", (unsigned long long)req->dptr, (int)res);
        return gdrx_cuda_errno(res);
    }
    req->buffer_id = buffer_id;
    int bound = gdrx_graph_mem_launch_bound(cu, req->dptr);
    if (bound < 0)
        return bound;
    req->launch_bound = bound;
    /* held over every graph launch, so only where launches are seen */
    return bound ? gdrx_graph_mem_launches_seen() : 0;
}

/* A span reaches its neighbours: each allocation in the rest of the range
 * takes SYNC_MEMOPS too.  Gaps are stepped over at CUDA's 256-byte
 * granule, up to a bound (an allocation made in a gap later, or past the
 * bound, does not get it; docs/compat.md). */
static int sync_span(const struct gdrx_cuda *cu, const struct gdrx_pin_req *req)
{
    uint64_t end = req->dptr + req->len, p = req->alloc_base + req->alloc_size;

    for (unsigned n = 0; p < end && n < SPAN_MAX_LOOKUPS; n++) {
        CUdeviceptr base = 0;
        size_t size = 0;
        if (cu->MemGetAddressRange(&base, &size, (CUdeviceptr)p) != CUDA_SUCCESS || !size) {
            p = (p | (SPAN_GRANULE - 1)) + 1;
            continue;
        }
        int rc = set_sync_memops(cu, base);
        if (rc)
            return rc;
        p = base + size > p ? base + size : p + 1;
    }
    return 0;
}

/* Backend pin of req into a fresh slot; the device context is current. */
static int pin_into_slot(struct gdrx_ctx *ctx, const struct gdrx_pin_req *req, uint64_t *id)
{
    struct gdrx_pin *pin = (struct gdrx_pin *)gdrx_ht_alloc(&gdrx_pin_table, id);

    if (!pin)
        return -ENOMEM;
    gdrx_mutex_lock(&pin->lock, GDRX_LOCK_PIN);
    pin->state = GDRX_PIN_UNUSED;
    pin->ctx = ctx;
    pin->ops = ctx->ops;
    pin->bctx = ctx->bctx;
    pin->req = *req;
    memset(&pin->bp, 0, sizeof(pin->bp));
    pin->bp.pin_base = req->win_base;
    pin->bp.pin_size = req->win_size;
    pin->bp.page_size = GDRX_GPU_PAGE_SIZE;

    /* Findable by the free hook before the backend pins: a free racing
     * with this pin waits for pin->lock and then revokes it. */
    int rc = gdrx_pin_index_add(pin, *id, req->alloc_base, gdrx_pin_req_guard_end(req),
                                req->launch_bound);
    if (rc)
        goto err_slot;
    gdrx_fork_hold(); /* a backend may map while it pins (dmabuf's probe) */
    rc = ctx->ops->pin(ctx->bctx, req, &pin->bp);
    gdrx_fork_release();
    if (rc == 0) {
        if (!gdrx_range_within(pin->bp.pin_base, pin->bp.pin_size, req->dptr, req->len)) {
            gdrx_err("backend %s pinned [%#llx, +%zu), which misses the request",
                     ctx->ops->name, (unsigned long long)pin->bp.pin_base, pin->bp.pin_size);
            rc = -EIO;
        } else {
            /* SYNC_MEMOPS, as GPUDirect RDMA requires, only on what the
             * backend pinned: a refused pin (a span into memory it cannot
             * reach as one piece) leaves every allocation as it was */
            rc = set_sync_memops(ctx->dev.cu, req->dptr);
            if (rc == 0 && gdrx_pin_req_spans(req))
                rc = sync_span(ctx->dev.cu, req);
        }
        if (rc)
            ctx->ops->unpin(ctx->bctx, &pin->bp);
    }
    if (rc) {
        gdrx_pin_index_remove(pin, *id, req->alloc_base);
        goto err_slot;
    }
    gdrx_pin_on_pinned(pin);
    gdrx_ht_publish(&pin->h, *id);
    atomic_fetch_add_explicit(&ctx->pin_count, 1, memory_order_relaxed);
    gdrx_mutex_unlock(&pin->lock, GDRX_LOCK_PIN);
    return 0;

err_slot:
    pin->ctx = NULL;
    gdrx_mutex_unlock(&pin->lock, GDRX_LOCK_PIN);
    gdrx_ht_free(&gdrx_pin_table, &pin->h);
    return rc;
}

int gdrx_pin_create(struct gdrx_ctx *ctx, uint64_t dptr, size_t len, uint32_t flags, uint64_t *id)
{
    struct gdrx_pin_req req = { .dptr = dptr, .len = len, .flags = flags };
    const struct gdrx_cuda *cu = ctx->dev.cu;

    /* The CUDA hooks come with the first pin (they protect pins), not with
     * gdrx_open: a library that opens gdrx and then lets UCX patch libcuda
     * (UCX's gdr_copy over libgdrapi) would otherwise lock UCX out. */
    gdrx_free_hook_enable();
    int rc = pointer_device(cu, dptr, &req.device);
    if (rc)
        return rc;
    rc = gdrx_devctx_push(&ctx->dev, req.device);
    if (rc)
        return rc;
    rc = describe_allocation(cu, &req);
    if (rc == 0)
        rc = pin_into_slot(ctx, &req, id);
    gdrx_devctx_pop(&ctx->dev);
    if (rc == 0)
        gdrx_dbg("pinned [%#llx, +%zu) on device %d as %#llx", (unsigned long long)dptr, len,
                 req.device, (unsigned long long)*id);
    return rc;
}

int gdrx_pin_map_locked(struct gdrx_pin *pin, void **cpu_ptr)
{
    if (pin->state == GDRX_PIN_PINNED) {
        int rc = gdrx_pin_refresh_stale_locked(pin);
        if (rc)
            return rc > 0 ? -ESTALE : rc;
        if (pin->req.flags & GDRX_PIN_FLAG_NO_MAP)
            return -EPERM;
    }
    int rc = gdrx_pin_on_map(pin);
    if (rc)
        return rc;
    *cpu_ptr = (char *)pin->bp.cpu_base + (pin->req.dptr - pin->bp.dbase);
    return 0;
}

int gdrx_pin_query_locked(struct gdrx_pin *pin, struct gdrx_pin_info *info)
{
    int stale = gdrx_pin_refresh_stale_locked(pin);

    if (stale < 0)
        return stale;
    const struct gdrx_pin_req *req = &pin->req;
    const struct gdrx_backend_pin *bp = &pin->bp;
    memset(info, 0, sizeof(*info));
    info->dptr = req->dptr;
    info->len = req->len;
    info->alloc_base = req->alloc_base;
    info->alloc_size = req->alloc_size;
    info->pinned_base = bp->pin_base;
    info->pinned_size = bp->pin_size;
    info->page_size = bp->page_size;
    info->device = req->device;
    info->backend = pin->ops->id;
    info->stale = stale;
    /* A revoked mapping still occupies its address range (faulting) until
     * gdrx_unmap(), but it is no mapping of the memory any more. */
    if (pin->state == GDRX_PIN_MAPPED) {
        info->mapping_type = bp->type;
        info->cpu_ptr = (char *)bp->cpu_base + (req->dptr - bp->dbase);
    } else {
        info->mapping_type = GDRX_MAPPING_NONE;
        info->cpu_ptr = NULL;
    }
    return 0;
}

int gdrx_pin_copy_variants_locked(struct gdrx_pin *pin, gdrx_copy_variant_t *to,
                                  gdrx_copy_variant_t *from)
{
    int stale = gdrx_pin_refresh_stale_locked(pin);

    if (stale)
        return stale > 0 ? -ESTALE : stale;
    if (pin->state != GDRX_PIN_MAPPED)
        return -EINVAL;
    if (to)
        *to = pin->copy_to;
    if (from)
        *from = pin->copy_from;
    return 0;
}
