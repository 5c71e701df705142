/*
 * test_ranges.c - what gdr_pin_buffer pins and where gdr_map's address
 * points, for the requests gdrcopy's users make: gdrcopy's own idiom (a
 * small buffer over-allocated and aligned up to a GPU page), an address in
 * the middle of a page (pinned, not mapped), and UCX's page-rounded ranges
 * around a small sub-allocated buffer, which reach into its neighbours
 * (and, as with gdrcopy, the copies too).  The mapping starts at info.va.
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

/* An address inside a page: pinned, with va at its page (gdrcopy's
 * info), but never mapped, as gdrcopy's driver refuses it: the mapping
 * would begin at the page, before the address.  Its page boundary maps. */
static void test_unaligned_address(void)
{
    struct ga_buf b;
    gdr_info_t info;
    gdr_mh_t mh;
    void *map = NULL;

    CUdeviceptr d;
    gdr_t g;
    GDRX_REQUIRE(ga_start(3 * MiB, &d, &g) == 0);
    GDRX_REQUIRE(gdr_pin_buffer(g, d + 1000, 5000, 0, 0, &mh) == 0);
    CU_ASSERT_EQUAL(gdr_get_info(g, mh, &info), 0);
    CU_ASSERT_EQUAL(info.va, d);
    CU_ASSERT_EQUAL(info.mapped_size, GPU_PAGE_SIZE);
    CU_ASSERT_EQUAL(gdr_map(g, mh, &map, GPU_PAGE_SIZE), EINVAL);
    CU_ASSERT_PTR_NULL(map);
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, mh), 0);
    GDRX_REQUIRE(ga_pin_map(g, d, 1000 + 5000, &b) == 0);
    CU_ASSERT(ga_roundtrip(b.mh, b.ptr + 1000, d + 1000, 5000, 31));
    CU_ASSERT(ga_roundtrip(b.mh, b.map, d, GPU_PAGE_SIZE, 33));
    ga_release(&b);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(d);
}

/* Three small buffers sharing a GPU page (sub-allocations), pinned as
 * UCX's gdr_copy does: the buffer's range rounded out to whole pages, then
 * copies to any buffer in them.  As with gdrcopy, the pin reaches every
 * byte of those pages from the first allocated one; unlike gdrcopy, a free
 * of any of the buffers revokes it. */
static void test_page_rounded_request(void)
{
    struct ga_buf b;
    int flag = 0;
    char byte = 1;

    GDRX_REQUIRE(ga_cuda_setup() == 0);
    CUdeviceptr left = ga_alloc(4 * KiB), mid = ga_alloc(20 * KiB), right = ga_alloc(4 * KiB);
    gdr_t g = ga_open();
    GDRX_REQUIRE(left && mid && right && g);
    CUdeviceptr start = mid & GPU_PAGE_MASK;
    CUdeviceptr end = (mid + 20 * KiB + GPU_PAGE_OFFSET) & GPU_PAGE_MASK;
    /* the neighbours lie in the rounded range (the sim packs them) */
    GDRX_REQUIRE(left >= start && left + 4 * KiB <= mid && right + 4 * KiB <= end);

    GDRX_REQUIRE(ga_pin_map(g, start, end - start, &b) == 0);
    CU_ASSERT_EQUAL(b.info.va, start);
    CU_ASSERT_EQUAL(b.info.mapped_size, end - start);
    char *cpu = (char *)b.map;
    CU_ASSERT(ga_roundtrip(b.mh, cpu + (mid - start), mid, 20 * KiB, 43));
    CU_ASSERT(ga_roundtrip(b.mh, cpu + (left - start), left, 4 * KiB, 44));
    CU_ASSERT(ga_roundtrip(b.mh, cpu + (right - start), right, 4 * KiB, 45));
    /* bytes before the first allocated one and past the pages: refused */
    if (left > start)
        CU_ASSERT_EQUAL(gdr_copy_to_mapping(b.mh, cpu + (left - start) - 1, &byte, 1), ERANGE);
    CU_ASSERT_EQUAL(gdr_copy_to_mapping(b.mh, cpu + (end - start), &byte, 1), ERANGE);
    CU_ASSERT_EQUAL(gdr_copy_from_mapping(b.mh, &byte, cpu + (end - start) - 1, 2), ERANGE);

    /* a neighbour's free revokes the pin (UCX drops its registration of
     * the window at the same free) */
    ga_free(right);
    CU_ASSERT_EQUAL(gdr_copy_to_mapping(b.mh, cpu + (mid - start), &byte, 1), ESTALE);
    CU_ASSERT_EQUAL(gdr_get_callback_flag(g, b.mh, &flag), 0);
    CU_ASSERT_EQUAL(flag, 1);
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, b.mh), 0);

    /* the exact range of two neighbours: both reachable */
    GDRX_REQUIRE(ga_pin_map(g, left, mid + 20 * KiB - left, &b) == 0);
    cpu = (char *)b.map + (left - b.info.va);
    CU_ASSERT(ga_roundtrip(b.mh, cpu, left, 4 * KiB, 46));
    CU_ASSERT(ga_roundtrip(b.mh, cpu + (mid - left), mid, 20 * KiB, 47));
    ga_release(&b);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(left);
    ga_free(mid);
}

/* A small buffer followed, in the same page, by a larger allocation that
 * runs past it: the pin reaches the larger one's bytes in the pages, and
 * not beyond them. */
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
    /* the neighbour starts in the rounded range and runs past it */
    GDRX_REQUIRE(big >= small + 8 * KiB && big < end && big + 72 * KiB > end);
    ga_fill(end, big + 72 * KiB - end, 51);
    GDRX_REQUIRE(ga_pin_map(g, start, end - start, &b) == 0);
    char *cpu = (char *)b.map + (small - b.info.va);
    CU_ASSERT(ga_roundtrip(b.mh, cpu, small, 8 * KiB, 52));
    CU_ASSERT(ga_roundtrip(b.mh, cpu + (big - small), big, end - big, 53));
    CU_ASSERT_EQUAL(gdr_copy_to_mapping(b.mh, cpu + (end - small), &byte, 1), ERANGE);
    /* past the pages, the neighbour keeps what it had */
    CU_ASSERT(ga_check(end, big + 72 * KiB - end, 51));
    ga_release(&b);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(small);
    ga_free(big);
}

/* A request from the end of one large allocation into the next (each its
 * own driver memory): no span can be pinned, so the pin is one allocation's
 * part of the pages; the other's bytes are refused, and the span tried
 * first left its SYNC_MEMOPS alone. */
static void test_span_refused_falls_back(void)
{
    unsigned int sync = 7;
    struct ga_buf b;
    char byte = 1;

    GDRX_REQUIRE(ga_cuda_setup() == 0);
    CUdeviceptr a = ga_alloc(4 * MiB), next = ga_alloc(4 * MiB);
    gdr_t g = ga_open();
    GDRX_REQUIRE(a && next && g);
    GDRX_REQUIRE(next == a + 4 * MiB); /* the sim places them so */
    GDRX_REQUIRE(ga_pin_map(g, next - GPU_PAGE_SIZE, 2 * GPU_PAGE_SIZE, &b) == 0);
    CU_ASSERT_EQUAL(b.info.va, next - GPU_PAGE_SIZE);
    CU_ASSERT_EQUAL(b.info.mapped_size, GPU_PAGE_SIZE);
    CU_ASSERT(ga_roundtrip(b.mh, b.ptr, next - GPU_PAGE_SIZE, GPU_PAGE_SIZE, 61));
    CU_ASSERT_EQUAL(gdr_copy_to_mapping(b.mh, b.ptr + GPU_PAGE_SIZE, &byte, 1), ERANGE);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, next),
                    CUDA_SUCCESS);
    CU_ASSERT_EQUAL(sync, 0);
    ga_release(&b);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(a);
    ga_free(next);
}

/* The same refused span from an address inside a GPU page: the fallback
 * pin (the first allocation's part of the pages) starts at the page, before
 * the address, so it is pinned but never mapped, as gdrcopy refuses to map
 * any pin of an address inside a GPU page (the mapping would begin before
 * what was asked for). */
static void test_span_refused_inside_page_not_mapped(void)
{
    gdr_mh_t mh = { 0 };
    gdr_info_t info;
    void *map = NULL;

    GDRX_REQUIRE(ga_cuda_setup() == 0);
    CUdeviceptr a = ga_alloc(4 * MiB), next = ga_alloc(4 * MiB);
    gdr_t g = ga_open();
    GDRX_REQUIRE(a && next && g);
    GDRX_REQUIRE(next == a + 4 * MiB); /* the sim places them so */
    CUdeviceptr addr = next - GPU_PAGE_SIZE + 4 * KiB; /* 60 KiB in a, 4 KiB in next */
    GDRX_REQUIRE(gdr_pin_buffer(g, addr, GPU_PAGE_SIZE, 0, 0, &mh) == 0);
    /* the fallback's pin: a's last page, not a span into next */
    CU_ASSERT_EQUAL(gdr_get_info(g, mh, &info), 0);
    CU_ASSERT_EQUAL(info.va, next - GPU_PAGE_SIZE);
    CU_ASSERT_EQUAL(info.mapped_size, GPU_PAGE_SIZE);
    CU_ASSERT_EQUAL(gdr_map(g, mh, &map, GPU_PAGE_SIZE), EINVAL);
    CU_ASSERT(gdr_get_info(g, mh, &info) == 0 && !info.mapped);
    CU_ASSERT_EQUAL(gdr_map_v2(g, mh, &map, GPU_PAGE_SIZE, GDR_MAP_FLAG_REQ_WC_MAPPING), EINVAL);
    CU_ASSERT_PTR_NULL(map);
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, mh), 0);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(a);
    ga_free(next);
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
    GDRX_TEST_CASE(test_span_refused_falls_back),
    GDRX_TEST_CASE(test_span_refused_inside_page_not_mapped),
    GDRX_TEST_CASE(test_no_allocation_in_range),
    GDRX_TEST_END,
};
