/*
 * sim_mem_api.c - the CUDA memory functions of the simulated GPU:
 * allocation and free, address ranges and the control API's lookup (the
 * dma-buf export is sim_dmabuf.c's).
 *
 * SPDX-License-Identifier: MIT
 *
 * The objects and allocations they work on are sim_memory.c's.
 */
#include "sim_internal.h"
#include "sim_entry.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static CUresult mem_alloc_entry(const char *name, CUdeviceptr *dptr, size_t size, CUstream s,
                                int stream_pool)
{
    CUresult rc = sim_begin(name, SIM_NEED_CTX);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!dptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    int legacy;
    rc = sim_stream_check(s, &legacy);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (size > SIM_VA_PER_DEVICE)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return sim_mem_alloc(dptr, size, sim_current_ctx(), stream_pool);
}

static CUresult mem_free_entry(const char *name, CUdeviceptr dptr, CUstream s)
{
    CUresult rc = sim_begin(name, SIM_NEED_CTX);
    int legacy;
    if (rc == CUDA_SUCCESS)
        rc = sim_stream_check(s, &legacy);
    if (rc != CUDA_SUCCESS)
        return rc;
    return sim_mem_free(dptr);
}

/* The entry points hooks patch: see sim_entry.h. */
SIM_IMPL CUresult impl_mem_alloc(CUdeviceptr *dptr, size_t bytesize)
{
    return mem_alloc_entry("cuMemAlloc", dptr, bytesize, NULL, 0);
}
SIM_ENTRY(cuMemAlloc_v2, impl_mem_alloc);

SIM_IMPL CUresult impl_mem_alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return mem_alloc_entry("cuMemAllocAsync", dptr, bytesize, hStream, 1);
}
SIM_ENTRY(cuMemAllocAsync, impl_mem_alloc_async);

SIM_IMPL CUresult impl_mem_free(CUdeviceptr dptr)
{
    return mem_free_entry("cuMemFree", dptr, NULL);
}
SIM_ENTRY(cuMemFree_v2, impl_mem_free);

SIM_IMPL CUresult impl_mem_free_async(CUdeviceptr dptr, CUstream hStream)
{
    return mem_free_entry("cuMemFreeAsync", dptr, hStream);
}
SIM_ENTRY(cuMemFreeAsync, impl_mem_free_async);

/* What cuGetProcAddress hands out for the frees (sim_procaddr.c): the
 * driver's own functions, reached without passing through the export, as
 * a libcuda whose table points inside it would.  A hook on the export
 * alone does not see a free through one of these (tests/hooks'
 * test_pointer_fetched_before, tests/libgdr's test_stale). */
SIM_ENTRY(sim_tbl_cuMemFree_v2, impl_mem_free);
SIM_ENTRY(sim_ptds_cuMemFreeAsync, impl_mem_free_async);
SIM_ENTRY(sim_v11_cuMemFreeAsync, impl_mem_free_async);

CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    CUresult rc = sim_begin("cuMemGetAddressRange", SIM_NEED_CTX);
    if (rc != CUDA_SUCCESS)
        return rc;
    sim_lock();
    struct sim_alloc *a = sim_find_alloc_locked(dptr, 0);
    if (a) {
        if (pbase)
            *pbase = a->obj->va + a->offset;
        if (psize)
            *psize = a->size;
    }
    sim_unlock();
    /* The real driver answers NOT_FOUND for an address it does not know. */
    return a ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* ---- control API ---- */

int simcu_lookup(CUdeviceptr p, struct simcu_alloc_info *out)
{
    if (!out)
        return -EINVAL;
    sim_lock();
    struct sim_alloc *a = sim_find_alloc_locked(p, 1);
    if (!a) {
        sim_unlock();
        return -ENOENT;
    }
    sim_describe_locked(a, p, out);
    int fd = fcntl(out->memfd, F_DUPFD_CLOEXEC, 0);
    sim_unlock();
    if (fd < 0)
        return -errno;
    out->memfd = fd;
    return 0;
}
