/*
 * mem_query.c - gdrx_mem_query: what CUDA allocation an address is in.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <string.h>

#include "cuda_loader.h"
#include "export.h"
#include "fork_defer.h"
#include "gdrx.h"

/* The allocation's range from pointer attributes, which CUDA answers with
 * no current context, for memory of any context (cuMemGetAddressRange
 * needs one: a progress thread that never made one current must get the
 * same answer); cuMemGetAddressRange where a driver lacks the attributes
 * (before CUDA 10.2) and a context happens to be current. */
static int range_of(const struct gdrx_cuda *cu, uint64_t addr, CUdeviceptr *base, size_t *size)
{
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    };
    void *data[] = { base, size };

    *base = 0;
    *size = 0;
    if (cu->PointerGetAttributes(2, attrs, data, (CUdeviceptr)addr) == CUDA_SUCCESS && *size &&
        addr - *base < *size)
        return 0;
    if (cu->MemGetAddressRange(base, size, (CUdeviceptr)addr) == CUDA_SUCCESS && *size)
        return 0;
    return -ENOENT;
}

GDRX_EXPORT int gdrx_mem_query(uint64_t addr, struct gdrx_mem_info *info)
{
    if (gdrx_fork_refuse(__func__))
        return -EDEADLK;
    const struct gdrx_cuda *cu;
    CUmemorytype type = 0;
    unsigned long long buffer_id = 0;
    int device = -1, managed = 0;
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_BUFFER_ID,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_IS_MANAGED,
    };
    void *data[] = { &type, &buffer_id, &device, &managed };
    CUdeviceptr base = 0;
    size_t size = 0;

    if (!info)
        return -EINVAL;
    int rc = gdrx_cuda_get_if_loaded(&cu);
    if (rc)
        return -ENODEV;
    if (!cu->PointerGetAttributes)
        return -ENODEV;
    /* Host and unknown pointers make the call fail or report type 0. */
    CUresult res = cu->PointerGetAttributes(4, attrs, data, (CUdeviceptr)addr);
    if (res != CUDA_SUCCESS || type != CU_MEMORYTYPE_DEVICE || managed)
        return -ENOENT;
    if (range_of(cu, addr, &base, &size) != 0)
        return -ENOENT;
    *info = (struct gdrx_mem_info){
        .base = base, .size = size, .device = device, .buffer_id = buffer_id,
    };
    return 0;
}
