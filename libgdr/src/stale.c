/*
 * stale.c - what happens to a pin once CUDA frees its memory.
 *
 * SPDX-License-Identifier: MIT
 *
 * A pin goes stale when the backend says so (gdrdrv's free callback flag),
 * when the allocation at dptr no longer carries the buffer id recorded at
 * pin time, or when the CUDA free hook reports the allocation freed.  A
 * stale pin is revoked at once (gdrx_pin_on_freed, pin_state.c): its CPU mapping is replaced by an
 * inaccessible anonymous mapping of the same range (so a late access faults
 * instead of reaching whatever the memory became, and the address range is
 * not handed to an unrelated mmap while the caller still holds the
 * pointer), and the backend's pin is released.  gdrx_unmap() frees the
 * range, gdrx_unpin() the handle.  See docs/semantics.md.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "core.h"
#include "log.h"
#include "pin_index.h"

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

    if (gdrx_pin_is_revoked(pin))
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
        gdrx_pin_on_freed(pin);
    }
    return stale;
}

/* Revoke ref's pin if it is still the pin the index listed and still
 * overlaps [lo, hi). */
static void revoke_if_inside(const struct gdrx_pin_ref *ref, uint64_t lo, uint64_t hi)
{
    struct gdrx_pin *pin = ref->pin;

    gdrx_mutex_lock(&pin->lock, GDRX_LOCK_PIN);
    const struct gdrx_pin_req *req = &pin->req;
    if (gdrx_ht_is_live(&pin->h, ref->id) && req->alloc_base < hi &&
        gdrx_pin_req_guard_end(req) > lo) {
        gdrx_info("CUDA frees [%#llx, %#llx): revoking the pin of [%#llx, +%zu)",
                  (unsigned long long)lo, (unsigned long long)hi,
                  (unsigned long long)req->dptr, req->len);
        gdrx_pin_on_freed(pin);
    }
    gdrx_mutex_unlock(&pin->lock, GDRX_LOCK_PIN);
}

/* The pins overlapping [lo, hi): *refs is local (room entries) or, when
 * more are needed, an array the caller frees; returns how many are in it. */
static size_t pins_in(uint64_t lo, uint64_t hi, struct gdrx_pin_ref **refs, size_t *room)
{
    struct gdrx_pin_ref *local = *refs;
    size_t n = gdrx_pin_index_find(lo, hi, *refs, *room);

    while (n > *room) {
        struct gdrx_pin_ref *more = realloc(*refs == local ? NULL : *refs, n * sizeof(*more));
        if (!more)
            break; /* those we have; the rest at their next query */
        *refs = more;
        *room = n;
        n = gdrx_pin_index_find(lo, hi, *refs, *room);
    }
    return n < *room ? n : *room;
}

void gdrx_core_memory_freed(uint64_t base, size_t size, void *arg)
{
    (void)arg;
    uint64_t lo = base, hi = base + (size ? size : 1);
    struct gdrx_pin_ref local[16], *refs = local;
    size_t room = sizeof(local) / sizeof(local[0]);

    if (hi < lo)
        hi = UINT64_MAX;
    /* Only the pins of this range: the index lists them (pin_index.h). */
    size_t n = pins_in(lo, hi, &refs, &room);
    for (size_t i = 0; i < n; i++)
        revoke_if_inside(&refs[i], lo, hi);
    if (refs != local)
        free(refs);
}

/* Whether the live pin's memory belongs to what goes: the primary context
 * of device (every pin on the device: a reset must leave none live, and
 * one of another context is merely pinned again), or the context cuctx. */
static bool goes_with(struct gdrx_pin *pin, int device, void *cuctx)
{
    CUcontext owner = NULL;

    if (device >= 0)
        return pin->req.device == device;
    if (pin->ctx->dev.cu->PointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT,
                                              (CUdeviceptr)pin->req.dptr) != CUDA_SUCCESS)
        return true; /* cannot tell: revoking is the safe side */
    return (void *)owner == cuctx;
}

void gdrx_core_context_released(int device, void *cuctx,
                                void (*freed)(uint64_t base, size_t size, int device))
{
    struct gdrx_pin_ref local[16], *refs = local;
    size_t room = sizeof(local) / sizeof(local[0]);
    size_t n = pins_in(0, UINT64_MAX, &refs, &room);

    for (size_t i = 0; i < n; i++) {
        struct gdrx_pin *pin = refs[i].pin;
        gdrx_mutex_lock(&pin->lock, GDRX_LOCK_PIN);
        bool hit = gdrx_ht_is_live(&pin->h, refs[i].id) && !gdrx_pin_is_revoked(pin) &&
                   goes_with(pin, device, cuctx);
        struct gdrx_pin_req req = pin->req;
        gdrx_mutex_unlock(&pin->lock, GDRX_LOCK_PIN);
        /* Each allocation once: its first free revokes its other pins. */
        if (hit)
            freed(req.alloc_base, req.alloc_size, req.device);
    }
    if (refs != local)
        free(refs);
}
