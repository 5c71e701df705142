/*
 * ipoint.c - the hook behind GDRX_IPOINT (see ipoint.h); built only with
 * --enable-test-points.
 *
 * SPDX-License-Identifier: MIT
 */
#include "ipoint.h"

#include "export.h"

#include <stdatomic.h>
#include <stddef.h>

typedef void (*gdrx_ipoint_hook_fn)(const char *name);

/* One pointer, read at every point: acquire pairs with the setter's
 * release, so a hook sees whatever its test set up before installing it. */
static _Atomic(gdrx_ipoint_hook_fn) gdrx_ipoint_hook;

GDRX_EXPORT void gdrx_test_ipoint_hook_set(void (*fn)(const char *name))
{
    atomic_store_explicit(&gdrx_ipoint_hook, fn, memory_order_release);
}

GDRX_EXPORT void gdrx_test_ipoint(const char *name)
{
    gdrx_ipoint_hook_fn fn = atomic_load_explicit(&gdrx_ipoint_hook, memory_order_acquire);

    if (fn != NULL)
        fn(name);
}
