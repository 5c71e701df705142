/*
 * copy_guard.c - a routine never touches a page its buffers do not
 * overlap, and writes the destination only inside its range: both buffers
 * sit right against PROT_NONE pages, at each edge, for sizes 0..300 at
 * offsets 0..63 from the edge, and the destination page around the range
 * holds a canary.  From the mapping, the source is read in whole aligned
 * blocks that may extend past [src, src+len): this proves they never reach
 * into the inaccessible neighbour pages (len 0 at the very edge included:
 * it must read nothing).  The copies run in a child (gdrx_test_signal_of)
 * so a fault is reported with the copy that caused it.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "copy_tests.h"

#define CANARY 0xA5
#define GUARD_MAX_LEN 300

/* Shared with the child that copies: where it got to, what went wrong. */
struct guard_run {
    gdrx_copy_fn fn;
    enum test_dir dir;
    size_t len, off;
    int placement;
    unsigned copies, failures;
    char first_failure[160];
};

/* Mapping-side pointer at the low (0) or high (1) edge, host side at the
 * other or the same edge, at offset `off` from it. */
static const struct { int map_high, host_high; } placements[] = {
    { 0, 1 }, { 1, 0 }, { 0, 0 }, { 1, 1 },
};

static uint8_t *at_edge(uint8_t *page, size_t ps, int high, size_t off, size_t len)
{
    return high ? page + ps - len - off : page + off;
}

static void guard_sweep(void *arg)
{
    struct guard_run *r = arg;
    size_t ps = test_page_size();
    uint8_t *map = test_map_guarded(1), *host = test_map_guarded(1);
    uint64_t seed = 7;

    if (!map || !host) {
        snprintf(r->first_failure, sizeof(r->first_failure), "mmap failed");
        r->failures++;
        return;
    }
    uint8_t *srcpage = r->dir == TEST_TO_MAP ? host : map;
    uint8_t *dstpage = r->dir == TEST_TO_MAP ? map : host;
    test_fill_random(srcpage, ps, &seed, CANARY);
    memset(dstpage, CANARY, ps);

    for (r->len = 0; r->len <= GUARD_MAX_LEN; r->len++) {
        for (r->off = 0; r->off < 64; r->off++) {
            for (r->placement = 0; r->placement < 4; r->placement++) {
                size_t host_off = (r->off * 37 + r->len) % 64;
                uint8_t *m = at_edge(map, ps, placements[r->placement].map_high, r->off, r->len);
                uint8_t *h = at_edge(host, ps, placements[r->placement].host_high, host_off, r->len);
                uint8_t *dst = r->dir == TEST_TO_MAP ? m : h;
                const uint8_t *src = r->dir == TEST_TO_MAP ? h : m;

                r->fn(dst, src, r->len);
                r->copies++;
                size_t pre = (size_t)(dst - dstpage), post = ps - pre - r->len;
                if (memcmp(dst, src, r->len) != 0 ||
                    test_first_not(dstpage, pre, CANARY) != pre ||
                    test_first_not(dst + r->len, post, CANARY) != post) {
                    if (!r->failures++)
                        snprintf(r->first_failure, sizeof(r->first_failure),
                                 "len %zu, %zu from the edge, placement %d: wrong bytes",
                                 r->len, r->off, r->placement);
                }
                memset(dst, CANARY, r->len);
            }
        }
    }
    test_unmap_guarded(map, 1);
    test_unmap_guarded(host, 1);
}

static void guard(enum test_dir dir)
{
    struct guard_run *r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE,
                               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CU_ASSERT_FATAL(r != MAP_FAILED);
    memset(r, 0, sizeof(*r));
    r->fn = test_copy_fn(dir);
    r->dir = dir;
    CU_ASSERT_PTR_NOT_NULL_FATAL(r->fn);

    int sig = gdrx_test_signal_of(guard_sweep, r);
    if (sig != 0)
        fprintf(stderr, "    %s: signal %d at len %zu, %zu from the edge, placement %d\n",
                gdrx_copy_variant_name(test_current_variant()), sig, r->len, r->off,
                r->placement);
    if (r->failures)
        fprintf(stderr, "    %s: %u wrong copies, first: %s\n",
                gdrx_copy_variant_name(test_current_variant()), r->failures, r->first_failure);
    CU_ASSERT_EQUAL(sig, 0);
    CU_ASSERT_EQUAL(r->failures, 0);
    CU_ASSERT_EQUAL(r->copies, (GUARD_MAX_LEN + 1) * 64 * 4);
    munmap(r, sizeof(*r));
}

void test_guard_to(void)
{
    guard(TEST_TO_MAP);
}

void test_guard_from(void)
{
    guard(TEST_FROM_MAP);
}
