/*
 * sim_legacy.h - the pre-_v2 entry points the real libcuda also exports.
 *
 * SPDX-License-Identifier: MIT
 *
 * cuda.h maps e.g. cuCtxPushCurrent to cuCtxPushCurrent_v2; after this
 * header the plain names are the old symbols again.  Include it after
 * every definition that relies on the mapping (it #undefs the macros).
 */
#ifndef SIM_LEGACY_H
#define SIM_LEGACY_H

#include <cuda.h>

#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuCtxPushCurrent
#undef cuCtxPopCurrent
#undef cuGetProcAddress
#undef cuStreamDestroy
#undef cuCtxCreate
#undef cuCtxDestroy
#undef cuDeviceGetUuid

/* Same signatures as the _v2 versions. */
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev);
CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx);
CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx);
CUresult CUDAAPI cuStreamDestroy(CUstream hStream);
CUresult CUDAAPI cuCtxDestroy(CUcontext ctx);
CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
/* cuCtxCreate before CUDA 12.5's params (cuda.h 13 declares only _v4). */
CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                unsigned int flags, CUdevice dev);
/* CUDA 11.3's form, without the query result. */
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                  cuuint64_t flags);

#endif /* SIM_LEGACY_H */
