/*
 * nvrm_patch.c - the one place where the nvrm backend touches the hooks
 * code: an nvrm_patch_slot_fn (nvrm_trace.h) for libcuda's ioctl import.
 *
 * SPDX-License-Identifier: MIT
 *
 * Adapter over hooks/got_patch.h until the hooks code offers a function
 * with nvrm_patch_slot_fn's contract itself; then this file becomes a
 * call to it.  gdrx_got_patch() stores the value a bound slot held (so an
 * earlier patcher is chained to) before rewriting it.
 */
#include "nvrm_patch.h"

#include <errno.h>
#include <string.h>

#include "hooks/got_patch.h"

int nvrm_patch_import_slot(const char *object, const char *symbol, void *replacement,
                           void **previous)
{
    /* The patcher keeps a pointer to the hook: one static per process is
     * enough, since the trace installs once. */
    static struct gdrx_got_hook hook;

    if (!object || !symbol || !replacement || !previous || hook.symbol)
        return -EINVAL;
    hook = (struct gdrx_got_hook){ .symbol = symbol, .replacement = replacement,
                                   .original = previous, .only_in = object };
    int rc = gdrx_got_patch(&hook, 1);
    long n = gdrx_got_count(symbol);
    if (n > 0)
        return 0;
    if (rc == 0 || n == 0)
        (void)gdrx_got_unpatch(&hook, 1);
    memset(&hook, 0, sizeof(hook));
    return rc ? rc : -ENOENT;
}
