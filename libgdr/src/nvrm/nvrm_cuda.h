/*
 * nvrm_cuda.h - the CUDA driver entry points only the nvrm backend needs,
 * on top of the core's table (cuda_loader.h).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_NVRM_CUDA_H
#define GDRX_NVRM_CUDA_H

#include <cuda.h>

struct nvrm_cuda {
    /* Required: the bus id picks the /dev/nvidiaN and the RM device. */
    __typeof__(&cuDeviceGetPCIBusId)                    DeviceGetPCIBusId;
    /* Optional (NULL when missing): the IPC opt-in and the VMM route. */
    __typeof__(&cuIpcGetMemHandle)                      IpcGetMemHandle;
    __typeof__(&cuMemRetainAllocationHandle)            MemRetainAllocationHandle;
    __typeof__(&cuMemGetAllocationPropertiesFromHandle) MemGetAllocationPropertiesFromHandle;
    __typeof__(&cuMemExportToShareableHandle)           MemExportToShareableHandle;
    __typeof__(&cuMemRelease)                           MemRelease;
    /* Optional: the dma-buf export route to memory mapped before the trace. */
    __typeof__(&cuMemGetHandleForAddressRange)          MemGetHandleForAddressRange;
    /* Optional: the open self-test of a branch not validated on hardware
     * (nvrm_selftest.h) allocates and copies its own memory. */
    __typeof__(&cuMemAlloc)                             MemAlloc;
    __typeof__(&cuMemFree)                              MemFree;
    __typeof__(&cuMemcpyHtoD)                           MemcpyHtoD;
    __typeof__(&cuMemcpyDtoH)                           MemcpyDtoH;
};

/* Resolve them from the libcuda.so.1 the core loaded (gdrx_cuda_get() must
 * have succeeded).  0, or -ELIBACC if a required one is missing. */
int nvrm_cuda_get(const struct nvrm_cuda **out);

#endif /* GDRX_NVRM_CUDA_H */
