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
#include "uct_gdrx_cuda.h"

#include <inttypes.h>
#include <ucs/debug/log.h>


ucs_status_t uct_gdrx_dma_from_device(void *dst, uint64_t src, size_t length)
{
    const uct_gdrx_cuda_api_t *cuda = uct_gdrx_cuda_api();
    void *ctx                       = NULL;
    int ret;

    if ((cuda == NULL) || (cuda->ctx_get_current(&ctx) != 0) ||
        (ctx == NULL)) {
        return UCS_ERR_UNSUPPORTED;
    }

    ret = cuda->memcpy_dtoh(dst, src, length);
    if (ret != 0) {
        ucs_debug("gdrx: cuMemcpyDtoH of %zu bytes at 0x%" PRIx64
                  " failed: CUDA error %d", length, src, ret);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}
