/*
 * info_gdrapi.c - which libgdrapi.so.2 a program built against NVIDIA
 * gdrcopy would load here (the dynamic linker's search, as dlopen does it
 * for gdrx-info), and whether it is gdrx's (it exports gdrx_gdrapi_impl)
 * or gdrcopy's own, which needs gdrdrv.ko or a driver whose dma-bufs mmap.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "info.h"

#define GDRAPI_SONAME "libgdrapi.so.2"

void info_gdrapi(struct info_report *r)
{
    char real[PATH_MAX];
    struct link_map *lm = NULL;
    /* Local and lazy: nothing of it is bound or called but two reads. */
    void *h = dlopen(GDRAPI_SONAME, RTLD_LAZY | RTLD_LOCAL);

    if (!h) {
        info_add(r, "gdrapi", -1, "path", GDRAPI_SONAME, "not found (programs linked with "
                 "-lgdrapi cannot start, those that dlopen it go without; gdrx provides one: "
                 "./configure --enable-gdrapi-install)");
        return;
    }
    const char *path = dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm ? lm->l_name : "";
    if (realpath(path, real))
        path = real;
    info_add(r, "gdrapi", -1, "path", GDRAPI_SONAME, "%s", *path ? path : "(unknown path)");
    const char *impl = dlsym(h, "gdrx_gdrapi_impl");
    if (impl)
        info_add(r, "gdrapi", -1, "provider", "provider", "%.40s: gdrcopy's API on gdrx's "
                 "backends (no gdrdrv.ko needed with nvrm)", impl);
    else
        info_add(r, "gdrapi", -1, "provider", "provider", "NVIDIA gdrcopy (not gdrx's: needs "
                 "gdrdrv.ko, or a driver whose dma-bufs can be mapped)");
    void (*version)(int *, int *) = NULL;
    void *fn = dlsym(h, "gdr_runtime_get_version");
    memcpy(&version, &fn, sizeof(fn));
    if (version) {
        int major = 0, minor = 0;
        version(&major, &minor);
        info_add(r, "gdrapi", -1, "api", "API", "%d.%d", major, minor);
    }
    dlclose(h);
}
