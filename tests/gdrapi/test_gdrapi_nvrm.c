/*
 * test_gdrapi_nvrm.c - libgdrapi on the nvrm backend (no kernel module of
 * gdrx's own), under the RM-ioctl emulator with the simulated GPU: the
 * order gdrcopy's users follow, memory allocated before gdr_open, whole
 * and sub-allocated, then pinned, mapped and copied with data checks;
 * what the version and attribute calls say there; gdrcopy's
 * GDRCOPY_USE_DMABUF_MMAP=1 choosing the dmabuf backend instead.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "nvrm_reexec.h"
#include "test_gdrapi.h"

/* Memory made before gdr_open pins on nvrm by default; so does memory
 * made after it. */
static void test_memory_before_open(void)
{
    struct ga_buf b;

    GDRX_REQUIRE(ga_cuda_setup() == 0);
    CUdeviceptr big = ga_alloc(3 * MiB);
    CUdeviceptr small = ga_alloc(8 * KiB); /* sub-allocated */
    GDRX_REQUIRE(big && small);
    gdr_t g = ga_open();
    GDRX_REQUIRE(g != NULL);
    CUdeviceptr later = ga_alloc(3 * MiB);
    GDRX_REQUIRE(later != 0);

    GDRX_REQUIRE(ga_pin_map(g, big, 3 * MiB, &b) == 0);
    CU_ASSERT_EQUAL(b.info.va, big);
    gdr_info_t info;
    CU_ASSERT_EQUAL(gdr_get_info(g, b.mh, &info), 0);
    CU_ASSERT_EQUAL(info.mapping_type, GDR_MAPPING_TYPE_WC);
    CU_ASSERT(ga_roundtrip(b.mh, b.ptr, big, 3 * MiB, 1));
    ga_release(&b);
    /* UCX's page-rounded request around the small buffer */
    CUdeviceptr start = small & GPU_PAGE_MASK;
    CUdeviceptr end = (small + 8 * KiB + GPU_PAGE_OFFSET) & GPU_PAGE_MASK;
    GDRX_REQUIRE(ga_pin_map(g, start, end - start, &b) == 0);
    CU_ASSERT(ga_roundtrip(b.mh, (char *)b.map + (small - b.info.va), small, 8 * KiB, 2));
    ga_release(&b);
    GDRX_REQUIRE(ga_pin_map(g, later, 5100, &b) == 0);
    CU_ASSERT(ga_roundtrip(b.mh, b.ptr + 100, later + 100, 5000, 3));
    ga_release(&b);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(big);
    ga_free(small);
    ga_free(later);
}

/* gdrcopy's switch to its dma-buf backend picks gdrx's dmabuf backend,
 * over GDRX_BACKEND=nvrm; any other value leaves the choice alone. */
static void test_dmabuf_switch(void)
{
    int v = -1;

    GDRX_REQUIRE(ga_cuda_setup() == 0);
    setenv("GDRCOPY_USE_DMABUF_MMAP", "1", 1);
    gdr_t g = ga_open();
    GDRX_REQUIRE(g != NULL);
    CU_ASSERT_EQUAL(gdr_get_attribute(g, GDR_ATTR_USING_DMA_BUF_MMAP, &v), 0);
    CU_ASSERT_EQUAL(v, 1);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    setenv("GDRCOPY_USE_DMABUF_MMAP", "0", 1);
    g = ga_open();
    GDRX_REQUIRE(g != NULL);
    CU_ASSERT_EQUAL(gdr_get_attribute(g, GDR_ATTR_USING_DMA_BUF_MMAP, &v), 0);
    CU_ASSERT_EQUAL(v, 0);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    unsetenv("GDRCOPY_USE_DMABUF_MMAP");
}

/* gdrcopy's invalidation_fork_child_gdr_pin_parent_with_tokens (issue
 * 30; ga_fork_after_open): in the fork child, where the driver refuses
 * CUDA (the gdr_open before the fork initialised it), gdr_open succeeds
 * as gdrcopy's does; a pin of the parent's memory fails, with ENODEV;
 * the attributes answer; made-up handles are refused; close works.  One
 * bit per check that failed. */
static int child_opens_without_cuda(CUdeviceptr parent_ptr)
{
    gdr_mh_t mh = { 0 }, made_up = { .h = 12345 };
    CUdeviceptr own = 0;
    void *map = NULL;
    int v = -1, bad = 0, bit = 0;

#define EXPECT(cond) (bad |= (cond) ? 0 : 1 << bit, bit++)
    EXPECT(cuMemAlloc(&own, 4096) == CUDA_ERROR_NOT_INITIALIZED); /* the driver's rule */
    gdr_t g = gdr_open();
    EXPECT(g != NULL);
    if (!g)
        return bad;
    int rc = gdr_pin_buffer(g, parent_ptr, GPU_PAGE_SIZE, 0, 0, &mh);
    if (rc != ENODEV)
        fprintf(stderr, "child: gdr_pin_buffer: %d\n", rc);
    EXPECT(rc == ENODEV);
    EXPECT(gdr_get_attribute(g, GDR_ATTR_USING_DMA_BUF_MMAP, &v) == 0 && v == 0);
    EXPECT(gdr_map(g, made_up, &map, GPU_PAGE_SIZE) != 0 && map == NULL);
    EXPECT(gdr_unpin_buffer(g, made_up) != 0);
    EXPECT(gdr_close(g) == 0);
    EXPECT(gdr_close(g) == EBADF);
#undef EXPECT
    return bad;
}

static void test_fork_child_open(void)
{
    int st = ga_fork_after_open(child_opens_without_cuda);

    if (st != 0)
        fprintf(stderr, "    child's failed checks: %#x\n", (unsigned)st);
    CU_ASSERT_EQUAL(st, 0);
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_memory_before_open),
    GDRX_TEST_CASE(test_dmabuf_switch),
    GDRX_TEST_CASE(test_fork_child_open),
    GDRX_TEST_END,
};

/* The backend-independent suites of test_gdrapi run here too. */
static const struct gdrx_test_suite suites[] = {
    { "gdrapi_nvrm", NULL, NULL, cases },
    GAPI_BACKEND_SUITES,
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    if (nvt_under_emulator(argv) != 0)
        return 1;
    setenv("GDRX_BACKEND", "nvrm", 1);
    unsetenv("GDRX_NVRM_IPC");
    return gdrx_test_main(argc, argv, suites);
}
