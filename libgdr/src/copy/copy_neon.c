/*
 * copy_neon.c - aarch64 variant: Advanced SIMD (NEON, present on every
 * AArch64 Linux CPU) 16/32/64-B accesses on the mapping side, written as
 * STR/STP and LDR/LDP of Q registers: 64-B aligned blocks in the bulk of
 * both directions (one whole line per step, two LDP/STP), 16 and 32 B
 * while climbing to that alignment.  The ordering it relies on (DSB LD
 * before the loads, DSB ST at the end) is written down in
 * copy_arm_order.h.
 *
 * SPDX-License-Identifier: MIT
 */
#include "copy_driver.h"
#include "copy_variants.h"

/* One instruction per mapping-side access (copy_arm_order.h, 4.). */
static inline void q16_to_map(uint8_t *d, const uint8_t *s)
{
    uint8x16_t a = vld1q_u8(s);
    __asm__ volatile("str %q0, [%1]" : : "w"(a), "r"(d) : "memory");
}

static inline void q32_to_map(uint8_t *d, const uint8_t *s)
{
    uint8x16_t a = vld1q_u8(s), b = vld1q_u8(s + 16);
    __asm__ volatile("stp %q0, %q1, [%2]" : : "w"(a), "w"(b), "r"(d) : "memory");
}

static inline void q64_to_map(uint8_t *d, const uint8_t *s)
{
    uint8x16_t a = vld1q_u8(s), b = vld1q_u8(s + 16);
    uint8x16_t c = vld1q_u8(s + 32), e = vld1q_u8(s + 48);
    __asm__ volatile("stp %q0, %q1, [%4]\n\tstp %q2, %q3, [%4, #32]"
                     : : "w"(a), "w"(b), "w"(c), "w"(e), "r"(d) : "memory");
}

static inline void q64_from_map(uint8_t *d, const uint8_t *s)
{
    uint8x16_t a, b, c, e;
    __asm__ volatile("ldp %q0, %q1, [%4]\n\tldp %q2, %q3, [%4, #32]"
                     : "=&w"(a), "=&w"(b), "=&w"(c), "=&w"(e) : "r"(s) : "memory");
    vst1q_u8(d, a);
    vst1q_u8(d + 16, b);
    vst1q_u8(d + 32, c);
    vst1q_u8(d + 48, e);
}

static const struct gdrx_copy_steps to_steps = {
    .small = gdrx_small_to_map, .v16 = q16_to_map, .v32 = q32_to_map,
    .wide = q64_to_map, .width = 64, .to_map = 1,
};

static const struct gdrx_copy_steps from_steps = {
    .wide = q64_from_map, .width = 64, .to_map = 0,
};

GDRX_DEFINE_COPY(gdrx_copy_to_neon, to_steps)
GDRX_DEFINE_COPY(gdrx_copy_from_neon, from_steps)
