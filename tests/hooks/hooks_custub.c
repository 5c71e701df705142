/*
 * hooks_custub.c - the libcuda entry points the simulated GPU lacks
 * (cuMemUnmap, cuMemFreeAsync_ptsz, the legacy 32-bit cuMemFree) and a
 * one-line cudaFree standing in for libcudart's, for the wrappers of those.  They record their arguments and forward frees to
 * the sim.  Not named libcuda*: the hooks skip libcuda itself.
 *
 * SPDX-License-Identifier: MIT
 */
#include "hooks_custub.h"

uint64_t hooks_stub_last_ptr;
size_t hooks_stub_last_size;
int hooks_stub_calls;

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    hooks_stub_last_ptr = ptr;
    hooks_stub_last_size = size;
    hooks_stub_calls++;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream)
{
    hooks_stub_last_ptr = dptr;
    hooks_stub_calls++;
    return cuMemFreeAsync(dptr, stream);
}

/* Emitted as the symbol cuMemFree (see the header). */
CUresult CUDAAPI hooks_legacy_cuMemFree(unsigned int dptr)
{
    hooks_stub_last_ptr = dptr;
    hooks_stub_calls++;
    return CUDA_SUCCESS;
}

/* Like the runtime: frees through the driver API (cuMemFree_v2, via this
 * library's GOT, so the hooks see that call too). */
int cudaFree(void *dptr)
{
    hooks_stub_last_ptr = (uint64_t)(uintptr_t)dptr;
    hooks_stub_calls++;
    return cuMemFree((CUdeviceptr)(uintptr_t)dptr) == CUDA_SUCCESS ? 0 : 1;
}
