/*
 * sim_pointer.c - cuPointerGetAttribute(s) and cuPointerSetAttribute.
 *
 * SPDX-License-Identifier: MIT
 *
 * Booleans (SYNC_MEMOPS, IS_MANAGED, MAPPED, ...) and MEMORY_TYPE /
 * DEVICE_ORDINAL are written as 4-byte ints, pointers, sizes and ids as
 * 8 bytes, as callers of the real driver declare them.
 * ALLOWED_HANDLE_TYPES is written as 8 (UCX declares it uint64_t), as is
 * MEMPOOL_HANDLE (a pointer).  Registered host memory (sim_host.c)
 * answers MEMORY_TYPE HOST and what the driver documents of it.
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
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: /* UCX reads a uint64_t */
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
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
        /* pool and graph memory is the device's: no context (H100) */
        *v = o->stream_pool || o->graph ? 0 : (uintptr_t)o->ctx;
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
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        /* what cuMemCreate asked for; none for cuMemAlloc's, a pool's
         * (the default pool exports none) or a graph's memory (H100) */
        *v = o->vmm && !o->ipc ? (uint64_t)sim_vmm_handle_types(o->vmm) : 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        /* cuMemAllocAsync's memory: the device's default pool (H100) */
        *v = o->stream_pool ? (uintptr_t)sim_mempool_default(o->device) : 0;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* The value of attr for registered host memory (sim_host.c): what the
 * driver documents of it; attributes it has not fail. */
static CUresult host_attr_value(const struct sim_host_info *h, CUpointer_attribute attr,
                                uint64_t ptr, uint64_t *v)
{
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *v = (uintptr_t)h->ctx;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *v = CU_MEMORYTYPE_HOST;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: /* CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM */
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        *v = ptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *v = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: /* the device current at registration */
        *v = (uint64_t)h->device;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *v = h->start;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *v = h->size;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* Registered host memory, for an address no allocation holds. */
static CUresult host_value(CUpointer_attribute attr, uint64_t ptr, uint64_t *v)
{
    struct sim_host_info h;
    if (sim_in_device_va(ptr) || !sim_host_find(ptr, &h))
        return CUDA_ERROR_INVALID_VALUE;
    return host_attr_value(&h, attr, ptr, v);
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
    rc = a ? attr_value_locked(a, attribute, ptr, &v) : CUDA_ERROR_INVALID_VALUE;
    sim_unlock();
    /* Unregistered host memory and unknown addresses alike fail. */
    if (!a)
        rc = host_value(attribute, ptr, &v);
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
    for (unsigned i = 0; a && i < numAttributes; i++) {
        uint64_t v = 0;
        if (attr_value_locked(a, attributes[i], ptr, &v) != CUDA_SUCCESS)
            v = 0;
        store(data[i], attr_size(attributes[i]), v);
    }
    sim_unlock();
    for (unsigned i = 0; !a && i < numAttributes; i++) {
        uint64_t v = 0;
        if (host_value(attributes[i], ptr, &v) != CUDA_SUCCESS)
            v = 0;
        store(data[i], attr_size(attributes[i]), v);
    }
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
