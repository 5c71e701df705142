/*
 * test_nvrm_window.c - BAR1 views follow what is pinned: a pin maps only
 * its own 64 KiB-rounded window, later pins share a view their window
 * fits in, and a small pin of a large object works within a small BAR1.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nvrm_test.h"

static long opens_since(const struct nvrm_emu_stats *before)
{
    struct nvrm_emu_stats s = nvt_stats();
    long n = 0;
    for (int i = 0; i < NVRM_EMU_MAX_GPUS; i++)
        n += s.dev_opens[i] - before->dev_opens[i];
    return n;
}

/* The RM mapping of a pin is its window, not the object; unpinning gives
 * every RM and CPU mapping back. */
static void test_window_is_the_pinned_span(void)
{
    gdrx_t g;
    gdrx_pin_t a, b;

    if (nvt_setup(0, 0))
        return;
    NVT_REQUIRE(nvt_open(&g) == 0);
    CUdeviceptr p = tc_alloc(8 * MiB);
    NVT_REQUIRE(p != 0);
    struct nvrm_emu_stats before = nvt_stats();
    /* 5000 bytes inside one 64 KiB page ... */
    void *ca = nvt_pin_map(g, p + MiB + 100, 5000, &a);
    NVT_REQUIRE(ca != NULL);
    struct nvrm_emu_stats s = nvt_stats();
    CU_ASSERT_EQUAL(s.rm_maps, before.rm_maps + 1);
    CU_ASSERT_EQUAL(s.rm_mapped_bytes, before.rm_mapped_bytes + (long)(64 * KiB));
    CU_ASSERT(nvt_roundtrip(a, ca, p + MiB + 100, 5000, 3));
    /* ... and 3 MiB crossing pages at both ends: 3 MiB + 64 KiB. */
    void *cb = nvt_pin_map(g, p + 4 * MiB - 10, 3 * MiB, &b);
    NVT_REQUIRE(cb != NULL);
    s = nvt_stats();
    CU_ASSERT_EQUAL(s.rm_maps, before.rm_maps + 2);
    CU_ASSERT_EQUAL(s.rm_mapped_bytes,
                    before.rm_mapped_bytes + (long)(64 * KiB + 3 * MiB + 64 * KiB));
    CU_ASSERT(nvt_roundtrip(b, cb, p + 4 * MiB - 10, 3 * MiB, 4));

    CU_ASSERT_EQUAL(gdrx_unpin(g, a), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(g, b), 0);
    nvt_assert_released(&before);
    tc_free(p);
    gdrx_close(g);
}

/* A pin inside another pin's window shares its RM mapping (one open, one
 * RM_MAP_MEMORY) with a CPU range of its own; a pin outside gets its own
 * view; the shared view lives until its last pin goes. */
static void test_pins_share_a_window(void)
{
    gdrx_t g;
    gdrx_pin_t a, b, c;

    if (nvt_setup(0, 0))
        return;
    NVT_REQUIRE(nvt_open(&g) == 0);
    CUdeviceptr p = tc_alloc(4 * MiB);
    NVT_REQUIRE(p != 0);
    struct nvrm_emu_stats before = nvt_stats();
    uint8_t *ca = nvt_pin_map(g, p, MiB, &a);
    uint8_t *cb = nvt_pin_map(g, p + 64 * KiB + 3, 1000, &b);
    NVT_REQUIRE(ca && cb);
    struct nvrm_emu_stats s = nvt_stats();
    CU_ASSERT_EQUAL(s.dups, before.dups + 1);
    CU_ASSERT_EQUAL(s.rm_maps, before.rm_maps + 1);
    CU_ASSERT_EQUAL(s.rm_mapped_bytes, before.rm_mapped_bytes + (long)MiB);
    CU_ASSERT_EQUAL(opens_since(&before), 1);
    CU_ASSERT_EQUAL(s.cpu_maps_live, before.cpu_maps_live + 2);
    CU_ASSERT(cb < ca || cb >= ca + MiB); /* b's CPU range is not a's */
    /* Both reach the same GPU bytes. */
    const unsigned char mark[4] = { 1, 2, 3, 4 };
    unsigned char got[4] = { 0 };
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(b, cb, mark, 4), 0);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(a, got, ca + 64 * KiB + 3, 4), 0);
    CU_ASSERT_EQUAL(memcmp(got, mark, 4), 0);

    uint8_t *cc = nvt_pin_map(g, p + 2 * MiB, 64 * KiB, &c);
    NVT_REQUIRE(cc != NULL);
    s = nvt_stats();
    CU_ASSERT_EQUAL(s.rm_maps, before.rm_maps + 2);
    CU_ASSERT_EQUAL(s.rm_mapped_bytes, before.rm_mapped_bytes + (long)(MiB + 64 * KiB));

    /* a goes; b still holds the shared view and works. */
    CU_ASSERT_EQUAL(gdrx_unpin(g, a), 0);
    s = nvt_stats();
    CU_ASSERT_EQUAL(s.rm_maps_live, before.rm_maps_live + 2);
    CU_ASSERT(nvt_roundtrip(b, cb, p + 64 * KiB + 3, 1000, 6));
    CU_ASSERT_EQUAL(gdrx_unpin(g, b), 0);
    s = nvt_stats();
    CU_ASSERT_EQUAL(s.rm_maps_live, before.rm_maps_live + 1);
    CU_ASSERT_EQUAL(s.rm_mapped_bytes, before.rm_mapped_bytes + (long)(64 * KiB));
    CU_ASSERT(nvt_roundtrip(c, cc, p + 2 * MiB, 64 * KiB, 7));
    CU_ASSERT_EQUAL(gdrx_unpin(g, c), 0);
    nvt_assert_released(&before);
    tc_free(p);
    gdrx_close(g);
}

/* Two buffers sub-allocated from one RM object share our duplicate, but
 * each is mapped alone: neither exposes the other's bytes. */
static void test_neighbours_not_exposed(void)
{
    gdrx_t g;
    gdrx_pin_t a, b;

    if (nvt_setup(0, 0))
        return;
    NVT_REQUIRE(nvt_open(&g) == 0);
    CUdeviceptr p = tc_alloc(256 * KiB), q = tc_alloc(256 * KiB);
    NVT_REQUIRE(p && q);
    struct nvrm_emu_stats before = nvt_stats();
    void *ca = nvt_pin_map(g, p, 256 * KiB, &a);
    void *cb = nvt_pin_map(g, q, 256 * KiB, &b);
    NVT_REQUIRE(ca && cb);
    struct nvrm_emu_stats s = nvt_stats();
    CU_ASSERT_EQUAL(s.dups, before.dups + 1);
    CU_ASSERT_EQUAL(s.rm_maps, before.rm_maps + 2);
    CU_ASSERT_EQUAL(s.rm_mapped_bytes, before.rm_mapped_bytes + (long)(512 * KiB));
    CU_ASSERT(nvt_roundtrip(a, ca, p, 256 * KiB, 1));
    CU_ASSERT(nvt_roundtrip(b, cb, q, 256 * KiB, 2));
    CU_ASSERT_EQUAL(gdrx_unpin(g, a), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(g, b), 0);
    nvt_assert_released(&before);
    tc_free(p);
    tc_free(q);
    gdrx_close(g);
}

/* A GPU with 256 MiB of BAR1: a small pin of a 1 GiB object maps, a pin of
 * the whole object fails with -ENOSPC and leaves nothing behind. */
static void test_small_bar1(void)
{
    gdrx_t g;
    gdrx_pin_t small, whole;

    if (nvt_setup(0, 0))
        return;
    NVT_REQUIRE(nvrm_emu_set_bar1(256 * MiB) == 0);
    NVT_REQUIRE(nvt_open(&g) == 0);
    CUdeviceptr p = tc_alloc(1024 * MiB);
    NVT_REQUIRE(p != 0);
    struct nvrm_emu_stats before = nvt_stats();
    void *cs = nvt_pin_map(g, p + 512 * MiB, MiB, &small);
    NVT_REQUIRE(cs != NULL);
    CU_ASSERT_EQUAL(nvt_stats().rm_mapped_bytes, before.rm_mapped_bytes + (long)MiB);
    CU_ASSERT(nvt_roundtrip(small, cs, p + 512 * MiB, MiB, 8));

    void *cw = NULL;
    NVT_REQUIRE(gdrx_pin(g, p, 1024 * MiB, 0, &whole) == 0);
    CU_ASSERT_EQUAL(gdrx_map(g, whole, &cw), -ENOSPC);
    struct nvrm_emu_stats s = nvt_stats();
    CU_ASSERT_EQUAL(s.rm_maps_live, before.rm_maps_live + 1);
    CU_ASSERT_EQUAL(s.cpu_maps_live, before.cpu_maps_live + 1);
    CU_ASSERT_EQUAL(gdrx_unpin(g, whole), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(g, small), 0);
    nvt_assert_released(&before);
    tc_free(p);
    gdrx_close(g);
}

const struct gdrx_test_case nvrm_window_cases[] = {
    GDRX_TEST_CASE(test_window_is_the_pinned_span),
    GDRX_TEST_CASE(test_pins_share_a_window),
    GDRX_TEST_CASE(test_neighbours_not_exposed),
    GDRX_TEST_CASE(test_small_bar1),
    GDRX_TEST_END,
};
