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


/* The driver entry points, by their ABI (no cuda.h needed here). */
typedef struct uct_gdrx_cuda_api {
    int (*memcpy_dtoh)(void *dst, unsigned long long src, size_t length);
    int (*ctx_get_current)(void **ctx);
    int (*device_get)(int *device, int ordinal);
    int (*device_get_attribute)(int *value, int attribute, int device);
    int (*memcpy)(unsigned long long dst, unsigned long long src,
                  size_t length);
    int (*mem_alloc)(unsigned long long *dptr, size_t length);
    int (*mem_free)(unsigned long long dptr);
    int (*pointer_get_attribute)(void *data, int attribute,
                                 unsigned long long ptr);
    int (*ctx_push_current)(void *ctx);
    int (*ctx_pop_current)(void **ctx);
} uct_gdrx_cuda_api_t;


/* The entry points, or NULL when no libcuda is in the process. */
const uct_gdrx_cuda_api_t *uct_gdrx_cuda_api(void);

/* UCX's system device of the GPU with this CUDA ordinal (by its PCI bus
 * id, as UCX's own CUDA transports name it), or UCS_SYS_DEVICE_ID_UNKNOWN. */
ucs_sys_device_t uct_gdrx_cuda_sys_dev(int ordinal);

/* Copy length bytes from src to dst, either of them device memory (unified
 * addressing), with a CUDA memcpy in the context of the device address
 * dev_addr: what a registration gdrx could not pin falls back to. */
ucs_status_t uct_gdrx_cuda_copy(void *dst, const void *src, size_t length,
                                uint64_t dev_addr);

/* cuMemAlloc in the calling thread's current CUDA context (none:
 * UCS_ERR_NO_DEVICE, as UCX's cuda_copy), and cuMemFree. */
ucs_status_t uct_gdrx_cuda_alloc(size_t length, uint64_t *dptr_p);
ucs_status_t uct_gdrx_cuda_free(uint64_t dptr);

#endif
