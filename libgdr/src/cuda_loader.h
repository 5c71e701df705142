/*
 * cuda_loader.h - the CUDA driver API entry points libgdrx uses, resolved at
 * run time from libcuda.so.1 (never linked, so the library loads on
 * machines without a GPU driver and fails with a clear error instead).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_CUDA_LOADER_H
#define GDRX_CUDA_LOADER_H

#include <cuda.h>

/* CUDA 12.8 named this cuMemGetHandleForAddressRange flag (the PCIe BAR
 * rather than a coherent path); older headers lack it. */
#if CUDA_VERSION < 12080
#define CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE 0x1
#endif

/* The member types follow cuda.h's prototypes, which name the current ABI
 * of each entry point (cuMemGetAddressRange is the _v2 one, ...). */
struct gdrx_cuda {
    int driver_version; /* cuDriverGetVersion(), e.g. 13000 */
    __typeof__(&cuInit)                    Init;
    __typeof__(&cuDriverGetVersion)        DriverGetVersion;
    __typeof__(&cuDeviceGetCount)          DeviceGetCount;
    __typeof__(&cuDeviceGet)               DeviceGet;
    __typeof__(&cuDeviceGetAttribute)      DeviceGetAttribute;
    __typeof__(&cuDevicePrimaryCtxRetain)  DevicePrimaryCtxRetain;
    __typeof__(&cuDevicePrimaryCtxRelease) DevicePrimaryCtxRelease;
    __typeof__(&cuCtxPushCurrent)          CtxPushCurrent;
    __typeof__(&cuCtxPopCurrent)           CtxPopCurrent;
    __typeof__(&cuMemGetAddressRange)      MemGetAddressRange;
    __typeof__(&cuPointerGetAttribute)     PointerGetAttribute;
    __typeof__(&cuPointerSetAttribute)     PointerSetAttribute;
    /* For gdrx_mem_query; NULL if the driver lacks it (then -ENODEV). */
    __typeof__(&cuPointerGetAttributes)    PointerGetAttributes;
    /* NULL when the driver predates CUDA 11.7 (then no dmabuf backend). */
    __typeof__(&cuMemGetHandleForAddressRange) MemGetHandleForAddressRange;
};

/*
 * Load libcuda.so.1 and call cuInit(0), until that works (thread-safe).
 * Returns 0 and *cu, -ELIBACC if the library or a required entry point is
 * missing, -ENODEV if cuInit fails.  A failure is not remembered: the next
 * call tries again.  Once loaded, the library is never unloaded: CUDA does
 * not support dlclose.
 */
int gdrx_cuda_get(const struct gdrx_cuda **cu);
/* The fork handlers (fork.c) do not take the loader's lock: it is held
 * across dlopen and cuInit, in which libcuda registers its own fork
 * handler, and a glibc before 2.36 makes that registration wait for a
 * fork's prepare handlers (issue 43, defect 9).  The child handler gives
 * the child a new one. */
void gdrx_cuda_fork_child(void);

/*
 * gdrx_cuda_get(), but only if the process already has libcuda.so.1
 * loaded: -ENODEV (nothing loaded) otherwise.  For calls that must not
 * bring CUDA into a process that has none (gdrx_mem_query).
 */
int gdrx_cuda_get_if_loaded(const struct gdrx_cuda **cu);

/*
 * gdrx_cuda_get(), but only if the program already loaded libcuda.so.1 and
 * initialised CUDA (cuDeviceGetCount answers): -ENODEV otherwise, with
 * nothing loaded or initialised.  For answers that must not bring CUDA up
 * (gdrx_probe with GDRX_PROBE_FLAG_NO_CUDA).
 */
int gdrx_cuda_get_if_initialised(const struct gdrx_cuda **cu);

/* A CUresult as a negative errno. */
int gdrx_cuda_errno(CUresult res);

/* Whether the driver refuses this process outright: libcuda is loaded and
 * cuInit answers CUDA_ERROR_NOT_INITIALIZED, which the driver does in a
 * fork() child of a process that initialised CUDA (a failed cuInit says
 * something else: no device, no driver).  Loads nothing. */
int gdrx_cuda_refused(void);

#endif /* GDRX_CUDA_LOADER_H */
