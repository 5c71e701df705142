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
 * recording steps).  The two directions differ because the two sides of a
 * BAR mapping differ: a store to it is posted and cheap but seen byte for
 * byte, a load from it is a ~1 us PCIe round trip but has no side effect.
 *
 * To the mapping (d is the mapping side):
 *   1. climb: while d is misaligned, take the access named by d's lowest
 *      set bit: 1, 2, 4, 8 bytes (then 16 and 32 with vectors) - each one
 *      naturally aligned, and only if that many bytes remain;
 *   2. bulk: whole `width`-byte blocks (16, 32 or 64), unrolled by 4;
 *   3. descend: what is left is shorter than the last step taken, so its
 *      bits in decreasing order (32, 16, 8, 4, 2, 1) are again naturally
 *      aligned accesses.
 *   Every byte of [d, d+len) is stored by exactly one access and no store
 *   leaves it: no overlapping-tail tricks (a WC mapping would see a byte
 *   twice).  A copy of at most 64 bytes takes at most 10 stores.
 *
 * From the mapping (s is the mapping side): what costs is the number of
 * round trips, i.e. of 64-B lines fetched, not of bytes.  So the mapping is
 * read only in whole `width`-aligned blocks - every block that overlaps
 * [s, s+len), each once, in ascending order - and only the wanted bytes
 * reach the host:
 *   1. head: if s is not 64-B aligned, the blocks of its line that overlap
 *      the range are loaded back to back into a line-sized stack buffer
 *      and only the wanted bytes copied out to d;
 *   2. bulk: whole lines, each as 64/width loads stored straight to d;
 *   3. tail: the blocks of a last, partial line, as in 1.
 *   A block that holds a byte of the range lies in the same page as that
 *   byte (blocks are aligned and at most 64 B), so these loads never touch
 *   a page outside the range's pages; mappings are whole pages of pinned
 *   device memory, where a load has no side effect.  A read of len bytes
 *   fetches exactly the lines it overlaps (1..64 bytes inside a line: one),
 *   and the loads of one line are consecutive, so a MOVNTDQA streaming
 *   buffer serves the line's later loads without another round trip.
 */
#ifndef GDRX_COPY_DRIVER_H
#define GDRX_COPY_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#if defined(__SSE4_1__)
#include <smmintrin.h>
#endif
#if defined(__AVX2__) || defined(__AVX512F__) || defined(__MOVDIR64B__)
#include <immintrin.h>
#endif
/* host-side 16-B vector and the fences of gdrx_copy_run (x86 ordering) */
typedef __m128i gdrx_host16;
#define GDRX_HOST16_LOAD(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define GDRX_HOST16_STORE(p, v) _mm_storeu_si128((__m128i *)(void *)(p), (v))
#define GDRX_FENCE_BEFORE_MAP_LOADS() _mm_lfence()
#define GDRX_FENCE_AFTER_COPY() _mm_sfence()
#elif defined(__aarch64__)
#include "copy_arm_order.h"
#else
#error "libgdr/src/copy: no copy routines for this architecture (x86-64 and aarch64 only)"
#endif

#define GDRX_ALWAYS_INLINE inline __attribute__((always_inline))
#define GDRX_LINE 64 /* bytes per WC / streaming-load line */

/* One aligned access of a fixed size: d and s advance together. */
typedef void (*gdrx_step_fn)(uint8_t *d, const uint8_t *s);
/* One aligned access of k = 1, 2, 4 or 8 bytes. */
typedef void (*gdrx_small_fn)(uint8_t *d, const uint8_t *s, size_t k);

/* Host-side accesses of any alignment. */
typedef uint16_t gdrx_u16_any __attribute__((aligned(1), may_alias));
typedef uint32_t gdrx_u32_any __attribute__((aligned(1), may_alias));
typedef uint64_t gdrx_u64_any __attribute__((aligned(1), may_alias));

/* to_mapping uses every step; from_mapping only `wide` and `width` (the
 * others may be NULL): it reads the mapping in `width`-byte blocks only. */
struct gdrx_copy_steps {
    gdrx_small_fn small; /* 1/2/4/8 bytes */
    gdrx_step_fn  v16;   /* 16 bytes */
    gdrx_step_fn  v32;   /* 32 bytes, or NULL: two v16 (only if width 64) */
    gdrx_step_fn  wide;  /* `width` bytes, `width`-aligned on the mapping */
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

#define GDRX_ADVANCE(k) do { d += (k); s += (k); n -= (k); } while (0)

static GDRX_ALWAYS_INLINE void gdrx_copy_run_to(const struct gdrx_copy_steps *st,
                                                 uint8_t *d, const uint8_t *s, size_t n)
{
    const size_t w = st->width;

    /* 1. climb to `w`-byte alignment of the mapping side (written out, not
     * looped, so each k is a constant and each access one instruction) */
#define GDRX_CLIMB(k, step) \
    do { if (((uintptr_t)d & (k)) && n >= (k)) { step; GDRX_ADVANCE(k); } } while (0)
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
}

/* Host to host, 1..64 bytes, as two overlapping accesses per size class
 * (a few instructions, no loop or call): the destination is ordinary
 * memory, where storing a byte twice is harmless; nothing outside
 * [d, d+k) is touched. */
static GDRX_ALWAYS_INLINE void gdrx_host_copy_upto64(uint8_t *d, const uint8_t *s, size_t k)
{
/* the first and the last sizeof(T) bytes: all of [0, k) if k <= 2*sizeof(T) */
#define GDRX_HOST_PAIR(T) do { \
        T first_ = *(const T *)(const void *)s; \
        T last_ = *(const T *)(const void *)(s + k - sizeof(T)); \
        *(T *)(void *)d = first_; \
        *(T *)(void *)(d + k - sizeof(T)) = last_; \
    } while (0)

    if (k >= 16) {
        /* [0,16) and [k-16,k); above 32 also [16,32) and [k-32,k-16) */
        gdrx_host16 a = GDRX_HOST16_LOAD(s);
        gdrx_host16 b = GDRX_HOST16_LOAD(s + k - 16);
        if (k > 32) {
            gdrx_host16 c = GDRX_HOST16_LOAD(s + 16);
            gdrx_host16 e = GDRX_HOST16_LOAD(s + k - 32);
            GDRX_HOST16_STORE(d + 16, c);
            GDRX_HOST16_STORE(d + k - 32, e);
        }
        GDRX_HOST16_STORE(d, a);
        GDRX_HOST16_STORE(d + k - 16, b);
    } else if (k >= 8) {
        GDRX_HOST_PAIR(gdrx_u64_any);
    } else if (k >= 4) {
        GDRX_HOST_PAIR(gdrx_u32_any);
    } else if (k >= 2) {
        GDRX_HOST_PAIR(gdrx_u16_any);
    } else {
        *d = *s;
    }
#undef GDRX_HOST_PAIR
}

/* k (1..64) bytes at s, all inside one line of the mapping: load the line's
 * blocks that overlap them, back to back, into a stack copy of the line,
 * then copy out only those k bytes. */
static GDRX_ALWAYS_INLINE void gdrx_from_part_line(const struct gdrx_copy_steps *st,
                                                    uint8_t *d, const uint8_t *s, size_t k)
{
    uint8_t copy[GDRX_LINE] __attribute__((aligned(GDRX_LINE)));
    const uintptr_t line = (uintptr_t)s & ~(uintptr_t)(GDRX_LINE - 1);
    const uintptr_t end = (uintptr_t)s + k;

    for (uintptr_t b = (uintptr_t)s & ~(uintptr_t)(st->width - 1); b < end; b += st->width)
        st->wide(copy + (b - line), (const uint8_t *)b);
    gdrx_host_copy_upto64(d, copy + ((uintptr_t)s - line), k);
}

static GDRX_ALWAYS_INLINE void gdrx_copy_run_from(const struct gdrx_copy_steps *st,
                                                   uint8_t *d, const uint8_t *s, size_t n)
{
    /* 1. head: up to the first line boundary (nothing if s is on one) */
    size_t head = (size_t)(-(uintptr_t)s & (GDRX_LINE - 1));
    if (head > n)
        head = n;
    if (head) {
        gdrx_from_part_line(st, d, s, head);
        GDRX_ADVANCE(head);
    }
    /* 2. bulk: s is line-aligned here (or n is 0) */
    while (n >= GDRX_LINE) {
#pragma GCC unroll 4
        for (size_t i = 0; i < GDRX_LINE; i += st->width)
            st->wide(d + i, s + i);
        GDRX_ADVANCE(GDRX_LINE);
    }
    /* 3. tail: the start of a last, partial line */
    if (n)
        gdrx_from_part_line(st, d, s, n);
}
#undef GDRX_ADVANCE

static GDRX_ALWAYS_INLINE void gdrx_copy_run(const struct gdrx_copy_steps *st,
                                              void *dst, const void *src, size_t n)
{
    if (st->to_map) {
        gdrx_copy_run_to(st, dst, src, n);
    } else {
        /* Loads from WC memory are weakly ordered: without a fence they
         * may run before the caller's earlier loads (the flag or event
         * that said the GPU finished) and return older data.  LFENCE lets
         * no later load start before the earlier ones completed; it costs
         * a few ns against a ~1 us PCIe round trip.  (aarch64: DSB LD,
         * copy_arm_order.h.) */
        GDRX_FENCE_BEFORE_MAP_LOADS();
        gdrx_copy_run_from(st, dst, src, n);
    }
    /* Drain the write-combining buffers before returning (both directions:
     * callers rely on the fence, as gdrx.h documents).  (aarch64: DSB ST,
     * copy_arm_order.h.) */
    GDRX_FENCE_AFTER_COPY();
}

/* Defines `void name(void *dst, const void *src, size_t len)` running the
 * algorithm with the constant step table `steps`. */
#define GDRX_DEFINE_COPY(name, steps) \
    void name(void *dst, const void *src, size_t len) \
    { \
        gdrx_copy_run(&(steps), dst, src, len); \
    }

/* ---- steps shared by the variants (compiled with each file's flags) ---- */

/* Small stores to the mapping are volatile so the compiler neither merges
 * nor splits them: exactly one naturally aligned store each.  The host
 * side uses unaligned single loads (not memcpy).  k is a constant after
 * inlining. */

static inline void gdrx_small_to_map(uint8_t *d, const uint8_t *s, size_t k)
{
    switch (k) {
    case 1: *(volatile uint8_t *)d = *s; break;
    case 2: *(volatile uint16_t *)(void *)d = *(const gdrx_u16_any *)s; break;
    case 4: *(volatile uint32_t *)(void *)d = *(const gdrx_u32_any *)s; break;
    default: *(volatile uint64_t *)(void *)d = *(const gdrx_u64_any *)s; break;
    }
}

#if defined(__x86_64__)
static inline void gdrx_nt16_to_map(uint8_t *d, const uint8_t *s)
{
    _mm_stream_si128((__m128i *)(void *)d, _mm_loadu_si128((const __m128i *)(const void *)s));
}

/* SSE2 has no streaming load: an aligned 16-B load (volatile: one MOVDQA,
 * never narrowed to the bytes used nor merged with a neighbour). */
static inline void gdrx_load16_from_map(uint8_t *d, const uint8_t *s)
{
    _mm_storeu_si128((__m128i *)(void *)d, *(const volatile __m128i *)(const void *)s);
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
#define GDRX_AVX_FROM_STEPS(wide_step, w) { NULL, NULL, NULL, wide_step, w, 0 }
#endif
#endif /* __x86_64__ */

#endif /* GDRX_COPY_DRIVER_H */
