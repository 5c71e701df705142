/*
 * copy_avx512.c - AVX-512 variant: 64-B non-temporal stores (one whole WC
 * line per instruction) and 64-B MOVNTDQA loads (one line per round trip).
 * Compiled with -mavx512f; only AVX512F instructions are used.
 *
 * SPDX-License-Identifier: MIT
 */
#include "copy_driver.h"
#include "copy_variants.h"

static inline void nt64_to_map(uint8_t *d, const uint8_t *s)
{
    _mm512_stream_si512((void *)d, _mm512_loadu_si512((const void *)s));
}

static inline void stream64_from_map(uint8_t *d, const uint8_t *s)
{
    _mm512_storeu_si512((void *)d, _mm512_stream_load_si512((void *)(uintptr_t)s));
}

static const struct gdrx_copy_steps to_steps = GDRX_AVX_TO_STEPS(nt64_to_map, 64);
static const struct gdrx_copy_steps from_steps = GDRX_AVX_FROM_STEPS(stream64_from_map, 64);

GDRX_DEFINE_COPY(gdrx_copy_to_avx512, to_steps)
GDRX_DEFINE_COPY(gdrx_copy_from_avx512, from_steps)
