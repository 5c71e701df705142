/*
 * fork_guard.c - keep fork() out while a backend maps GPU memory.
 *
 * SPDX-License-Identifier: MIT
 *
 * A backend mmaps GPU memory, then marks the mapping MADV_DONTFORK: a fork
 * in between would hand the child a live mapping.  Backend pins and maps
 * hold the guard for reading (many at once, pin->lock held: rank MAP in
 * lock_order.h); fork.c's prepare handler takes it for writing, in its
 * place in the lock order, so it waits for them and none starts until the
 * fork is done.  Kept apart from fork.c so that the pin state machine
 * (pin.c, pin_state.c), which holds the guard, and fork.c, which marks the
 * pins in a child, do not call each other.
 */
#include <pthread.h>

#include "core.h"
#include "lock_order.h"

static pthread_rwlock_t map_lock = PTHREAD_RWLOCK_INITIALIZER;

void gdrx_fork_hold(void)
{
    gdrx_rwlock_lock(&map_lock, GDRX_LOCK_MAP, GDRX_READ);
}

void gdrx_fork_release(void)
{
    gdrx_rwlock_unlock(&map_lock, GDRX_LOCK_MAP);
}

void gdrx_fork_guard_lock(void)
{
    gdrx_rwlock_lock(&map_lock, GDRX_LOCK_MAP, GDRX_WRITE);
}

void gdrx_fork_guard_unlock(void)
{
    gdrx_rwlock_unlock(&map_lock, GDRX_LOCK_MAP);
}

void gdrx_fork_guard_child(void)
{
    gdrx_rwlock_child_reset(&map_lock, GDRX_LOCK_MAP);
}
