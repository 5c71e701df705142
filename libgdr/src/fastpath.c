/*
 * fastpath.c - gdrx_copy_to_mapping() / gdrx_copy_from_mapping(): validate a
 * pin without taking a lock, then copy.
 *
 * SPDX-License-Identifier: MIT
 *
 * What a copy needs is in the first cache line of the pin's slot (core.h):
 * the live id (the generation check), and struct gdrx_pin_fp under a
 * sequence lock.  A writer (pin_state.c, pin->lock held) makes seq odd,
 * stores, and makes it even again; a reader loads seq, the fields, and seq
 * again, and trusts the fields only if seq was even and did not move.
 * Slots are never freed, so even a garbage or closed handle is read
 * safely.  The common case is one table-chunk load, one cache line, one
 * combined test and the bounds test; everything rare goes to fp_slow().
 */
#include <errno.h>
#include <sched.h>

#include "core.h"
#include "export.h"
#include "fork_defer.h"

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Built with GDRX_CORE_TEST_SEAM, the test program sees every publication
 * while the counter is odd. */
#ifdef GDRX_CORE_TEST_SEAM
void core_test_publishing(struct gdrx_pin *pin);
#define FP_PUBLISHING(pin) core_test_publishing(pin)
#else
#define FP_PUBLISHING(pin) ((void)0)
#endif

/* A reader that finds the counter odd spins this often before
 * yielding: publishing is a handful of stores. */
#define FP_SPINS 64
/* ... and yields this often more before asking whether it runs in a fork
 * handler after libgdrx's, where a hold may never end (fork_defer.c). */
#define FP_FORK_YIELDS 4096

void gdrx_pin_fp_publish(struct gdrx_pin *pin, int err)
{
    uintptr_t cpu = 0;
    size_t len = 0;
    gdrx_copy_fn to = NULL, from = NULL;

    if (err == 0) {
        cpu = (uintptr_t)pin->bp.cpu_base + (uintptr_t)(pin->req.dptr - pin->bp.dbase);
        len = pin->req.len;
        /* cached (coherent) memory: memcpy; the BAR: streaming, fenced */
        const struct gdrx_copy_impl *impl = gdrx_copy_for_mapping(pin->bp.type);
        to = impl->to_mapping;
        from = impl->from_mapping;
        pin->copy_to = impl->variant;
        pin->copy_from = impl->from_variant;
    } else {
        pin->copy_to = pin->copy_from = GDRX_COPY_AUTO;
    }
    struct gdrx_pin_fp *fp = &pin->fp;
    /* Odd now; even is the rule between writers, but a fork child may
     * inherit a counter left odd by a thread that no longer exists. */
    uint32_t odd = atomic_load_explicit(&fp->seq, memory_order_relaxed) | 1u;
    atomic_store_explicit(&fp->seq, odd, memory_order_relaxed);
    FP_PUBLISHING(pin);
    /* Release stores (plain stores on x86): a reader whose acquire load
     * sees any new field also sees the odd counter when it re-reads it.
     * (No fences: thread sanitizers do not model them.) */
    atomic_store_explicit(&fp->err, err, memory_order_release);
    atomic_store_explicit(&fp->cpu, cpu, memory_order_release);
    atomic_store_explicit(&fp->len, len, memory_order_release);
    atomic_store_explicit(&fp->to, to, memory_order_release);
    atomic_store_explicit(&fp->from, from, memory_order_release);
    /* Fenced (gdrx_pin_fence): stays odd, so copies wait. */
    atomic_store_explicit(&fp->seq, pin->fences ? odd : odd + 1, memory_order_release);
}

/* The pin slot of id, with the element size a constant (so no load of the
 * table's elem_size), or NULL. */
static inline struct gdrx_pin *fp_slot(uint64_t id)
{
    if (unlikely((uint8_t)(id >> GDRX_HT_TAG_SHIFT) != GDRX_PIN_TAG))
        return NULL;
    uint32_t index = (uint32_t)id & GDRX_HT_INDEX_MASK;
    char *chunk = atomic_load_explicit(&gdrx_pin_table.chunks[index >> GDRX_HT_CHUNK_SHIFT],
                                       memory_order_acquire);
    if (unlikely(!chunk))
        return NULL;
    return (struct gdrx_pin *)(chunk + (size_t)(index & (GDRX_HT_CHUNK_SLOTS - 1)) *
                               sizeof(struct gdrx_pin));
}

/* One reading of the pin's line.  Consistent only if seq is even and
 * equals seq2. */
struct fp_snap {
    uint32_t     seq, seq2;
    int          err;
    uint64_t     live;
    uintptr_t    cpu;
    size_t       len;
    gdrx_copy_fn fn;
};

static inline __attribute__((always_inline)) void
fp_read(struct gdrx_pin *pin, int to_mapping, struct fp_snap *v)
{
    struct gdrx_pin_fp *fp = &pin->fp;

    v->seq = atomic_load_explicit(&fp->seq, memory_order_acquire);
    v->live = atomic_load_explicit(&pin->h.live_id, memory_order_acquire);
    v->err = atomic_load_explicit(&fp->err, memory_order_acquire);
    v->cpu = atomic_load_explicit(&fp->cpu, memory_order_acquire);
    v->len = atomic_load_explicit(&fp->len, memory_order_acquire);
    v->fn = to_mapping ? atomic_load_explicit(&fp->to, memory_order_acquire)
                       : atomic_load_explicit(&fp->from, memory_order_acquire);
    /* The acquire loads above keep the re-read after them. */
    v->seq2 = atomic_load_explicit(&fp->seq, memory_order_acquire);
}

/* Everything but the common case: a writer at work, a dead handle, a pin
 * that cannot be copied through, a range outside the mapping, NULL. */
static __attribute__((noinline, cold)) int fp_slow(struct gdrx_pin *pin, uint64_t id,
                                                  int to_mapping, void *dst, const void *src,
                                                  size_t len)
{
    struct fp_snap v;

    for (unsigned spin = 0;; spin++) {
        fp_read(pin, to_mapping, &v);
        if (!(v.seq & 1) && v.seq == v.seq2)
            break;
        if (spin >= FP_SPINS)
            sched_yield();
        if (spin >= FP_SPINS + FP_FORK_YIELDS && (spin & 1023) == 0) {
            int rc = gdrx_fork_copy_refuse();
            if (rc)
                return rc;
        }
    }
    if (v.live != id)
        return -EINVAL;
    if (v.err)
        return v.err;
    uintptr_t off = (uintptr_t)(to_mapping ? dst : (void *)(uintptr_t)src) - v.cpu;
    if (off > v.len || len > v.len - off)
        return -ERANGE;
    if (len == 0)
        return 0;
    if (!(to_mapping ? src : (const void *)dst))
        return -EINVAL;
    v.fn(dst, src, len);
    return 0;
}

/*
 * One direction, inlined into its entry point.  map is the pointer inside
 * the mapping, host the other one.  The common case: the tag, the chunk,
 * one test for a writer at work, a dead handle or an unusable pin (seq,
 * live id and err folded), the bounds, the host pointer, the length: seven
 * branches, all predicted, and no stack frame beyond two saved registers.
 * fp_slow() tells the errors apart, in the documented order: handle
 * (-EINVAL), pin state (fp.err: -ESTALE, -EINVAL, -ECHILD), range
 * (-ERANGE), host pointer (-EINVAL).
 */
static inline __attribute__((always_inline)) int
fp_copy(uint64_t id, int to_mapping, void *dst, const void *src, size_t len)
{
    const void *map = to_mapping ? (const void *)dst : src;
    const void *host = to_mapping ? src : (const void *)dst;
    struct gdrx_pin *pin = fp_slot(id);

    if (unlikely(!pin))
        return -EINVAL;
    struct gdrx_pin_fp *fp = &pin->fp;
    uint32_t seq = atomic_load_explicit(&fp->seq, memory_order_acquire);
    uint64_t bad = (seq & 1) | (atomic_load_explicit(&pin->h.live_id, memory_order_acquire) ^ id) |
                   (uint32_t)atomic_load_explicit(&fp->err, memory_order_acquire);
    uintptr_t off = (uintptr_t)map - atomic_load_explicit(&fp->cpu, memory_order_acquire);
    size_t flen = atomic_load_explicit(&fp->len, memory_order_acquire);
    gdrx_copy_fn fn = to_mapping ? atomic_load_explicit(&fp->to, memory_order_acquire)
                                 : atomic_load_explicit(&fp->from, memory_order_acquire);
    /* Acquire loads (plain loads on x86) keep this re-read after them. */
    bad |= atomic_load_explicit(&fp->seq, memory_order_acquire) ^ seq;
    if (unlikely(bad != 0) || unlikely(off > flen) || unlikely(len > flen - off) ||
        unlikely(!host))
        return fp_slow(pin, id, to_mapping, dst, src, len);
    if (unlikely(len == 0))
        return 0;
    fn(dst, src, len);
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
