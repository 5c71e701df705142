/*
 * test_ranges.c - what gdr_pin_buffer pins and where gdr_map's address
 * points, for the requests gdrcopy's users make: gdrcopy's own idiom (a
 * small buffer over-allocated and aligned up to a GPU page), an address in
 * the middle of a page, and UCX's page-rounded ranges around a small
 * sub-allocated buffer, which reach into its neighbours.  The mapping
 * starts at info.va; the neighbours' bytes stay out of reach.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>

#include "test_gdrapi.h"

/* gdrcopy's idiom: cudaMalloc(size + GPU_PAGE_SIZE - 1), pin the first
 * GPU page boundary in it; the mapping starts at that address. */
static void test_gdrcopy_idiom(void)
{
    const size_t size = 8 * KiB;
    gdr_mh_t mh;
    gdr_info_t info;
    void *map;

    GDRX_REQUIRE(ga_cuda_setup() == 0);
    CUdeviceptr raw = ga_alloc(size + GPU_PAGE_SIZE - 1); /* sub-allocated */
    gdr_t g = ga_open();
    GDRX_REQUIRE(raw && g);
    CUdeviceptr d = (raw + GPU_PAGE_OFFSET) & GPU_PAGE_MASK;
    GDRX_REQUIRE(gdr_pin_buffer(g, d, size, 0, 0, &mh) == 0);
    CU_ASSERT_EQUAL(gdr_get_info(g, mh, &info), 0);
    CU_ASSERT_EQUAL(info.va, d);
    CU_ASSERT(info.mapped_size >= size);
    GDRX_REQUIRE(gdr_map(g, mh, &map, size) == 0);
    CU_ASSERT(ga_roundtrip(mh, map, d, size, 21));
    CU_ASSERT_EQUAL(gdr_unmap(g, mh, map, size), 0);
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, mh), 0);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(raw);
}

/* An address inside a page: gdrcopy's driver refuses to map it; here the
 * pin covers the whole page of the allocation and the mapping starts
 * there (info.va), so the caller finds its byte at map + (addr - va). */
static void test_unaligned_address(void)
{
    struct ga_buf b;

    CUdeviceptr d;
    gdr_t g;
    GDRX_REQUIRE(ga_start(3 * MiB, &d, &g) == 0);
    GDRX_REQUIRE(ga_pin_map(g, d + 1000, 5000, &b) == 0);
    CU_ASSERT_EQUAL(b.info.va, d);
    CU_ASSERT_EQUAL(b.info.mapped_size, GPU_PAGE_SIZE);
    CU_ASSERT_PTR_EQUAL(b.ptr, (char *)b.map + 1000);
    CU_ASSERT(ga_roundtrip(b.mh, b.ptr, d + 1000, 5000, 31));
    /* the rest of the page belongs to the same allocation: reachable */
    CU_ASSERT(ga_roundtrip(b.mh, b.map, d, GPU_PAGE_SIZE, 33));
    ga_release(&b);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(d);
}

/* Three small buffers sharing a GPU page (sub-allocations), pinned as
 * UCX's gdr_copy does: the buffer's range rounded out to whole pages.  The
 * pin is the middle buffer's (it holds most of the range); the mapping
 * reaches all of it, the neighbours' bytes are refused and left as they
 * were. */
static void test_page_rounded_request(void)
{
    struct ga_buf b;
    char byte = 1;

    GDRX_REQUIRE(ga_cuda_setup() == 0);
    CUdeviceptr left = ga_alloc(4 * KiB), mid = ga_alloc(20 * KiB), right = ga_alloc(4 * KiB);
    gdr_t g = ga_open();
    GDRX_REQUIRE(left && mid && right && g);
    CUdeviceptr start = mid & GPU_PAGE_MASK;
    CUdeviceptr end = (mid + 20 * KiB + GPU_PAGE_OFFSET) & GPU_PAGE_MASK;
    /* the neighbours lie in the rounded range (the sim packs them) */
    GDRX_REQUIRE(left >= start && left + 4 * KiB <= mid && right + 4 * KiB <= end);
    ga_fill(left, 4 * KiB, 41);
    ga_fill(right, 4 * KiB, 42);

    GDRX_REQUIRE(ga_pin_map(g, start, end - start, &b) == 0);
    CU_ASSERT(b.info.va <= mid && mid - b.info.va < b.info.page_size);
    CU_ASSERT_EQUAL(b.info.va % b.info.page_size, 0);
    CU_ASSERT(b.info.va + b.info.mapped_size >= mid + 20 * KiB);
    char *mid_cpu = (char *)b.map + (mid - b.info.va);
    CU_ASSERT(ga_roundtrip(b.mh, mid_cpu, mid, 20 * KiB, 43));
    CU_ASSERT_EQUAL(gdr_copy_to_mapping(b.mh, mid_cpu - 1, &byte, 1), ERANGE);
    CU_ASSERT_EQUAL(gdr_copy_to_mapping(b.mh, mid_cpu + 20 * KiB, &byte, 1), ERANGE);
    CU_ASSERT_EQUAL(gdr_copy_from_mapping(b.mh, &byte, mid_cpu + 20 * KiB - 1, 2), ERANGE);
    CU_ASSERT(ga_check(left, 4 * KiB, 41));
    CU_ASSERT(ga_check(right, 4 * KiB, 42));
    ga_release(&b);

    /* the exact span of two neighbours: the larger one is pinned */
    GDRX_REQUIRE(ga_pin_map(g, left, mid + 20 * KiB - left, &b) == 0);
    mid_cpu = (char *)b.map + (mid - b.info.va);
    CU_ASSERT(ga_roundtrip(b.mh, mid_cpu, mid, 20 * KiB, 44));
    CU_ASSERT_EQUAL(gdr_copy_to_mapping(b.mh, mid_cpu - 1, &byte, 1), ERANGE);
    CU_ASSERT(ga_check(left, 4 * KiB, 41));
    ga_release(&b);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(left);
    ga_free(mid);
    ga_free(right);
}

/* A small buffer followed, in the same page, by a larger allocation that
 * runs past it: the page-rounded request is the small buffer's (the other
 * one reaches beyond it), although the other has more bytes in it. */
static void test_page_rounded_small_buffer(void)
{
    struct ga_buf b;
    char byte = 1;

    GDRX_REQUIRE(ga_cuda_setup() == 0);
    CUdeviceptr small = ga_alloc(8 * KiB), big = ga_alloc(72 * KiB);
    gdr_t g = ga_open();
    GDRX_REQUIRE(small && big && g);
    CUdeviceptr start = small & GPU_PAGE_MASK;
    CUdeviceptr end = (small + 8 * KiB + GPU_PAGE_OFFSET) & GPU_PAGE_MASK;
    /* the neighbour holds more of the rounded range than the buffer */
    GDRX_REQUIRE(big >= small + 8 * KiB && end - big > 8 * KiB && big + 72 * KiB > end);
    ga_fill(big, 72 * KiB, 51);
    GDRX_REQUIRE(ga_pin_map(g, start, end - start, &b) == 0);
    char *cpu = (char *)b.map + (small - b.info.va);
    CU_ASSERT(ga_roundtrip(b.mh, cpu, small, 8 * KiB, 52));
    CU_ASSERT_EQUAL(gdr_copy_to_mapping(b.mh, cpu + (big - small), &byte, 1), ERANGE);
    CU_ASSERT(ga_check(big, 72 * KiB, 51));
    ga_release(&b);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(small);
    ga_free(big);
}

/* A range that holds no allocation at all (past the last small buffer of
 * the sim's shared chunk) is refused. */
static void test_no_allocation_in_range(void)
{
    gdr_mh_t mh = { 0 };

    CUdeviceptr small;
    gdr_t g;
    GDRX_REQUIRE(ga_start(4 * KiB, &small, &g) == 0);
    CU_ASSERT_EQUAL(gdr_pin_buffer(g, small + 64 * KiB, 8 * KiB, 0, 0, &mh), EINVAL);
    CU_ASSERT_EQUAL(mh.h, 0);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(small);
}

const struct gdrx_test_case gapi_ranges_cases[] = {
    GDRX_TEST_CASE(test_gdrcopy_idiom),
    GDRX_TEST_CASE(test_unaligned_address),
    GDRX_TEST_CASE(test_page_rounded_request),
    GDRX_TEST_CASE(test_page_rounded_small_buffer),
    GDRX_TEST_CASE(test_no_allocation_in_range),
    GDRX_TEST_END,
};
