/*
 * uct_gdrx_cuda.h - the few CUDA driver calls the transport makes itself
 * (everything else goes through libgdrx): only into the libcuda libgdrx
 * loaded, never loading one.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_CUDA_H
#define UCT_GDRX_CUDA_H

#include <stddef.h>
#include <stdint.h>
#include <ucs/sys/topo/base/topo.h>
#include <ucs/type/status.h>


/* CUDA driver ABI values used here (stable across releases). */
#define UCT_GDRX_CU_POINTER_ATTR_CONTEXT        1
#define UCT_GDRX_CU_POINTER_ATTR_DEVICE_ORDINAL 9
#define UCT_GDRX_CU_STREAM_NON_BLOCKING         1


/* The driver entry points, by their ABI (no cuda.h needed here); CUcontext
 * and CUstream are opaque pointers. */
typedef struct uct_gdrx_cuda_api {
    int (*ctx_get_current)(void **ctx);
    int (*device_get)(int *device, int ordinal);
    int (*device_get_attribute)(int *value, int attribute, int device);
    /* the interface's system device (uct_gdrx_gpu.c) */
    int (*device_get_count)(int *count);
    int (*ctx_get_device)(int *device);
    /* the copy engine's (uct_gdrx_dma.c) */
    int (*pointer_get_attributes)(unsigned count, const int *attributes,
                                  void **data, unsigned long long ptr);
    int (*ctx_push_current)(void *ctx);
    int (*ctx_pop_current)(void **ctx);
    int (*primary_ctx_get_state)(int device, unsigned *flags, int *active);
    int (*primary_ctx_retain)(void **ctx, int device);
    int (*primary_ctx_release)(int device);
    int (*stream_create)(void **stream, unsigned flags);
    int (*stream_destroy)(void *stream);
    int (*stream_synchronize)(void *stream);
    /* the copy engine's copies (unified addressing: host or device on
     * either side), and the MD's allocations */
    int (*memcpy_async)(unsigned long long dst, unsigned long long src,
                        size_t length, void *stream);
    int (*mem_alloc)(unsigned long long *dptr, size_t length);
    int (*mem_free)(unsigned long long dptr);
    /* NULL where the driver lacks them (cuCtxGetId: CUDA 12.0) */
    int (*ctx_get_id)(void *ctx, unsigned long long *id);
    int (*get_error_string)(int error, const char **str);
} uct_gdrx_cuda_api_t;


/* CUresult values the transport tells apart. */
#define UCT_GDRX_CUDA_SUCCESS          0

/* The entry points, or NULL while no libcuda is in the process (asked
 * again at the next call). */
const uct_gdrx_cuda_api_t *uct_gdrx_cuda_api(void);

/* A CUDA driver error as text, for logs. */
const char *uct_gdrx_cuda_error_string(int error);

/* UCX's system device of the GPU with this CUDA ordinal (by its PCI bus
 * id, as UCX's own CUDA transports name it), or UCS_SYS_DEVICE_ID_UNKNOWN. */
ucs_sys_device_t uct_gdrx_cuda_sys_dev(int ordinal);

/* cuMemAlloc in the calling thread's current CUDA context (none:
 * UCS_ERR_NO_DEVICE, as UCX's cuda_copy), and cuMemFree. */
ucs_status_t uct_gdrx_cuda_alloc(size_t length, uint64_t *dptr_p);
ucs_status_t uct_gdrx_cuda_free(uint64_t dptr);

#endif
