/*
 * tool_cuda.c - dlopen("libcuda.so.1") for the tools.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "tool_cuda.h"

/* The versioned symbols are the ones the cuda.h macros name today
 * (cuMemAlloc is #defined to cuMemAlloc_v2, ...). */
static const struct {
    const char *name;
    size_t      offset;
} symbols[] = {
#define SYM(field, name) { name, offsetof(struct tool_cuda, field) }
    SYM(Init, "cuInit"),
    SYM(DriverGetVersion, "cuDriverGetVersion"),
    SYM(DeviceGetCount, "cuDeviceGetCount"),
    SYM(DeviceGet, "cuDeviceGet"),
    SYM(DeviceGetName, "cuDeviceGetName"),
    SYM(DeviceGetAttribute, "cuDeviceGetAttribute"),
    SYM(DeviceGetPCIBusId, "cuDeviceGetPCIBusId"),
    SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    SYM(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    SYM(CtxSetCurrent, "cuCtxSetCurrent"),
    SYM(MemAlloc, "cuMemAlloc_v2"),
    SYM(MemFree, "cuMemFree_v2"),
    SYM(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    SYM(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    SYM(GetErrorName, "cuGetErrorName"),
}, optional[] = {
    SYM(ModuleLoadData, "cuModuleLoadData"),
    SYM(ModuleUnload, "cuModuleUnload"),
    SYM(ModuleGetFunction, "cuModuleGetFunction"),
    SYM(LaunchKernel, "cuLaunchKernel"),
    SYM(StreamCreate, "cuStreamCreate"),
    SYM(StreamDestroy, "cuStreamDestroy_v2"),
    SYM(StreamSynchronize, "cuStreamSynchronize"),
    SYM(MemHostAlloc, "cuMemHostAlloc"),
    SYM(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2"),
    SYM(MemFreeHost, "cuMemFreeHost"),
#undef SYM
};

int tool_cuda_load(struct tool_cuda *cu, char *err, size_t errlen)
{
    memset(cu, 0, sizeof(*cu));
    cu->handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu->handle) {
        snprintf(err, errlen, "dlopen(libcuda.so.1): %s", dlerror());
        return -1;
    }
    for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
        void *fn = dlsym(cu->handle, symbols[i].name);
        if (!fn) {
            snprintf(err, errlen, "libcuda.so.1 lacks %s", symbols[i].name);
            dlclose(cu->handle);
            cu->handle = NULL;
            return -1;
        }
        /* POSIX guarantees function pointers round-trip through void *. */
        memcpy((char *)cu + symbols[i].offset, &fn, sizeof(fn));
    }
    cu->can_launch = 1;
    for (size_t i = 0; i < sizeof(optional) / sizeof(optional[0]); i++) {
        void *fn = dlsym(cu->handle, optional[i].name);
        cu->can_launch &= fn != NULL;
        memcpy((char *)cu + optional[i].offset, &fn, sizeof(fn));
    }
    /* Only the test double exports its control API. */
    cu->simulated = dlsym(cu->handle, "simcu_lookup") != NULL;
    return 0;
}

const char *tool_cuda_error(const struct tool_cuda *cu, CUresult rc)
{
    const char *name = NULL;
    if (cu->GetErrorName && cu->GetErrorName(rc, &name) == CUDA_SUCCESS && name)
        return name;
    return "CUDA error";
}

int tool_cuda_open_device(struct tool_cuda *cu, int ordinal, CUdevice *dev,
                          char *err, size_t errlen)
{
    CUcontext ctx;
    CUresult rc;
    const char *step;

    if ((rc = cu->Init(0)) != CUDA_SUCCESS)
        step = "cuInit";
    else if ((rc = cu->DeviceGet(dev, ordinal)) != CUDA_SUCCESS)
        step = "cuDeviceGet";
    else if ((rc = cu->DevicePrimaryCtxRetain(&ctx, *dev)) != CUDA_SUCCESS)
        step = "cuDevicePrimaryCtxRetain";
    else if ((rc = cu->CtxSetCurrent(ctx)) != CUDA_SUCCESS)
        step = "cuCtxSetCurrent";
    else
        return 0;
    snprintf(err, errlen, "%s(device %d): %s", step, ordinal, tool_cuda_error(cu, rc));
    return (int)rc;
}

void tool_cuda_describe(const struct tool_cuda *cu, CUdevice dev, char *name, size_t nlen,
                        char *busid, size_t blen)
{
    if (cu->DeviceGetName(name, (int)nlen, dev) != CUDA_SUCCESS)
        snprintf(name, nlen, "?");
    if (cu->DeviceGetPCIBusId(busid, (int)blen, dev) != CUDA_SUCCESS)
        snprintf(busid, blen, "?");
}
