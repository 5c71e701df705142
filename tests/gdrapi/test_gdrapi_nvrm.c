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

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_memory_before_open),
    GDRX_TEST_CASE(test_dmabuf_switch),
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
