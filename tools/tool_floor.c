/*
 * tool_floor.c - the copy floor's routines, one per access width, each
 * compiled for its instruction set (target attributes) and chosen at run
 * time by what the CPU has (tool_floor.h says what they do).
 *
 * SPDX-License-Identifier: MIT
 */
#include "tool_floor.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* Off x86-64, or without SSE4.1: plain 8/4/2/1-byte loads (volatile: the
 * compiler neither merges, widens nor drops them) after a load fence. */
static void load_plain(void *dst, const void *map, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = map;
    uint64_t v8; uint32_t v4; uint16_t v2;

#if defined(__x86_64__)
    __asm__ __volatile__("lfence" ::: "memory");
#else
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
    for (; n >= 8; n -= 8, d += 8, s += 8) {
        v8 = *(const volatile uint64_t *)s;
        memcpy(d, &v8, 8);
    }
    if (n >= 4) {
        v4 = *(const volatile uint32_t *)s;
        memcpy(d, &v4, 4);
        n -= 4, d += 4, s += 4;
    }
    if (n >= 2) {
        v2 = *(const volatile uint16_t *)s;
        memcpy(d, &v2, 2);
        n -= 2, d += 2, s += 2;
    }
    if (n)
        *d = *(const volatile uint8_t *)s;
}

static void store_plain(void *map, const void *src, size_t n)
{
    tool_floor_store(map, src, n);
}

#if defined(__x86_64__)

/* Groups of TOOL_FLOOR_GROUP blocks (with 64-B loads 8 lines): the next
 * group's loads issue while a group's are in flight, so the core's line
 * fill buffers, not the loop, limit the loads in flight. */

/* k (<= TOOL_FLOOR_GROUP) blocks of W bytes from s: all loaded, then all
 * stored (the empty asm keeps the compiler from sinking a load to its
 * store). */
#define FLOOR_LOAD_GROUP(V, W, NTLOAD, STOREU, k) \
    do { \
        V v_[TOOL_FLOOR_GROUP]; \
        _Pragma("GCC unroll 8") \
        for (size_t i_ = 0; i_ < (k); i_++) \
            v_[i_] = NTLOAD(s + i_ * (W)); \
        __asm__ __volatile__("" ::: "memory"); \
        _Pragma("GCC unroll 8") \
        for (size_t i_ = 0; i_ < (k); i_++) \
            STOREU(d + i_ * (W), v_[i_]); \
    } while (0)

/* name(dst, map, n): lfence, then every W-byte block holding a byte of
 * [map, map + n) (map is W-aligned), in groups. */
#define FLOOR_LOAD(name, tgt, V, W, NTLOAD, STOREU) \
    __attribute__((target(tgt))) static void name(void *dst, const void *map, size_t n) \
    { \
        uint8_t *d = dst; \
        const uint8_t *s = map; \
        size_t blocks = (n + (W) - 1) / (W); \
        _mm_lfence(); \
        for (; blocks >= TOOL_FLOOR_GROUP; blocks -= TOOL_FLOOR_GROUP) { \
            FLOOR_LOAD_GROUP(V, W, NTLOAD, STOREU, TOOL_FLOOR_GROUP); \
            s += TOOL_FLOOR_GROUP * (W); \
            d += TOOL_FLOOR_GROUP * (W); \
        } \
        if (blocks) \
            FLOOR_LOAD_GROUP(V, W, NTLOAD, STOREU, blocks); \
    }

/* name(map, src, n): W-byte non-temporal stores (map is W-aligned), then
 * 32 (HALF, where W is 64) and 16 bytes, then 8/4/2/1, then sfence. */
#define FLOOR_STORE(name, tgt, W, WIDE, HALF) \
    __attribute__((target(tgt))) static void name(void *map, const void *src, size_t n) \
    { \
        uint8_t *d = map; \
        const uint8_t *s = src; \
        _Pragma("GCC unroll 4") \
        for (; n >= (W); n -= (W), d += (W), s += (W)) \
            WIDE(d, s); \
        if ((W) > 32 && n >= 32) { \
            HALF(d, s); \
            n -= 32, d += 32, s += 32; \
        } \
        if ((W) > 16 && n >= 16) { \
            NT16(d, s); \
            n -= 16, d += 16, s += 16; \
        } \
        tool_floor_store_tail(d, s, n); \
        _mm_sfence(); \
    }

#define NT16(d, s) _mm_stream_si128((__m128i *)(void *)(d), \
                                    _mm_loadu_si128((const __m128i *)(const void *)(s)))
#define NT32(d, s) _mm256_stream_si256((__m256i *)(void *)(d), \
                                       _mm256_loadu_si256((const __m256i *)(const void *)(s)))
#define NT64(d, s) _mm512_stream_si512((void *)(d), _mm512_loadu_si512((const void *)(s)))
#define NO_HALF(d, s) ((void)0)

#define LOAD16(p) _mm_stream_load_si128((__m128i *)(uintptr_t)(p))
#define LOAD32(p) _mm256_stream_load_si256((const __m256i *)(const void *)(p))
#define LOAD64(p) _mm512_stream_load_si512((void *)(uintptr_t)(p))
#define STOREU16(p, v) _mm_storeu_si128((__m128i *)(void *)(p), (v))
#define STOREU32(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
#define STOREU64(p, v) _mm512_storeu_si512((void *)(p), (v))

/* A last group of k < 8 blocks stores only the k it loaded; GCC cannot
 * tell and warns of the others. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
FLOOR_LOAD(load16, "sse4.1", __m128i, 16, LOAD16, STOREU16)
FLOOR_LOAD(load32, "avx2", __m256i, 32, LOAD32, STOREU32)
FLOOR_LOAD(load64, "avx512f", __m512i, 64, LOAD64, STOREU64)
#pragma GCC diagnostic pop
FLOOR_STORE(store16, "sse2", 16, NT16, NO_HALF)
FLOOR_STORE(store32, "avx2", 32, NT32, NO_HALF)
FLOOR_STORE(store64, "avx512f", 64, NT64, NT32)

#endif /* __x86_64__ */

void tool_floor_pick(struct tool_floor *f)
{
    *f = (struct tool_floor){ store_plain, load_plain, 8, 8, "plain stores", "plain loads" };
#if defined(__x86_64__)
    /* __builtin_cpu_supports also asks the OS (XCR0) for the vector state. */
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        *f = (struct tool_floor){ store64, load64, 64, 64, "VMOVNTDQ zmm", "VMOVNTDQA zmm" };
    else if (__builtin_cpu_supports("avx2"))
        *f = (struct tool_floor){ store32, load32, 32, 32, "VMOVNTDQ ymm", "VMOVNTDQA ymm" };
    else if (__builtin_cpu_supports("sse4.1"))
        *f = (struct tool_floor){ store16, load16, 16, 16, "MOVNTDQ xmm", "MOVNTDQA xmm" };
    else
        *f = (struct tool_floor){ store16, load_plain, 16, 8, "MOVNTDQ xmm", "plain loads" };
#endif
}
