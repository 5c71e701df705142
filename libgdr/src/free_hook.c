/*
 * free_hook.c - install the CUDA memory hooks lazily, once.
 *
 * SPDX-License-Identifier: MIT
 *
 * Nothing happens at load: a process that merely loads libgdrx is left
 * as it was.  Installation waits for a caller that needs events (the
 * first pin, the first subscription, a gdrx_open while one is live) and
 * for libcuda to be there.
 */
#include "free_hook.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "fork_defer.h"
#include "lock_order.h"
#include "log.h"
#include "mem_events.h"
#ifdef GDRX_HAVE_FREE_HOOKS
#include "hooks/cuda_hooks.h"
#endif

enum hook_state {
    HOOK_UNDECIDED, /* not tried, or libcuda was not loaded yet */
    HOOK_ACTIVE,    /* installed */
    HOOK_DISABLED,  /* GDRX_FREE_HOOKS=0, not built in, or the patch failed */
};

static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;
static enum hook_state hook_state = HOOK_UNDECIDED; /* written under hook_lock */
static int hook_err;                                /* why DISABLED */

static int disabled_by_env(void)
{
    const char *v = secure_getenv("GDRX_FREE_HOOKS");

    return v && strcmp(v, "0") == 0;
}

static int try_install_locked(void)
{
#ifdef GDRX_HAVE_FREE_HOOKS
    if (disabled_by_env())
        return -ENOSYS;
    static const struct gdrx_cuda_hooks_sinks sinks = {
        .event = gdrx_mem_events_dispatch,
        .release_begin = gdrx_mem_events_release_begin,
        .release_end = gdrx_mem_events_release_end,
    };
    int rc = gdrx_cuda_hooks_install(&sinks);
    if (rc == 0)
        gdrx_info("CUDA memory hooks installed on %d entry points", gdrx_cuda_hooks_count());
    else if (rc != -ENOENT)
        gdrx_warn("CUDA memory hooks not installed (%d); stale pins are found by "
                  "gdrx_pin_query() only", rc);
    return rc;
#else
    return -ENOSYS;
#endif
}

int gdrx_free_hook_enable(void)
{
    int rc;

    /* every pin asks: decided once, then one load (hook_err is written
     * before the state that publishes it) */
    enum hook_state s = __atomic_load_n(&hook_state, __ATOMIC_ACQUIRE);
    if (s != HOOK_UNDECIDED)
        return s == HOOK_ACTIVE ? 0 : hook_err;
    gdrx_mutex_lock(&hook_lock, GDRX_LOCK_FREE_HOOK);
    switch (hook_state) {
    case HOOK_ACTIVE:
        rc = 0;
        break;
    case HOOK_DISABLED:
        rc = hook_err;
        break;
    default:
        rc = try_install_locked();
        if (rc == 0) {
            __atomic_store_n(&hook_state, HOOK_ACTIVE, __ATOMIC_RELEASE);
        } else if (rc != -ENOENT) {
            hook_err = rc;
            __atomic_store_n(&hook_state, HOOK_DISABLED, __ATOMIC_RELEASE);
        }
        break;
    }
    gdrx_mutex_unlock(&hook_lock, GDRX_LOCK_FREE_HOOK);
    return rc;
}

GDRX_EXPORT int gdrx_mem_events_hook(unsigned index, const char **name, int *result)
{
    if (gdrx_fork_refuse(__func__))
        return -EDEADLK;
    if (!name || !result)
        return -EINVAL;
#ifdef GDRX_HAVE_FREE_HOOKS
    return gdrx_cuda_hooks_entry(index, name, result);
#else
    (void)index;
    return -ENOSYS;
#endif
}

void gdrx_free_hook_fork_lock(void)
{
    gdrx_mutex_lock(&hook_lock, GDRX_LOCK_FREE_HOOK);
}

void gdrx_free_hook_fork_unlock(void)
{
    gdrx_mutex_unlock(&hook_lock, GDRX_LOCK_FREE_HOOK);
}
