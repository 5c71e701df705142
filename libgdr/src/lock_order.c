/*
 * lock_order.c - the per-thread check of the lock order (lock_order.h).
 *
 * SPDX-License-Identifier: MIT
 *
 * Each thread keeps one bit per rank it holds.  Taking rank r while a bit
 * at r or above is set breaks the order: reported, and fatal in
 * GDRX_LOCK_ORDER_FATAL and GDRX_DEBUG builds (tests/libgdr/test_core_unit
 * is one).  A fork child inherits the forking thread's
 * bits, which the child handler clears by releasing what prepare took.
 * Between the prepare handler and the parent or child handler the forking
 * thread's bits are kept aside as owned (lock_order.h says why).
 */
#include "lock_order.h"

#include <stdlib.h>

#include "log.h"

_Static_assert(GDRX_LOCK_RANKS <= 32, "one bit per rank");

static _Thread_local unsigned held;
/* the ranks fork.c's prepare handler took on this thread, while it owns
 * them (lock_order.h) */
static _Thread_local unsigned fork_owned;

static const char *const names[GDRX_LOCK_RANKS] = {
    [GDRX_LOCK_CTX] = "context",           [GDRX_LOCK_PIN] = "pin",
    [GDRX_LOCK_DEVCTX] = "devctx",         [GDRX_LOCK_CUDA_LOADER] = "cuda loader",
    [GDRX_LOCK_FREE_HOOK] = "free hook",   [GDRX_LOCK_CUDA_HOOKS] = "cuda hooks",
    [GDRX_LOCK_MAP] = "map (fork guard)",  [GDRX_LOCK_BACKEND] = "backend",
    [GDRX_LOCK_TRACE_INSTALL] = "trace install", [GDRX_LOCK_TRACE] = "trace",
    [GDRX_LOCK_INDEX] = "pin index",       [GDRX_LOCK_SUBSCRIBERS] = "subscribers",
    [GDRX_LOCK_RELEASES] = "releases",
    [GDRX_LOCK_CTX_TABLE] = "context table", [GDRX_LOCK_PIN_TABLE] = "pin table",
};

void gdrx_lock_order_take(enum gdrx_lock_rank r)
{
    unsigned bit = 1u << r;

    if (held >= bit) {
        int worst = 31 - __builtin_clz(held);
        gdrx_err("lock order broken: taking the %s lock while holding the %s lock "
                 "(lock_order.h)", names[r], names[worst]);
#if defined(GDRX_LOCK_ORDER_FATAL) || defined(GDRX_DEBUG)
        abort();
#endif
    }
    held |= bit;
}

void gdrx_lock_order_expect(enum gdrx_lock_rank r, const char *lock)
{
    /* owned: taken by this thread's prepare handler, which a fork handler
     * after it (hooks adopted in a CUDA call there) runs under */
    if ((held | fork_owned) & (1u << r))
        return;
    gdrx_err("lock order broken: the %s lock taken without the %s lock (lock_order.h)", lock,
             names[r]);
#if defined(GDRX_LOCK_ORDER_FATAL) || defined(GDRX_DEBUG)
    abort();
#endif
}

void gdrx_lock_order_drop(enum gdrx_lock_rank r)
{
    held &= ~(1u << r);
}

void gdrx_lock_order_fork_own(void)
{
    fork_owned = held;
    held = 0; /* what the other handlers take here is checked on its own */
}

void gdrx_lock_order_fork_disown(void)
{
    held = fork_owned;
    fork_owned = 0;
}

int gdrx_lock_order_fork_owned(enum gdrx_lock_rank r)
{
    return (fork_owned >> r) & 1u;
}
