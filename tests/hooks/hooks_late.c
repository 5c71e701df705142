/*
 * hooks_late.c - a library the free-hook suite dlopen()s after installing
 * the hooks: its GOT import of cuMemFree_v2 must be patched on load.
 *
 * SPDX-License-Identifier: MIT
 */
#include <cuda.h>

CUresult hooks_late_free(CUdeviceptr p);
int hooks_probe(void);

CUresult hooks_late_free(CUdeviceptr p)
{
    return cuMemFree(p); /* cuMemFree_v2 through this library's GOT */
}

/* Also defined by hooks_getpid.c: tells dlsym(RTLD_NEXT) results apart. */
int hooks_probe(void)
{
    return 1;
}
