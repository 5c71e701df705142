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

#include "gapi.h"
#include "nvrm_reexec.h"

/* Memory made before gdr_open pins on nvrm by default; so does memory
 * made after it. */
static void test_memory_before_open(void)
{
    struct ga_buf b;

    GA_REQUIRE(ga_cuda_setup() == 0);
    CUdeviceptr big = ga_alloc(3 * MiB);
    CUdeviceptr small = ga_alloc(8 * KiB); /* sub-allocated */
    GA_REQUIRE(big && small);
    gdr_t g = ga_open();
    GA_REQUIRE(g != NULL);
    CUdeviceptr later = ga_alloc(3 * MiB);
    GA_REQUIRE(later != 0);

    GA_REQUIRE(ga_pin_map(g, big, 3 * MiB, &b) == 0);
    CU_ASSERT_EQUAL(b.info.va, big);
    gdr_info_t info;
    CU_ASSERT_EQUAL(gdr_get_info(g, b.mh, &info), 0);
    CU_ASSERT_EQUAL(info.mapping_type, GDR_MAPPING_TYPE_WC);
    CU_ASSERT(ga_roundtrip(b.mh, b.ptr, big, 3 * MiB, 1));
    ga_release(&b);
    /* UCX's page-rounded request around the small buffer */
    CUdeviceptr start = small & GPU_PAGE_MASK;
    CUdeviceptr end = (small + 8 * KiB + GPU_PAGE_OFFSET) & GPU_PAGE_MASK;
    GA_REQUIRE(ga_pin_map(g, start, end - start, &b) == 0);
    CU_ASSERT(ga_roundtrip(b.mh, (char *)b.map + (small - b.info.va), small, 8 * KiB, 2));
    ga_release(&b);
    GA_REQUIRE(ga_pin_map(g, later + 100, 5000, &b) == 0);
    CU_ASSERT(ga_roundtrip(b.mh, b.ptr, later + 100, 5000, 3));
    ga_release(&b);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(big);
    ga_free(small);
    ga_free(later);
}

static void test_versions_and_attributes(void)
{
    int major = 0, minor = 0, v = -1;

    GA_REQUIRE(ga_cuda_setup() == 0);
    gdr_t g = ga_open();
    GA_REQUIRE(g != NULL);
    CU_ASSERT_EQUAL(gdr_driver_get_version(g, &major, &minor), 0);
    CU_ASSERT_EQUAL(major, GDR_API_MAJOR_VERSION);
    CU_ASSERT_EQUAL(minor, GDR_API_MINOR_VERSION);
    CU_ASSERT_EQUAL(gdr_get_attribute(g, GDR_ATTR_USING_DMA_BUF_MMAP, &v), 0);
    CU_ASSERT_EQUAL(v, 0);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
}

/* gdrcopy's switch to its dma-buf backend picks gdrx's dmabuf backend,
 * over GDRX_BACKEND=nvrm; any other value leaves the choice alone. */
static void test_dmabuf_switch(void)
{
    int v = -1;

    GA_REQUIRE(ga_cuda_setup() == 0);
    setenv("GDRCOPY_USE_DMABUF_MMAP", "1", 1);
    gdr_t g = ga_open();
    GA_REQUIRE(g != NULL);
    CU_ASSERT_EQUAL(gdr_get_attribute(g, GDR_ATTR_USING_DMA_BUF_MMAP, &v), 0);
    CU_ASSERT_EQUAL(v, 1);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    setenv("GDRCOPY_USE_DMABUF_MMAP", "0", 1);
    g = ga_open();
    GA_REQUIRE(g != NULL);
    CU_ASSERT_EQUAL(gdr_get_attribute(g, GDR_ATTR_USING_DMA_BUF_MMAP, &v), 0);
    CU_ASSERT_EQUAL(v, 0);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    unsetenv("GDRCOPY_USE_DMABUF_MMAP");
}

/* cudaFree under a live mapping, on nvrm too: copies refused. */
static void test_cuda_free_revokes(void)
{
    struct ga_buf b;
    int flag = 0;
    char byte = 0;

    GA_REQUIRE(ga_cuda_setup() == 0);
    CUdeviceptr d = ga_alloc(2 * MiB);
    gdr_t g = ga_open();
    GA_REQUIRE(d && g);
    GA_REQUIRE(ga_pin_map(g, d, 2 * MiB, &b) == 0);
    ga_free(d);
    CU_ASSERT_EQUAL(gdr_copy_from_mapping(b.mh, &byte, b.ptr, 1), ESTALE);
    CU_ASSERT_EQUAL(gdr_get_callback_flag(g, b.mh, &flag), 0);
    CU_ASSERT_EQUAL(flag, 1);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_memory_before_open),
    GDRX_TEST_CASE(test_versions_and_attributes),
    GDRX_TEST_CASE(test_dmabuf_switch),
    GDRX_TEST_CASE(test_cuda_free_revokes),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite suites[] = {
    { "gdrapi_nvrm", NULL, NULL, cases },
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
