/*
 * copy_avx2.c - AVX2 variant: 32-B non-temporal stores to the mapping and
 * 32-B MOVNTDQA streaming loads of its 32-B aligned blocks; stores reach the
 * 32-B alignment with 16-B steps (VEX-encoded).  Compiled with -mavx2.
 *
 * SPDX-License-Identifier: MIT
 */
#include "copy_driver.h"
#include "copy_variants.h"

static const struct gdrx_copy_steps to_steps = GDRX_AVX_TO_STEPS(gdrx_nt32_to_map, 32);
static const struct gdrx_copy_steps from_steps = GDRX_AVX_FROM_STEPS(gdrx_stream32_from_map, 32);

GDRX_DEFINE_COPY(gdrx_copy_to_avx2, to_steps)
GDRX_DEFINE_COPY(gdrx_copy_from_avx2, from_steps)
