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
    int (*device_get_count)(int *count);
    int (*ctx_get_device)(int *device);
} uct_gdrx_cuda_api_t;


/* CUresult values the transport tells apart. */
#define UCT_GDRX_CUDA_SUCCESS          0

/* The entry points, or NULL while no libcuda is in the process (asked
 * again at the next call). */
const uct_gdrx_cuda_api_t *uct_gdrx_cuda_api(void);

/* UCX's system device of the GPU with this CUDA ordinal (by its PCI bus
 * id, as UCX's own CUDA transports name it), or UCS_SYS_DEVICE_ID_UNKNOWN. */
ucs_sys_device_t uct_gdrx_cuda_sys_dev(int ordinal);

#endif
