/*
 * uct_gdrx_dma.h - copies by the GPU's copy engine: bulk GPU-to-host ones,
 * and every copy of memory gdrx could not pin.
 *
 * SPDX-License-Identifier: MIT
 *
 * Reads through the BAR run near 1 GB/s; the copy engine at 10 GB/s and
 * more.  Above the interface's DMA_THRESH the endpoint asks for one, after
 * libgdrx confirmed that the pin is still live (a revoked pin is refused
 * exactly as for a CPU copy).  As UCX's cuda_copy does, the copy runs in
 * the buffer's own CUDA context (pushed when another one, or none, is
 * current) on a non-blocking stream of the interface, never the legacy
 * default stream: it waits for no application work, so a kernel that
 * waits for the message cannot deadlock it.  Memory libgdrx could not pin
 * is copied the same way, whatever its size and direction.  It uses the
 * libcuda that libgdrx loaded (never loads one).
 */
#ifndef UCT_GDRX_DMA_H
#define UCT_GDRX_DMA_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <ucs/type/status.h>


/* Contexts an interface keeps a stream for (one per GPU, as a rule). */
#define UCT_GDRX_DMA_MAX_STREAMS 32


/* A stream made in one context, for that context's copies. */
typedef struct uct_gdrx_dma_stream {
    void               *ctx;    /* CUcontext */
    unsigned long long ctx_id;  /* cuCtxGetId: tells a context made again at
                                   the same address apart; 0 without it */
    void               *stream; /* CUstream, CU_STREAM_NON_BLOCKING */
} uct_gdrx_dma_stream_t;


/* The copy engine's resources of one interface, made at first use. */
typedef struct uct_gdrx_dma {
    pthread_mutex_t       lock;  /* the table; copies run outside it */
    int                   unsupported_logged; /* atomic */
    unsigned              count;
    uct_gdrx_dma_stream_t streams[UCT_GDRX_DMA_MAX_STREAMS];
} uct_gdrx_dma_t;


void uct_gdrx_dma_init(uct_gdrx_dma_t *dma);

/* Destroy the streams whose context still exists. */
void uct_gdrx_dma_cleanup(uct_gdrx_dma_t *dma);

/* Copy length bytes from src to dst, host or device memory each (unified
 * addressing), on the stream of the context of the device address
 * dev_addr, and wait for it: GPU-to-host zcopy from the DMA threshold on,
 * and memory gdrx could not pin.  UCS_OK; UCS_ERR_UNSUPPORTED where the
 * copy engine cannot be used (no libcuda entry points, no active context
 * for the buffer, no stream slot left: the caller may read through the
 * BAR); UCS_ERR_IO_ERROR when CUDA failed (logged). */
ucs_status_t uct_gdrx_dma_copy(uct_gdrx_dma_t *dma, void *dst,
                               const void *src, size_t length,
                               uint64_t dev_addr);

#endif
