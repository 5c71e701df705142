/*
 * lock_order.h - the one lock order of libgdrx, and the lock calls that
 * check it.
 *
 * SPDX-License-Identifier: MIT
 *
 * Every lock of the library has a rank below; a thread takes locks only in
 * increasing rank (outer to inner) and never two of one rank.  The ranks,
 * outer to inner, with what a holder of each may go on to take:
 *
 *   CTX          ctx->lock (context.c): read for every operation on a
 *                context, write to open or close it.  Per context.
 *   PIN          pin->lock (pin.c): every state change of one pin.  Per
 *                pin; one at a time (close, the free hook and a context
 *                release lock the pins one by one).
 *   DEVCTX       a context's primary-context table (devctx.c); calls CUDA.
 *   CUDA_LOADER  loading libcuda (cuda_loader.c, once): held across
 *                dlopen and cuInit, which registers libcuda's fork
 *                handler; calls CUDA.
 *   FREE_HOOK    deciding whether to install the CUDA hooks (free_hook.c);
 *                installs them under it.
 *   CUDA_HOOKS   the hooks' patch table (hooks/cuda_hooks.c); patches
 *                libcuda's entries under it (hooks/entry_patch.c's own
 *                lock is only ever taken under this one).
 *   MAP          the fork guard (fork_guard.c): held for reading while a
 *                backend pins or maps, so that no fork falls between a
 *                backend's mmap and its MADV_DONTFORK.
 *   BACKEND      a backend's own state (nvrm/nvrm_backend.c); calls CUDA.
 *   TRACE_INSTALL  installing the nvrm ioctl trace (nvrm/nvrm_trace.c); the
 *                GOT patcher's lock (hooks/got_import.c) is only ever taken
 *                under it.
 *   TRACE        the nvrm ioctl trace's tables (nvrm/nvrm_trace.c): taken
 *                in every ioctl libcuda makes once the trace is installed,
 *                so under any lock above that calls CUDA, and under
 *                libcuda's own locks.  Leaf.
 *   INDEX        the free hook's index of pins (pin_index.c).  Leaf.
 *   SUBSCRIBERS  the memory-event subscriptions (mem_events.c); only
 *                fork takes RELEASES under it.
 *   RELEASES     the releases in progress (release_order.c): the FREE
 *                event of an address comes before the ALLOC of its reuse.
 *                Leaf.
 *   CTX_TABLE, PIN_TABLE  the handle tables' free lists (handle_table.c).
 *                Leaves.
 *
 * No lock is held while copying, nor while calling a subscriber back.
 *
 * fork(): fork.c's prepare handler takes every process-wide lock above
 * (from FREE_HOOK on) in this order, so no other thread holds one while
 * the process is copied; the parent and child handlers release them.
 * Two are left out, and the child gets new ones instead (their holder may
 * be a thread the child does not have):
 *  - CUDA_LOADER: its holder may be registering a fork handler (libcuda's,
 *    in cuInit), which a glibc before 2.36 makes wait until fork's
 *    handlers are done (issue 43, defect 9);
 *  - TRACE: a thread takes it inside libcuda, holding libcuda's lock, so a
 *    prepare handler holding it would wait, through libcuda, for the
 *    thread that waits for it as soon as a later handler calls CUDA (issue
 *    43, defect 7).
 * The per-object locks (CTX, PIN, DEVCTX) are not taken: a child marks
 * the inherited contexts and pins forked, never takes their locks for
 * them, and gives every context and pin slot new locks (a vanished thread
 * may have held one, of a slot the child then reuses or walks: issue 43,
 * defect 10).  Fork handlers that run after fork.c's (registered before
 * it) run on the thread that holds them all: fork_defer.c keeps the calls
 * they make from taking any lock.
 *
 * The check: every lock call below records the ranks this thread holds and
 * reports a lock taken out of order (gdrx_err).  Builds with
 * GDRX_LOCK_ORDER_FATAL (debug and sanitizer builds) abort there, so a
 * test that takes locks out of order fails.
 */
#ifndef GDRX_LOCK_ORDER_H
#define GDRX_LOCK_ORDER_H

#include <pthread.h>
#ifdef __SANITIZE_THREAD__
#include <sanitizer/tsan_interface.h>
#endif

enum gdrx_lock_rank {
    GDRX_LOCK_CTX = 0,
    GDRX_LOCK_PIN,
    GDRX_LOCK_DEVCTX,
    GDRX_LOCK_CUDA_LOADER,
    GDRX_LOCK_FREE_HOOK,
    GDRX_LOCK_CUDA_HOOKS,
    GDRX_LOCK_MAP,
    GDRX_LOCK_BACKEND,
    GDRX_LOCK_TRACE_INSTALL,
    GDRX_LOCK_TRACE,
    GDRX_LOCK_INDEX,
    GDRX_LOCK_SUBSCRIBERS,
    GDRX_LOCK_RELEASES,
    GDRX_LOCK_CTX_TABLE,
    GDRX_LOCK_PIN_TABLE,
    GDRX_LOCK_RANKS
};

/* Record that this thread takes / has released a lock of rank r. */
void gdrx_lock_order_take(enum gdrx_lock_rank r);
void gdrx_lock_order_drop(enum gdrx_lock_rank r);
/* Report (fatal where the order is) a lock whose rule is "only ever taken
 * under rank r" taken by a thread that does not hold r. */
void gdrx_lock_order_expect(enum gdrx_lock_rank r, const char *lock);

/* fork(): once fork.c's prepare handler holds every process-wide lock,
 * its thread owns them until the parent or child handler disowns them.
 * Code that other fork handlers run on that thread in between (through
 * libcuda's hooked entry points and its ioctls) takes none of them again:
 * the thread already holds each, and no other thread can.  1 if rank r is
 * so owned by this thread. */
void gdrx_lock_order_fork_own(void);
void gdrx_lock_order_fork_disown(void);
int gdrx_lock_order_fork_owned(enum gdrx_lock_rank r);

static inline void gdrx_mutex_lock(pthread_mutex_t *m, enum gdrx_lock_rank r)
{
    if (gdrx_lock_order_fork_owned(r))
        return;
    gdrx_lock_order_take(r);
    pthread_mutex_lock(m);
}

static inline void gdrx_mutex_unlock(pthread_mutex_t *m, enum gdrx_lock_rank r)
{
    if (gdrx_lock_order_fork_owned(r))
        return;
    pthread_mutex_unlock(m);
    gdrx_lock_order_drop(r);
}

enum gdrx_rw { GDRX_READ, GDRX_WRITE };

static inline void gdrx_rwlock_lock(pthread_rwlock_t *l, enum gdrx_lock_rank r, enum gdrx_rw how)
{
    if (gdrx_lock_order_fork_owned(r))
        return;
    gdrx_lock_order_take(r);
    if (how == GDRX_WRITE)
        pthread_rwlock_wrlock(l);
    else
        pthread_rwlock_rdlock(l);
}

static inline void gdrx_rwlock_unlock(pthread_rwlock_t *l, enum gdrx_lock_rank r)
{
    if (gdrx_lock_order_fork_owned(r))
        return;
    pthread_rwlock_unlock(l);
    gdrx_lock_order_drop(r);
}

/* A fork child's release of a rwlock its parent's prepare handler took for
 * writing.  pthread_rwlock_unlock tells a writer's unlock from a reader's
 * by the caller's thread id, and the child's thread has a new one: its
 * unlock would be taken for a reader's and leave the lock write-held, so
 * the child's next rdlock or wrlock would wait forever.  The child has one
 * thread and nothing else holds the lock: it starts from a new one. */
static inline void gdrx_rwlock_child_reset(pthread_rwlock_t *l, enum gdrx_lock_rank r)
{
#ifdef __SANITIZE_THREAD__
    /* A thread sanitizer keeps a lock's state by address, and a new lock
     * there does not clear it: tell it the write hold ended. */
    __tsan_mutex_pre_unlock(l, 0);
    __tsan_mutex_post_unlock(l, 0);
#endif
    pthread_rwlock_init(l, NULL);
    gdrx_lock_order_drop(r);
}

/* A fork child's new lock in place of a mutex that a thread of the parent
 * may have held when the process was copied (one that did not call
 * fork(), so that the child has no such thread and nobody would ever
 * unlock it).  The child has one thread: nobody else holds it.  Thread
 * sanitizers stop checking a child of a multi-threaded process; in a child
 * of a one-thread process the lock was not held. */
static inline void gdrx_mutex_child_reset(pthread_mutex_t *m, enum gdrx_lock_rank r)
{
    pthread_mutex_init(m, NULL);
    gdrx_lock_order_drop(r);
}

#endif /* GDRX_LOCK_ORDER_H */
