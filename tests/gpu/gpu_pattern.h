/*
 * gpu_pattern.h - the byte pattern both the CPU and the GPU kernels of the
 * H200 sanity program write and check, and the seeded generator the GPU
 * stress programs draw their sizes, offsets and bytes from.
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

/* xorshift64: *s must not be 0.  The programs print their seed, so a
 * failing run is replayed by passing it again. */
GP_FN uint64_t gp_rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Host side: fill n bytes with pattern seed starting at pattern index off;
 * count the bytes that differ from it. */
#ifndef __CUDA_ARCH__
GP_FN void gp_fill(void *buf, uint64_t n, uint64_t off, uint32_t seed)
{
    uint8_t *b = (uint8_t *)buf;
    for (uint64_t i = 0; i < n; i++)
        b[i] = gp_byte(off + i, seed);
}

GP_FN uint64_t gp_count_bad(const void *buf, uint64_t n, uint64_t off, uint32_t seed)
{
    const uint8_t *b = (const uint8_t *)buf;
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; i++)
        bad += b[i] != gp_byte(off + i, seed);
    return bad;
}
#endif

#endif /* GDRX_GPU_PATTERN_H */
