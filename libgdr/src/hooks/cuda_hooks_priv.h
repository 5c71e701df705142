/*
 * cuda_hooks_priv.h - what cuda_hooks.c (which addresses get hooks, and
 * installing them) and cuda_hooks_handlers.c (what the hooks do) share.
 * cuda_hooks.c calls into the handlers' file, never the reverse.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_CUDA_HOOKS_PRIV_H
#define GDRX_CUDA_HOOKS_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include <cuda.h>

#include "cuda_hooks.h"
#include "entry_patch.h"

/* One kind per ABI of the hooked functions. */
enum hook_kind {
    K_FREE32, K_FREE, K_FREE_ASYNC, K_UNMAP,
    K_ALLOC32, K_ALLOC, K_PITCH32, K_PITCH, K_ALLOC_ASYNC, K_ALLOC_POOL, K_MAP,
    K_CTX_RESET, K_CTX_DESTROY, K_GRAPH_LAUNCH,
    K_GPA, K_GPA2,
    K_COUNT
};

typedef uintptr_t U; /* argument slots a hook does not use */
typedef const struct gdrx_entry_patch *REC;

/* The ABIs, spelled without cuda.h's version macros (which rename
 * cuMemAlloc to cuMemAlloc_v2 and so on). */
typedef CUresult (*free32_fn)(unsigned int);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);
typedef CUresult (*unmap_fn)(CUdeviceptr, size_t);
typedef CUresult (*alloc32_fn)(unsigned int *, unsigned int);
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*pitch32_fn)(unsigned int *, unsigned int *, unsigned int, unsigned int,
                               unsigned int);
typedef CUresult (*pitch_fn)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
typedef CUresult (*alloc_async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*alloc_pool_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                           unsigned long long);
typedef CUresult (*ctx_reset_fn)(CUdevice);
typedef CUresult (*ctx_destroy_fn)(CUcontext);
typedef CUresult (*graph_launch_fn)(CUgraphExec, CUstream);
typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);
typedef CUresult (*range_fn)(CUdeviceptr *, size_t *, CUdeviceptr);
typedef CUresult (*attr_fn)(void *, CUpointer_attribute, CUdeviceptr);

/* Set while this thread runs a hook's report or original, so that nested
 * CUDA calls (libcuda's own, a sink's) pass straight through; and while it
 * patches, so cuGetProcAddress calls made meanwhile do not re-enter. */
extern _Thread_local bool gdrx_cuda_hooks_in_hook;

/* Before the first patch: where events go, and the libcuda functions the
 * handlers read ranges and devices with. */
void gdrx_cuda_hooks_handlers_init(const struct gdrx_cuda_hooks_sinks *s, range_fn range,
                                   attr_fn attr);

/* The hook of an allocation, free, context or graph kind (not K_GPA*). */
void *gdrx_cuda_hooks_handler(enum hook_kind kind);

#endif /* GDRX_CUDA_HOOKS_PRIV_H */
