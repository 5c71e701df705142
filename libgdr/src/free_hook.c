/*
 * free_hook.c - install the CUDA free hooks once and route them to the core.
 *
 * SPDX-License-Identifier: MIT
 */
#include "free_hook.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * Install as soon as libgdrx is loaded, not at the first gdrx_open(): a
 * statically linked CUDA runtime fetches its driver entry points
 * (cuGetProcAddress) at its first call and keeps them, so hooks installed
 * after that never see its frees.  libgdrx's dependencies (libcuda, when
 * the program links it) are loaded before this runs.
 * GDRX_FREE_HOOKS=0 defers installation to the first gdrx_open().
 */
__attribute__((constructor)) static void free_hook_enable_at_load(void)
{
    const char *v = getenv("GDRX_FREE_HOOKS");
    if (v && strcmp(v, "0") == 0)
        return;
    gdrx_free_hook_enable();
}

int gdrx_free_hook_active(void)
{
    return atomic_load(&hook_active);
}
