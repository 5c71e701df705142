/*
 * stale.c - what happens to a pin once CUDA frees its memory.
 *
 * SPDX-License-Identifier: MIT
 *
 * A pin goes stale when the backend says so (gdrdrv's free callback flag),
 * when the allocation at dptr no longer carries the buffer id recorded at
 * pin time, or when the CUDA free hook reports the allocation freed.  A
 * stale pin is revoked at once: its CPU mapping is replaced by an
 * inaccessible anonymous mapping of the same range (so a late access faults
 * instead of reaching whatever the memory became, and the address range is
 * not handed to an unrelated mmap while the caller still holds the
 * pointer), and the backend's pin is released.  gdrx_unmap() frees the
 * range, gdrx_unpin() the handle.  See docs/semantics.md.
 */
#include <errno.h>
#include <sys/mman.h>

#include "core.h"
#include "log.h"

/* 1 if the allocation at the pin's dptr is gone or another one, 0 if it is
 * still the one pinned, negative errno if CUDA could not tell. */
static int buffer_id_changed(struct gdrx_pin *pin)
{
    struct gdrx_devctx *dev = &pin->ctx->dev;
    unsigned long long id = 0;

    int rc = gdrx_devctx_push(dev, pin->req.device);
    if (rc)
        return rc;
    CUresult res = dev->cu->PointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                                (CUdeviceptr)pin->req.dptr);
    gdrx_devctx_pop(dev);
    if (res == CUDA_ERROR_INVALID_VALUE)
        return 1; /* no allocation there any more */
    if (res != CUDA_SUCCESS)
        return gdrx_cuda_errno(res);
    return id != pin->req.buffer_id;
}

int gdrx_pin_refresh_stale_locked(struct gdrx_pin *pin)
{
    int stale = 0;

    if (pin->stale)
        return 1;
    if (pin->ops->is_stale) {
        stale = pin->ops->is_stale(pin->bctx, &pin->bp);
        if (stale < 0)
            return stale;
    }
    if (!stale) {
        stale = buffer_id_changed(pin);
        if (stale < 0)
            return stale;
    }
    if (stale) {
        gdrx_info("pin of [%#llx, +%zu) went stale: its memory was freed",
                  (unsigned long long)pin->req.dptr, pin->req.len);
        gdrx_pin_revoke_locked(pin);
    }
    return stale;
}

void gdrx_pin_revoke_locked(struct gdrx_pin *pin)
{
    pin->stale = 1;
    /* New copies see -ESTALE before the mapping changes under them. */
    gdrx_pin_fp_publish(pin, 0);
    if (pin->mapped && !pin->revoked) {
        void *p = mmap(pin->bp.cpu_base, pin->bp.map_size, PROT_NONE,
                       MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            /* Not expected (the range is ours); at least make the existing
             * mapping inaccessible. */
            gdrx_err("cannot replace the mapping of a stale pin (errno %d)", errno);
            if (mprotect(pin->bp.cpu_base, pin->bp.map_size, PROT_NONE) != 0)
                gdrx_err("cannot protect the mapping of a stale pin (errno %d)", errno);
            pin->ops->unmap(pin->bctx, &pin->bp);
            pin->mapped = 0;
        } else {
            pin->revoked = 1;
        }
    }
    if (!pin->released) {
        int rc = pin->ops->unpin(pin->bctx, &pin->bp);
        if (rc)
            gdrx_warn("backend unpin of a stale pin failed: %d", rc);
        pin->released = 1;
    }
}

struct freed_range {
    uint64_t lo, hi;
};

static void revoke_if_inside(struct gdrx_hslot *s, void *arg)
{
    struct gdrx_pin *pin = (struct gdrx_pin *)s;
    const struct freed_range *r = arg;

    /* Unlocked prefilter: most pins belong to other allocations. */
    uint64_t hi = atomic_load_explicit(&pin->alloc_hi, memory_order_relaxed);
    uint64_t lo = atomic_load_explicit(&pin->alloc_lo, memory_order_relaxed);
    if (hi == 0 || hi <= r->lo || lo >= r->hi)
        return;
    pthread_mutex_lock(&pin->lock);
    hi = atomic_load_explicit(&pin->alloc_hi, memory_order_relaxed);
    lo = atomic_load_explicit(&pin->alloc_lo, memory_order_relaxed);
    if (hi != 0 && hi > r->lo && lo < r->hi && !pin->stale) {
        gdrx_info("CUDA frees [%#llx, %#llx): revoking the pin of [%#llx, +%zu)",
                  (unsigned long long)r->lo, (unsigned long long)r->hi,
                  (unsigned long long)pin->req.dptr, pin->req.len);
        gdrx_pin_revoke_locked(pin);
    }
    pthread_mutex_unlock(&pin->lock);
}

void gdrx_core_memory_freed(uint64_t base, size_t size, void *arg)
{
    (void)arg;
    struct freed_range r = { .lo = base, .hi = base + (size ? size : 1) };

    if (r.hi < r.lo)
        r.hi = UINT64_MAX;
    /* Linear in the pins ever created; a free is rare next to a copy. */
    gdrx_ht_foreach(&gdrx_pin_table, revoke_if_inside, &r);
}
