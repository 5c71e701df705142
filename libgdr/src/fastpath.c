/*
 * fastpath.c - gdrx_copy_to_mapping() / gdrx_copy_from_mapping(): validate a
 * pin without taking a lock, then copy.
 *
 * SPDX-License-Identifier: MIT
 *
 * The state a copy needs (mapped range, stale flag, copy routines) is kept
 * in atomics of the pin's slot, guarded by a sequence counter: a writer
 * (holding pin->lock) makes the counter odd, stores the fields with release
 * and makes it even again; a reader takes an acquire snapshot and retries if
 * the counter moved.  Slots are never freed, so even a garbage or closed
 * handle is read safely.  On x86 the whole check is a handful of plain
 * loads and compares.
 */
#include <errno.h>
#include <sched.h>

#include "core.h"
#include "export.h"

struct fp_view {
    uint32_t     state;
    uintptr_t    cpu;
    size_t       len;
    gdrx_copy_fn fn;
};

void gdrx_pin_fp_publish(struct gdrx_pin *pin, int accessible)
{
    uint32_t state = pin->stale ? GDRX_FP_STALE : 0;
    uintptr_t cpu = 0;
    gdrx_copy_fn to = NULL, from = NULL;

    if (accessible && pin->mapped && !pin->revoked) {
        state |= GDRX_FP_MAPPED;
        cpu = (uintptr_t)pin->bp.cpu_base + (uintptr_t)(pin->req.dptr - pin->bp.dbase);
        const struct gdrx_copy_impl *impl = gdrx_copy_default();
        struct gdrx_copy_impl libc;
        /* Coherent memory gains nothing from streaming accesses. */
        if (pin->bp.type == GDRX_MAPPING_CACHING &&
            gdrx_copy_impl_get(GDRX_COPY_LIBC, &libc) == 0)
            impl = &libc;
        to = impl->to_mapping;
        from = impl->from_mapping;
    }
    uint32_t seq = atomic_load_explicit(&pin->seq, memory_order_relaxed);
    atomic_store_explicit(&pin->seq, seq + 1, memory_order_relaxed);
    /* Release stores: a reader that sees any new value also sees the odd
     * counter when it re-reads it, and retries. */
    atomic_store_explicit(&pin->fp_state, state, memory_order_release);
    atomic_store_explicit(&pin->fp_cpu, cpu, memory_order_release);
    atomic_store_explicit(&pin->fp_len, pin->req.len, memory_order_release);
    atomic_store_explicit(&pin->fp_to, to, memory_order_release);
    atomic_store_explicit(&pin->fp_from, from, memory_order_release);
    atomic_store_explicit(&pin->seq, seq + 2, memory_order_release);
}

static inline int fp_get(uint64_t id, int to_mapping, struct fp_view *v)
{
    struct gdrx_pin *pin = (struct gdrx_pin *)gdrx_ht_slot(&gdrx_pin_table, id);

    if (!pin)
        return -EINVAL;
    for (;;) {
        uint32_t seq = atomic_load_explicit(&pin->seq, memory_order_acquire);
        if (seq & 1) {
            sched_yield(); /* a writer is between two stores; rare */
            continue;
        }
        uint64_t live = atomic_load_explicit(&pin->h.live_id, memory_order_acquire);
        v->state = atomic_load_explicit(&pin->fp_state, memory_order_acquire);
        v->cpu = atomic_load_explicit(&pin->fp_cpu, memory_order_acquire);
        v->len = atomic_load_explicit(&pin->fp_len, memory_order_acquire);
        v->fn = to_mapping ? atomic_load_explicit(&pin->fp_to, memory_order_acquire)
                           : atomic_load_explicit(&pin->fp_from, memory_order_acquire);
        /* The acquire loads above keep this load after them. */
        if (atomic_load_explicit(&pin->seq, memory_order_relaxed) != seq)
            continue;
        if (live != id)
            return -EINVAL;
        if (v->state & GDRX_FP_STALE)
            return -ESTALE;
        if (!(v->state & GDRX_FP_MAPPED))
            return -EINVAL;
        return 0;
    }
}

/* [p, p+len) inside [v->cpu, v->cpu + v->len), without wrapping. */
static inline int fp_in_range(const struct fp_view *v, const void *p, size_t len)
{
    uintptr_t a = (uintptr_t)p;

    return a >= v->cpu && a - v->cpu <= v->len && len <= v->len - (a - v->cpu);
}

/* Both directions: map is the side inside the mapping, host the other. */
static inline int fp_copy(uint64_t id, int to_mapping, void *dst, const void *src, size_t len)
{
    const void *map = to_mapping ? (const void *)dst : src;
    const void *host = to_mapping ? src : (const void *)dst;
    struct fp_view v;
    int rc = fp_get(id, to_mapping, &v);

    if (rc)
        return rc;
    if (!fp_in_range(&v, map, len))
        return -ERANGE;
    if (len == 0)
        return 0;
    if (!host)
        return -EINVAL;
    v.fn(dst, src, len);
    return 0;
}

GDRX_EXPORT int gdrx_copy_to_mapping(gdrx_pin_t pin, void *map_dst, const void *src, size_t len)
{
    return fp_copy(pin.id, 1, map_dst, src, len);
}

GDRX_EXPORT int gdrx_copy_from_mapping(gdrx_pin_t pin, void *dst, const void *map_src, size_t len)
{
    return fp_copy(pin.id, 0, dst, map_src, len);
}
