/*
 * devctx.c - retain/push/pop of primary contexts (see devctx.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include "devctx.h"

#include <errno.h>
#include <stdlib.h>

#include "lock_order.h"
#include "log.h"

int gdrx_devctx_init(struct gdrx_devctx *d, const struct gdrx_cuda *cu)
{
    int count = 0;
    CUresult res = cu->DeviceGetCount(&count);

    if (res != CUDA_SUCCESS) {
        if (res == CUDA_ERROR_NOT_INITIALIZED)
            gdrx_err("cuDeviceGetCount failed: CUDA not initialised (error 3); if this "
                     "process is a fork() child of one that used CUDA, CUDA cannot be "
                     "used here: exec a new program");
        else
            gdrx_err("cuDeviceGetCount failed: CUDA error %d", (int)res);
        return gdrx_cuda_errno(res);
    }
    d->cu = cu;
    d->count = count;
    d->primary = count > 0 ? calloc((size_t)count, sizeof(*d->primary)) : NULL;
    if (count > 0 && !d->primary)
        return -ENOMEM;
    pthread_mutex_init(&d->lock, NULL);
    return 0;
}

void gdrx_devctx_init_none(struct gdrx_devctx *d)
{
    d->cu = NULL;
    d->count = 0;
    d->primary = NULL;
    pthread_mutex_init(&d->lock, NULL);
}

void gdrx_devctx_fini(struct gdrx_devctx *d)
{
    for (int i = 0; i < d->count; i++) {
        if (!d->primary[i])
            continue;
        CUdevice dev;
        if (d->cu->DeviceGet(&dev, i) == CUDA_SUCCESS)
            d->cu->DevicePrimaryCtxRelease(dev);
    }
    free(d->primary);
    d->primary = NULL;
    d->count = 0;
    pthread_mutex_destroy(&d->lock);
}

static int retain(struct gdrx_devctx *d, int device, CUcontext *out)
{
    int rc = 0;

    gdrx_mutex_lock(&d->lock, GDRX_LOCK_DEVCTX);
    if (!d->primary[device]) {
        CUdevice dev;
        CUresult res = d->cu->DeviceGet(&dev, device);
        if (res == CUDA_SUCCESS)
            res = d->cu->DevicePrimaryCtxRetain(&d->primary[device], dev);
        if (res != CUDA_SUCCESS) {
            gdrx_err("cannot retain the primary context of device %d: CUDA error %d",
                     device, (int)res);
            d->primary[device] = NULL;
            rc = gdrx_cuda_errno(res);
        }
    }
    *out = d->primary[device];
    gdrx_mutex_unlock(&d->lock, GDRX_LOCK_DEVCTX);
    return rc;
}

CUcontext gdrx_devctx_primary(struct gdrx_devctx *d, int device)
{
    CUcontext ctx = NULL;

    if (device < 0 || device >= d->count)
        return NULL;
    gdrx_mutex_lock(&d->lock, GDRX_LOCK_DEVCTX);
    ctx = d->primary[device];
    gdrx_mutex_unlock(&d->lock, GDRX_LOCK_DEVCTX);
    return ctx;
}

int gdrx_devctx_push(struct gdrx_devctx *d, int device)
{
    CUcontext ctx;

    if (device < 0 || device >= d->count)
        return -EINVAL;
    int rc = retain(d, device, &ctx);
    if (rc)
        return rc;
    CUresult res = d->cu->CtxPushCurrent(ctx);
    if (res != CUDA_SUCCESS) {
        gdrx_err("cuCtxPushCurrent failed: CUDA error %d", (int)res);
        return gdrx_cuda_errno(res);
    }
    return 0;
}

void gdrx_devctx_pop(struct gdrx_devctx *d)
{
    CUcontext popped;

    if (d->cu->CtxPopCurrent(&popped) != CUDA_SUCCESS)
        gdrx_warn("cuCtxPopCurrent failed; the thread's context stack may be off");
}
