/*
 * copy_driver_check.c - the copy algorithm (copy_driver.h) run with
 * recording steps instead of instructions: for every size to 300, every
 * mapping-side offset 0..127, each vector width and both directions, each
 * mapping-side access is naturally aligned and inside the buffer, each
 * byte is read or written exactly once, no host-side access leaves its
 * buffer, and copies of at most 64 bytes take at most 10 accesses.
 *
 * Reads cannot be observed on the real routines (an aligned over-read never
 * crosses a page, so guard pages do not see it); this is where the "never
 * reads outside [src, src+len)" half of the contract is proved.  The real
 * routines run this same inlined code with instructions as the steps.
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

static struct recorder {
    const uint8_t *map_lo, *map_hi, *host_lo, *host_hi;
    uint8_t map_count[BUF];
    int to_map;
    unsigned accesses, misaligned, outside;
} R;

static void record(uint8_t *d, const uint8_t *s, size_t k)
{
    const uint8_t *m = R.to_map ? d : s, *h = R.to_map ? s : d;

    R.accesses++;
    if ((uintptr_t)m % k != 0)
        R.misaligned++;
    if (m < R.map_lo || m + k > R.map_hi || h < R.host_lo || h + k > R.host_hi) {
        R.outside++;
        return;
    }
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
 * 32-B steps (AVX-512) and 64 without (MOVDIR64B). */
static const struct gdrx_copy_steps shapes[] = {
    { rec_small, rec16, NULL, rec16, 16, 0 },
    { rec_small, rec16, rec32, rec32, 32, 0 },
    { rec_small, rec16, rec32, rec64, 64, 0 },
    { rec_small, rec16, NULL, rec64, 64, 0 },
};

static void check_shape(const struct gdrx_copy_steps *shape, int to_map)
{
    static uint8_t map[BUF], host[BUF], expect[BUF];
    struct gdrx_copy_steps st = *shape;
    unsigned failures = 0, worst_small = 0;
    uint64_t seed = 11;

    st.to_map = to_map;
    R.to_map = to_map;
    for (size_t len = 0; len <= MAX_LEN; len++) {
        for (size_t moff = 0; moff < MAP_OFFS; moff++) {
            size_t hoff = (moff * 5 + len) % 64;
            uint8_t *m = map + moff, *h = host + hoff;
            uint8_t *dst = to_map ? m : h, *src = to_map ? h : m;

            test_fill_random(src, len, &seed, 0);
            memset(to_map ? map : host, 0, BUF);
            memcpy(expect, src, len);
            memset(R.map_count, 0, sizeof(R.map_count));
            R.accesses = R.misaligned = R.outside = 0;
            R.map_lo = m;
            R.map_hi = m + len;
            R.host_lo = h;
            R.host_hi = h + len;

            gdrx_copy_run(&st, dst, src, len);

            int once = test_first_not(R.map_count, len, 1) == len &&
                       test_first_not(R.map_count + len, BUF - len, 0) == BUF - len;
            if (len <= 64 && R.accesses > worst_small)
                worst_small = R.accesses;
            if (!once || R.misaligned || R.outside || memcmp(dst, expect, len) != 0) {
                if (failures++ < 5)
                    fprintf(stderr, "    width %zu %s: len %zu map+%zu: once %d, "
                            "misaligned %u, outside %u\n", st.width,
                            to_map ? "to" : "from", len, moff, once, R.misaligned,
                            R.outside);
            }
        }
    }
    CU_ASSERT_EQUAL(failures, 0);
    CU_ASSERT(worst_small <= 10);
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
