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

/* One copy of the table: where in the mapping, how many bytes, the host
 * buffer's misalignment, the pattern. */
struct copy_case {
    size_t   off, len, skew;
    uint32_t seed;
};

/* A check of one case in one direction: 0 if the copy succeeded and every
 * byte checked is right; else the copy's error, or -1 for wrong bytes. */
typedef int (*copy_check_fn)(const struct ga_buf *b, const struct copy_case *c,
                             unsigned char *scratch);

/* Every offset with every size; the failures, the first few printed. */
static unsigned check_all(const struct ga_buf *b, copy_check_fn check, const char *direction,
                          unsigned char *scratch)
{
    unsigned failures = 0, n = 0;

    for (size_t i = 0; i < NOFF; i++) {
        for (size_t j = 0; j < NSIZE; j++, n++) {
            struct copy_case c = { offsets[i], sizes[j], host_skews[n % 4], 2 * n + 1 };
            int rc = check(b, &c, scratch);
            if (rc && failures++ < 5)
                fprintf(stderr, "    %s mapping +%zu, %zu bytes, host +%zu: %s\n", direction,
                        c.off, c.len, c.skew, rc > 0 ? strerror(rc) : "wrong bytes");
        }
    }
    return failures;
}

/* Device bytes around the copy hold seed; the copy writes seed + 1. */
static int check_to(const struct ga_buf *b, const struct copy_case *c, unsigned char *scratch)
{
    size_t span = c->off + c->len + SLACK;
    unsigned char *src = scratch, *want = scratch + MAXLEN + 16, *got = want + SPAN;

    ga_fill(b->d, span, c->seed);
    ga_pattern(src + c->skew, c->len, c->seed + 1);
    int rc = gdr_copy_to_mapping(b->mh, b->ptr + c->off, src + c->skew, c->len);
    if (rc)
        return rc;
    ga_pattern(want, span, c->seed);
    memcpy(want + c->off, src + c->skew, c->len);
    if (cuMemcpyDtoH(got, b->d, span) != CUDA_SUCCESS || memcmp(got, want, span) != 0)
        return -1;
    return 0;
}

/* The device holds pattern 77 (also at scratch); host bytes around the
 * copy must keep 0xEE. */
static int check_from(const struct ga_buf *b, const struct copy_case *c, unsigned char *scratch)
{
    unsigned char *dev = scratch, *dst = scratch + SPAN;

    memset(dst, 0xEE, MAXLEN + 16 + SLACK);
    int rc = gdr_copy_from_mapping(b->mh, dst + c->skew, b->ptr + c->off, c->len);
    if (rc)
        return rc;
    int bad = memcmp(dst + c->skew, dev + c->off, c->len) != 0;
    for (size_t k = 0; k < c->skew; k++)
        bad |= dst[k] != 0xEE;
    for (size_t k = c->skew + c->len; k < c->skew + c->len + SLACK; k++)
        bad |= dst[k] != 0xEE;
    return bad ? -1 : 0;
}

static void test_to_mapping_any_alignment(void)
{
    gdr_t g;
    CUdeviceptr d;
    struct ga_buf b;
    unsigned char *scratch = malloc(MAXLEN + 16 + 2 * SPAN);

    setup(&g, &d, &b);
    GDRX_REQUIRE(g && scratch);
    CU_ASSERT_EQUAL(check_all(&b, check_to, "to", scratch), 0);
    teardown(g, d, &b);
    free(scratch);
}

static void test_from_mapping_any_alignment(void)
{
    gdr_t g;
    CUdeviceptr d;
    struct ga_buf b;
    unsigned char *scratch = malloc(SPAN + MAXLEN + 16 + SLACK);

    setup(&g, &d, &b);
    GDRX_REQUIRE(g && scratch);
    ga_fill(d, SPAN, 77);
    ga_pattern(scratch, SPAN, 77);
    CU_ASSERT_EQUAL(check_all(&b, check_from, "from", scratch), 0);
    teardown(g, d, &b);
    free(scratch);
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
    GDRX_REQUIRE(g && buf && want);
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
