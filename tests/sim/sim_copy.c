/*
 * sim_copy.c - cuMemcpy* and cuMemset*: the only code that touches an
 * object's pages, through the sim's private CPU view of the object.
 *
 * SPDX-License-Identifier: MIT
 *
 * Addresses are resolved as with unified addressing: an address inside a
 * GPU's device VA range is device memory and must lie, with the whole
 * range copied, in one live allocation; anything else is host memory.
 * Copies run under sim.lock so an object cannot vanish mid-copy.
 */
#include "sim_internal.h"

#include <string.h>

/* Map [p, p + n) to the sim's CPU view (device memory) or to itself (host
 * memory; only when device_only is 0).  Caller holds sim.lock. */
static CUresult resolve_locked(uint64_t p, size_t n, int device_only, void **cpu)
{
    if (sim_in_device_va(p)) {
        const struct sim_alloc *a = sim_find_alloc_locked(p, 0);
        if (!a)
            return CUDA_ERROR_INVALID_VALUE;
        size_t off = (size_t)(p - a->obj->va);
        if (n > a->offset + a->size - off)
            return CUDA_ERROR_INVALID_VALUE;
        *cpu = (char *)a->obj->bk.cpu + off;
        return CUDA_SUCCESS;
    }
    if (device_only || p == 0)
        return CUDA_ERROR_INVALID_VALUE;
    *cpu = (void *)(uintptr_t)p;
    return CUDA_SUCCESS;
}

/* dst_dev/src_dev: that side must be device memory.  stream: that of an
 * async copy, NULL for the synchronous ones (the legacy default stream). */
static CUresult copy(const char *name, uint64_t dst, int dst_dev, uint64_t src, int src_dev,
                     size_t n, CUstream stream)
{
    int legacy;
    CUresult rc = sim_begin(name, SIM_NEED_CTX);
    if (rc == CUDA_SUCCESS)
        rc = sim_stream_check(stream, &legacy);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (n > 0) {
        void *d, *s;
        sim_lock();
        rc = resolve_locked(dst, n, dst_dev, &d);
        if (rc == CUDA_SUCCESS)
            rc = resolve_locked(src, n, src_dev, &s);
        if (rc == CUDA_SUCCESS)
            memmove(d, s, n);
        sim_unlock();
    }
    if (rc == CUDA_SUCCESS)
        sim_copy_record(dst, src, n, stream, legacy);
    return rc;
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return copy("cuMemcpyHtoD", dstDevice, 1, (uintptr_t)srcHost, 0, ByteCount, NULL);
}

CUresult CUDAAPI cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return copy("cuMemcpyDtoH", (uintptr_t)dstHost, 0, srcDevice, 1, ByteCount, NULL);
}

CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    return copy("cuMemcpyDtoD", dstDevice, 1, srcDevice, 1, ByteCount, NULL);
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream)
{
    return copy("cuMemcpyDtoDAsync", dstDevice, 1, srcDevice, 1, ByteCount, hStream);
}

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return copy("cuMemcpy", dst, 0, src, 0, ByteCount, NULL);
}

/* Either side host or device memory, as unified addressing resolves it. */
CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                               CUstream hStream)
{
    return copy("cuMemcpyAsync", dst, 0, src, 0, ByteCount, hStream);
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                   CUstream hStream)
{
    return copy("cuMemcpyHtoDAsync", dstDevice, 1, (uintptr_t)srcHost, 0, ByteCount, hStream);
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream)
{
    return copy("cuMemcpyDtoHAsync", (uintptr_t)dstHost, 0, srcDevice, 1, ByteCount, hStream);
}

/* Fill count elements of `width` bytes (1 or 4) with value. */
static CUresult memset_n(const char *name, uint64_t dst, uint32_t value, size_t width,
                         size_t count)
{
    CUresult rc = sim_begin(name, SIM_NEED_CTX);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dst % width)
        return CUDA_ERROR_INVALID_VALUE;
    if (count == 0)
        return CUDA_SUCCESS;
    if (count > SIZE_MAX / width)
        return CUDA_ERROR_INVALID_VALUE;
    void *d;
    sim_lock();
    rc = resolve_locked(dst, count * width, 1, &d);
    if (rc == CUDA_SUCCESS) {
        if (width == 1) {
            memset(d, (int)(value & 0xff), count);
        } else {
            uint32_t *w = d;
            for (size_t i = 0; i < count; i++)
                w[i] = value;
        }
    }
    sim_unlock();
    return rc;
}

CUresult CUDAAPI cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return memset_n("cuMemsetD8", dstDevice, uc, 1, N);
}

CUresult CUDAAPI cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return memset_n("cuMemsetD32", dstDevice, ui, 4, N);
}
