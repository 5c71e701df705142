/*
 * copy_sse41.c - SSE4.1 variant, loads only: MOVNTDQA streaming loads of
 * 16-B aligned blocks of the mapping (a 64-B line per round trip: the
 * line's four loads are issued back to back).
 * Stores are SSE2's (SSE4.1 adds none).  Compiled with -msse4.1.
 *
 * SPDX-License-Identifier: MIT
 */
#include "copy_driver.h"
#include "copy_variants.h"

static const struct gdrx_copy_steps from_steps = {
    .wide = gdrx_stream16_from_map, .width = 16, .to_map = 0,
};

GDRX_DEFINE_COPY(gdrx_copy_from_sse41, from_steps)
