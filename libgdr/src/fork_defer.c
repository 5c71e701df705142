/*
 * fork_defer.c - libgdrx called by another fork handler while fork() runs.
 *
 * SPDX-License-Identifier: MIT
 *
 * fork.c's prepare handler takes every process-wide lock of the library and
 * keeps them until the parent or child handler.  glibc runs the prepare
 * handlers in the reverse of their registration order, so every handler
 * registered before libgdrx's (before the first gdrx_open or subscription)
 * runs after it, on the same thread, with those locks held.  UCX's can be
 * one: its registration caches purge on fork (UCX_RCACHE_PURGE_ON_FORK, on
 * by default from 1.16), and its handler is registered with the first such
 * cache.  gdrx's plugin registers libgdrx's handlers when UCX loads it,
 * before UCX makes its caches; a purging cache made before that (or a
 * program's own handler registered before its first gdrx_open) runs after
 * libgdrx's prepare handler.  The purge deregisters every cached
 * registration no one holds: gdrx's unpins, on a thread that already holds
 * the locks an unpin takes.
 *
 * So, on that thread, from the end of libgdrx's prepare handler to its
 * parent or child handler (the prepare handlers registered before it, and
 * the parent and child handlers registered before it, run in between):
 *  - gdrx_unpin and gdrx_unmap check their handles without locks, queue
 *    the call and return 0; the parent handler makes it once the locks are
 *    released, before fork() returns.  In the child they return -ECHILD
 *    (the pins are its parent's) and nothing is queued;
 *  - every other call that would take a lock fails at once with -EDEADLK
 *    and says why; the copies take no lock, but wait while another
 *    thread's CUDA call holds the pin (stale.c): a free, whose end takes
 *    the locks this thread holds.  There the wait is bounded, and the copy
 *    fails with -EDEADLK (-ECHILD in a child's handler), said (issue 43,
 *    defect 8);
 *  - what libgdrx does inside libcuda (its free hooks, the nvrm ioctl
 *    trace) takes none of the locks the thread already holds
 *    (lock_order.h, gdrx_lock_order_fork_owned).
 * Other threads are not affected: they wait for the locks as before.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "core.h"
#include "fork_defer.h"
#include "log.h"

/* Set on the thread that runs fork() from the end of libgdrx's prepare
 * handler to the start of its parent or child handler; fork_pid: the
 * process that called fork(), to tell a child's handlers from the
 * parent's. */
static _Thread_local int fork_holder;
static _Thread_local pid_t fork_pid;

/* What the holder asked for, in order: the thread's own, so that two
 * threads forking at once keep theirs apart.  malloc is usable in fork
 * handlers: glibc takes its own allocator's locks after them. */
static _Thread_local struct gdrx_deferred *queue;
static _Thread_local size_t queue_len, queue_cap;

void gdrx_fork_defer_begin(void)
{
    fork_holder = 1;
    fork_pid = getpid();
}

int gdrx_fork_refuse(const char *what)
{
    if (!fork_holder)
        return 0;
    gdrx_err("%s: called from a fork handler that runs after libgdrx's own, while libgdrx "
             "holds its locks for fork(); refused (-EDEADLK).  Only gdrx_unpin, gdrx_unmap "
             "and the copies may be called there", what);
    return -EDEADLK;
}

int gdrx_fork_copy_refuse(void)
{
    if (!fork_holder)
        return 0;
    if (getpid() != fork_pid)
        return -ECHILD; /* the pins are the parent's; the holder is gone */
    gdrx_err("a copy called from a fork handler that runs after libgdrx's own: another "
             "thread's CUDA call (a free of the pin's memory) holds the pin and needs the "
             "locks libgdrx holds for fork(); refused (-EDEADLK).  Copy before fork() or "
             "after it returns");
    return -EDEADLK;
}

/* Whether gdrx_unmap, locked, would find a range to release: the states
 * pin_state.c's unmap column accepts.  Read without the pin's lock, as the
 * other checks here: a thread changing this pin while another forks races
 * with itself, locked or not.  Without it a deferred unmap of a pin never
 * mapped said 0 where the locked call says -EINVAL. */
static int has_mapping(const struct gdrx_pin *p)
{
    enum gdrx_pin_state s = __atomic_load_n(&p->state, __ATOMIC_RELAXED);
    return s == GDRX_PIN_MAPPED || s == GDRX_PIN_REVOKED_MAPPED || s == GDRX_PIN_REVOKED_LEAKED;
}

int gdrx_fork_defer(gdrx_deferred_fn fn, int ends_pin, gdrx_t ctx, gdrx_pin_t pin, int *rc)
{
    if (!fork_holder)
        return 0;
    /* The checks with_pin makes (gdrx.c), without its locks: the slots'
     * memory is never freed.  Another thread unpinning the same pin at the
     * same time is the caller's race, here as anywhere. */
    const struct gdrx_ctx *c = (const struct gdrx_ctx *)gdrx_ht_lookup(&gdrx_ctx_table, ctx.id);
    const struct gdrx_pin *p = (const struct gdrx_pin *)gdrx_ht_lookup(&gdrx_pin_table, pin.id);
    if (!c) {
        *rc = -EBADF;
    } else if (getpid() != fork_pid ||
               atomic_load_explicit(&c->state, memory_order_relaxed) == GDRX_CTX_FORKED ||
               (p && atomic_load_explicit(&p->fp.err, memory_order_relaxed) == -ECHILD)) {
        *rc = -ECHILD;
    } else if (!p || p->ctx != c || (!ends_pin && !has_mapping(p))) {
        *rc = -EINVAL;
    } else {
        /* as far as the caller knows, a queued unpin ended the pin (any
         * later call on it is refused) and a queued unmap its mapping (a
         * second unmap is refused; an unpin after it is the usual order) */
        *rc = 0;
        for (size_t i = 0; i < queue_len; i++)
            if (queue[i].pin.id == pin.id && (queue[i].ends_pin || !ends_pin))
                *rc = -EINVAL;
    }
    if (*rc == 0 && queue_len == queue_cap) {
        size_t cap = queue_cap ? 2 * queue_cap : 16;
        struct gdrx_deferred *q = realloc(queue, cap * sizeof(*q));
        if (!q) {
            *rc = -ENOMEM;
        } else {
            queue = q;
            queue_cap = cap;
        }
    }
    if (*rc == 0)
        queue[queue_len++] = (struct gdrx_deferred){ .fn = fn, .ends_pin = ends_pin,
                                                     .ctx = ctx, .pin = pin };
    return 1;
}

/* Parent: the holder makes the calls it queued, now that the locks are
 * free.  Child: drops them (the pins are the parent's, marked forked). */
void gdrx_fork_defer_end(int in_child)
{
    struct gdrx_deferred *q = queue;
    size_t n = queue_len;

    fork_holder = 0;
    queue = NULL;
    queue_len = queue_cap = 0;
    for (size_t i = 0; !in_child && i < n; i++) {
        int rc = q[i].fn(q[i].ctx, q[i].pin);
        if (rc)
            gdrx_err("a call deferred from a fork handler failed after fork(): %s",
                     gdrx_strerror(rc));
    }
    free(q);
}
