/*
 * test_pin_span.c - GDRX_PIN_FLAG_SPAN: a pin that reaches past its
 * allocation into its neighbours (what libgdrapi uses for gdrcopy's whole
 * GPU pages): the neighbours' bytes are reachable, any of their frees
 * revokes it, a span the backend cannot pin as one piece is refused and
 * leaves nothing behind, and plain pins keep their one allocation.
 * Built twice: on the default backend, and (PIN_SPAN_NVRM) on nvrm under
 * the RM-ioctl emulator, where a span must lie in one recorded mapping.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tcuda.h"
#ifdef PIN_SPAN_NVRM
#  include "nvrm_reexec.h"
#  define BEFORE nvt_use_nvrm
#else
#  define BEFORE NULL
#endif

#define KiB 1024u
#define MiB (1024u * 1024u)

static uint64_t pin_count(gdrx_t g)
{
    uint64_t n = 0;

    CU_ASSERT_EQUAL(gdrx_get_attr(g, GDRX_ATTR_PIN_COUNT, &n), 0);
    return n;
}

/* A refused pin left nothing: no handle, and no pin in the context. */
static void assert_nothing_pinned(gdrx_t g, gdrx_pin_t pin)
{
    CU_ASSERT_EQUAL(pin.id, 0);
    CU_ASSERT_EQUAL(pin_count(g), 0);
}

/* CU_POINTER_ATTRIBUTE_SYNC_MEMOPS of the allocation at p. */
static unsigned int sync_memops(CUdeviceptr p)
{
    unsigned int sync = 7;

    CU_ASSERT_EQUAL(tc.PointerGetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p),
                    CUDA_SUCCESS);
    return sync;
}

/* Free those of the n buffers at p that were made. */
static void free_made(CUdeviceptr *p, int n)
{
    for (int i = 0; i < n; i++)
        if (p[i])
            tc_free(p[i]);
}

/* Three small buffers packed together (sub-allocations); 0 if the
 * allocator did not put them in one GPU page, after saying so. */
static int three_neighbours(CUdeviceptr p[3])
{
    for (int i = 0; i < 3; i++)
        p[i] = tc_alloc(1000);
    if (!p[0] || !p[1] || !p[2])
        return 0;
    if (!(p[0] < p[1] && p[1] < p[2] && (p[0] >> 16) == ((p[2] + 999) >> 16))) {
        CU_FAIL("the three small buffers are not in one 64 KiB page");
        return 0;
    }
    return 1;
}

/* The end of the cases on three neighbours: the context closed, the
 * buffers still there freed. */
static void span_finish(gdrx_t g, CUdeviceptr p[3])
{
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    free_made(p, 3);
}

/* Their start: CUDA set up, a context open, the buffers made; -1 (nothing
 * left to undo) if any of it failed. */
static int span_begin(gdrx_t *g, CUdeviceptr p[3])
{
    memset(p, 0, 3 * sizeof(*p));
    if (tc_setup(0))
        return -1;
    *g = tc_open();
    if (!three_neighbours(p)) {
        span_finish(*g, p);
        return -1;
    }
    return 0;
}

static void test_span_flags(void)
{
    gdrx_pin_t pin = { 0 };

    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    CUdeviceptr a = tc_alloc(4 * KiB);
    CU_ASSERT_EQUAL(gdrx_pin(g, a, 4 * KiB, GDRX_PIN_FLAG_FORCE_PCIE << 1, &pin), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_pin(g, a, 4 * KiB, GDRX_PIN_FLAG_SPAN | 0x80000000u, &pin), -EINVAL);
    assert_nothing_pinned(g, pin);
    /* a span that stays inside its allocation is a plain pin */
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, a + 100, 200, GDRX_PIN_FLAG_SPAN, &pin), 0);
    struct gdrx_pin_info info;
    CU_ASSERT_EQUAL(gdrx_pin_query(g, pin, &info), 0);
    CU_ASSERT(info.dptr == a + 100 && info.len == 200 && info.alloc_base == a &&
              info.alloc_size == 4 * KiB);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(a);
}

/* The first byte must be device memory of an allocation. */
static void test_span_needs_allocated_start(void)
{
    gdrx_pin_t pin = { 0 };
    CUdeviceptr p[3];
    gdrx_t g;

    if (span_begin(&g, p))
        return;
    tc_free(p[1]);
    CU_ASSERT_EQUAL(gdrx_pin(g, p[1], p[2] + 1000 - p[1], GDRX_PIN_FLAG_SPAN, &pin), -EINVAL);
    CU_ASSERT_EQUAL(pin.id, 0);
    /* from p[0] over the gap to p[2]: pinned */
    CU_ASSERT_EQUAL(gdrx_pin(g, p[0], p[2] + 1000 - p[0], GDRX_PIN_FLAG_SPAN, &pin), 0);
    CU_ASSERT_EQUAL(pin_count(g), 1);
    p[1] = 0;
    span_finish(g, p);
}

/* A span over three buffers writes and reads each of them; a plain pin of
 * the first refuses the others. */
static void test_span_reaches_neighbours(void)
{
    unsigned char buf[1000], want[1000];
    struct gdrx_pin_info info;
    gdrx_pin_t span, plain;
    CUdeviceptr p[3];
    void *cpu, *cpu_plain;
    gdrx_t g;

    if (span_begin(&g, p))
        return;
    size_t len = p[2] + 1000 - p[0];
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, p[0], len, GDRX_PIN_FLAG_SPAN, &span), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, span, &cpu), 0);
    CU_ASSERT_EQUAL(gdrx_pin_query(g, span, &info), 0);
    CU_ASSERT(info.dptr == p[0] && info.len == len && info.alloc_base == p[0] &&
              info.alloc_size < len);
    CU_ASSERT(info.pinned_base <= p[0] && info.pinned_base + info.pinned_size >= p[0] + len);
    for (int i = 0; i < 3; i++) {
        char *at = (char *)cpu + (p[i] - p[0]);
        tc_pattern(buf, sizeof(buf), 10 + i);
        CU_ASSERT_EQUAL(gdrx_copy_to_mapping(span, at, buf, sizeof(buf)), 0);
        CU_ASSERT(tc_check(p[i], sizeof(buf), 10 + i));
        tc_fill(p[i], sizeof(buf), 20 + i);
        CU_ASSERT_EQUAL(gdrx_copy_from_mapping(span, buf, at, sizeof(buf)), 0);
        tc_pattern(want, sizeof(want), 20 + i);
        CU_ASSERT_EQUAL(memcmp(buf, want, sizeof(buf)), 0);
    }
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(span, (char *)cpu + len, buf, 1), -ERANGE);
    /* every buffer it reaches has SYNC_MEMOPS (a cuMemcpy to it is done on
     * return, as for the buffer a plain pin holds) */
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(sync_memops(p[i]), 1);

    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, p[0], 1000, 0, &plain), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, plain, &cpu_plain), 0);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(plain, (char *)cpu_plain + (p[1] - p[0]), buf, 1),
                    -ERANGE);
    span_finish(g, p);
}

/* A neighbour's free revokes the span and leaves the plain pin of the
 * first buffer alone. */
static void test_span_revoked_by_neighbour_free(void)
{
    struct gdrx_pin_info info;
    gdrx_pin_t span, plain;
    unsigned char byte = 7;
    CUdeviceptr p[3];
    void *cpu, *cpu_plain;
    gdrx_t g;

    if (span_begin(&g, p))
        return;
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, p[0], p[2] + 1000 - p[0], GDRX_PIN_FLAG_SPAN, &span), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, p[0], 1000, 0, &plain), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, span, &cpu), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, plain, &cpu_plain), 0);
    tc_free(p[2]);
    p[2] = 0;
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(span, cpu, &byte, 1), -ESTALE);
    CU_ASSERT_EQUAL(gdrx_pin_query(g, span, &info), 0);
    CU_ASSERT_EQUAL(info.stale, 1);
    tc_pattern(&byte, 1, 30);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(plain, cpu_plain, &byte, 1), 0);
    CU_ASSERT(tc_check(p[0], 1, 30));
    CU_ASSERT_EQUAL(gdrx_pin_query(g, plain, &info), 0);
    CU_ASSERT_EQUAL(info.stale, 0);
    CU_ASSERT_EQUAL(gdrx_unpin(g, span), 0);
    span_finish(g, p);
}

/* Past the end of a large allocation's own driver memory: refused, with
 * nothing pinned or indexed. */
static void test_span_past_its_memory(void)
{
    gdrx_pin_t pin = { 0 };

    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    CUdeviceptr big = tc_alloc(4 * MiB);
    CU_ASSERT_EQUAL(gdrx_pin(g, big + 4 * MiB - 4 * KiB, 128 * KiB, GDRX_PIN_FLAG_SPAN, &pin),
                    -EINVAL);
    assert_nothing_pinned(g, pin);
    /* the same request without the flag: the allocation's end */
    CU_ASSERT_EQUAL(gdrx_pin(g, big + 4 * MiB - 4 * KiB, 128 * KiB, 0, &pin), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_pin(g, big + 4 * MiB - 4 * KiB, 4 * KiB, GDRX_PIN_FLAG_SPAN, &pin), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(big);
}

/* Two large allocations next to each other (each its own driver memory);
 * 0 after CU_FAIL if they are not adjacent. */
static int two_adjacent(CUdeviceptr *a, CUdeviceptr *b)
{
    *a = tc_alloc(4 * MiB);
    *b = tc_alloc(4 * MiB);
    if (!*a || !*b)
        return 0;
    if (*b != *a + 4 * MiB) {
        CU_FAIL("the two 4 MiB allocations are not adjacent");
        return 0;
    }
    return 1;
}

/* A span the backend refuses (into the next allocation's own memory)
 * changes nothing: no pin, and both allocations keep their SYNC_MEMOPS
 * (the one it starts in as well as the neighbour: issue 29). */
static void test_span_refused_changes_nothing(void)
{
    gdrx_pin_t pin = { 0 };
    CUdeviceptr ab[2];

    if (tc_setup(0))
        return;
    gdrx_t g = tc_open();
    if (two_adjacent(&ab[0], &ab[1])) {
        CUdeviceptr b = ab[1];
        CU_ASSERT_EQUAL(sync_memops(ab[0]), 0);
        CU_ASSERT_EQUAL(sync_memops(b), 0);
        CU_ASSERT_EQUAL(gdrx_pin(g, b - 4 * KiB, 128 * KiB, GDRX_PIN_FLAG_SPAN, &pin), -EINVAL);
        assert_nothing_pinned(g, pin);
        CU_ASSERT_EQUAL(sync_memops(ab[0]), 0);
        CU_ASSERT_EQUAL(sync_memops(b), 0);
        /* a pin the backend takes sets it, as GPUDirect RDMA requires */
        CU_ASSERT_EQUAL(gdrx_pin(g, b - 4 * KiB, 4 * KiB, GDRX_PIN_FLAG_SPAN, &pin), 0);
        CU_ASSERT_EQUAL(sync_memops(ab[0]), 1);
        CU_ASSERT_EQUAL(sync_memops(b), 0);
    }
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    free_made(ab, 2);
}

/* Neighbours allocated before the context opened (on nvrm: reached through
 * a dma-buf export of the span's pages, not the ioctl trace). */
static void test_span_memory_before_open(void)
{
    unsigned char buf[1000];
    CUdeviceptr p[3] = { 0 };
    gdrx_pin_t span;
    void *cpu;

    if (tc_setup(0))
        return;
    if (three_neighbours(p)) {
        gdrx_t g = tc_open();
        CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, p[0], p[2] + 1000 - p[0], GDRX_PIN_FLAG_SPAN, &span),
                              0);
        CU_ASSERT_EQUAL_FATAL(gdrx_map(g, span, &cpu), 0);
        tc_pattern(buf, sizeof(buf), 40);
        CU_ASSERT_EQUAL(gdrx_copy_to_mapping(span, (char *)cpu + (p[2] - p[0]), buf,
                                             sizeof(buf)), 0);
        CU_ASSERT(tc_check(p[2], sizeof(buf), 40));
        CU_ASSERT_EQUAL(gdrx_close(g), 0);
    }
    free_made(p, 3);
}

static const struct gdrx_test_case span_cases[] = {
    GDRX_TEST_CASE(test_span_flags),
    GDRX_TEST_CASE(test_span_needs_allocated_start),
    GDRX_TEST_CASE(test_span_reaches_neighbours),
    GDRX_TEST_CASE(test_span_revoked_by_neighbour_free),
    GDRX_TEST_CASE(test_span_past_its_memory),
    GDRX_TEST_CASE(test_span_refused_changes_nothing),
    GDRX_TEST_CASE(test_span_memory_before_open),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite suites[] = {
    { "pin_span", NULL, NULL, span_cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    return tc_main(argc, argv, suites, BEFORE);
}
