/*
 * copy_variants.h - the per-ISA copy routines.  Each lives in its own
 * copy_<isa>.c, compiled with that ISA's -m flags; call one only when
 * gdrx_copy_variant_supported() says the CPU has it (dispatch does).
 * Internal to libgdr/src/copy.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_COPY_VARIANTS_H
#define GDRX_COPY_VARIANTS_H

#include <stddef.h>

/* to: dst is the mapping; from: src is the mapping. */
void gdrx_copy_to_sse2(void *dst, const void *src, size_t len);
void gdrx_copy_from_sse2(void *dst, const void *src, size_t len);
/* SSE4.1 adds only a load (MOVNTDQA); its stores are SSE2's. */
void gdrx_copy_from_sse41(void *dst, const void *src, size_t len);
void gdrx_copy_to_avx2(void *dst, const void *src, size_t len);
void gdrx_copy_from_avx2(void *dst, const void *src, size_t len);
void gdrx_copy_to_avx512(void *dst, const void *src, size_t len);
void gdrx_copy_from_avx512(void *dst, const void *src, size_t len);
/* MOVDIR64B is a store only; loads use the best streaming load. */
void gdrx_copy_to_movdir64b(void *dst, const void *src, size_t len);
/* aarch64: Advanced SIMD, 64-B blocks; ordering in copy_arm_order.h. */
void gdrx_copy_to_neon(void *dst, const void *src, size_t len);
void gdrx_copy_from_neon(void *dst, const void *src, size_t len);

#endif /* GDRX_COPY_VARIANTS_H */
