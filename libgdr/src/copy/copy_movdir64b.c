/*
 * copy_movdir64b.c - MOVDIR64B variant, stores only: each 64-B aligned
 * chunk of the mapping is written by one MOVDIR64B (a single 64-B direct
 * store, never split into partial writes); the head and tail use SSE2 16-B
 * non-temporal stores, as MOVDIR64B CPUs need not have AVX.  Compiled with
 * -mmovdir64b.
 *
 * SPDX-License-Identifier: MIT
 */
#include "copy_driver.h"
#include "copy_variants.h"

static inline void dir64_to_map(uint8_t *d, const uint8_t *s)
{
    /* The source (host memory) may have any alignment. */
    _movdir64b(d, s);
}

static const struct gdrx_copy_steps to_steps = {
    .small = gdrx_small_to_map, .v16 = gdrx_nt16_to_map,
    .v32 = NULL, .wide = dir64_to_map, .width = 64, .to_map = 1,
};

GDRX_DEFINE_COPY(gdrx_copy_to_movdir64b, to_steps)
