/*
 * context.c - the context table: open, close, and lookup of contexts.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "free_hook.h"
#include "log.h"
#include "mem_events.h"

static void ctx_slot_init(struct gdrx_hslot *s)
{
    struct gdrx_ctx *ctx = (struct gdrx_ctx *)s;

    /* Lives as long as the slot, i.e. forever: a thread that looked the
     * context up just before it was closed may still lock it safely. */
    /* Writer-preferring: glibc's default lets new readers overtake a
     * waiting writer, so gdrx_close() could starve forever while other
     * threads keep calling into the context.  Safe because no thread takes
     * the read lock twice (gdrx_ctx_get is only called by the API entry
     * points, never nested). */
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&ctx->lock, &attr);
    pthread_rwlockattr_destroy(&attr);
}

struct gdrx_htable gdrx_ctx_table = GDRX_HTABLE_INIT(GDRX_CTX_TAG, struct gdrx_ctx, ctx_slot_init,
                                                    GDRX_LOCK_CTX_TABLE);

int gdrx_ctx_get(uint64_t id, struct gdrx_ctx **out)
{
    struct gdrx_ctx *ctx = (struct gdrx_ctx *)gdrx_ht_lookup(&gdrx_ctx_table, id);

    if (!ctx)
        return -EBADF;
    /* Checked before locking: in a fork child the lock may be held by a
     * parent thread that does not exist here. */
    if (atomic_load_explicit(&ctx->state, memory_order_relaxed) == GDRX_CTX_FORKED)
        return -ECHILD;
    gdrx_rwlock_lock(&ctx->lock, GDRX_LOCK_CTX, GDRX_READ);
    /* Closed (and perhaps reopened under a new id) while we waited. */
    if (!gdrx_ht_is_live(&ctx->h, id)) {
        gdrx_rwlock_unlock(&ctx->lock, GDRX_LOCK_CTX);
        return -EBADF;
    }
    *out = ctx;
    return 0;
}

void gdrx_ctx_put(struct gdrx_ctx *ctx)
{
    gdrx_rwlock_unlock(&ctx->lock, GDRX_LOCK_CTX);
}

int gdrx_ctx_open(gdrx_backend_t want, uint64_t *id_out)
{
    const struct gdrx_cuda *cu = NULL;
    const struct gdrx_backend_ops *ops = NULL;
    void *bctx = NULL;
    uint64_t id;

    int rc = gdrx_cuda_get(&cu);
    if (rc)
        return rc;
    rc = gdrx_fork_guard_enable();
    if (rc)
        return rc;
    struct gdrx_ctx *ctx = (struct gdrx_ctx *)gdrx_ht_alloc(&gdrx_ctx_table, &id);
    if (!ctx)
        return -ENOMEM;
    /* Nobody else can reach the slot before it is published; the write
     * lock only documents that (and keeps thread sanitizers informed). */
    gdrx_rwlock_lock(&ctx->lock, GDRX_LOCK_CTX, GDRX_WRITE);
    rc = gdrx_devctx_init(&ctx->dev, cu);
    if (rc)
        goto err_slot;
    rc = gdrx_backend_open(want, &ops, &bctx);
    if (rc)
        goto err_dev;
    ctx->ops = ops;
    ctx->bctx = bctx;
    atomic_store_explicit(&ctx->pin_count, 0, memory_order_relaxed);
    /* Subscribers were promised events from the next gdrx_open on (their
     * libcuda may only have been loaded by it); else the first pin
     * installs the hooks (pin.c) */
    if (gdrx_mem_events_subscribed())
        gdrx_free_hook_enable();
    atomic_store_explicit(&ctx->state, GDRX_CTX_OPEN, memory_order_relaxed);
    gdrx_ht_publish(&ctx->h, id);
    gdrx_rwlock_unlock(&ctx->lock, GDRX_LOCK_CTX);
    gdrx_info("context %#llx open on backend %s, %d device(s)", (unsigned long long)id,
              ops->name, ctx->dev.count);
    *id_out = id;
    return 0;

err_dev:
    gdrx_devctx_fini(&ctx->dev);
err_slot:
    gdrx_rwlock_unlock(&ctx->lock, GDRX_LOCK_CTX);
    gdrx_ht_free(&gdrx_ctx_table, &ctx->h);
    return rc;
}

int gdrx_ctx_probe(gdrx_backend_t want, gdrx_backend_t *found)
{
    const struct gdrx_backend_ops *ops = NULL;
    const struct gdrx_cuda *cu = NULL;
    int count = 0;

    int rc = gdrx_cuda_get(&cu);
    if (rc)
        return rc;
    CUresult res = cu->DeviceGetCount(&count);
    if (res != CUDA_SUCCESS)
        return gdrx_cuda_errno(res);
    if (count == 0) {
        gdrx_info("probe: CUDA sees no GPU");
        return -ENODEV;
    }
    rc = gdrx_backend_probe(want, &ops);
    if (rc == 0)
        *found = ops->id;
    return rc;
}

int gdrx_ctx_precheck(gdrx_backend_t want, gdrx_backend_t *found)
{
    const struct gdrx_backend_ops *ops = NULL;

    int rc = gdrx_backend_precheck(want, &ops);
    if (rc == 0)
        *found = ops->id;
    return rc;
}

struct close_scan {
    struct gdrx_ctx *ctx;
    int              rc;
};

static void unpin_if_owned(struct gdrx_hslot *s, void *arg)
{
    struct gdrx_pin *pin = (struct gdrx_pin *)s;
    struct close_scan *cs = arg;

    if (atomic_load_explicit(&s->live_id, memory_order_acquire) == 0)
        return;
    gdrx_mutex_lock(&pin->lock, GDRX_LOCK_PIN);
    if (pin->ctx != cs->ctx || pin->state == GDRX_PIN_UNUSED) {
        gdrx_mutex_unlock(&pin->lock, GDRX_LOCK_PIN);
        return;
    }
    int rc = gdrx_pin_on_unpin(pin);
    if (rc && !cs->rc)
        cs->rc = rc;
}

int gdrx_ctx_close(uint64_t id)
{
    struct gdrx_ctx *ctx = (struct gdrx_ctx *)gdrx_ht_lookup(&gdrx_ctx_table, id);

    if (!ctx)
        return -EBADF;
    if (atomic_load_explicit(&ctx->state, memory_order_relaxed) == GDRX_CTX_FORKED)
        return -ECHILD; /* the parent's: nothing here is ours to release */
    gdrx_rwlock_lock(&ctx->lock, GDRX_LOCK_CTX, GDRX_WRITE);
    if (!gdrx_ht_is_live(&ctx->h, id)) {
        gdrx_rwlock_unlock(&ctx->lock, GDRX_LOCK_CTX);
        return -EBADF; /* another thread closed it first */
    }
    gdrx_ht_retire(&ctx->h);

    /* Every operation on this context holds the read lock, so no pin of it
     * is being created; each pin is destroyed under its own lock, which
     * also waits out a free hook working on it. */
    struct close_scan cs = { .ctx = ctx, .rc = 0 };
    gdrx_ht_foreach(&gdrx_pin_table, unpin_if_owned, &cs);
    if (cs.rc)
        gdrx_warn("context %#llx: a backend unpin failed at close: %d",
                  (unsigned long long)id, cs.rc);

    ctx->ops->close(ctx->bctx);
    ctx->ops = NULL;
    ctx->bctx = NULL;
    gdrx_devctx_fini(&ctx->dev);
    atomic_store_explicit(&ctx->state, GDRX_CTX_UNUSED, memory_order_relaxed);
    gdrx_rwlock_unlock(&ctx->lock, GDRX_LOCK_CTX);
    gdrx_ht_free(&gdrx_ctx_table, &ctx->h);
    return 0;
}
