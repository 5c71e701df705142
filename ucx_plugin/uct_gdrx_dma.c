/*
 * uct_gdrx_dma.c - copies by the GPU's copy engine (see the header for
 * when the endpoint uses one).
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_dma.h"
#include "uct_gdrx_cuda.h"

#include <errno.h>
#include <gdrx.h>
#include <inttypes.h>
#include <string.h>
#include <ucs/debug/log.h>


/* The buffer's context made current for the copy, and how to undo it. */
typedef struct uct_gdrx_dma_scope {
    void *ctx;
    int  pushed;
    int  retained_device; /* primary context retained on it, or -1 */
} uct_gdrx_dma_scope_t;


void uct_gdrx_dma_init(uct_gdrx_dma_t *dma)
{
    memset(dma, 0, sizeof(*dma));
    pthread_mutex_init(&dma->lock, NULL);
}

void uct_gdrx_dma_cleanup(uct_gdrx_dma_t *dma)
{
    /* an interface that never used the copy engine calls no CUDA */
    const uct_gdrx_cuda_api_t *cuda = (dma->count > 0) ? uct_gdrx_cuda_api() :
                                                         NULL;
    uct_gdrx_dma_stream_t *entry;
    unsigned long long id;
    void *popped;
    unsigned i;
    int ret;

    for (i = 0; (cuda != NULL) && (i < dma->count); ++i) {
        entry = &dma->streams[i];
        /* a context destroyed (or made again) took its streams with it */
        if ((entry->stream == NULL) ||
            ((cuda->ctx_get_id != NULL) &&
             ((cuda->ctx_get_id(entry->ctx, &id) != 0) ||
              (id != entry->ctx_id)))) {
            continue;
        }
        /* in its own context, as it was made */
        ret = cuda->ctx_push_current(entry->ctx);
        if (ret == 0) {
            ret = cuda->stream_destroy(entry->stream);
            cuda->ctx_pop_current(&popped);
        }
        if (ret != 0) {
            ucs_debug("gdrx: destroying the stream of context %p failed: %s",
                      entry->ctx, uct_gdrx_cuda_error_string(ret));
        }
    }
    pthread_mutex_destroy(&dma->lock);
}

static ucs_status_t uct_gdrx_dma_cuda_error(const char *what, int ret)
{
    ucs_error("gdrx: %s failed: %s", what, uct_gdrx_cuda_error_string(ret));
    return UCS_ERR_IO_ERROR;
}

/* Where the copy engine cannot help: said once per interface (the
 * endpoint then reads through the BAR, or fails a copy of memory gdrx
 * could not pin). */
static ucs_status_t uct_gdrx_dma_unsupported(uct_gdrx_dma_t *dma,
                                             const char *why, uint64_t src)
{
    ucs_log_level_t level = UCS_LOG_LEVEL_DEBUG;

    if (!__atomic_exchange_n(&dma->unsupported_logged, 1, __ATOMIC_RELAXED)) {
        level = UCS_LOG_LEVEL_DIAG;
    }
    ucs_log(level, "gdrx: no copy engine for 0x%" PRIx64 " (%s)", src, why);
    return UCS_ERR_UNSUPPORTED;
}

/* Make the context src belongs to current.  VMM and pool memory belong to
 * no context: then the device's primary one, if something made it active
 * (gdrx never creates a context). */
static ucs_status_t uct_gdrx_dma_scope_enter(uct_gdrx_dma_t *dma,
                                             const uct_gdrx_cuda_api_t *cuda,
                                             uint64_t src,
                                             uct_gdrx_dma_scope_t *scope)
{
    static const int attributes[] = {UCT_GDRX_CU_POINTER_ATTR_CONTEXT,
                                     UCT_GDRX_CU_POINTER_ATTR_DEVICE_ORDINAL};
    void *ctx                     = NULL;
    void *current                 = NULL;
    int ordinal                   = -1;
    void *data[]                  = {&ctx, &ordinal};
    unsigned flags;
    int ret, device, active;

    scope->ctx             = NULL;
    scope->pushed          = 0;
    scope->retained_device = -1;
    ret = cuda->pointer_get_attributes(2, attributes, data, src);
    if (ret != 0) {
        return uct_gdrx_dma_cuda_error("cuPointerGetAttributes", ret);
    }

    if (ctx == NULL) {
        if ((ordinal < 0) || (cuda->device_get(&device, ordinal) != 0) ||
            (cuda->primary_ctx_get_state(device, &flags, &active) != 0) ||
            !active) {
            return uct_gdrx_dma_unsupported(dma, "no active context", src);
        }
        ret = cuda->primary_ctx_retain(&ctx, device);
        if (ret != 0) {
            return uct_gdrx_dma_cuda_error("cuDevicePrimaryCtxRetain", ret);
        }
        scope->retained_device = device;
    }

    ret = cuda->ctx_get_current(&current);
    if ((ret == 0) && (current != ctx)) {
        ret           = cuda->ctx_push_current(ctx);
        scope->pushed = (ret == 0);
    }
    if (ret != 0) {
        if (scope->retained_device >= 0) {
            cuda->primary_ctx_release(scope->retained_device);
        }
        return uct_gdrx_dma_cuda_error("making the buffer's context current",
                                       ret);
    }

    scope->ctx = ctx;
    return UCS_OK;
}

static void uct_gdrx_dma_scope_exit(const uct_gdrx_cuda_api_t *cuda,
                                    uct_gdrx_dma_scope_t *scope)
{
    void *popped;

    if (scope->pushed && (cuda->ctx_pop_current(&popped) != 0)) {
        ucs_warn("gdrx: cuCtxPopCurrent failed");
    }
    if (scope->retained_device >= 0) {
        cuda->primary_ctx_release(scope->retained_device);
    }
}

/* The interface's stream of the current context ctx, made on first use;
 * *own_p 1 for a stream of this copy only, which the caller destroys. */
static ucs_status_t uct_gdrx_dma_stream_get(uct_gdrx_dma_t *dma,
                                            const uct_gdrx_cuda_api_t *cuda,
                                            void *ctx, uint64_t src,
                                            void **stream_p, int *own_p)
{
    uct_gdrx_dma_stream_t *entry = NULL;
    unsigned long long id        = 0;
    ucs_status_t status          = UCS_OK;
    unsigned i;
    int ret;

    *own_p = 0;
    if (cuda->ctx_get_id == NULL) {
        /* A driver before CUDA 12.0 tells no context made again at the
         * same address (cudaDeviceReset, cuCtxDestroy then cuCtxCreate)
         * from the old one, whose streams died with it: a kept stream
         * could be a dead one.  A stream for this copy only. */
        ret = cuda->stream_create(stream_p, UCT_GDRX_CU_STREAM_NON_BLOCKING);
        if (ret != 0) {
            return uct_gdrx_dma_cuda_error("cuStreamCreate", ret);
        }
        *own_p = 1;
        return UCS_OK;
    }

    ret = cuda->ctx_get_id(ctx, &id);
    if (ret != 0) {
        return uct_gdrx_dma_cuda_error("cuCtxGetId", ret);
    }

    pthread_mutex_lock(&dma->lock);
    for (i = 0; (i < dma->count) && (entry == NULL); ++i) {
        if (dma->streams[i].ctx == ctx) {
            entry = &dma->streams[i];
        }
    }
    if ((entry != NULL) && (entry->ctx_id != id)) {
        /* the context was made again: the old stream went with the old */
        entry->ctx_id = id;
        entry->stream = NULL;
    } else if ((entry == NULL) && (dma->count < UCT_GDRX_DMA_MAX_STREAMS)) {
        entry         = &dma->streams[dma->count++];
        entry->ctx    = ctx;
        entry->ctx_id = id;
        entry->stream = NULL;
    }

    if (entry == NULL) {
        status = uct_gdrx_dma_unsupported(dma, "too many CUDA contexts", src);
    } else if (entry->stream == NULL) {
        ret = cuda->stream_create(&entry->stream,
                                  UCT_GDRX_CU_STREAM_NON_BLOCKING);
        if (ret != 0) {
            entry->stream = NULL;
            status        = uct_gdrx_dma_cuda_error("cuStreamCreate", ret);
        }
    }
    if (status == UCS_OK) {
        *stream_p = entry->stream;
    }
    pthread_mutex_unlock(&dma->lock);
    return status;
}

ucs_status_t uct_gdrx_dma_copy(uct_gdrx_dma_t *dma, void *dst,
                               const void *src, size_t length,
                               uint64_t dev_addr)
{
    const uct_gdrx_cuda_api_t *cuda = uct_gdrx_cuda_api();
    void *stream = NULL;
    uct_gdrx_dma_scope_t scope;
    ucs_status_t status;
    int ret, own;

    if (cuda == NULL) {
        return uct_gdrx_dma_unsupported(dma, "no CUDA driver entry points",
                                        dev_addr);
    }

    status = uct_gdrx_dma_scope_enter(dma, cuda, dev_addr, &scope);
    if (status != UCS_OK) {
        return status;
    }

    /* As UCX's cuda_copy does for every allocation it detects: a program's
     * synchronous copies into this memory must have landed when they
     * return, or this stream, which waits for no other, may read before
     * them (issue 28).  Pinned memory has it from its pin; this is memory
     * seen by no pin.  One attribute query where it is set already. */
    ret = gdrx_mem_sync_memops(dev_addr);
    if ((ret != 0) && (ret != -EOPNOTSUPP)) {
        ucs_debug("gdrx: CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on 0x%" PRIx64
                  ": %s", dev_addr, gdrx_strerror(ret));
    }

    status = uct_gdrx_dma_stream_get(dma, cuda, scope.ctx, dev_addr, &stream,
                                     &own);
    if (status == UCS_OK) {
        ret = cuda->memcpy_async((uintptr_t)dst, (uintptr_t)src, length,
                                 stream);
        if (ret == 0) {
            ret = cuda->stream_synchronize(stream);
        }
        if (ret != 0) {
            ucs_error("gdrx: copy of %zu bytes from %p to %p by the copy "
                      "engine failed: %s", length, src, dst,
                      uct_gdrx_cuda_error_string(ret));
            status = UCS_ERR_IO_ERROR;
        }
        if (own && (cuda->stream_destroy(stream) != 0)) {
            ucs_debug("gdrx: destroying a copy's stream failed");
        }
    }

    uct_gdrx_dma_scope_exit(cuda, &scope);
    return status;
}
