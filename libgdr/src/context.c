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
#include "ipoint.h"
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
    /* A close may end here, leaving the slot free, then locked below by
     * this thread: a fork then must not hand the child a free slot whose
     * lock nobody there will release (issue 43, defect 10). */
    GDRX_IPOINT("context.get_before_lock");
    gdrx_rwlock_lock(&ctx->lock, GDRX_LOCK_CTX, GDRX_READ);
    GDRX_IPOINT("context.get_locked");
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

/* Set up an allocated, write-locked slot: with CUDA (devices counted,
 * backend opened) or, for cu NULL, with only the backend the no-CUDA
 * precheck finds (nothing opened: a context that cannot pin needs none). */
static int ctx_setup(struct gdrx_ctx *ctx, gdrx_backend_t want, const struct gdrx_cuda *cu)
{
    const struct gdrx_backend_ops *ops = NULL;
    void *bctx = NULL;
    int rc;

    if (!cu) {
        rc = gdrx_backend_precheck(want, &ops);
        if (rc)
            return rc;
        gdrx_devctx_init_none(&ctx->dev);
    } else {
        rc = gdrx_devctx_init(&ctx->dev, cu);
        if (rc)
            return rc;
        rc = gdrx_backend_open(want, &ops, &bctx);
        if (rc) {
            gdrx_devctx_fini(&ctx->dev);
            return rc;
        }
    }
    ctx->ops = ops;
    ctx->bctx = bctx;
    return 0;
}

static int ctx_open(gdrx_backend_t want, int no_cuda, uint64_t *id_out)
{
    const struct gdrx_cuda *cu = NULL;
    uint64_t id;

    /* CUDA first: an open that fails there registers no fork handlers */
    int rc = no_cuda ? 0 : gdrx_cuda_get(&cu);
    if (rc == 0)
        rc = gdrx_fork_guard_enable();
    if (rc)
        return rc;
    struct gdrx_ctx *ctx = (struct gdrx_ctx *)gdrx_ht_alloc(&gdrx_ctx_table, &id);
    if (!ctx)
        return -ENOMEM;
    /* Nobody else can reach the slot before it is published; the write
     * lock only documents that (and keeps thread sanitizers informed). */
    gdrx_rwlock_lock(&ctx->lock, GDRX_LOCK_CTX, GDRX_WRITE);
    rc = ctx_setup(ctx, want, cu);
    if (rc) {
        gdrx_rwlock_unlock(&ctx->lock, GDRX_LOCK_CTX);
        gdrx_ht_free(&gdrx_ctx_table, &ctx->h);
        return rc;
    }
    atomic_store_explicit(&ctx->pin_count, 0, memory_order_relaxed);
    /* Subscribers were promised events from the next gdrx_open on (their
     * libcuda may only have been loaded by it); else the first pin
     * installs the hooks (pin.c) */
    if (!no_cuda && gdrx_mem_events_subscribed())
        gdrx_free_hook_enable();
    atomic_store_explicit(&ctx->state, no_cuda ? GDRX_CTX_NO_CUDA : GDRX_CTX_OPEN,
                          memory_order_relaxed);
    gdrx_ht_publish(&ctx->h, id);
    gdrx_rwlock_unlock(&ctx->lock, GDRX_LOCK_CTX);
    if (no_cuda)
        gdrx_warn("context %#llx open on backend %s without CUDA: CUDA cannot be used in a "
                  "fork() child of a process that used it; every pin will fail",
                  (unsigned long long)id, ctx->ops->name);
    else
        gdrx_info("context %#llx open on backend %s, %d device(s)", (unsigned long long)id,
                  ctx->ops->name, ctx->dev.count);
    *id_out = id;
    return 0;
}

int gdrx_ctx_open(gdrx_backend_t want, uint32_t flags, uint64_t *id_out)
{
    int rc = ctx_open(want, 0, id_out);

    /* Only where the driver refuses this process: a CUDA-less context
     * anywhere else would hide a real failure from the caller.  gdrcopy's
     * gdr_open needs it (opens without CUDA, fails at the pin); gdr_t
     * stays a gdrx context id, so libgdrapi keeps no state of its own. */
    if (rc && (flags & GDRX_OPEN_FLAG_NO_CUDA_FALLBACK) && gdrx_cuda_refused() &&
        ctx_open(want, 1, id_out) == 0)
        rc = 0; /* else the first error, which says why CUDA failed */
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

    if (atomic_load_explicit(&ctx->state, memory_order_relaxed) == GDRX_CTX_OPEN)
        ctx->ops->close(ctx->bctx); /* a NO_CUDA context opened none */
    ctx->ops = NULL;
    ctx->bctx = NULL;
    gdrx_devctx_fini(&ctx->dev);
    atomic_store_explicit(&ctx->state, GDRX_CTX_UNUSED, memory_order_relaxed);
    gdrx_rwlock_unlock(&ctx->lock, GDRX_LOCK_CTX);
    gdrx_ht_free(&gdrx_ctx_table, &ctx->h);
    return 0;
}
