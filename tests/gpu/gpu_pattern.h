/*
 * gpu_pattern.h - the byte pattern both the CPU and the GPU kernels of the
 * H200 sanity program write and check.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_GPU_PATTERN_H
#define GDRX_GPU_PATTERN_H

#include <stdint.h>

#ifdef __CUDACC__
#define GP_FN __host__ __device__ static inline
#else
#define GP_FN static inline
#endif

/* Byte i of pattern `seed` (seed 0 is reserved for "no pattern"). */
GP_FN uint8_t gp_byte(uint64_t i, uint32_t seed)
{
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)seed * 0xD1B54A32D192ED03ull;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    return (uint8_t)(x >> 56);
}

#endif /* GDRX_GPU_PATTERN_H */
