/*
 * test_leaks.c - nothing a pin takes from the backend stays behind: rounds
 * of pin / map / copy / unmap / unpin cycles (some pins revoked by a CUDA
 * free first, some left for gdrx_close) end with the process holding the
 * file descriptors and shared mappings it held after the first round, and
 * no mapping at any address gdrx_map handed out (a revoked pin's private
 * reservation included).  Private mappings are not counted: malloc and the
 * sanitizers' allocators add them at will.  Runs on the backend the suite runs
 * with: the sim's dma-bufs under `make check`, gdrdrv in the qemu guest.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_api.h"

#define CYCLES     60
#define KEEP_EVERY 5 /* this cycle's pin is left for gdrx_close */
#define FREE_EVERY 7 /* this cycle frees its memory while pinned */
#define BUF_LEN    (1024u * 1024u)

struct round {
    void  *cpu[CYCLES]; /* what gdrx_map gave */
    int    n;
};

/* Pin [p + off, +len), map it, copy through it; unpin unless keep. */
static void cycle(gdrx_t g, CUdeviceptr p, size_t off, size_t len, int keep, int unmap_first,
                  struct round *r)
{
    gdrx_pin_t pin;
    void *cpu = NULL;
    char byte = 0x5a;

    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, p + off, len, 0, &pin), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, pin, &cpu), 0);
    r->cpu[r->n++] = cpu;
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pin, cpu, &byte, 1), 0);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pin, &byte, (char *)cpu + len - 1, 1), 0);
    if (keep)
        return;
    if (unmap_first)
        CU_ASSERT_EQUAL(gdrx_unmap(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
}

/* Memory of its own, freed while pinned and mapped (the free hook revokes
 * the pin: its mapping becomes an inaccessible reservation), then unpinned. */
static void freed_cycle(gdrx_t g, size_t len, struct round *r)
{
    CUdeviceptr b = tc_alloc(len);
    gdrx_pin_t pin;
    void *cpu = NULL;

    CU_ASSERT_FATAL(b != 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, b, len, 0, &pin), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, pin, &cpu), 0);
    r->cpu[r->n++] = cpu;
    tc_free(b);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
}

static void one_round(CUdeviceptr p, struct round *r)
{
    gdrx_t g = tc_open();

    memset(r, 0, sizeof(*r));
    for (int i = 0; i < CYCLES; i++) {
        size_t off = (size_t)i * 4099 % (BUF_LEN / 2);
        size_t len = 1 + (size_t)i * 7919 % (BUF_LEN / 2);
        if (i % FREE_EVERY == FREE_EVERY - 1)
            freed_cycle(g, (size_t)(i + 1) * 20000, r);
        else
            cycle(g, p, off, len, i % KEEP_EVERY == 0, i & 1, r);
    }
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
}

static void test_nothing_left_behind(void)
{
    static struct round r;

    if (tc_setup(0))
        return;
    CUdeviceptr p = tc_alloc(BUF_LEN);
    CU_ASSERT_FATAL(p != 0);
    /* The first round takes what is taken once (libcuda, hooks, handle
     * table, copy dispatch); later rounds must take nothing for good. */
    one_round(p, &r);
    long fds = gdrx_test_count_fds(), maps = gdrx_test_count_maps(1);
    CU_ASSERT_FATAL(fds > 0 && maps >= 0);
    for (int round = 0; round < 3; round++) {
        one_round(p, &r);
        long fds_now = gdrx_test_count_fds(), maps_now = gdrx_test_count_maps(1);
        if (fds_now != fds || maps_now != maps)
            fprintf(stderr, "    after round %d: %ld fds (%ld before), %ld shared mappings (%ld)\n",
                    round + 2, fds_now, fds, maps_now, maps);
        CU_ASSERT_EQUAL(fds_now, fds);
        CU_ASSERT_EQUAL(maps_now, maps);
        int still = 0;
        for (int i = 0; i < r.n; i++)
            still += gdrx_test_is_mapped(r.cpu[i]) != 0;
        CU_ASSERT_EQUAL(still, 0);
    }
    tc_free(p);
}

const struct gdrx_test_case api_leak_cases[] = {
    GDRX_TEST_CASE(test_nothing_left_behind),
    GDRX_TEST_END,
};
