/*
 * gpu_kernels.cu - the GPU side of the H200 sanity program: a kernel that
 * checks the bytes the CPU wrote through the BAR1 mapping and writes new
 * ones for the CPU to read back.
 *
 * SPDX-License-Identifier: MIT
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "gpu_pattern.h"

__global__ void verify_write(uint8_t *p, size_t n, uint32_t expect, uint32_t write,
                             unsigned long long *bad)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned long long local = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        if (expect && p[i] != gp_byte(i, expect))
            local++;
        if (write)
            p[i] = gp_byte(i, write);
    }
    if (local)
        atomicAdd(bad, local);
}

static unsigned long long *counter;

/* On the GPU: count bytes of [dptr, dptr+n) that differ from pattern
 * `expect` (0: do not check), then write pattern `write` (0: do not).
 * Returns the count, or -1 if CUDA failed. */
extern "C" long long gk_verify_write(uint64_t dptr, size_t n, uint32_t expect, uint32_t write)
{
    unsigned long long bad = 0;
    if (!counter && cudaMalloc(&counter, sizeof(*counter)) != cudaSuccess)
        return -1;
    if (cudaMemset(counter, 0, sizeof(*counter)) != cudaSuccess)
        return -1;
    size_t blocks = (n + 255) / 256;
    if (blocks > 8192)
        blocks = 8192;
    if (blocks == 0)
        blocks = 1;
    verify_write<<<(unsigned)blocks, 256>>>((uint8_t *)(uintptr_t)dptr, n, expect, write, counter);
    if (cudaDeviceSynchronize() != cudaSuccess ||
        cudaMemcpy(&bad, counter, sizeof(bad), cudaMemcpyDeviceToHost) != cudaSuccess)
        return -1;
    return (long long)bad;
}
