/*
 * copy_driver_check.c - the copy algorithm (copy_driver.h) run with
 * recording steps instead of instructions, for every size to 300, every
 * mapping-side offset 0..127 and each vector width:
 *  - to the mapping: each access is naturally aligned and inside the
 *    range, each byte is written exactly once, copies of at most 64 bytes
 *    take at most 10 accesses;
 *  - from the mapping: the loads are exactly the `width`-aligned blocks
 *    overlapping the range, each once, in ascending order (so the loads of
 *    one line are consecutive), and they touch exactly as many 64-B lines
 *    as the range overlaps; len 0 loads nothing;
 *  - both: the result equals memcpy and the host side is accessed only
 *    inside its range (destination bytes outside it stay untouched).
 *
 * The real routines run this same inlined code with instructions as the
 * steps; copy_guard.c runs them against inaccessible pages.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>

#include "copy_driver.h"
#include "copy_tests.h"

#define MAX_LEN 300
#define MAP_OFFS 128
#define BUF (MAP_OFFS + MAX_LEN + 64)
#define MAX_LOADS 64

static struct recorder {
    const uint8_t *map_lo, *map_hi, *host_lo, *host_hi, *host_buf, *host_end;
    uint8_t map_count[BUF];
    uintptr_t load[MAX_LOADS]; /* from: mapping-side addresses, in order */
    size_t load_size[MAX_LOADS];
    int to_map;
    unsigned accesses, misaligned, outside;
} R;

static void record(uint8_t *d, const uint8_t *s, size_t k)
{
    const uint8_t *m = R.to_map ? d : s, *h = R.to_map ? s : d;

    if (R.accesses < MAX_LOADS) {
        R.load[R.accesses] = (uintptr_t)m;
        R.load_size[R.accesses] = k;
    }
    R.accesses++;
    if ((uintptr_t)m % k != 0)
        R.misaligned++;
    /* From the mapping, a step may fill a stack copy of the line instead
     * of the destination; into the host buffer it may write only inside
     * the range.  Mapping-side bounds are checked by the callers. */
    int in_host_buf = h + k > R.host_buf && h < R.host_end;
    int host_ok = R.to_map || in_host_buf ? h >= R.host_lo && h + k <= R.host_hi : 1;
    int map_ok = R.to_map ? m >= R.map_lo && m + k <= R.map_hi : 1;
    if (!host_ok || !map_ok) {
        R.outside++;
        return;
    }
    if (R.to_map)
        for (size_t i = 0; i < k; i++)
            R.map_count[m - R.map_lo + i]++;
    memcpy(d, s, k);
}

static void rec_small(uint8_t *d, const uint8_t *s, size_t k)
{
    if (k != 1 && k != 2 && k != 4 && k != 8)
        R.misaligned++;
    record(d, s, k);
}

static void rec16(uint8_t *d, const uint8_t *s) { record(d, s, 16); }
static void rec32(uint8_t *d, const uint8_t *s) { record(d, s, 32); }
static void rec64(uint8_t *d, const uint8_t *s) { record(d, s, 64); }

/* The shapes the variants use: width 16 (SSE2/SSE4.1), 32 (AVX2), 64 with
 * 32-B steps (AVX-512) and 64 without (MOVDIR64B).  from_mapping uses only
 * the wide step. */
static const struct gdrx_copy_steps shapes[] = {
    { rec_small, rec16, NULL, rec16, 16, 0 },
    { rec_small, rec16, rec32, rec32, 32, 0 },
    { rec_small, rec16, rec32, rec64, 64, 0 },
    { rec_small, rec16, NULL, rec64, 64, 0 },
};

static uintptr_t round_down(uintptr_t a, size_t w) { return a & ~(uintptr_t)(w - 1); }
static uintptr_t round_up(uintptr_t a, size_t w) { return round_down(a + w - 1, w); }

/* To the mapping: every byte of the range written once, none outside. */
static int to_map_ok(size_t len)
{
    return test_first_not(R.map_count, len, 1) == len &&
           test_first_not(R.map_count + len, BUF - len, 0) == BUF - len;
}

/* From the mapping: the loads are the w-aligned blocks overlapping
 * [m, m+len), each once, ascending; and the 64-B lines they touch, counted
 * as changes of line along the (ascending) sequence, are the lines the
 * range overlaps. */
static int from_map_ok(const uint8_t *m, size_t len, size_t w)
{
    uintptr_t lo = round_down((uintptr_t)m, w), hi = len ? round_up((uintptr_t)m + len, w) : lo;
    size_t lines_expected = len ? (round_up((uintptr_t)m + len, 64) -
                                   round_down((uintptr_t)m, 64)) / 64 : 0;
    size_t lines = 0;

    if (R.accesses != (hi - lo) / w || R.accesses > MAX_LOADS)
        return 0;
    for (unsigned i = 0; i < R.accesses; i++) {
        if (R.load_size[i] != w || R.load[i] != lo + i * w)
            return 0;
        if (i == 0 || R.load[i] / 64 != R.load[i - 1] / 64)
            lines++;
    }
    return lines == lines_expected;
}

static void check_shape(const struct gdrx_copy_steps *shape, int to_map)
{
    static uint8_t map[BUF] __attribute__((aligned(64))), host[BUF];
    struct gdrx_copy_steps st = *shape;
    unsigned failures = 0, worst_small = 0;
    uint64_t seed = 11;

    st.to_map = to_map;
    R.to_map = to_map;
    R.host_buf = host;
    R.host_end = host + BUF;
    /* the source side is never written: fill it once, never with the 0
     * the destination is cleared to */
    test_fill_random(to_map ? host : map, BUF, &seed, 0);
    for (size_t len = 0; len <= MAX_LEN; len++) {
        for (size_t moff = 0; moff < MAP_OFFS; moff++) {
            size_t hoff = (moff * 5 + len) % 64;
            uint8_t *m = map + moff, *h = host + hoff;
            uint8_t *dst = to_map ? m : h, *src = to_map ? h : m;
            uint8_t *dbuf = to_map ? map : host;
            size_t pre = (size_t)(dst - dbuf), post = BUF - pre - len;

            memset(dbuf, 0, BUF);
            memset(R.map_count, 0, sizeof(R.map_count));
            R.accesses = R.misaligned = R.outside = 0;
            R.map_lo = m;
            R.map_hi = m + len;
            R.host_lo = h;
            R.host_hi = h + len;

            gdrx_copy_run(&st, dst, src, len);

            int exact = to_map ? to_map_ok(len) : from_map_ok(m, len, st.width);
            int untouched = test_first_not(dbuf, pre, 0) == pre &&
                            test_first_not(dst + len, post, 0) == post;
            if (len <= 64 && R.accesses > worst_small)
                worst_small = R.accesses;
            if (!exact || !untouched || R.misaligned || R.outside ||
                memcmp(dst, src, len) != 0) {
                if (failures++ < 5)
                    fprintf(stderr, "    width %zu %s: len %zu map+%zu: %s %d, "
                            "untouched %d, misaligned %u, outside %u, accesses %u\n",
                            st.width, to_map ? "to" : "from", len, moff,
                            to_map ? "once" : "exact blocks", exact, untouched,
                            R.misaligned, R.outside, R.accesses);
            }
        }
    }
    CU_ASSERT_EQUAL(failures, 0);
    /* <= 64 B: at most 10 stores to the mapping; from it, at most the
     * 64/width + 1 blocks such a range can overlap */
    CU_ASSERT(worst_small <= (to_map ? 10 : 64 / st.width + 1));
}

static void test_driver_to_map(void)
{
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
        check_shape(&shapes[i], 1);
}

static void test_driver_from_map(void)
{
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
        check_shape(&shapes[i], 0);
}

const struct gdrx_test_case test_driver_cases[] = {
    GDRX_TEST_CASE(test_driver_to_map),
    GDRX_TEST_CASE(test_driver_from_map),
    GDRX_TEST_END,
};
