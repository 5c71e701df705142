/*
 * open.c - the library object: gdr_open/gdr_close, versions, attributes,
 * and the marker that tells this libgdrapi from NVIDIA's.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "gdrapi_internal.h"

GDRAPI_EXPORT const char gdrx_gdrapi_impl[] = "gdrx " PACKAGE_VERSION;

/* gdrcopy's switch to its dma-buf backend, honoured as a choice of gdrx's:
 * "1" opens the dmabuf backend only.  Ignored in setuid programs, as
 * libgdrx ignores its own variables there. */
static gdrx_backend_t backend_from_env(void)
{
    const char *v = secure_getenv("GDRCOPY_USE_DMABUF_MMAP");

    return v && strcmp(v, "1") == 0 ? GDRX_BACKEND_DMABUF : GDRX_BACKEND_AUTO;
}

GDRAPI_EXPORT gdr_t gdr_open(void)
{
    struct gdrx_open_params params;
    gdrx_t ctx;

    gdrx_open_params_init(&params);
    params.backend = backend_from_env();
    /* gdrcopy's gdr_open needs no CUDA, so it succeeds in a fork() child
     * of a process that used CUDA (where the driver refuses CUDA) and the
     * pins fail; gdrcopy's sanity tests rely on it.  Still NULL where no
     * backend passes the no-CUDA check, as gdrcopy's NULL without gdrdrv
     * (its dma-buf mode needs CUDA): UCX and NCCL probe gdr_open. */
    params.flags = GDRX_OPEN_FLAG_NO_CUDA_FALLBACK;
    int rc = gdrx_open(&params, &ctx);
    if (rc) {
        /* gdrcopy says nothing but NULL; errno tells a caller who looks. */
        errno = -rc;
        return NULL;
    }
    return gdrapi_g(ctx);
}

GDRAPI_EXPORT int gdr_close(gdr_t g)
{
    return gdrapi_err(gdrx_close(gdrapi_ctx(g)));
}

GDRAPI_EXPORT void gdr_runtime_get_version(int *major, int *minor)
{
    if (major)
        *major = GDR_API_MAJOR_VERSION;
    if (minor)
        *minor = GDR_API_MINOR_VERSION;
}

static int backend_of(gdr_t g, gdrx_backend_t *backend)
{
    uint64_t v;
    int rc = gdrx_get_attr(gdrapi_ctx(g), GDRX_ATTR_BACKEND, &v);

    if (rc == 0)
        *backend = (gdrx_backend_t)v;
    return gdrapi_err(rc);
}

/* On the gdrdrv backend, gdrdrv's own version; on the others there is no
 * gdrdrv, and the API level stands for the driver interface this library
 * provides (callers such as NCCL refuse a driver older than 2.1). */
GDRAPI_EXPORT int gdr_driver_get_version(gdr_t g, int *major, int *minor)
{
    gdrx_backend_t backend;
    uint64_t v = GDR_API_VERSION;

    if (!major || !minor)
        return EINVAL;
    int rc = backend_of(g, &backend);
    if (rc == 0 && backend == GDRX_BACKEND_GDRDRV)
        rc = gdrapi_err(gdrx_get_attr(gdrapi_ctx(g), GDRX_ATTR_DRIVER_VERSION, &v));
    if (rc)
        return rc;
    *major = (int)(v >> MAJOR_VERSION_SHIFT);
    *minor = (int)(v & MINOR_VERSION_MASK);
    return 0;
}

GDRAPI_EXPORT int gdr_get_attribute(gdr_t g, gdr_attr_t attr, int *v)
{
    gdrx_backend_t backend;
    int value;

    if (!v)
        return EINVAL;
    int rc = backend_of(g, &backend);
    if (rc)
        return rc;
    switch (attr) {
    case GDR_ATTR_USE_PERSISTENT_MAPPING:
        /* A pin does not outlive its memory: a CUDA free revokes it and
         * sets the callback flag, gdrcopy's non-persistent behaviour. */
        value = 0;
        break;
    case GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE: {
        /* the backend's answer (gdrdrv: its driver's; dmabuf, nvrm: yes);
         * a context without CUDA cannot tell, and says no */
        uint64_t force;
        value = gdrx_get_attr(gdrapi_ctx(g), GDRX_ATTR_PIN_FLAG_FORCE_PCIE, &force) == 0 &&
                force != 0;
        break;
    }
    case GDR_ATTR_USING_DMA_BUF_MMAP:
        value = backend == GDRX_BACKEND_DMABUF;
        break;
    default:
        return EINVAL;
    }
    *v = value;
    return 0;
}
