/*
 * tool_cuda.h - the CUDA driver API the tools use, loaded with
 * dlopen("libcuda.so.1") so they do not link libcuda (and run on the
 * simulated GPU of tests/sim when it comes first on LD_LIBRARY_PATH).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_TOOL_CUDA_H
#define GDRX_TOOL_CUDA_H

#include <cuda.h>
#include <stddef.h>

struct tool_cuda {
    void *handle;
    int   simulated; /* the library is tests/sim's test double */
    CUresult (*Init)(unsigned int flags);
    CUresult (*DriverGetVersion)(int *version);
    CUresult (*DeviceGetCount)(int *count);
    CUresult (*DeviceGet)(CUdevice *dev, int ordinal);
    CUresult (*DeviceGetName)(char *name, int len, CUdevice dev);
    CUresult (*DeviceGetAttribute)(int *value, CUdevice_attribute attr, CUdevice dev);
    CUresult (*DeviceGetPCIBusId)(char *busid, int len, CUdevice dev);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice dev);
    CUresult (*CtxSetCurrent)(CUcontext ctx);
    CUresult (*MemAlloc)(CUdeviceptr *dptr, size_t size);
    CUresult (*MemFree)(CUdeviceptr dptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void *src, size_t size);
    CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t size);
    CUresult (*GetErrorName)(CUresult err, const char **name);
    /* Optional (NULL when absent, as in the simulated GPU): what running a
     * kernel takes (gdrx-pplat). */
    CUresult (*ModuleLoadData)(CUmodule *module, const void *image);
    CUresult (*ModuleUnload)(CUmodule module);
    CUresult (*ModuleGetFunction)(CUfunction *fn, CUmodule module, const char *name);
    CUresult (*LaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                             unsigned bx, unsigned by, unsigned bz, unsigned shared,
                             CUstream stream, void **params, void **extra);
    CUresult (*StreamCreate)(CUstream *stream, unsigned flags);
    CUresult (*StreamDestroy)(CUstream stream);
    CUresult (*StreamSynchronize)(CUstream stream);
    CUresult (*MemHostAlloc)(void **p, size_t size, unsigned flags);
    CUresult (*MemHostGetDevicePointer)(CUdeviceptr *dptr, void *p, unsigned flags);
    CUresult (*MemFreeHost)(void *p);
    int can_launch; /* every optional function above was found */
};

/* Load libcuda.so.1 and every function above; 0, or -1 with a reason in
 * err. */
int tool_cuda_load(struct tool_cuda *cu, char *err, size_t errlen);

/* cuInit(0), then retain device `ordinal`'s primary context and make it
 * current.  0, or the failing call's CUresult with a reason in err. */
int tool_cuda_open_device(struct tool_cuda *cu, int ordinal, CUdevice *dev,
                          char *err, size_t errlen);

/* The name of a CUresult ("CUDA_ERROR_..."; never NULL). */
const char *tool_cuda_error(const struct tool_cuda *cu, CUresult rc);

/* GPU name and PCI bus id of a device ("?" where unknown). */
void tool_cuda_describe(const struct tool_cuda *cu, CUdevice dev, char *name, size_t nlen,
                        char *busid, size_t blen);

#endif /* GDRX_TOOL_CUDA_H */
