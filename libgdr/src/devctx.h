/*
 * devctx.h - the primary CUDA context of each device, retained on first use
 * by a gdrx context and released when it closes.
 *
 * SPDX-License-Identifier: MIT
 *
 * Some driver calls (cuMemGetAddressRange, cuMemGetHandleForAddressRange,
 * cuPointerSetAttribute) need a current context.  gdrx pushes the primary
 * context of the device that owns the memory around them and pops it
 * afterwards, so the caller's current context is never changed and nothing
 * assumes device 0.
 */
#ifndef GDRX_DEVCTX_H
#define GDRX_DEVCTX_H

#include <pthread.h>

#include "cuda_loader.h"

struct gdrx_devctx {
    const struct gdrx_cuda *cu;
    pthread_mutex_t lock;   /* guards primary[] */
    int             count;  /* CUDA devices visible */
    CUcontext      *primary;/* [count]; NULL until retained */
};

/* Count the devices; retains nothing yet. */
int gdrx_devctx_init(struct gdrx_devctx *d, const struct gdrx_cuda *cu);

/* No devices and no CUDA: for a context opened where CUDA is refused;
 * the other calls then see count 0 (and fini releases nothing). */
void gdrx_devctx_init_none(struct gdrx_devctx *d);

/* Release every primary context retained through d. */
void gdrx_devctx_fini(struct gdrx_devctx *d);

/* Make device's primary context current (retaining it on first use).
 * Returns 0, -EINVAL for a bad ordinal or a CUDA error as errno. */
int gdrx_devctx_push(struct gdrx_devctx *d, int device);

/* The primary context of device as retained through d, or NULL if it
 * was not (retains nothing). */
CUcontext gdrx_devctx_primary(struct gdrx_devctx *d, int device);

/* Undo gdrx_devctx_push(): the caller's context is current again. */
void gdrx_devctx_pop(struct gdrx_devctx *d);

#endif /* GDRX_DEVCTX_H */
