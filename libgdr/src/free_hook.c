/*
 * free_hook.c - install the CUDA free hooks once and route them to the core.
 *
 * SPDX-License-Identifier: MIT
 */
#include "free_hook.h"

#include <pthread.h>
#include <stdatomic.h>

#include "core.h"
#include "log.h"
#ifdef GDRX_HAVE_FREE_HOOKS
#include "hooks/cuda_free_hooks.h"
#endif

static pthread_once_t hook_once = PTHREAD_ONCE_INIT;
static atomic_int hook_active;

static void hook_install(void)
{
#ifdef GDRX_HAVE_FREE_HOOKS
    gdrx_free_hooks_set_callback(gdrx_core_memory_freed, NULL);
    int rc = gdrx_free_hooks_install();
    if (rc == 0) {
        atomic_store(&hook_active, 1);
        return;
    }
    gdrx_warn("CUDA free hooks not installed (%d); stale pins are found by "
              "gdrx_pin_query() only", rc);
#else
    gdrx_info("CUDA free hooks not built in; stale pins are found by gdrx_pin_query() only");
#endif
}

void gdrx_free_hook_enable(void)
{
    pthread_once(&hook_once, hook_install);
}

int gdrx_free_hook_active(void)
{
    return atomic_load(&hook_active);
}
