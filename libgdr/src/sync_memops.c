/*
 * sync_memops.c - CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on an allocation: CUDA's
 * synchronous copies into it (a cuMemcpyHtoD from pageable memory above
 * all) have landed when they return, so that work that CUDA does not order
 * after them (a BAR read, a copy on a non-blocking stream) sees their data.
 * gdrx_pin sets it, as GPUDirect RDMA requires; gdrx_mem_sync_memops sets
 * it for a caller that detects CUDA memory for someone else's copies (the
 * UCX transport: UCX's own detection sets it, and programs depend on it).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>

#include "cuda_loader.h"
#include "export.h"
#include "fork_defer.h"
#include "gdrx.h"
#include "log.h"
#include "sync_memops.h"

int gdrx_sync_memops_set(const struct gdrx_cuda *cu, uint64_t dptr)
{
    unsigned int one = 1;
    CUresult res = cu->PointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, dptr);

    if (res == CUDA_ERROR_NOT_SUPPORTED) {
        /* Virtual-memory-management allocations (cuMemCreate + cuMemMap)
         * do not take the attribute (CUDA error 801 on the H200); their
         * synchronous memory operations complete before returning, and
         * stream-ordered work is ordered by the caller's synchronisation,
         * as docs/semantics.md states for pool memory too. */
        gdrx_dbg("SYNC_MEMOPS not supported on %#llx (VMM memory)", (unsigned long long)dptr);
        return -EOPNOTSUPP;
    }
    if (res != CUDA_SUCCESS) {
        gdrx_err("cannot set SYNC_MEMOPS on %#llx: CUDA error %d", (unsigned long long)dptr,
                 (int)res);
        return gdrx_cuda_errno(res);
    }
    return 0;
}

GDRX_EXPORT int gdrx_mem_sync_memops(uint64_t addr)
{
    if (gdrx_fork_refuse(__func__))
        return -EDEADLK;
    const struct gdrx_cuda *cu;
    CUmemorytype type = 0;
    CUcontext mem_ctx = NULL, popped;
    int managed = 0;
    unsigned int sync = 0;

    if (gdrx_cuda_get_if_loaded(&cu) || !cu->PointerGetAttributes)
        return -ENODEV;
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
    };
    void *data[] = { &type, &managed, &mem_ctx, &sync };
    CUresult res = cu->PointerGetAttributes(4, attrs, data, (CUdeviceptr)addr);
    if (res != CUDA_SUCCESS || type != CU_MEMORYTYPE_DEVICE || managed)
        return -ENOENT;
    /* Set already (the usual case: UCX queries an allocation on every
     * send when its memory-type cache is off): one driver call. */
    if (sync)
        return 0;
    /* Pool and VMM memory belong to no context, and the attribute does
     * not apply to them (gdrx.h, "Ordering"). */
    if (!mem_ctx)
        return -EOPNOTSUPP;
    /* The driver takes the attribute in the memory's own context; the
     * caller's current context is current again on return. */
    res = cu->CtxPushCurrent(mem_ctx);
    if (res != CUDA_SUCCESS)
        return gdrx_cuda_errno(res);
    int rc = gdrx_sync_memops_set(cu, addr);
    (void)cu->CtxPopCurrent(&popped);
    return rc;
}
