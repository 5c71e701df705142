/*
 * test_copy.c - gdr_copy_to_mapping and gdr_copy_from_mapping at any
 * alignment, as gdrcopy accepts: every offset of the mapping from 0 to 17
 * and around 16, 32 and 64 bytes and a GPU page boundary, every size from
 * 0 to 17 and around the vector widths, and odd host addresses.  Each copy
 * is checked through cuMemcpy, bytes around it included: exactly the
 * range asked for changes, and a read writes nothing past its length.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_gdrapi.h"

static const size_t offsets[] = {
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
    31, 32, 33, 63, 64, 65, 4095, GPU_PAGE_SIZE - 13,
};
static const size_t sizes[] = {
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
    31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 1000, 4097, 8191,
};
static const size_t host_skews[] = { 0, 1, 3, 8 };

#define NOFF (sizeof(offsets) / sizeof(offsets[0]))
#define NSIZE (sizeof(sizes) / sizeof(sizes[0]))
#define SLACK 64 /* bytes checked past each copy */
#define MAXLEN 8191
#define SPAN (2 * GPU_PAGE_SIZE) /* pinned and mapped */

static void setup(gdr_t *g, CUdeviceptr *d, struct ga_buf *b)
{
    *g = NULL;
    *d = 0;
    if (ga_cuda_setup() != 0)
        return;
    *d = ga_alloc(2 * MiB);
    *g = *d ? ga_open() : NULL;
    if (*g && ga_pin_map(*g, *d, SPAN, b) != 0) {
        gdr_close(*g);
        *g = NULL;
    }
}

static void teardown(gdr_t g, CUdeviceptr d, struct ga_buf *b)
{
    ga_release(b);
    CU_ASSERT_EQUAL(gdr_close(g), 0);
    ga_free(d);
}

static void test_to_mapping_any_alignment(void)
{
    gdr_t g;
    CUdeviceptr d;
    struct ga_buf b;
    unsigned char *src = malloc(MAXLEN + 16), *want = malloc(SPAN), *got = malloc(SPAN);
    unsigned failures = 0, n = 0;

    setup(&g, &d, &b);
    GA_REQUIRE(g && src && want && got);
    for (size_t i = 0; i < NOFF; i++) {
        for (size_t j = 0; j < NSIZE; j++, n++) {
            size_t off = offsets[i], len = sizes[j], skew = host_skews[n % 4];
            size_t span = off + len + SLACK;
            uint32_t seed = (uint32_t)(2 * n + 1);
            ga_fill(d, span, seed);
            ga_pattern(src + skew, len, seed + 1);
            int rc = gdr_copy_to_mapping(b.mh, b.ptr + off, src + skew, len);
            ga_pattern(want, span, seed);
            memcpy(want + off, src + skew, len);
            if (rc != 0 || cuMemcpyDtoH(got, d, span) != CUDA_SUCCESS ||
                memcmp(got, want, span) != 0) {
                if (failures++ < 5)
                    fprintf(stderr, "    to mapping +%zu, %zu bytes, host +%zu: rc %d%s\n", off,
                            len, skew, rc, rc ? "" : ", wrong bytes");
            }
        }
    }
    CU_ASSERT_EQUAL(failures, 0);
    teardown(g, d, &b);
    free(src);
    free(want);
    free(got);
}

static void test_from_mapping_any_alignment(void)
{
    gdr_t g;
    CUdeviceptr d;
    struct ga_buf b;
    unsigned char *dev = malloc(SPAN), *dst = malloc(MAXLEN + 16 + SLACK);
    unsigned failures = 0, n = 0;

    setup(&g, &d, &b);
    GA_REQUIRE(g && dev && dst);
    ga_fill(d, SPAN, 77);
    ga_pattern(dev, SPAN, 77);
    for (size_t i = 0; i < NOFF; i++) {
        for (size_t j = 0; j < NSIZE; j++, n++) {
            size_t off = offsets[i], len = sizes[j], skew = host_skews[n % 4];
            memset(dst, 0xEE, MAXLEN + 16 + SLACK);
            int rc = gdr_copy_from_mapping(b.mh, dst + skew, b.ptr + off, len);
            int bad = rc != 0 || memcmp(dst + skew, dev + off, len) != 0;
            for (size_t k = 0; k < skew; k++)
                bad |= dst[k] != 0xEE;
            for (size_t k = skew + len; k < skew + len + SLACK; k++)
                bad |= dst[k] != 0xEE;
            if (bad && failures++ < 5)
                fprintf(stderr, "    from mapping +%zu, %zu bytes, host +%zu: rc %d%s\n", off,
                        len, skew, rc, rc ? "" : ", wrong bytes");
        }
    }
    CU_ASSERT_EQUAL(failures, 0);
    teardown(g, d, &b);
    free(dev);
    free(dst);
}

/* The whole mapping in one copy each way, and a copy ending exactly at its
 * last byte. */
static void test_whole_mapping(void)
{
    gdr_t g;
    CUdeviceptr d;
    struct ga_buf b;
    unsigned char *buf = malloc(SPAN), *want = malloc(SPAN);

    setup(&g, &d, &b);
    GA_REQUIRE(g && buf && want);
    ga_pattern(buf, SPAN, 5);
    CU_ASSERT_EQUAL(gdr_copy_to_mapping(b.mh, b.ptr, buf, SPAN), 0);
    CU_ASSERT(ga_check(d, SPAN, 5));
    ga_fill(d, SPAN, 6);
    ga_pattern(want, SPAN, 6);
    CU_ASSERT_EQUAL(gdr_copy_from_mapping(b.mh, buf, b.ptr, SPAN), 0);
    CU_ASSERT_EQUAL(memcmp(buf, want, SPAN), 0);
    CU_ASSERT_EQUAL(gdr_copy_from_mapping(b.mh, buf, b.ptr + SPAN - 3, 3), 0);
    CU_ASSERT_EQUAL(memcmp(buf, want + SPAN - 3, 3), 0);
    teardown(g, d, &b);
    free(buf);
    free(want);
}

const struct gdrx_test_case gapi_copy_cases[] = {
    GDRX_TEST_CASE(test_to_mapping_any_alignment),
    GDRX_TEST_CASE(test_from_mapping_any_alignment),
    GDRX_TEST_CASE(test_whole_mapping),
    GDRX_TEST_END,
};
