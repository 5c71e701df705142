/*
 * tool_floor.h - the floor gdrx's copies are compared with: the same bytes
 * moved through the same mapping by the barest and fastest instructions
 * the CPU has, so that gdrx/floor >= 1 unless gdrx truly matches them.
 *
 * Host -> GPU, one op = the copy's stores, then one sfence (which drains
 * the write-combining buffers, as gdrx_copy_to_mapping does): the widest
 * non-temporal vector stores (64 B with AVX-512F, 32 B with AVX2, else
 * 16 B), then 32/16/8/4/2/1-byte stores for the rest.
 *
 * GPU -> host, one op = one lfence, then streaming loads (MOVNTDQA, the
 * widest: 64 B with AVX-512F, 32 B with AVX2, 16 B with SSE4.1) of every
 * block holding a byte of the range, 8 blocks in flight at a time (all 8
 * loaded before any is stored), stored whole into the host buffer.  The
 * lfence is gdrx_copy_from_mapping's own: a reader's loads must not pass
 * its earlier ones (the flag saying the data is ready); without it the ops
 * of a batch would overlap and the floor would time their throughput, not
 * one copy's latency, which no copy can reach.  Without SSE4.1 (or off
 * x86-64): plain 8-byte loads.
 *
 * The caller gives the floor mapping addresses aligned to 64 bytes (a
 * line), and host room for the size rounded up to 64.
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

/* Stores of the rest (or all of a small copy): volatile accesses are
 * neither merged nor widened nor dropped by the compiler. */
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

/* A flag's store + sfence (gdrx-pplat's floor): plain stores, no vector. */
static inline void tool_floor_store(void *dst, const void *src, size_t n)
{
    tool_floor_store_tail(dst, src, n);
    tool_sfence();
}

/* Blocks a floor load op has in flight: all loaded before any is stored. */
#define TOOL_FLOOR_GROUP 8

/* The copy floor of this CPU (tool_floor_pick). */
struct tool_floor {
    void (*store)(void *map, const void *src, size_t n); /* stores + sfence */
    void (*load)(void *dst, const void *map, size_t n);  /* lfence + loads */
    unsigned store_width, load_width;                   /* bytes per access */
    const char *store_insn, *load_insn; /* e.g. "VMOVNTDQ zmm", "VMOVNTDQA zmm" */
};

/* The widest accesses this CPU (and its OS) can use. */
void tool_floor_pick(struct tool_floor *f);

#endif /* GDRX_TOOL_FLOOR_H */
