/*
 * uct_gdrx_dma.h - bulk GPU-to-host copies by the GPU's copy engine.
 *
 * SPDX-License-Identifier: MIT
 *
 * Reads through the BAR run near 1 GB/s; a cuMemcpyDtoH near 10 GB/s and
 * more.  Above the interface's DMA_THRESH the endpoint asks for one, after
 * libgdrx confirmed that the pin is still live (a revoked pin is refused
 * exactly as for a CPU copy).  It uses the libcuda that libgdrx loaded
 * (never loads one) in the calling thread's current CUDA context; anything
 * it cannot do is reported, and the endpoint then reads through the BAR.
 */
#ifndef UCT_GDRX_DMA_H
#define UCT_GDRX_DMA_H

#include <stddef.h>
#include <stdint.h>
#include <ucs/type/status.h>


/* Copy length bytes at device address src into host memory dst: UCS_OK,
 * or UCS_ERR_UNSUPPORTED (no libcuda, no current context) / an error. */
ucs_status_t uct_gdrx_dma_from_device(void *dst, uint64_t src, size_t length);

#endif
