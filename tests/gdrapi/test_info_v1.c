/*
 * test_info_v1.c - the API as gdrcopy 2.0-2.3 declared it (gdrapi.h with
 * GDRX_GDRAPI_INFO_V1): struct gdr_info without mapping_type and a real
 * gdr_get_info, the symbol programs built against those versions call.
 * It fills the shorter struct only: a struct of the newer layout would
 * overrun their 40 bytes.
 *
 * SPDX-License-Identifier: MIT
 */
#define GDRX_GDRAPI_INFO_V1 1

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "test_gdrapi.h"

_Static_assert(offsetof(struct gdr_info, va) == 0 && offsetof(struct gdr_info, mapped_size) == 8 &&
               offsetof(struct gdr_info, page_size) == 16 &&
               offsetof(struct gdr_info, tm_cycles) == 24 &&
               offsetof(struct gdr_info, cycles_per_ms) == 32 && sizeof(struct gdr_info) == 40,
               "gdrcopy 2.3's struct gdr_info");

/* The struct followed by bytes gdr_get_info must not touch. */
struct guarded {
    gdr_info_t    info;
    unsigned char guard[16];
};

static void test_get_info_v1(void)
{
    struct guarded gi;
    gdr_mh_t mh;
    void *map;

    CUdeviceptr d;
    gdr_t g;
    GDRX_REQUIRE(ga_start(2 * MiB, &d, &g) == 0);
    GDRX_REQUIRE(gdr_pin_buffer(g, d + 100, 3 * GPU_PAGE_SIZE, 0, 0, &mh) == 0);
    memset(&gi, 0xA5, sizeof(gi));
    CU_ASSERT_EQUAL(gdr_get_info(g, mh, &gi.info), 0);
    CU_ASSERT_EQUAL(gi.info.va, d);
    CU_ASSERT_EQUAL(gi.info.mapped_size, 4 * GPU_PAGE_SIZE);
    CU_ASSERT_EQUAL(gi.info.page_size, GPU_PAGE_SIZE);
    CU_ASSERT_EQUAL(gi.info.mapped, 0);
    CU_ASSERT_EQUAL(gi.info.wc_mapping, 0);
    /* inside a GPU page: pinned, not mapped (gdrcopy); its page maps */
    CU_ASSERT_EQUAL(gdr_map(g, mh, &map, 4 * GPU_PAGE_SIZE), EINVAL);
    CU_ASSERT_EQUAL(gdr_unpin_buffer(g, mh), 0);
    GDRX_REQUIRE(gdr_pin_buffer(g, d, 4 * GPU_PAGE_SIZE, 0, 0, &mh) == 0);
    GDRX_REQUIRE(gdr_map(g, mh, &map, 4 * GPU_PAGE_SIZE) == 0);
    CU_ASSERT_EQUAL(gdr_get_info(g, mh, &gi.info), 0);
    CU_ASSERT_EQUAL(gi.info.mapped, 1);
    CU_ASSERT_EQUAL(gi.info.wc_mapping, 1);
    for (size_t i = 0; i < sizeof(gi.guard); i++)
        CU_ASSERT_EQUAL(gi.guard[i], 0xA5);
    CU_ASSERT_EQUAL(gdr_get_info(g, mh, NULL), EINVAL);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(d);
}

const struct gdrx_test_case gapi_info_v1_cases[] = {
    GDRX_TEST_CASE(test_get_info_v1),
    GDRX_TEST_END,
};
