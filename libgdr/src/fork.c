/*
 * fork.c - the library's fork handlers, the only ones it registers, and
 * what a fork child may do with its parent's gdrx objects: nothing.  Every
 * call on an inherited context or pin returns -ECHILD, copies included, and
 * no CPU mapping of GPU memory is inherited (the backends mark theirs
 * MADV_DONTFORK, fork_guard.c keeps fork out until they have).
 *
 * SPDX-License-Identifier: MIT
 *
 * The handlers are registered at the first gdrx_open or memory-event
 * subscription, or earlier by gdrx_fork_handlers_register (gdrx's UCX
 * plugin calls it when UCX loads the plugin), never at libgdrx's load.
 * Until libgdrx is used they take locks no other thread holds and change
 * nothing: a process that never uses libgdrx forks as without it.
 *
 * Prepare takes every process-wide lock of the library in the one lock
 * order (lock_order.h), the backends' through their ops (fork_lock), so
 * that no other thread holds one while the process is copied and no thread
 * holding one waits for another that prepare already took.  One handler
 * for all of them: separate pthread_atfork handlers run in the reverse of
 * their registration order, which need not be the lock order.
 *
 * The child handler runs while the child has one thread, so it changes the
 * inherited objects without their per-object locks (any of which a
 * vanished parent thread may hold), then gives every slot new ones, so
 * that a context the child opens (perhaps in a slot a parent thread had
 * locked) and its close, which walks every pin, wait for nobody; the copy
 * path reads the pins' published views as always and finds -ECHILD there,
 * at no cost to the parent.
 */
#include <errno.h>
#include <pthread.h>

#include "core.h"
#include "export.h"
#include "fork_defer.h"
#include "free_hook.h"
#include "log.h"
#include "mem_events.h"
#include "pin_index.h"
#ifdef GDRX_HAVE_FREE_HOOKS
#include "hooks/cuda_hooks.h"
#endif

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static int fork_status;

static void lock_ctx_table(void) { gdrx_ht_fork_lock(&gdrx_ctx_table); }
static void unlock_ctx_table(void) { gdrx_ht_fork_unlock(&gdrx_ctx_table); }
static void lock_pin_table(void) { gdrx_ht_fork_lock(&gdrx_pin_table); }
static void unlock_pin_table(void) { gdrx_ht_fork_unlock(&gdrx_pin_table); }

/* The process-wide locks, in the lock order (lock_order.h): prepare takes
 * them first to last, the parent and child handlers release them last to
 * first.  child is what the child does instead of the parent's release:
 * for a rwlock, a new lock (gdrx_rwlock_child_reset says why).  A lock
 * without take is not taken (lock_order.h, "fork()", says which and why);
 * the child only gets a new one. */
static const struct {
    void (*take)(void);
    void (*parent)(void);
    void (*child)(void);
} locks[] = {
    { NULL, NULL, gdrx_cuda_fork_child },
    { gdrx_free_hook_fork_lock, gdrx_free_hook_fork_unlock, gdrx_free_hook_fork_unlock },
#ifdef GDRX_HAVE_FREE_HOOKS
    { gdrx_cuda_hooks_fork_lock, gdrx_cuda_hooks_fork_unlock, gdrx_cuda_hooks_fork_unlock },
#endif
    { gdrx_fork_guard_lock, gdrx_fork_guard_unlock, gdrx_fork_guard_child },
    { gdrx_backends_fork_lock, gdrx_backends_fork_unlock, gdrx_backends_fork_child },
    /* the free hook's index: the child empties it (the pins are not its) */
    { gdrx_pin_index_fork_prepare, gdrx_pin_index_fork_parent, gdrx_pin_index_fork_child },
    { gdrx_mem_events_fork_lock, gdrx_mem_events_fork_unlock, gdrx_mem_events_fork_unlock },
    /* the free lists a new context or pin of the child would use */
    { lock_ctx_table, unlock_ctx_table, unlock_ctx_table },
    { lock_pin_table, unlock_pin_table, unlock_pin_table },
};

#define NLOCKS (sizeof(locks) / sizeof(locks[0]))

static void fork_prepare(void)
{
    for (size_t i = 0; i < NLOCKS; i++)
        if (locks[i].take)
            locks[i].take();
    /* the handlers that run after this one, on this thread, find the locks
     * taken: what they call takes none of them again (lock_order.h), and
     * the API defers or refuses (fork_defer.c) */
    gdrx_lock_order_fork_own();
    gdrx_fork_defer_begin();
}

static void fork_parent(void)
{
    gdrx_lock_order_fork_disown();
    for (size_t i = NLOCKS; i-- > 0;)
        if (locks[i].parent)
            locks[i].parent();
    gdrx_fork_defer_end(0);
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
    gdrx_lock_order_fork_disown();
    /* the tables' locks are still held: their slots are stable */
    gdrx_ht_foreach(&gdrx_ctx_table, mark_ctx, NULL);
    gdrx_ht_foreach(&gdrx_pin_table, mark_pin, NULL);
    /* the per-object locks, which prepare does not take (other threads
     * hold them across CUDA calls and backend work): any may be held by a
     * thread the child does not have */
    gdrx_ht_child_reset_locks(&gdrx_ctx_table);
    gdrx_ht_child_reset_locks(&gdrx_pin_table);
    for (size_t i = NLOCKS; i-- > 0;)
        locks[i].child();
    gdrx_fork_defer_end(1);
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

GDRX_EXPORT int gdrx_fork_handlers_register(void)
{
    return gdrx_fork_guard_enable();
}
