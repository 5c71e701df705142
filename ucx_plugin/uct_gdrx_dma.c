/*
 * uct_gdrx_dma.c - bulk GPU-to-host copies by the GPU's copy engine (see
 * the header for when the endpoint uses one).
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_dma.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <ucs/debug/log.h>


/* The two driver entry points, by their ABI (no cuda.h needed here). */
typedef int (*uct_gdrx_dma_memcpy_func_t)(void *dst, unsigned long long src,
                                          size_t length);
typedef int (*uct_gdrx_dma_ctx_func_t)(void **ctx);

static pthread_once_t uct_gdrx_dma_once = PTHREAD_ONCE_INIT;
static uct_gdrx_dma_memcpy_func_t uct_gdrx_dma_memcpy;
static uct_gdrx_dma_ctx_func_t uct_gdrx_dma_get_ctx;


static void uct_gdrx_dma_load(void)
{
    /* RTLD_NOLOAD: only the libcuda already in the process; the handle
     * stays open so the functions stay valid */
    void *handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);

    if (handle == NULL) {
        ucs_debug("gdrx: no libcuda loaded: GPU-to-host copies by the CPU");
        return;
    }

    *(void**)&uct_gdrx_dma_memcpy  = dlsym(handle, "cuMemcpyDtoH_v2");
    *(void**)&uct_gdrx_dma_get_ctx = dlsym(handle, "cuCtxGetCurrent");
}

ucs_status_t uct_gdrx_dma_from_device(void *dst, uint64_t src, size_t length)
{
    void *ctx = NULL;
    int ret;

    pthread_once(&uct_gdrx_dma_once, uct_gdrx_dma_load);
    if ((uct_gdrx_dma_memcpy == NULL) || (uct_gdrx_dma_get_ctx == NULL) ||
        (uct_gdrx_dma_get_ctx(&ctx) != 0) || (ctx == NULL)) {
        return UCS_ERR_UNSUPPORTED;
    }

    ret = uct_gdrx_dma_memcpy(dst, src, length);
    if (ret != 0) {
        ucs_debug("gdrx: cuMemcpyDtoH of %zu bytes at 0x%" PRIx64
                  " failed: CUDA error %d", length, src, ret);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}
