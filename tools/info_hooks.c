/*
 * info_hooks.c - the CUDA memory hooks in this process (the backends'
 * probes opened libgdrx, which installs them): how many of the entry points
 * this libcuda exports were patched, and each one that could not be, as a
 * problem (frees through it are not seen).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <string.h>

#include "gdrx.h"
#include "info.h"

void info_hooks(struct info_report *r)
{
    char hooked_names[1024] = "";
    const char *name;
    int res, ret, hooked = 0, exported = 0, installed = 0;

    for (unsigned i = 0; (ret = gdrx_mem_events_hook(i, &name, &res)) == 0; i++) {
        installed |= res != -ENODATA;
        if (res == -ENOENT || res == -ENODATA)
            continue;
        exported++;
        if (res == 0) {
            hooked++;
            size_t len = strlen(hooked_names);
            snprintf(hooked_names + len, sizeof(hooked_names) - len, "%s%s", len ? ", " : "",
                     name);
            continue;
        }
        info_problem(r, "CUDA hooks",
                     "report it with the output of `GDRX_LOG_LEVEL=4 gdrx-info -v` (it shows "
                     "the entry's first bytes); meanwhile run UCX with UCX_GDRX_MEM_EVENTS=n, "
                     "so that its cache checks every hit",
                     "%s is not hooked (%s): frees and allocations through it are not seen",
                     name, gdrx_strerror(res));
    }
    if (ret == -ENOSYS) {
        info_add(r, "hooks", -1, "state", "state", "not available on this platform");
    } else if (!installed) {
        info_add(r, "hooks", -1, "state", "state",
                 "not installed (GDRX_FREE_HOOKS=0, or no backend opened, or no libcuda)");
    } else {
        info_add(r, "hooks", -1, "hooked", "hooked", "%d of the %d entry points this libcuda "
                 "exports", hooked, exported);
        info_add_v(r, "hooks", -1, "entry_points", "entry points", "%s", hooked_names);
    }
}
