/*
 * parked_call.c - see parked_call.h.
 *
 * SPDX-License-Identifier: MIT
 */
#include "parked_call.h"

#include <dlfcn.h>
#include <string.h>

#include "ipoint.h"

CUresult parked_call_free(CUdeviceptr p)
{
    __typeof__(&cuMemFree) fn;
    void *f = dlsym(RTLD_DEFAULT, "cuMemFree_v2");

    if (!f)
        return CUDA_ERROR_NOT_FOUND;
    memcpy(&fn, &f, sizeof(fn));
    return fn(p);
}

static void *parked_call_main(void *arg)
{
    struct parked_call *c = arg;

    c->rc = tc.CtxSetCurrent(c->ctx);
    if (c->rc == CUDA_SUCCESS)
        c->rc = c->len ? tc.MemAlloc(&c->p, c->len) : parked_call_free(c->p);
    return NULL;
}

int parked_call_start(struct parked_call *c, const char *point, unsigned ms)
{
    if (tc.CtxGetCurrent(&c->ctx) != CUDA_SUCCESS || ipoint_arm(point) != 0)
        return -1;
    if (pthread_create(&c->t, NULL, parked_call_main, c) != 0)
        return -1;
    return ipoint_wait(point, ms) == 0 ? 0 : -1;
}
