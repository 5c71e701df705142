/*
 * copy_equal.c - a variant's routines give memcpy's result for every small
 * size and alignment, and for sampled sizes up to 1 MiB, and leave the
 * bytes around the destination alone.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "copy_tests.h"

#define CANARY 0xA5
#define EDGE   64            /* bytes checked on each side of dst */
#define SMALL_MAX 256
#define SAMPLES 2000
#define SAMPLED_MAX (1u << 20)

struct buffers {
    uint8_t *src, *dst;
    size_t   size; /* of each */
};

/* 64-B aligned and sized: from the mapping, src is the mapping side, which
 * the routines read in whole aligned blocks of up to 64 B (the real mapping
 * is whole pages); they must all lie inside the allocation. */
static int buffers_init(struct buffers *b, size_t size, uint64_t *seed)
{
    size = (size + 63) & ~(size_t)63;
    b->size = size;
    b->src = aligned_alloc(64, size);
    b->dst = aligned_alloc(64, size);
    if (!b->src || !b->dst)
        return -1;
    test_fill_random(b->src, size, seed, CANARY);
    memset(b->dst, CANARY, size);
    return 0;
}

static void buffers_free(struct buffers *b)
{
    free(b->src);
    free(b->dst);
}

/* One copy; returns 1 if it matched and left the edges alone.  Restores
 * dst to all-canary for the next copy. */
static int copy_one(gdrx_copy_fn fn, struct buffers *b, size_t soff, size_t doff, size_t len)
{
    uint8_t *d = b->dst + doff;
    size_t before = doff < EDGE ? doff : EDGE;
    size_t after = b->size - doff - len < EDGE ? b->size - doff - len : EDGE;

    fn(d, b->src + soff, len);
    int ok = memcmp(d, b->src + soff, len) == 0 &&
             test_first_not(d - before, before, CANARY) == before &&
             test_first_not(d + len, after, CANARY) == after;
    if (!ok)
        fprintf(stderr, "    %s: len %zu src+%zu dst+%zu differs from memcpy\n",
                gdrx_copy_variant_name(test_current_variant()), len, soff, doff);
    memset(d, CANARY, len);
    return ok;
}

/* Sizes 0..256 with every source and destination offset 0..63. */
static void equal_small(enum test_dir dir)
{
    gdrx_copy_fn fn = test_copy_fn(dir);
    struct buffers b;
    uint64_t seed = 1;
    unsigned failures = 0, copies = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(fn);
    CU_ASSERT_FATAL(buffers_init(&b, EDGE + SMALL_MAX + EDGE + 64, &seed) == 0);
    for (size_t len = 0; len <= SMALL_MAX; len++)
        for (size_t soff = 0; soff < 64; soff++)
            for (size_t doff = 0; doff < 64; doff++, copies++)
                if (!copy_one(fn, &b, soff, EDGE + doff, len) && ++failures > 20)
                    goto out;
out:
    CU_ASSERT_EQUAL(failures, 0);
    CU_ASSERT_EQUAL(copies, (SMALL_MAX + 1) * 64 * 64);
    buffers_free(&b);
}

/* Sizes up to 1 MiB, log-uniform so that every magnitude is covered, with
 * random offsets 0..4095 on both sides (fixed seed: reproducible). */
static void equal_sampled(enum test_dir dir)
{
    gdrx_copy_fn fn = test_copy_fn(dir);
    struct buffers b;
    uint64_t seed = 0x5eed0000 + (uint64_t)dir;
    unsigned failures = 0, copies = 0;
    size_t total = 0;
    const size_t slack = 4096 + EDGE;

    CU_ASSERT_PTR_NOT_NULL_FATAL(fn);
    CU_ASSERT_FATAL(buffers_init(&b, EDGE + SAMPLED_MAX + slack, &seed) == 0);
    for (unsigned i = 0; i < SAMPLES && failures <= 20; i++) {
        unsigned bits = (unsigned)(gdrx_test_rand(&seed) % 21);
        size_t len = (size_t)(gdrx_test_rand(&seed) % ((1u << bits) + 1));
        if (i < 4) /* the extremes, always */
            len = i < 2 ? SAMPLED_MAX : SAMPLED_MAX - 1;
        size_t soff = (size_t)(gdrx_test_rand(&seed) % 4096);
        size_t doff = EDGE + (size_t)(gdrx_test_rand(&seed) % 4096);
        failures += !copy_one(fn, &b, soff, doff, len);
        copies++;
        total += len;
    }
    printf("[%u copies, %zu MiB] ", copies, total >> 20);
    CU_ASSERT_EQUAL(failures, 0);
    CU_ASSERT_EQUAL(copies, SAMPLES);
    buffers_free(&b);
}

void test_equal_small_to(void)
{
    equal_small(TEST_TO_MAP);
}

void test_equal_small_from(void)
{
    equal_small(TEST_FROM_MAP);
}

void test_equal_sampled_to(void)
{
    equal_sampled(TEST_TO_MAP);
}

void test_equal_sampled_from(void)
{
    equal_sampled(TEST_FROM_MAP);
}
