/*
 * sim_pointer.c - cuPointerGetAttribute(s) and cuPointerSetAttribute.
 *
 * SPDX-License-Identifier: MIT
 *
 * Booleans (SYNC_MEMOPS, IS_MANAGED, MAPPED, ...) and MEMORY_TYPE /
 * DEVICE_ORDINAL are written as 4-byte ints, pointers, sizes and ids as
 * 8 bytes, as callers of the real driver declare them.
 */
#include "sim_internal.h"

#include <string.h>

/* Bytes the attribute's value occupies; 0 for attributes the sim lacks. */
static size_t attr_size(CUpointer_attribute attr)
{
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_MAPPED:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
        return 4;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        return 8;
    default:
        return 0;
    }
}

/* The value of attr for the allocation a holding ptr.  Caller holds sim.lock. */
static CUresult attr_value_locked(const struct sim_alloc *a, CUpointer_attribute attr,
                                  uint64_t ptr, uint64_t *v)
{
    const struct sim_object *o = a->obj;

    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *v = (uintptr_t)o->ctx;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *v = CU_MEMORYTYPE_DEVICE;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *v = ptr;
        return sim_ctx_is_valid(sim_current_ctx()) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: /* device memory has none */
        return CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        *v = (uint64_t)a->sync_memops;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *v = a->buffer_id;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *v = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *v = (uint64_t)o->device;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        /* cuMemAlloc's memory only (cuIpcGetMemHandle takes nothing else):
         * not a pool's, a graph's, nor a VMM mapping made here */
        *v = !o->stream_pool && !o->graph && (!o->vmm || o->ipc);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
        *v = 1;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *v = o->va + a->offset;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *v = a->size;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        *v = o->va;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        *v = o->size;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        *v = o->id;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static void store(void *data, size_t size, uint64_t v)
{
    if (size == 4) {
        uint32_t w = (uint32_t)v;
        memcpy(data, &w, sizeof(w));
    } else {
        memcpy(data, &v, sizeof(v));
    }
}

CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    CUresult rc = sim_begin("cuPointerGetAttribute", 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    size_t size = attr_size(attribute);
    if (!data || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t v = 0;
    sim_lock();
    const struct sim_alloc *a = sim_find_alloc_locked(ptr, 0);
    /* Unregistered host memory and unknown addresses alike. */
    rc = a ? attr_value_locked(a, attribute, ptr, &v) : CUDA_ERROR_INVALID_VALUE;
    sim_unlock();
    if (rc == CUDA_SUCCESS)
        store(data, size, v);
    return rc;
}

/* Unlike the single query, a pointer the driver does not know is no error:
 * every value reads as zero / NULL.  So does a value the pointer has not
 * (HOST_POINTER of device memory, DEVICE_POINTER without a context). */
CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes,
                                        CUpointer_attribute *attributes, void **data,
                                        CUdeviceptr ptr)
{
    CUresult rc = sim_begin("cuPointerGetAttributes", 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (numAttributes == 0 || !attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < numAttributes; i++)
        if (!data[i] || attr_size(attributes[i]) == 0)
            return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    const struct sim_alloc *a = sim_find_alloc_locked(ptr, 0);
    for (unsigned i = 0; i < numAttributes; i++) {
        uint64_t v = 0;
        if (!a || attr_value_locked(a, attributes[i], ptr, &v) != CUDA_SUCCESS)
            v = 0;
        store(data[i], attr_size(attributes[i]), v);
    }
    sim_unlock();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuPointerSetAttribute(const void *value, CUpointer_attribute attribute,
                                       CUdeviceptr ptr)
{
    CUresult rc = sim_begin("cuPointerSetAttribute", 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!value || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned int flag;
    memcpy(&flag, value, sizeof(flag));
    sim_lock();
    struct sim_alloc *a = sim_find_alloc_locked(ptr, 0);
    if (a)
        a->sync_memops = flag != 0;
    sim_unlock();
    return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
