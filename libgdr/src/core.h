/*
 * core.h - the library's internal objects: contexts and pins.
 *
 * SPDX-License-Identifier: MIT
 *
 * The lock order of the whole library is in lock_order.h.  The free hook
 * takes the pin index's lock alone to list candidates, releases it, then
 * locks each pin; pin->lock -> index lock when a pin enters or leaves the
 * index.  That is safe because close unpins every pin under its pin->lock
 * before releasing the backend context.
 */
#ifndef GDRX_CORE_H
#define GDRX_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gdrx.h"
#include "backend.h"
#include "copy/copy.h"
#include "cuda_loader.h"
#include "devctx.h"
#include "handle_table.h"
#include "lock_order.h"

#define GDRX_CTX_TAG 0xC7u
#define GDRX_PIN_TAG 0xB1u

/* A context's life; changed under its write lock, except FORKED, which the
 * fork child handler sets with no lock held (only one thread exists then). */
enum gdrx_ctx_state {
    GDRX_CTX_UNUSED = 0,
    GDRX_CTX_OPEN,
    GDRX_CTX_FORKED,   /* inherited by a fork child: every call -ECHILD */
    GDRX_CTX_NO_CUDA,  /* opened where the driver refuses CUDA (a fork child
                          of a process that used it; GDRX_OPEN_FLAG_NO_CUDA_
                          FALLBACK): ops is the no-CUDA precheck's backend,
                          never opened (bctx NULL), no devices; attributes
                          and close only, pins -ENODEV */
};

struct gdrx_ctx {
    struct gdrx_hslot              h;
    _Atomic int                    state;  /* enum gdrx_ctx_state */
    pthread_rwlock_t               lock;
    const struct gdrx_backend_ops *ops;
    void                          *bctx;
    struct gdrx_devctx             dev;
    _Atomic uint64_t               pin_count;
};

/* A pin's life; the transitions are in pin_state.c, with their table. */
enum gdrx_pin_state {
    GDRX_PIN_UNUSED = 0,     /* slot free, or a pin being created */
    GDRX_PIN_PINNED,         /* backend pin held, no CPU mapping */
    GDRX_PIN_MAPPED,         /* backend pin held, CPU mapping live */
    GDRX_PIN_REVOKED,        /* memory freed: backend pin released, no CPU range */
    GDRX_PIN_REVOKED_MAPPED, /* memory freed while mapped: backend pin released,
                                the range is our faulting mapping until unmap */
    GDRX_PIN_REVOKED_LEAKED, /* as REVOKED_MAPPED, but the replacement
                                failed: the range is never unmapped */
    GDRX_PIN_FORKED,         /* a fork child's copy of a parent's pin */
};

/* What the copy fast path reads: one cache line with the slot header.
 * A sequence lock: seq is odd while a writer (pin->lock held, or the fork
 * child handler) changes the fields.  err is 0 when copies may run, else
 * the negative errno they return; cpu/len are then 0. */
struct gdrx_pin_fp {
    _Atomic uint32_t      seq;
    _Atomic int32_t       err;
    _Atomic uintptr_t     cpu;   /* CPU address of byte dptr */
    _Atomic size_t        len;   /* bytes from cpu the copies may touch */
    _Atomic(gdrx_copy_fn) to;
    _Atomic(gdrx_copy_fn) from;
};

struct gdrx_pin {
    /* Cache line 0: h.live_id and fp are all a copy reads. */
    _Alignas(64) struct gdrx_hslot h;
    struct gdrx_pin_fp fp;

    /* Under lock.  The slot's memory outlives the pin (handle_table.h). */
    _Alignas(64) pthread_mutex_t   lock;
    enum gdrx_pin_state            state;
    struct gdrx_ctx               *ctx;
    const struct gdrx_backend_ops *ops;
    void                          *bctx;
    struct gdrx_pin_req            req;
    struct gdrx_backend_pin        bp;
    unsigned                       fences; /* hooked CUDA calls holding it (stale.c) */
    /* The variants of fp.to / fp.from while copies may run (fastpath.c),
     * for gdrx_pin_copy_variants. */
    gdrx_copy_variant_t            copy_to, copy_from;
};

_Static_assert(offsetof(struct gdrx_pin, fp) + sizeof(struct gdrx_pin_fp) <= 64,
               "the fields a copy reads share one cache line");
_Static_assert(sizeof(struct gdrx_pin) % 64 == 0, "slots start on a cache line");

extern struct gdrx_htable gdrx_ctx_table;
extern struct gdrx_htable gdrx_pin_table;

/* context.c: open a context on the backend want asks for (AUTO: env or
 * the first that works) and close one, unpinning what it still holds.
 * flags: GDRX_OPEN_FLAG_* (gdrx.h). */
int gdrx_ctx_open(gdrx_backend_t want, uint32_t flags, uint64_t *id);
int gdrx_ctx_close(uint64_t id);
/* context.c: whether gdrx_ctx_open would work, installing nothing. */
int gdrx_ctx_probe(gdrx_backend_t want, gdrx_backend_t *found);
/* context.c: whether a backend want allows has its prerequisites, told
 * without loading libcuda or initialising CUDA (GDRX_PROBE_FLAG_NO_CUDA). */
int gdrx_ctx_precheck(gdrx_backend_t want, gdrx_backend_t *found);

/* context.c: find an open context and hold its lock for reading: 0,
 * -EBADF if the id names no open context, -ECHILD if it is a fork
 * parent's. */
int gdrx_ctx_get(uint64_t id, struct gdrx_ctx **out);
void gdrx_ctx_put(struct gdrx_ctx *ctx);

/* pin.c: lock the pin id names if it is live and belongs to ctx: 0,
 * -EINVAL if not, -ECHILD for a fork parent's pin.  Unlock with
 * pthread_mutex_unlock(&(*out)->lock). */
int gdrx_pin_get_locked(struct gdrx_ctx *ctx, uint64_t id, struct gdrx_pin **out);

int  gdrx_pin_create(struct gdrx_ctx *ctx, uint64_t dptr, size_t len, uint32_t flags,
                     uint64_t *id);
int  gdrx_pin_map_locked(struct gdrx_pin *pin, void **cpu_ptr);
int  gdrx_pin_query_locked(struct gdrx_pin *pin, struct gdrx_pin_info *info);
/* pin.c: gdrx_pin_copy_variants of a locked pin. */
int  gdrx_pin_copy_variants_locked(struct gdrx_pin *pin, gdrx_copy_variant_t *to,
                                   gdrx_copy_variant_t *from);

/* pin_state.c: the transitions, one per event, pin->lock held (see the
 * table there).  Each publishes the fast path's view of the new state. */
void gdrx_pin_on_pinned(struct gdrx_pin *pin);
int  gdrx_pin_on_map(struct gdrx_pin *pin);
int  gdrx_pin_on_unmap(struct gdrx_pin *pin);
void gdrx_pin_on_freed(struct gdrx_pin *pin);
/* Returns with pin->lock released and the slot freed. */
int  gdrx_pin_on_unpin(struct gdrx_pin *pin);
/* In a fork child, no lock taken (one thread). */
void gdrx_pin_on_fork_child(struct gdrx_pin *pin);
/* 1 for the REVOKED states. */
int  gdrx_pin_is_revoked(const struct gdrx_pin *pin);
/* Hold a live pin over a CUDA call that may free its memory: copies
 * through it wait (the fast path sees a writer at work) until the last
 * hold is dropped; then they see the pin's state, revoked or not. */
void gdrx_pin_fence(struct gdrx_pin *pin);
void gdrx_pin_unfence(struct gdrx_pin *pin);

/* fastpath.c: publish (seq-locked) what a copy sees: err, and when err is
 * 0 the pin's mapping and copy routines.  While the pin is fenced the
 * counter is left odd: copies wait. */
void gdrx_pin_fp_publish(struct gdrx_pin *pin, int err);

/* stale.c */
/* 1 if the pin's memory was freed (asking the backend and CUDA, and
 * revoking the pin if so), 0 if not, negative errno if that could not be
 * told. */
int  gdrx_pin_refresh_stale_locked(struct gdrx_pin *pin);
/* stale.c: a hooked CUDA call may release memory
 * (gdrx_cuda_hooks_release: a range, a primary context or a context).
 * Before it: hold the live pins of what it releases; returns the token
 * for the end (NULL: none held).  After it: drop the holds, and only if
 * released revoke those pins (never a pin made meanwhile, which holds
 * memory CUDA handed out again) and, for a context, call freed() once per
 * allocation revoked, with no lock held. */
struct gdrx_core_release;
struct gdrx_core_release *gdrx_core_release_begin(uint64_t base, size_t size, int device,
                                                  void *cuctx);
/* The same over a graph launch: every launch-bound pin (graph_mem.h);
 * NULL at the cost of one load when there is none. */
struct gdrx_core_release *gdrx_core_release_begin_launch(void);
/* 1 and the range the held pins' allocations span, or 0 if none is held. */
int gdrx_core_release_hull(const struct gdrx_core_release *r, uint64_t *lo, uint64_t *hi);
void gdrx_core_release_end(struct gdrx_core_release *r, int released,
                           void (*freed)(uint64_t base, size_t size, int device));

/* fork.c: register the library's fork handlers (once; at the first
 * gdrx_open or memory-event subscription). */
int gdrx_fork_guard_enable(void);
/* fork_guard.c: keep fork out while a backend pins or maps (it may map GPU
 * memory before marking it MADV_DONTFORK): hold/release around the backend
 * call, pin->lock held.  The fork handlers take it with lock/unlock. */
void gdrx_fork_hold(void);
void gdrx_fork_release(void);
void gdrx_fork_guard_lock(void);
void gdrx_fork_guard_unlock(void);
void gdrx_fork_guard_child(void);

/* backend_select.c: open the backend params/env ask for, or only find
 * out which would open (probe: nothing stays open), or which has its
 * prerequisites without CUDA (precheck). */
int gdrx_backend_open(gdrx_backend_t want, const struct gdrx_backend_ops **ops, void **bctx);
int gdrx_backend_probe(gdrx_backend_t want, const struct gdrx_backend_ops **ops);
int gdrx_backend_precheck(gdrx_backend_t want, const struct gdrx_backend_ops **ops);
/* backend_select.c: every built-in backend's fork_lock / fork_unlock (the
 * fork handlers, rank BACKEND and after in lock_order.h). */
void gdrx_backends_fork_lock(void);
void gdrx_backends_fork_unlock(void);
void gdrx_backends_fork_child(void);

#endif /* GDRX_CORE_H */
