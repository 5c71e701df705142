/*
 * copy_driver.h - the one copy algorithm every ISA variant instantiates.
 *
 * SPDX-License-Identifier: MIT
 *
 * Each copy_<isa>.c file includes this header, compiled with its own -m
 * flags, and hands gdrx_copy_run() a constant table of its vector steps;
 * gdrx_copy_run() is always inlined, so the steps become direct, inlined
 * instructions.  Keeping the algorithm in one place is what lets the tests
 * prove the contract in copy.h once (tests/copy also instantiates it with
 * recording steps).
 *
 * The algorithm, on the *mapping-side* pointer m (dst for to_mapping, src
 * for from_mapping):
 *   1. climb: while m is misaligned, take the access named by m's lowest
 *      set bit: 1, 2, 4, 8 bytes (then 16 and 32 with vectors) - each one
 *      naturally aligned, and only if that many bytes remain;
 *   2. bulk: whole `width`-byte blocks (16, 32 or 64), unrolled by 4;
 *   3. descend: what is left is shorter than the last step taken, so its
 *      bits in decreasing order (32, 16, 8, 4, 2, 1) are again naturally
 *      aligned accesses.
 * Every byte of [m, m+len) is covered by exactly one access and no access
 * leaves it: no overlapping-tail tricks (a WC mapping would see a byte
 * twice), no rounding a read out to alignment (a neighbouring BAR page may
 * fault).  A copy of at most 64 bytes takes at most 10 accesses.
 */
#ifndef GDRX_COPY_DRIVER_H
#define GDRX_COPY_DRIVER_H

#include <emmintrin.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__SSE4_1__)
#include <smmintrin.h>
#endif
#if defined(__AVX2__) || defined(__AVX512F__) || defined(__MOVDIR64B__)
#include <immintrin.h>
#endif

#define GDRX_ALWAYS_INLINE inline __attribute__((always_inline))

/* One aligned access of a fixed size: d and s advance together. */
typedef void (*gdrx_step_fn)(uint8_t *d, const uint8_t *s);
/* One aligned access of k = 1, 2, 4 or 8 bytes. */
typedef void (*gdrx_small_fn)(uint8_t *d, const uint8_t *s, size_t k);

struct gdrx_copy_steps {
    gdrx_small_fn small; /* 1/2/4/8 bytes */
    gdrx_step_fn  v16;   /* 16 bytes */
    gdrx_step_fn  v32;   /* 32 bytes, or NULL: two v16 (only if width 64) */
    gdrx_step_fn  wide;  /* `width` bytes: the bulk step */
    size_t        width; /* 16, 32 or 64 */
    int           to_map; /* 1: d is the mapping side, 0: s is */
};

static GDRX_ALWAYS_INLINE void gdrx_step_32(const struct gdrx_copy_steps *st,
                                             uint8_t *d, const uint8_t *s)
{
    if (st->v32) {
        st->v32(d, s);
    } else {
        st->v16(d, s);
        st->v16(d + 16, s + 16);
    }
}

static GDRX_ALWAYS_INLINE void gdrx_copy_run(const struct gdrx_copy_steps *st,
                                              void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    const size_t w = st->width;
#define GDRX_MAP_ADDR ((uintptr_t)(st->to_map ? (const void *)d : (const void *)s))
#define GDRX_ADVANCE(k) do { d += (k); s += (k); n -= (k); } while (0)

    /* Loads from WC memory are weakly ordered: without a fence they may
     * run before the caller's earlier loads (the flag or event that said
     * the GPU finished) and return older data.  LFENCE lets no later load
     * start before the earlier ones completed; it costs a few ns against
     * a ~1 us PCIe round trip. */
    if (!st->to_map)
        _mm_lfence();

    /* 1. climb to `w`-byte alignment of the mapping side (written out, not
     * looped, so each k is a constant and each access one instruction) */
#define GDRX_CLIMB(k, step) \
    do { if ((GDRX_MAP_ADDR & (k)) && n >= (k)) { step; GDRX_ADVANCE(k); } } while (0)
    GDRX_CLIMB(1, st->small(d, s, 1));
    GDRX_CLIMB(2, st->small(d, s, 2));
    GDRX_CLIMB(4, st->small(d, s, 4));
    GDRX_CLIMB(8, st->small(d, s, 8));
    if (w >= 32)
        GDRX_CLIMB(16, st->v16(d, s));
    if (w >= 64)
        GDRX_CLIMB(32, gdrx_step_32(st, d, s));

    /* 2. bulk; if the climb stopped early, n < w and this is skipped */
    while (n >= 4 * w) {
        st->wide(d, s);
        st->wide(d + w, s + w);
        st->wide(d + 2 * w, s + 2 * w);
        st->wide(d + 3 * w, s + 3 * w);
        GDRX_ADVANCE(4 * w);
    }
    while (n >= w) {
        st->wide(d, s);
        GDRX_ADVANCE(w);
    }

    /* 3. descend: n < w, and the mapping side is aligned to n's top bit */
#define GDRX_DESCEND(k, step) do { if (n & (k)) { step; GDRX_ADVANCE(k); } } while (0)
    if (w >= 64)
        GDRX_DESCEND(32, gdrx_step_32(st, d, s));
    if (w >= 32)
        GDRX_DESCEND(16, st->v16(d, s));
    GDRX_DESCEND(8, st->small(d, s, 8));
    GDRX_DESCEND(4, st->small(d, s, 4));
    GDRX_DESCEND(2, st->small(d, s, 2));
    GDRX_DESCEND(1, st->small(d, s, 1));
#undef GDRX_DESCEND
#undef GDRX_CLIMB
#undef GDRX_ADVANCE
#undef GDRX_MAP_ADDR
    /* Drain the write-combining buffers before returning (both directions:
     * callers rely on the fence, as gdrx.h documents). */
    _mm_sfence();
}

/* Defines `void name(void *dst, const void *src, size_t len)` running the
 * algorithm with the constant step table `steps`. */
#define GDRX_DEFINE_COPY(name, steps) \
    void name(void *dst, const void *src, size_t len) \
    { \
        gdrx_copy_run(&(steps), dst, src, len); \
    }

/* ---- steps shared by the variants (compiled with each file's flags) ---- */

/* Mapping-side small accesses are volatile so the compiler neither merges
 * nor splits them: exactly one naturally aligned access each.  The host
 * side uses unaligned single loads/stores (not memcpy, which libc may do
 * as two overlapping stores).  k is a constant after inlining. */
typedef uint16_t gdrx_u16_any __attribute__((aligned(1), may_alias));
typedef uint32_t gdrx_u32_any __attribute__((aligned(1), may_alias));
typedef uint64_t gdrx_u64_any __attribute__((aligned(1), may_alias));

static inline void gdrx_small_to_map(uint8_t *d, const uint8_t *s, size_t k)
{
    switch (k) {
    case 1: *(volatile uint8_t *)d = *s; break;
    case 2: *(volatile uint16_t *)(void *)d = *(const gdrx_u16_any *)s; break;
    case 4: *(volatile uint32_t *)(void *)d = *(const gdrx_u32_any *)s; break;
    default: *(volatile uint64_t *)(void *)d = *(const gdrx_u64_any *)s; break;
    }
}

static inline void gdrx_small_from_map(uint8_t *d, const uint8_t *s, size_t k)
{
    switch (k) {
    case 1: *d = *(const volatile uint8_t *)s; break;
    case 2: *(gdrx_u16_any *)d = *(const volatile uint16_t *)(const void *)s; break;
    case 4: *(gdrx_u32_any *)d = *(const volatile uint32_t *)(const void *)s; break;
    default: *(gdrx_u64_any *)d = *(const volatile uint64_t *)(const void *)s; break;
    }
}

static inline void gdrx_nt16_to_map(uint8_t *d, const uint8_t *s)
{
    _mm_stream_si128((__m128i *)(void *)d, _mm_loadu_si128((const __m128i *)(const void *)s));
}

static inline void gdrx_load16_from_map(uint8_t *d, const uint8_t *s)
{
    _mm_storeu_si128((__m128i *)(void *)d, _mm_loadu_si128((const __m128i *)(const void *)s));
}

#if defined(__SSE4_1__)
/* MOVNTDQA: on WC memory it fetches the whole 64-B line into a streaming
 * load buffer, so the next three 16-B loads of the line cost no round trip. */
static inline void gdrx_stream16_from_map(uint8_t *d, const uint8_t *s)
{
    _mm_storeu_si128((__m128i *)(void *)d,
                     _mm_stream_load_si128((__m128i *)(uintptr_t)s));
}
#endif

#if defined(__AVX2__)
static inline void gdrx_nt32_to_map(uint8_t *d, const uint8_t *s)
{
    _mm256_stream_si256((__m256i *)(void *)d,
                        _mm256_loadu_si256((const __m256i *)(const void *)s));
}

static inline void gdrx_stream32_from_map(uint8_t *d, const uint8_t *s)
{
    _mm256_storeu_si256((__m256i *)(void *)d,
                        _mm256_stream_load_si256((const __m256i *)(const void *)s));
}

/* The AVX2 and AVX-512 variants differ only in their bulk step. */
#define GDRX_AVX_TO_STEPS(wide_step, w) \
    { gdrx_small_to_map, gdrx_nt16_to_map, gdrx_nt32_to_map, wide_step, w, 1 }
#define GDRX_AVX_FROM_STEPS(wide_step, w) \
    { gdrx_small_from_map, gdrx_stream16_from_map, gdrx_stream32_from_map, wide_step, w, 0 }
#endif

#endif /* GDRX_COPY_DRIVER_H */
