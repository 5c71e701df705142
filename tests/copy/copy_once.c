/*
 * copy_once.c - what the real routines store, store by store:
 *  - to the mapping: every destination byte exactly once, nothing outside
 *    the range, each store one naturally aligned 1..64-byte block, at most
 *    10 stores for a copy of at most 64 bytes;
 *  - from the mapping (the destination is host memory; the head and tail
 *    are copied out with overlapping moves, which may store a byte twice):
 *    every destination byte at least once, ending with the right value,
 *    nothing outside the range, each store contiguous.
 *
 * SPDX-License-Identifier: MIT
 *
 * How it observes single stores: the destination pages are read-only and
 * filled with a canary byte that the source never contains.  A store
 * faults (SIGSEGV); the handler makes the page writable and sets the trap
 * flag, so the store executes alone and SIGTRAP follows.  That handler
 * diffs the page against the canary: the changed bytes are exactly what
 * the one instruction stored.  It counts them per byte, saves their values,
 * puts the canary back and makes the page read-only again.  A second store
 * to a byte therefore changes it again and is counted again.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "copy_tests.h"

#define CANARY 0xA5
#define TRACE_PAGES 3
#define EFLAGS_TF 0x100
#define MAX_OPEN 4

static struct tracer {
    uint8_t *base;        /* TRACE_PAGES traced pages */
    size_t   size, ps;
    uint8_t  count[TRACE_PAGES * 65536]; /* stores per byte (saturating) */
    uint8_t  value[TRACE_PAGES * 65536]; /* last value stored */
    uint8_t *open[MAX_OPEN];
    int      nopen;
    int      to_map;      /* destination is the mapping side */
    unsigned stores, bad_shape;
    long     shape_lo, shape_len; /* first bad store */
} T;

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
    uint8_t *a = si->si_addr;
    (void)sig;
    if (a < T.base || a >= T.base + T.size || T.nopen == MAX_OPEN) {
        signal(SIGSEGV, SIG_DFL); /* a real fault: let it kill the case */
        return;
    }
    uint8_t *page = (uint8_t *)((uintptr_t)a & ~(uintptr_t)(T.ps - 1));
    mprotect(page, T.ps, PROT_READ | PROT_WRITE);
    T.open[T.nopen++] = page;
    ((ucontext_t *)ctx)->uc_mcontext.gregs[REG_EFL] |= EFLAGS_TF;
}

static int pow2_upto64(long n)
{
    return n > 0 && n <= 64 && (n & (n - 1)) == 0;
}

static void on_trap(int sig, siginfo_t *si, void *ctx)
{
    long lo = -1, hi = -1, changed = 0;
    (void)sig;
    (void)si;
    /* open pages are in address order: a store crosses at most into the next */
    for (int i = 0; i < T.nopen; i++) {
        uint8_t *p = T.open[i];
        for (size_t j = 0; j < T.ps; j++) {
            if (p[j] == CANARY)
                continue;
            long idx = (long)(p - T.base) + (long)j;
            if (T.count[idx] < 255)
                T.count[idx]++;
            T.value[idx] = p[j];
            p[j] = CANARY;
            lo = lo < 0 ? idx : lo;
            hi = idx;
            changed++;
        }
        mprotect(p, T.ps, PROT_READ);
    }
    T.nopen = 0;
    ((ucontext_t *)ctx)->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)EFLAGS_TF;
    if (!changed)
        return;
    T.stores++;
    int contiguous = hi - lo + 1 == changed;
    int aligned = pow2_upto64(changed) && ((uintptr_t)(T.base + lo) % (uintptr_t)changed) == 0;
    if (!contiguous || (T.to_map && !aligned)) {
        if (!T.bad_shape++) {
            T.shape_lo = lo;
            T.shape_len = hi - lo + 1;
        }
    }
}

/* Stores byte i saw are as they should: once inside the range to the
 * mapping, at least once inside it to the host, never outside it. */
static int count_ok(size_t i, int inside)
{
    return T.to_map ? T.count[i] == inside : (T.count[i] > 0) == inside;
}

struct once_stats {
    unsigned copies, failures, max_small_stores;
};

/* One traced copy into T.base + doff; 1 if every byte inside the range was
 * stored once (to the mapping) or at least once (to the host), with the
 * right last value, and none outside it. */
static int traced_copy(gdrx_copy_fn fn, const uint8_t *src, size_t doff, size_t len,
                       struct once_stats *st)
{
    memset(T.count, 0, T.size);
    T.stores = 0;
    T.bad_shape = 0;
    fn(T.base + doff, src, len);
    st->copies++;
    if (len <= 64 && T.stores > st->max_small_stores)
        st->max_small_stores = T.stores;

    size_t bad = T.size;
    for (size_t i = 0; i < T.size && bad == T.size; i++) {
        int inside = i >= doff && i < doff + len;
        if (!count_ok(i, inside) || (inside && T.value[i] != src[i - doff]))
            bad = i;
    }
    if (bad == T.size && !T.bad_shape)
        return 1;
    if (st->failures++ < 10) {
        if (bad != T.size)
            fprintf(stderr, "    %s: len %zu dst+%zu: byte %+ld stored %u times%s\n",
                    gdrx_copy_variant_name(test_current_variant()), len, doff,
                    (long)bad - (long)doff, T.count[bad],
                    count_ok(bad, bad >= doff && bad < doff + len) ? " (wrong value)" : "");
        else
            fprintf(stderr, "    %s: len %zu dst+%zu: one store wrote %ld bytes at %+ld\n",
                    gdrx_copy_variant_name(test_current_variant()), len, doff,
                    T.shape_len, T.shape_lo - (long)doff);
    }
    return 0;
}

static void once(enum test_dir dir)
{
    gdrx_copy_fn fn = test_copy_fn(dir);
    struct sigaction sa = { .sa_flags = SA_SIGINFO }, old_segv, old_trap;
    /* 64-B aligned: from the mapping, src is the mapping side, read in
     * aligned blocks that must stay inside the array */
    static uint8_t src[TRACE_PAGES * 65536 + 64] __attribute__((aligned(64)));
    struct once_stats st = { 0 };
    uint64_t seed = 3;

    CU_ASSERT_PTR_NOT_NULL_FATAL(fn);
    T.ps = test_page_size();
    T.size = TRACE_PAGES * T.ps;
    CU_ASSERT_FATAL(T.size <= sizeof(T.count));
    T.base = test_map_guarded(TRACE_PAGES);
    CU_ASSERT_PTR_NOT_NULL_FATAL(T.base);
    T.to_map = dir == TEST_TO_MAP;
    test_fill_random(src, sizeof(src), &seed, CANARY);
    memset(T.base, CANARY, T.size);
    mprotect(T.base, T.size, PROT_READ);

    sigemptyset(&sa.sa_mask);
    sa.sa_sigaction = on_segv;
    sigaction(SIGSEGV, &sa, &old_segv);
    sa.sa_sigaction = on_trap;
    sigaction(SIGTRAP, &sa, &old_trap);

    /* Every size to 160 (all climb/bulk/descend combinations of 64-B
     * steps) and every destination offset 0..63, placed so that the copies
     * also cross a page boundary; source offsets vary.  Then sparser sizes
     * to 256.  (Each traced store costs two signals: keep it affordable.) */
    for (size_t len = 0; len <= 256; len += len < 160 ? 1 : 7)
        for (size_t doff = 0; doff < 64; doff++)
            traced_copy(fn, src + (len * 7 + doff) % 64, T.ps - 128 + doff, len, &st);
    /* Long copies (the unrolled bulk loop) over page boundaries. */
    for (size_t len = 1000; len < 2 * T.ps; len += 997)
        for (size_t doff = 0; doff < 64; doff += 9)
            traced_copy(fn, src + doff / 2, doff, len, &st);
    traced_copy(fn, src + 5, 3, T.size - 3, &st);

    sigaction(SIGSEGV, &old_segv, NULL);
    sigaction(SIGTRAP, &old_trap, NULL);
    test_unmap_guarded(T.base, TRACE_PAGES);
    printf("[%u traced copies, at most %u stores for <= 64 B] ", st.copies,
           st.max_small_stores);
    CU_ASSERT_EQUAL(st.failures, 0);
    /* 10 = the driver's bound for <= 64 B; libc's loop would take 64.
     * Host memory has no such bound (memcpy's choice). */
    if (dir == TEST_TO_MAP)
        CU_ASSERT(st.max_small_stores >= 4 && st.max_small_stores <= 10);
    CU_ASSERT(st.copies > 161 * 64);
}

void test_once_to(void)
{
    once(TEST_TO_MAP);
}

void test_once_from(void)
{
    once(TEST_FROM_MAP);
}
