/*
 * test_tool_method.c - the measuring method of the copy tools, in process
 * and without a GPU: how batches are sized (the minimum, the share of a
 * row, one slow first batch), the floor's bytes (nothing stored past the
 * copy on the mapping side), and the ring of slots every op of gdrx's copy
 * and of the floor takes in turn.  Ops here spin on the clock for a set
 * time, so the sizes follow from the rules, not from this machine's speed.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include "tool_copy.h"
#include "tool_floor.h"
#include "tool_measure.h"
#include "tt.h"

static struct tool_clock clk;

/* An op of ns per op; slow_ns more in its first timed call (the second:
 * the first is the warm-up). */
struct spin {
    double   ns, slow_ns;
    unsigned calls;
};

static void spin_for(double ns)
{
    uint64_t t0 = tool_clock_begin(&clk);
    while (tool_clock_ns(&clk, tool_clock_end(&clk) - t0) < ns)
        ;
}

static int spin_run(void *ctx, unsigned count)
{
    struct spin *s = ctx;
    if (s->calls++ == 1)
        spin_for(s->slow_ns);
    spin_for(s->ns * count);
    return 0;
}

/* copylat's method */
static const struct tool_method lat = { .samples = 3, .warmup = 1, .target_ns = 2000,
                                        .max_batch = 256, .min_batch = 16,
                                        .long_ns = 20000 };

static unsigned batch_of(const struct tool_method *m, double ns, double slow_ns)
{
    struct spin s = { ns, slow_ns, 0 };
    struct tool_op op = { .name = "spin", .run = spin_run, .ctx = &s };
    CU_ASSERT_EQUAL_FATAL(tool_measure(&clk, m, &op, 1, NULL), 0);
    CU_ASSERT_EQUAL(op.st.batch, op.batch);
    tool_ops_free(&op, 1);
    return op.batch;
}

static void test_batch_minimum(void)
{
    tool_clock_init(&clk);
    /* 100 ns: 2 us would take 20 ops, a power of two: 32 */
    unsigned b = batch_of(&lat, 100, 0);
    CU_ASSERT(b >= 16 && b <= 256 && (b & (b - 1)) == 0);
    /* 3 us: 2 us in one op, but 16 ops only if fewer last < 20 us: 8 */
    CU_ASSERT_EQUAL(batch_of(&lat, 3000, 0), 8);
    /* 30 us: one op is long enough */
    CU_ASSERT_EQUAL(batch_of(&lat, 30000, 0), 1);
}

/* One slow first batch (an interrupt, a page fault) no longer stops the
 * doubling at 1: the fastest of three batches decides. */
static void test_batch_slow_first(void)
{
    struct tool_method m = lat;
    m.min_batch = 0;
    tool_clock_init(&clk);
    CU_ASSERT(batch_of(&m, 100, 50000) >= 16);
}

/* The ops of a row that share run one batch length, the largest; the
 * others keep theirs. */
static void test_batch_shared(void)
{
    struct spin fast = { 100, 0, 0 }, slow = { 3000, 0, 0 }, alone = { 3000, 0, 0 };
    struct tool_op ops[3] = {
        { .name = "fast", .run = spin_run, .ctx = &fast, .share = 1 },
        { .name = "slow", .run = spin_run, .ctx = &slow, .share = 1 },
        { .name = "alone", .run = spin_run, .ctx = &alone },
    };
    tool_clock_init(&clk);
    CU_ASSERT_EQUAL_FATAL(tool_measure(&clk, &lat, ops, 3, NULL), 0);
    CU_ASSERT(ops[0].st.batch >= 16);
    CU_ASSERT_EQUAL(ops[1].st.batch, ops[0].st.batch);
    CU_ASSERT_EQUAL(ops[2].st.batch, 8);
    tool_ops_free(ops, 3);
}

/* The floor moves exactly the bytes: on the mapping side nothing past
 * them is stored; on the host side at most up to the next 64 bytes. */
static void test_floor_bytes(void)
{
    static const size_t sizes[] = { 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65,
                                    100, 127, 128, 200, 255, 256, 511, 512, 513, 1000,
                                    4096, 4099 };
    struct tool_floor f;
    uint8_t *map = aligned_alloc(64, 8192), *src = malloc(8192), *dst = aligned_alloc(64, 8192);

    CU_ASSERT_PTR_NOT_NULL_FATAL(map && src && dst);
    tool_floor_pick(&f);
    CU_ASSERT(f.store_width >= 8 && f.load_width >= 8 && f.store_insn && f.load_insn);
    for (size_t i = 0; i < 8192; i++)
        src[i] = (uint8_t)(i * 7 + 1);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k], up = (n + 63) & ~(size_t)63;
        memset(map, 0xee, 8192);
        f.store(map, src, n);
        CU_ASSERT_EQUAL(memcmp(map, src, n), 0);
        for (size_t i = n; i < n + 128; i++)
            if (map[i] != 0xee) {
                CU_FAIL("the floor stored past the copy");
                break;
            }
        memset(dst, 0xee, 8192);
        f.load(dst, map, n);
        CU_ASSERT_EQUAL(memcmp(dst, src, n), 0);
        CU_ASSERT_EQUAL(dst[up], 0xee);
    }
    free(map);
    free(src);
    free(dst);
}

/* Slots: the size rounded up to 64 apart, filling the ring. */
static void test_ring_slots(void)
{
    struct tool_copy b;
    memset(&b, 0, sizeof(b));
    tool_copy_set_size(&b, 8);
    CU_ASSERT_EQUAL(b.stride, 64);
    CU_ASSERT_EQUAL(b.slots, TOOL_COPY_RING / 64);
    tool_copy_set_size(&b, 100);
    CU_ASSERT_EQUAL(b.stride, 128);
    CU_ASSERT_EQUAL(b.slots, TOOL_COPY_RING / 128);
    tool_copy_set_size(&b, 40000);
    CU_ASSERT_EQUAL(b.slots, 1);
    tool_copy_set_size(&b, 1 << 20);
    CU_ASSERT_EQUAL(b.slots, 1);
    CU_ASSERT_EQUAL(b.slot, 0);
}

/* Each floor op takes its own line, in turn, back to the first after the
 * ring (host memory stands in for the mapping). */
static void test_ring_rotation(void)
{
    struct tool_copy b;
    uint8_t *ring = aligned_alloc(64, TOOL_COPY_RING), host[64];

    CU_ASSERT_PTR_NOT_NULL_FATAL(ring);
    memset(&b, 0, sizeof(b));
    tool_floor_pick(&b.floor);
    b.map = ring;
    b.host = host;
    tool_copy_set_size(&b, 8);
    struct tool_op to = tool_copy_op(&b, COPY_FLOOR, TOOL_DIR_TO);
    struct tool_op from = tool_copy_op(&b, COPY_FLOOR, TOOL_DIR_FROM);

    memset(ring, 0, TOOL_COPY_RING);
    memset(host, 0xab, sizeof(host));
    CU_ASSERT_EQUAL(to.run(to.ctx, 3), 0);
    for (size_t off = 0; off < 4 * 64; off += 64) {
        CU_ASSERT_EQUAL(ring[off], off < 3 * 64 ? 0xab : 0);
        CU_ASSERT_EQUAL(ring[off + 8], 0);
    }
    CU_ASSERT_EQUAL(b.slot, 3);
    /* the next op reads the 4th line, the one after it the 5th */
    ring[3 * 64] = 0x11;
    ring[4 * 64] = 0x22;
    CU_ASSERT_EQUAL(from.run(from.ctx, 1), 0);
    CU_ASSERT_EQUAL(host[0], 0x11);
    CU_ASSERT_EQUAL(from.run(from.ctx, 1), 0);
    CU_ASSERT_EQUAL(host[0], 0x22);
    CU_ASSERT_EQUAL(from.run(from.ctx, b.slots - 5), 0);
    CU_ASSERT_EQUAL(b.slot, 0);
    free(ring);
}

const struct gdrx_test_case tt_method_cases[] = {
    GDRX_TEST_CASE(test_batch_minimum),
    GDRX_TEST_CASE(test_batch_slow_first),
    GDRX_TEST_CASE(test_batch_shared),
    GDRX_TEST_CASE(test_floor_bytes),
    GDRX_TEST_CASE(test_ring_slots),
    GDRX_TEST_CASE(test_ring_rotation),
    GDRX_TEST_END
};
