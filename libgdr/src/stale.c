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

/* What one hooked call may release (gdrx_core_release_begin*). */
struct release_what {
    uint64_t lo, hi;
    int      device;
    void    *cuctx;
    bool     launch;
};

static size_t find(const struct release_what *w, struct gdrx_pin_ref *out, size_t max)
{
    return w->launch ? gdrx_pin_index_find_launch_bound(out, max)
                     : gdrx_pin_index_find(w->lo, w->hi, out, max);
}

/* The pins w may concern: *refs is local (room entries) or, when more are
 * needed, an array the caller frees; returns how many are in it. */
static size_t pins_in(const struct release_what *w, struct gdrx_pin_ref **refs, size_t *room)
{
    struct gdrx_pin_ref *local = *refs;
    size_t n = find(w, *refs, *room);

    while (n > *room) {
        struct gdrx_pin_ref *more = realloc(*refs == local ? NULL : *refs, n * sizeof(*more));
        if (!more)
            break; /* those we have; the rest at their next query */
        *refs = more;
        *room = n;
        n = find(w, *refs, *room);
    }
    return n < *room ? n : *room;
}

/* The pins held over one hooked CUDA call. */
struct gdrx_core_release {
    uint64_t            lo, hi; /* the hull of the held pins' guard ranges */
    size_t              n;
    struct gdrx_pin_ref refs[]; /* then n allocation bases (the end's) */
};

/* Whether the live pin's memory goes with what the call releases: a graph
 * launch's launch-bound pins (launch), the range [lo, hi) (device < 0, no
 * cuctx), the primary context of device, or the context cuctx.  A context owns an allocation when
 * CU_POINTER_ATTRIBUTE_CONTEXT names it; the primary context is the one
 * the pin's gdrx context retained for the device (a pin is made under
 * it).  Where CUDA cannot tell, the pin goes (the safe side). */
static bool goes_with(struct gdrx_pin *pin, const struct release_what *w)
{
    CUcontext owner = NULL;
    int device = w->device;
    void *cuctx = w->cuctx;

    if (w->launch)
        return pin->req.launch_bound;
    if (!cuctx && device < 0)
        return pin->req.alloc_base < w->hi && gdrx_pin_req_guard_end(&pin->req) > w->lo;
    if (!cuctx && pin->req.device != device)
        return false;
    if (!cuctx) {
        cuctx = gdrx_devctx_primary(&pin->ctx->dev, device);
        if (!cuctx)
            return true;
    }
    if (pin->ctx->dev.cu->PointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT,
                                              (CUdeviceptr)pin->req.dptr) != CUDA_SUCCESS)
        return true;
    return (void *)owner == cuctx;
}

static struct gdrx_core_release *hold(const struct release_what *w)
{
    struct gdrx_pin_ref local[16], *refs = local;
    size_t room = sizeof(local) / sizeof(local[0]);
    size_t n = pins_in(w, &refs, &room);
    struct gdrx_core_release *r =
        n ? malloc(sizeof(*r) + n * (sizeof(r->refs[0]) + sizeof(uint64_t))) : NULL;
    /* Without memory for the list the call goes on unheld: its pins are
     * found stale at their next query (logged). */
    if (n && !r)
        gdrx_warn("no memory to hold %zu pins over a CUDA free", n);
    if (r) {
        r->n = 0;
        r->lo = UINT64_MAX;
        r->hi = 0;
        for (size_t i = 0; i < n; i++) {
            struct gdrx_pin *pin = refs[i].pin;
            gdrx_mutex_lock(&pin->lock, GDRX_LOCK_PIN);
            if (gdrx_ht_is_live(&pin->h, refs[i].id) && !gdrx_pin_is_revoked(pin) &&
                pin->state != GDRX_PIN_FORKED && goes_with(pin, w)) {
                gdrx_pin_fence(pin);
                r->refs[r->n++] = refs[i];
                uint64_t end = gdrx_pin_req_guard_end(&pin->req);
                r->lo = pin->req.alloc_base < r->lo ? pin->req.alloc_base : r->lo;
                r->hi = end > r->hi ? end : r->hi;
            }
            gdrx_mutex_unlock(&pin->lock, GDRX_LOCK_PIN);
        }
    }
    if (refs != local)
        free(refs);
    return r;
}

struct gdrx_core_release *gdrx_core_release_begin(uint64_t base, size_t size, int device,
                                                  void *cuctx)
{
    struct release_what w = { .lo = 0, .hi = UINT64_MAX, .device = device, .cuctx = cuctx };

    if (!cuctx && device < 0) {
        w.lo = base;
        w.hi = base + (size ? size : 1);
        if (w.hi < w.lo)
            w.hi = UINT64_MAX;
    }
    return hold(&w);
}

struct gdrx_core_release *gdrx_core_release_begin_launch(void)
{
    struct release_what w = { .device = -1, .launch = true };

    /* one load for a process with no launch-bound pin */
    return gdrx_pin_index_launch_bound() ? hold(&w) : NULL;
}

int gdrx_core_release_hull(const struct gdrx_core_release *r, uint64_t *lo, uint64_t *hi)
{
    if (!r || !r->n)
        return 0;
    *lo = r->lo;
    *hi = r->hi;
    return 1;
}

void gdrx_core_release_end(struct gdrx_core_release *r, int released,
                           void (*freed)(uint64_t base, size_t size, int device))
{
    if (!r)
        return;
    uint64_t *reported = (uint64_t *)&r->refs[r->n];
    size_t nreported = 0;
    for (size_t i = 0; i < r->n; i++) {
        struct gdrx_pin *pin = r->refs[i].pin;
        struct gdrx_pin_req req = { 0 };
        bool hit = false;

        gdrx_mutex_lock(&pin->lock, GDRX_LOCK_PIN);
        /* A pin unpinned meanwhile dropped its holds (pin_state.c). */
        if (gdrx_ht_is_live(&pin->h, r->refs[i].id)) {
            /* Revoked while still held, then let go: copies waiting on the
             * hold see the revocation.  Let go first, and for a moment they
             * would see the old mapping valid and copy memory CUDA freed. */
            if (released && !gdrx_pin_is_revoked(pin) && pin->state != GDRX_PIN_FORKED) {
                gdrx_info("CUDA freed the memory of the pin of [%#llx, +%zu): revoked",
                          (unsigned long long)pin->req.dptr, pin->req.len);
                req = pin->req;
                gdrx_pin_on_freed(pin);
                hit = true;
            }
            gdrx_pin_unfence(pin);
        }
        gdrx_mutex_unlock(&pin->lock, GDRX_LOCK_PIN);
        /* Each allocation once, however many of its pins went. */
        for (size_t j = 0; hit && j < nreported; j++)
            hit = reported[j] != req.alloc_base;
        if (hit && freed) {
            reported[nreported++] = req.alloc_base;
            freed(req.alloc_base, req.alloc_size, req.device);
        }
    }
    free(r);
}
