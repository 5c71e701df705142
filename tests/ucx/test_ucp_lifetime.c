/*
 * test_ucp_lifetime.c - GPU buffers through UCP (self and gdrx, the
 * simulated GPU) that outlive what gdrx saw of them: allocated before the
 * UCP context, or between two contexts where the first one's were freed
 * (UCX's memory-type cache, one per process, must not take them for host
 * memory), and a fork after transfers whose registrations stay cached.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>

#include "ut_ucp.h"

static void ut_ucp_open(struct ut_ucp *t)
{
    ut_ucp_open_tls(t, "self,gdrx", NULL);
}

/* A fork after GPU messages whose registrations are cached and no longer
 * held: from UCX 1.15 ucp_init's registration cache purges on fork, and
 * UCX's purge of gdrx's own cache unpins through gdrx (docs/semantics.md,
 * "Fork handlers that call libgdrx"; before the plugin registered
 * libgdrx's handlers at its load, that purge ran after libgdrx's prepare
 * handler and hung on UCX 1.16).  fork() returns, the child exits, the
 * parent goes on sending, and every pin is released in the end: a hang is
 * a case the harness kills. */
static void test_fork_after_transfers(void)
{
    const size_t len = 256 * 1024;
    struct ut_ucp t;
    CUdeviceptr src, dst;

    if (tc_setup(0) != 0) {
        return;
    }
    ut_ucp_open(&t);
    src = tc_alloc(len);
    dst = tc_alloc(len);
    CU_ASSERT_FATAL((src != 0) && (dst != 0));
    ut_send_kept(&t, src, dst, len, 41);
    ut_send_kept(&t, src, dst, len, 42);
    ut_fork_child_exits();
    ut_send_kept(&t, src, dst, len, 43);
    ut_ucp_close(&t);
    CU_ASSERT(ut_counter(t.stats, "md", "pins") >= 1);
    CU_ASSERT_EQUAL(ut_counter(t.stats, "md", "pins"),
                    ut_counter(t.stats, "md", "unpins"));
    tc_free(src);
    tc_free(dst);
}

/* In a new UCP context, messages of 8 B, 4000 B and len between device
 * buffers whose allocation gdrx's bridge never saw: where the bridge runs,
 * it has marked the existing mappings. */
static void ut_send_preallocated(CUdeviceptr src, CUdeviceptr dst, size_t len,
                                 uint32_t seed)
{
    const size_t lens[] = {8, 4000, len};
    struct ut_ucp t;
    size_t i;

    ut_ucp_open(&t);
    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); ++i) {
        ut_send_kept(&t, src, dst, lens[i], seed + (uint32_t)i);
    }
    ut_ucp_close(&t);
    if (ut_stats_has(t.stats, "events_source bridged")) {
        CU_ASSERT(ut_counter(t.stats, "md", "events_existing") >= 2);
    }
}

/* Device memory allocated before ucp_init (before gdrx's MD first set up
 * its events) and sent with UCX's memory-type cache on (its default): UCP
 * takes a cache miss for host memory, so gdrx marks what may be device
 * memory as unknown when it sets up, and UCP asks the MDs.  Without that a
 * UCX without CUDA copied the buffer with the CPU (a segfault here, on the
 * simulated GPU's inaccessible memory). */
static void test_alloc_before_init(void)
{
    const size_t len = 256 * 1024;
    CUdeviceptr src, dst;

    if (tc_setup(0) != 0) {
        return;
    }
    src = tc_alloc(len);
    dst = tc_alloc(len);
    CU_ASSERT_FATAL((src != 0) && (dst != 0));
    ut_send_preallocated(src, dst, len, 61);
    tc_free(src);
    tc_free(dst);
}

/* Buffers allocated while no gdrx MD was open, between two UCP contexts,
 * where the first context's buffers were freed: the frees took their
 * ranges out of UCX's memory-type cache (one per process, it outlives the
 * context).  gdrx's bridge, kept once an MD served with it, announces the
 * new ones; a bridge that ended with the first context left them to pass
 * for host memory (a segfault here). */
static void test_alloc_between_inits(void)
{
    const size_t len = 256 * 1024;
    CUdeviceptr src, dst, old_src, old_dst;
    struct ut_ucp t;
    int bridged;

    if (tc_setup(0) != 0) {
        return;
    }
    src = tc_alloc(len);
    dst = tc_alloc(len);
    CU_ASSERT_FATAL((src != 0) && (dst != 0));
    ut_ucp_open(&t);
    ut_send_kept(&t, src, dst, len, 59);
    tc_free(src);
    tc_free(dst);
    ut_ucp_close(&t);
    bridged = ut_stats_has(t.stats, "events_source bridged");

    old_src = src;
    old_dst = dst;
    src     = tc_alloc(len);
    dst     = tc_alloc(len);
    CU_ASSERT_FATAL((src != 0) && (dst != 0));
    /* the case is about reused ranges: the simulated GPU reuses them */
    CU_ASSERT((src == old_src) || (src == old_dst) || (dst == old_src) ||
              (dst == old_dst));
    ut_send_preallocated(src, dst, len, 71);
    if (bridged) {
        /* the two allocations made between the contexts */
        CU_ASSERT(ut_counter(t.stats, "md", "events_alloc") >= 2);
    }
    tc_free(src);
    tc_free(dst);
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_fork_after_transfers),
    GDRX_TEST_CASE(test_alloc_before_init),
    GDRX_TEST_CASE(test_alloc_between_inits),
    GDRX_TEST_END
};

static const struct gdrx_test_suite suites[] = {
    { "ucx_ucp_lifetime", ut_suite_init, NULL, cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    return gdrx_test_main(argc, argv, suites);
}
