/*
 * test_errors.c - the error of every call for each kind of bad input, as
 * gdrcopy documents them (positive errno values: EINVAL for bad arguments,
 * EAGAIN for a second map), and for the handles gdrcopy would dereference
 * (a pin already unpinned, one of another gdr_t, a closed gdr_t), which
 * are refused here.  A failed call changes nothing.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "test_gdrapi.h"

static const gdr_mh_t sentinel = { .h = 0x5a5a5a5aul };

static void test_pin_bad_arguments(void)
{
    gdr_mh_t mh = sentinel;

    CUdeviceptr d;
    gdr_t g;
    GDRX_REQUIRE(ga_start(2 * MiB, &d, &g) == 0);
    long fds = gdrx_test_count_fds(), maps = gdrx_test_count_maps(1);
    char *host = malloc(GPU_PAGE_SIZE);

    CU_ASSERT_EQUAL(gdr_pin_buffer(g, d, 4096, 0, 0, NULL), EINVAL);
    CU_ASSERT_EQUAL(gdr_pin_buffer(g, d, 0, 0, 0, &mh), EINVAL);
    CU_ASSERT_EQUAL(gdr_pin_buffer_v2(g, d, 4096, 2, &mh), EINVAL);
    CU_ASSERT_EQUAL(gdr_pin_buffer_v2(g, d, 4096, ~0u, &mh), EINVAL);
    /* tokens are dropped, not checked: bad ranges with them still fail */
    CU_ASSERT_EQUAL(gdr_pin_buffer(g, d, 0, 1, 1, &mh), EINVAL);
    CU_ASSERT_EQUAL(gdr_pin_buffer(g, (unsigned long)host, 4096, 0, 0, &mh), EINVAL);
    CU_ASSERT_EQUAL(gdr_pin_buffer(g, 0, 4096, 0, 0, &mh), EINVAL);
    CU_ASSERT_EQUAL(gdr_pin_buffer(g, ~0ul - 100, 4096, 0, 0, &mh), EINVAL); /* wraps */
    CU_ASSERT_EQUAL(gdr_pin_buffer(g, d, (size_t)-1, 0, 0, &mh), EINVAL);
    CU_ASSERT_EQUAL(mh.h, sentinel.h);
    CU_ASSERT_EQUAL(gdrx_test_count_fds(), fds);
    CU_ASSERT_EQUAL(gdrx_test_count_maps(1), maps);
    free(host);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(d);
}

static void test_map_errors(void)
{
    gdr_mh_t mh;
    void *map = NULL, *other = (void *)0x1;
    char byte = 7;

    CUdeviceptr d;
    gdr_t g;
    GDRX_REQUIRE(ga_start(2 * MiB, &d, &g) == 0);
    GDRX_REQUIRE(gdr_pin_buffer(g, d, 2 * GPU_PAGE_SIZE, 0, 0, &mh) == 0);
    CU_ASSERT_EQUAL(gdr_map(g, mh, NULL, GPU_PAGE_SIZE), EINVAL);
    CU_ASSERT_EQUAL(gdr_map(g, mh, &other, 0), EINVAL);
    CU_ASSERT_EQUAL(gdr_map(g, mh, &other, 2 * GPU_PAGE_SIZE + 1), EINVAL); /* > mapped_size */
    CU_ASSERT_PTR_EQUAL(other, (void *)0x1);
    /* not mapped: copies, unmap */
    CU_ASSERT_EQUAL(gdr_copy_to_mapping(mh, (void *)d, &byte, 1), EINVAL);
    CU_ASSERT_EQUAL(gdr_copy_from_mapping(mh, &byte, (void *)d, 0), EINVAL);
    CU_ASSERT_EQUAL(gdr_unmap(g, mh, (void *)d, GPU_PAGE_SIZE), EINVAL);

    GDRX_REQUIRE(gdr_map(g, mh, &map, 2 * GPU_PAGE_SIZE) == 0);
    CU_ASSERT_EQUAL(gdr_map(g, mh, &other, GPU_PAGE_SIZE), EAGAIN); /* mapped already */
    CU_ASSERT_PTR_EQUAL(other, (void *)0x1);
    /* unmap of another address or size changes nothing */
    CU_ASSERT_EQUAL(gdr_unmap(g, mh, (char *)map + 4096, GPU_PAGE_SIZE), EINVAL);
    CU_ASSERT_EQUAL(gdr_unmap(g, mh, map, 0), EINVAL);
    CU_ASSERT_EQUAL(gdr_unmap(g, mh, map, 2 * GPU_PAGE_SIZE + 1), EINVAL);
    CU_ASSERT_EQUAL(gdr_copy_to_mapping(mh, map, &byte, 1), 0); /* still mapped */
    char got = 0;
    CU_ASSERT_EQUAL(cuMemcpyDtoH(&got, d, 1), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(got, 7);
    /* copies outside the pin's allocation range, and of nothing */
    CU_ASSERT_EQUAL(gdr_copy_to_mapping(mh, (char *)map + 2 * GPU_PAGE_SIZE, &byte, 1), ERANGE);
    CU_ASSERT_EQUAL(gdr_copy_to_mapping(mh, (char *)map + 2 * GPU_PAGE_SIZE - 1, &byte, 2),
                    ERANGE);
    CU_ASSERT_EQUAL(gdr_copy_from_mapping(mh, &byte, (char *)map - 1, 1), ERANGE);
    CU_ASSERT_EQUAL(gdr_copy_to_mapping(mh, map, &byte, 0), 0);
    CU_ASSERT_EQUAL(gdr_unmap(g, mh, map, 2 * GPU_PAGE_SIZE), 0);
    CU_ASSERT_EQUAL(gdr_unmap(g, mh, map, 2 * GPU_PAGE_SIZE), EINVAL); /* twice */
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, mh), 0);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(d);
}

/* A handle that names no live pin of this gdr_t: gdrcopy would follow the
 * pointer it holds; here every call refuses it. */
static void test_dead_handles(void)
{
    gdr_mh_t mh, theirs;
    gdr_info_t info;
    void *map;
    int flag;
    char byte = 0;

    GDRX_REQUIRE(ga_cuda_setup() == 0);
    CUdeviceptr d = ga_alloc(2 * MiB);
    gdr_t g = ga_open(), g2 = ga_open();
    GDRX_REQUIRE(d && g && g2);
    GDRX_REQUIRE(gdr_pin_buffer(g, d, GPU_PAGE_SIZE, 0, 0, &mh) == 0);
    GDRX_REQUIRE(gdr_map(g, mh, &map, GPU_PAGE_SIZE) == 0);
    GDRX_REQUIRE(gdr_pin_buffer(g2, d, GPU_PAGE_SIZE, 0, 0, &theirs) == 0);
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, mh), 0); /* unmaps too */

    const gdr_mh_t bad[] = { mh, { 0 }, { 12345 }, theirs };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CU_ASSERT_EQUAL(gdr_get_info(g, bad[i], &info), EINVAL);
        CU_ASSERT_EQUAL(gdr_get_callback_flag(g, bad[i], &flag), EINVAL);
        CU_ASSERT_EQUAL(gdr_map(g, bad[i], &map, GPU_PAGE_SIZE), EINVAL);
        CU_ASSERT_EQUAL(gdr_unmap(g, bad[i], map, GPU_PAGE_SIZE), EINVAL);
        CU_ASSERT_EQUAL(gdr_unpin_buffer(g, bad[i]), EINVAL);
    }
    /* the copies check only the handle: the one unpinned refuses */
    CU_ASSERT_EQUAL(gdr_copy_to_mapping(mh, map, &byte, 1), EINVAL);
    CU_ASSERT_EQUAL(gdr_copy_from_mapping(mh, &byte, map, 1), EINVAL);
    CU_ASSERT_EQUAL(gdr_get_info(g, mh, NULL), EINVAL);
    CU_ASSERT_EQUAL(gdr_get_callback_flag(g2, theirs, NULL), EINVAL);
    /* the other gdr_t's pin is untouched */
    CU_ASSERT_EQUAL(gdr_get_info(g2, theirs, &info), 0);
    CU_ASSERT_EQUAL(gdr_close(g2), 0);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(d);
}

/* A closed or made-up gdr_t is refused (EBADF), not dereferenced. */
static void test_closed_library(void)
{
    gdr_mh_t mh;
    gdr_info_t info;
    int v, major, minor;

    CUdeviceptr d;
    gdr_t g;
    GDRX_REQUIRE(ga_start(2 * MiB, &d, &g) == 0);
    GDRX_REQUIRE(gdr_pin_buffer(g, d, GPU_PAGE_SIZE, 0, 0, &mh) == 0);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    CU_ASSERT_EQUAL(gdr_close(g), EBADF);
    CU_ASSERT_EQUAL(gdr_close(NULL), EBADF);
    CU_ASSERT_EQUAL(gdr_pin_buffer(g, d, GPU_PAGE_SIZE, 0, 0, &mh), EBADF);
    CU_ASSERT_EQUAL(gdr_get_info(g, mh, &info), EBADF);
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, mh), EBADF);
    CU_ASSERT_EQUAL(gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, &v), EBADF);
    CU_ASSERT_EQUAL(gdr_driver_get_version(g, &major, &minor), EBADF);
    CU_ASSERT_EQUAL(gdr_get_attribute((gdr_t)&v, GDR_ATTR_USE_PERSISTENT_MAPPING, &v), EBADF);
    ga_free(d);
}

const struct gdrx_test_case gapi_errors_cases[] = {
    GDRX_TEST_CASE(test_pin_bad_arguments),
    GDRX_TEST_CASE(test_map_errors),
    GDRX_TEST_CASE(test_dead_handles),
    GDRX_TEST_CASE(test_closed_library),
    GDRX_TEST_END,
};
