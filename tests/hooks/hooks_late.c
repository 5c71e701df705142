/*
 * hooks_late.c - a library the hooks suites dlopen() after installation:
 * its calls to cuMemFree_v2 go through its own GOT.
 *
 * SPDX-License-Identifier: MIT
 */
#include <cuda.h>

CUresult hooks_late_free(CUdeviceptr p);
int hooks_local_only(void);

CUresult hooks_late_free(CUdeviceptr p)
{
    return cuMemFree(p); /* cuMemFree_v2 through this library's GOT */
}

/* Defined nowhere else: dlsym(RTLD_NEXT) must not find it while this
 * library is loaded RTLD_LOCAL. */
int hooks_local_only(void)
{
    return 1;
}
