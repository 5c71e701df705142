/*
 * copy_sse2.c - SSE2 variant (every x86-64 CPU): 16-B non-temporal stores
 * to the mapping, aligned 16-B loads (MOVDQA) from it (each one a PCIe
 * round trip on WC memory: the fallback when SSE4.1 is missing).
 *
 * SPDX-License-Identifier: MIT
 */
#include "copy_driver.h"
#include "copy_variants.h"

static const struct gdrx_copy_steps to_steps = {
    .small = gdrx_small_to_map, .v16 = gdrx_nt16_to_map,
    .wide = gdrx_nt16_to_map, .width = 16, .to_map = 1,
};

static const struct gdrx_copy_steps from_steps = {
    .wide = gdrx_load16_from_map, .width = 16, .to_map = 0,
};

GDRX_DEFINE_COPY(gdrx_copy_to_sse2, to_steps)
GDRX_DEFINE_COPY(gdrx_copy_from_sse2, from_steps)
