/*
 * sim_mempool.c - the stream-ordered allocator's pools, as far as the sim
 * has them: each device's default pool (cuMemAllocAsync's memory reports
 * it as CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE), and the pool calls UCX's
 * cuda_ipc links against, which refuse what the default pool cannot do.
 *
 * SPDX-License-Identifier: MIT
 *
 * The default pool exports no handle type (CUDA's default), so exporting
 * it or a pointer of it is CUDA_ERROR_INVALID_VALUE, and the sim makes no
 * other pool: importing a pool or a pointer is CUDA_ERROR_INVALID_VALUE
 * (no handle the sim handed out names one).  A default pool cannot be
 * destroyed (CUDA_ERROR_INVALID_VALUE).  cuMemPoolSetAccess checks its
 * arguments and records nothing (the owning device always has access;
 * the sim enforces no access rights).
 */
#include "sim_internal.h"

struct CUmemPoolHandle_st {
    char unused; /* only its address matters */
};

static struct CUmemPoolHandle_st default_pools[SIMCU_MAX_DEVICES];

CUmemoryPool sim_mempool_default(int device)
{
    return &default_pools[device];
}

/* The pool the handle names, or -1. */
static int pool_device(CUmemoryPool pool)
{
    for (int i = 0; i < sim.device_count; i++)
        if (pool == &default_pools[i])
            return i;
    return -1;
}

/* An export or import of what the sim never has: the entry's usual
 * checks (out: its result pointer), then CUDA_ERROR_INVALID_VALUE. */
static CUresult refuse_out(const char *entry, void *out)
{
    CUresult rc = sim_begin_out(entry, 0, out);
    return rc == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : rc;
}

CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    CUresult rc = sim_begin_out("cuDeviceGetDefaultMemPool", 0, pool_out);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dev < 0 || dev >= sim.device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    *pool_out = sim_mempool_default(dev);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool pool,
                                                  CUmemAllocationHandleType handleType,
                                                  unsigned long long flags)
{
    (void)pool;
    (void)handleType;
    (void)flags;
    return refuse_out("cuMemPoolExportToShareableHandle", handle_out);
}

CUresult CUDAAPI cuMemPoolExportPointer(CUmemPoolPtrExportData *shareData_out, CUdeviceptr ptr)
{
    (void)ptr;
    return refuse_out("cuMemPoolExportPointer", shareData_out);
}

CUresult CUDAAPI cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out, void *handle,
                                                    CUmemAllocationHandleType handleType,
                                                    unsigned long long flags)
{
    (void)handle;
    (void)handleType;
    (void)flags;
    return refuse_out("cuMemPoolImportFromShareableHandle", pool_out);
}

CUresult CUDAAPI cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool,
                                        CUmemPoolPtrExportData *shareData)
{
    (void)pool;
    (void)shareData;
    return refuse_out("cuMemPoolImportPointer", ptr_out);
}

CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
    CUresult rc = sim_begin("cuMemPoolSetAccess", 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (pool_device(pool) < 0 || !map || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++)
        if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || map[i].location.id < 0 ||
            map[i].location.id >= sim.device_count ||
            map[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
    CUresult rc = sim_begin("cuMemPoolDestroy", 0);
    (void)pool;
    return rc == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : rc;
}
