/*
 * fork.c - what a fork child may do with its parent's gdrx objects:
 * nothing.  Every call on an inherited context or pin returns -ECHILD,
 * copies included, and no CPU mapping of GPU memory is inherited (the
 * backends mark theirs MADV_DONTFORK).
 *
 * SPDX-License-Identifier: MIT
 *
 * The handlers are registered at the first gdrx_open, not at load: a
 * process that never opens a context forks exactly as without libgdrx.
 * The child handler runs while the child has one thread, so it changes the
 * inherited objects without their locks (any of which a vanished parent
 * thread may hold); the copy path reads the pins' published views as
 * always and finds -ECHILD there, at no cost to the parent.
 */
#include <errno.h>
#include <pthread.h>

#include "core.h"
#include "log.h"
#include "pin_index.h"

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static int fork_status;

/* A backend maps GPU memory, then marks the mapping MADV_DONTFORK: a fork
 * in between would hand the child a live mapping.  Backend pins and maps
 * hold this for reading (many at once); fork takes it for writing, first,
 * so it waits for them and none starts until it is done. */
static pthread_rwlock_t map_lock = PTHREAD_RWLOCK_INITIALIZER;

void gdrx_fork_hold(void)
{
    pthread_rwlock_rdlock(&map_lock);
}

void gdrx_fork_release(void)
{
    pthread_rwlock_unlock(&map_lock);
}

/* The table locks guard the free lists a new context or pin of the child
 * would use: taken around fork so that the child gets them consistent. */
static void fork_prepare(void)
{
    pthread_rwlock_wrlock(&map_lock); /* first: its holders take no other of these */
    gdrx_pin_index_fork_prepare();
    pthread_mutex_lock(&gdrx_ctx_table.lock);
    pthread_mutex_lock(&gdrx_pin_table.lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&gdrx_pin_table.lock);
    pthread_mutex_unlock(&gdrx_ctx_table.lock);
    gdrx_pin_index_fork_parent();
    pthread_rwlock_unlock(&map_lock);
}

static void mark_ctx(struct gdrx_hslot *s, void *arg)
{
    (void)arg;
    struct gdrx_ctx *ctx = (struct gdrx_ctx *)s;

    if (atomic_load_explicit(&ctx->state, memory_order_relaxed) != GDRX_CTX_UNUSED)
        atomic_store_explicit(&ctx->state, GDRX_CTX_FORKED, memory_order_relaxed);
}

static void mark_pin(struct gdrx_hslot *s, void *arg)
{
    (void)arg;
    /* A pin half created or half destroyed by another thread is marked
     * too: whatever its id, nothing of it is the child's. */
    if (atomic_load_explicit(&s->live_id, memory_order_relaxed) != 0 ||
        ((struct gdrx_pin *)s)->state != GDRX_PIN_UNUSED)
        gdrx_pin_on_fork_child((struct gdrx_pin *)s);
}

static void fork_child(void)
{
    gdrx_ht_foreach(&gdrx_ctx_table, mark_ctx, NULL);
    gdrx_ht_foreach(&gdrx_pin_table, mark_pin, NULL);
    pthread_mutex_unlock(&gdrx_pin_table.lock);
    pthread_mutex_unlock(&gdrx_ctx_table.lock);
    gdrx_pin_index_fork_child();
    pthread_rwlock_unlock(&map_lock);
}

static void fork_register(void)
{
    int rc = pthread_atfork(fork_prepare, fork_parent, fork_child);
    if (rc) {
        gdrx_err("cannot register the fork handlers: %d", rc);
        fork_status = -rc;
    }
}

int gdrx_fork_guard_enable(void)
{
    pthread_once(&fork_once, fork_register);
    return fork_status;
}
