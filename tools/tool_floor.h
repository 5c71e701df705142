/*
 * tool_floor.h - the floor gdrx's copies are compared with: the same bytes
 * moved through the same mapping by the barest instructions, inlined into
 * the caller's loop.  Host -> GPU: plain stores (16-byte SSE2 for the
 * bulk, then 8/4/2/1) and one sfence, which drains the write-combining
 * buffers as gdrx_copy_to_mapping does.  GPU -> host: streaming loads
 * (MOVNTDQA) where the CPU has SSE4.1 and the source is 16-byte aligned,
 * else plain loads; sizes up to 8 are one plain load.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_TOOL_FLOOR_H
#define GDRX_TOOL_FLOOR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void tool_sfence(void)
{
#if defined(__x86_64__)
    __asm__ __volatile__("sfence" ::: "memory");
#elif defined(__aarch64__)
    __asm__ __volatile__("dmb oshst" ::: "memory");
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* The tail (or all of a small copy): volatile accesses are neither merged
 * nor widened nor dropped by the compiler. */
static inline void tool_floor_store_tail(uint8_t *d, const uint8_t *s, size_t n)
{
    uint64_t v8; uint32_t v4; uint16_t v2;
    for (; n >= 8; n -= 8, d += 8, s += 8) {
        memcpy(&v8, s, 8);
        *(volatile uint64_t *)d = v8;
    }
    if (n >= 4) {
        memcpy(&v4, s, 4);
        *(volatile uint32_t *)d = v4;
        n -= 4, d += 4, s += 4;
    }
    if (n >= 2) {
        memcpy(&v2, s, 2);
        *(volatile uint16_t *)d = v2;
        n -= 2, d += 2, s += 2;
    }
    if (n)
        *(volatile uint8_t *)d = *s;
}

static inline void tool_floor_store(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
#if defined(__x86_64__)
    for (; n >= 16; n -= 16, d += 16, s += 16)
        __asm__ __volatile__("movdqu (%1), %%xmm0\n\tmovdqu %%xmm0, (%0)"
                             :: "r"(d), "r"(s) : "xmm0", "memory");
#endif
    tool_floor_store_tail(d, s, n);
    tool_sfence();
}

static inline void tool_floor_load_tail(uint8_t *d, const uint8_t *s, size_t n)
{
    uint64_t v8; uint32_t v4; uint16_t v2;
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

/* streaming: the CPU has SSE4.1 (tool_floor_can_stream()). */
static inline void tool_floor_load(void *dst, const void *src, size_t n, int streaming)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
#if defined(__x86_64__)
    if (streaming && n > 8 && ((uintptr_t)s & 15) == 0)
        for (; n >= 16; n -= 16, d += 16, s += 16)
            __asm__ __volatile__("movntdqa (%1), %%xmm0\n\tmovdqu %%xmm0, (%0)"
                                 :: "r"(d), "r"(s) : "xmm0", "memory");
#else
    (void)streaming;
#endif
    tool_floor_load_tail(d, s, n);
}

static inline int tool_floor_can_stream(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.1");
#else
    return 0;
#endif
}

#endif /* GDRX_TOOL_FLOOR_H */
