/*
 * core.h - the library's internal objects: contexts and pins.
 *
 * SPDX-License-Identifier: MIT
 *
 * Lock order (outer to inner):
 *   ctx->lock (read for every operation on the context, write to close it)
 *   -> pin->lock (every state change of one pin)
 *   -> a backend's own locks, devctx lock, handle-table lock.
 * The free hook takes pin->lock alone; that is safe because close unpins
 * every pin under its pin->lock before releasing the backend context.
 * No lock is held while copying.
 */
#ifndef GDRX_CORE_H
#define GDRX_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "gdrx.h"
#include "backend.h"
#include "copy/copy.h"
#include "cuda_loader.h"
#include "devctx.h"
#include "handle_table.h"

#define GDRX_CTX_TAG 0xC7u
#define GDRX_PIN_TAG 0xB1u

struct gdrx_ctx {
    struct gdrx_hslot              h;
    pthread_rwlock_t               lock;
    const struct gdrx_backend_ops *ops;
    void                          *bctx;
    struct gdrx_devctx             dev;
    _Atomic uint64_t               pin_count;
};

/* Bits of gdrx_pin.fp_state. */
#define GDRX_FP_MAPPED 1u
#define GDRX_FP_STALE  2u

struct gdrx_pin {
    struct gdrx_hslot h;

    /* Read by the copy fast path without a lock: a sequence lock (seq odd
     * while a writer holding pin->lock updates the fields). */
    _Atomic uint32_t     seq;
    _Atomic uint32_t     fp_state;
    _Atomic uintptr_t    fp_cpu;   /* CPU address of byte dptr */
    _Atomic size_t       fp_len;   /* bytes from fp_cpu the copies may touch */
    _Atomic(gdrx_copy_fn) fp_to;
    _Atomic(gdrx_copy_fn) fp_from;

    /* Read without a lock by the free hook to skip unrelated pins: the
     * CUDA allocation this pin lies in; both 0 when the slot is unused. */
    _Atomic uint64_t     alloc_lo;
    _Atomic uint64_t     alloc_hi;
    /* The owning context's id; 0 when unused (read without lock by close). */
    _Atomic uint64_t     owner;

    /* Under lock. */
    pthread_mutex_t                lock;
    struct gdrx_ctx               *ctx;
    const struct gdrx_backend_ops *ops;
    void                          *bctx;
    struct gdrx_pin_req            req;
    struct gdrx_backend_pin        bp;
    int                            mapped;   /* the caller mapped it */
    int                            stale;    /* CUDA freed the memory */
    int                            released; /* backend unpin() done */
    int                            revoked;  /* mapping replaced by PROT_NONE */
};

extern struct gdrx_htable gdrx_ctx_table;
extern struct gdrx_htable gdrx_pin_table;

/* context.c: open a context on the backend want asks for (AUTO: env or
 * the first that works) and close one, unpinning what it still holds. */
int gdrx_ctx_open(gdrx_backend_t want, uint64_t *id);
int gdrx_ctx_close(uint64_t id);

/* context.c: find an open context and hold its lock for reading; NULL if
 * the id names no open context. */
struct gdrx_ctx *gdrx_ctx_get(uint64_t id);
void gdrx_ctx_put(struct gdrx_ctx *ctx);

/* pin.c: lock the pin id names if it is live and belongs to ctx; NULL
 * otherwise.  Unlock with pthread_mutex_unlock(&pin->lock). */
struct gdrx_pin *gdrx_pin_get_locked(struct gdrx_ctx *ctx, uint64_t id);

int  gdrx_pin_create(struct gdrx_ctx *ctx, uint64_t dptr, size_t len, uint32_t flags,
                     uint64_t *id);
/* Unmaps if needed, releases the backend pin and frees the slot; called
 * with pin->lock held, returns with it released. */
int  gdrx_pin_destroy_locked(struct gdrx_pin *pin);
int  gdrx_pin_map_locked(struct gdrx_pin *pin, void **cpu_ptr);
int  gdrx_pin_unmap_locked(struct gdrx_pin *pin);
int  gdrx_pin_query_locked(struct gdrx_pin *pin, struct gdrx_pin_info *info);

/* fastpath.c: publish what the copy fast path sees (pin->lock held): the
 * stale flag, and the mapping if accessible and the pin is mapped and not
 * revoked. */
void gdrx_pin_fp_publish(struct gdrx_pin *pin, int accessible);

/* stale.c */
/* 1 if the pin's memory was freed (refreshing the answer from the backend
 * and CUDA), 0 if not, negative errno if that could not be told. */
int  gdrx_pin_refresh_stale_locked(struct gdrx_pin *pin);
/* Mark stale, make the mapping inaccessible and release the backend pin. */
void gdrx_pin_revoke_locked(struct gdrx_pin *pin);
/* The free hook's callback: revoke every pin overlapping [base, base+size). */
void gdrx_core_memory_freed(uint64_t base, size_t size, void *arg);

/* backend_select.c: open the backend params/env ask for. */
int gdrx_backend_open(gdrx_backend_t want, const struct gdrx_backend_ops **ops, void **bctx);

#endif /* GDRX_CORE_H */
