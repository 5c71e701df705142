/*
 * test_memtype_race.c - UCX's memory-type cache under a free and an
 * allocation at the same address in two threads, forced in the worst
 * order with the interleaving points: the free's FREE (raised by gdrx
 * after the driver freed) comes after the new allocation exists and after
 * UCX's own hooks raised its ALLOC (as next to a CUDA-enabled UCX: the
 * _ucx_hooks program runs with one).  The new buffer must still be device memory to UCX: a miss
 * is host memory to UCP, which then copies a device pointer with the CPU.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <ucm/api/ucm.h>
#include <ucm/event/event.h>
#include <ucs/memory/memtype_cache.h>
#include <uct/api/version.h>

#include "ipoint.h"
#include "ut_uct.h"
#include "ut_ucx_hooks.h"

#define UT_WAIT_MS 10000u
#define UT_SIZE    (1u << 20)

/* 1 if UCX's memory-type cache takes [p, p + len) for CUDA memory. */
static int ut_memtype_is_cuda(CUdeviceptr p, size_t len)
{
    ucs_memory_info_t info;

    return (ucs_memtype_cache_lookup((void*)p, len, &info) == UCS_OK) &&
           (info.type == UCS_MEMORY_TYPE_CUDA);
}

static void ut_ucx_raise_alloc(CUdeviceptr p, size_t len)
{
    ucm_event_t event = {0};

    event.mem_type.address  = (void*)p;
    event.mem_type.size     = len;
    event.mem_type.mem_type = UCS_MEMORY_TYPE_CUDA;
    ucm_event_enter();
    ucm_event_dispatch(UCM_EVENT_MEM_TYPE_ALLOC, &event);
    ucm_event_leave();
}

static void *ut_free_thread(void *arg)
{
    if (tc_setup(0) == 0) { /* the device's context, current here too */
        tc_free(*(CUdeviceptr*)arg);
    }
    return NULL;
}

static void *ut_alloc_thread(void *arg)
{
    if (tc_setup(0) == 0) {
        *(CUdeviceptr*)arg = tc_alloc(UT_SIZE);
    }
    return NULL;
}

/* Thread A frees and parks before its FREE reaches UCM; thread B allocates
 * at the same address (the simulated GPU reuses it) and parks where
 * libgdrx reports the allocation (UCX's hooks, if inside gdrx's, raised
 * theirs by then); A's FREE goes out; B finishes.  B's buffer is CUDA. */
static void test_free_alloc_same_address(void)
{
    CUdeviceptr a, b = 0;
    pthread_t ta, tb;
    struct ut_uct u;

    if ((tc_setup(0) != 0) || (ut_open(&u) != 0)) {
        CU_FAIL("setup");
        return;
    }
    /* UCX creates its cache at the first lookup (UCP's, in a program) */
    (void)ut_memtype_is_cuda(1, 1);
    a = tc_alloc(UT_SIZE);
    CU_ASSERT_FATAL(a != 0);
    CU_ASSERT(ut_memtype_is_cuda(a, UT_SIZE));

    CU_ASSERT_EQUAL_FATAL(ipoint_arm("uct_gdrx.events.free"), 0);
    CU_ASSERT_EQUAL_FATAL(ipoint_arm("mem_events.alloc"), 0);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&ta, NULL, ut_free_thread, &a), 0);
    CU_ASSERT_EQUAL_FATAL(ipoint_wait("uct_gdrx.events.free", UT_WAIT_MS), 0);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&tb, NULL, ut_alloc_thread, &b), 0);
    CU_ASSERT_EQUAL(ipoint_wait("mem_events.alloc", UT_WAIT_MS), 0);
    /* What UCX's CUDA hooks do here when libgdrx's hook is the outer one
     * (the simulated GPU's entry points, called through pointers fetched
     * before UCX patched, pass UCX's hooks by): raise B's ALLOC, at the
     * address the simulated GPU hands out again. */
    ut_ucx_raise_alloc(a, UT_SIZE);
    /* B waits for A's release now; A raises its FREE */
    CU_ASSERT_EQUAL(ipoint_release("mem_events.alloc"), 0);
    CU_ASSERT_EQUAL(ipoint_release("uct_gdrx.events.free"), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);

    CU_ASSERT_EQUAL_FATAL(b, a); /* the race needs the same address */
    CU_ASSERT(ut_memtype_is_cuda(b, UT_SIZE));
    tc_free(b);
    ut_close(&u);
}

#if UCT_API >= UCT_VERSION(1, 22)
struct ut_query {
    uct_md_h     md;
    CUdeviceptr  p;
    ucs_status_t status;
};

static void *ut_query_thread(void *arg)
{
    struct ut_query *q          = arg;
    uct_md_mem_attr_t attr = {.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE};

    q->status = UCS_ERR_IO_ERROR;
    if (tc_setup(0) == 0) {
        q->status = uct_md_mem_query(q->md, (void*)q->p, 1, &attr);
    }
    return NULL;
}

/* UCX >= 1.22: a memory query writes the allocation it found into UCX's
 * cache.  Thread C queries A and parks before the write; A is freed and B
 * allocated at the same address; C goes on.  B's entry must stay (the
 * removal after the write that this replaced took it with it). */
static void test_query_free_alloc_same_address(void)
{
    struct ut_query q;
    struct ut_uct u;
    CUdeviceptr b;
    pthread_t thread_c;

    if ((tc_setup(0) != 0) || (ut_open(&u) != 0)) {
        CU_FAIL("setup");
        return;
    }
    (void)ut_memtype_is_cuda(1, 1);
    q.md = u.md;
    q.p  = tc_alloc(UT_SIZE);
    CU_ASSERT_FATAL(q.p != 0);
    CU_ASSERT_EQUAL_FATAL(ipoint_arm("uct_gdrx.md.memtype_write"), 0);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&thread_c, NULL, ut_query_thread, &q), 0);
    CU_ASSERT_EQUAL_FATAL(ipoint_wait("uct_gdrx.md.memtype_write", UT_WAIT_MS),
                          0);
    tc_free(q.p);
    b = tc_alloc(UT_SIZE);
    CU_ASSERT_EQUAL(ipoint_release("uct_gdrx.md.memtype_write"), 0);
    pthread_join(thread_c, NULL);
    CU_ASSERT_EQUAL(q.status, UCS_OK);
    CU_ASSERT_EQUAL_FATAL(b, q.p);
    CU_ASSERT(ut_memtype_is_cuda(b, UT_SIZE));
    tc_free(b);
    ut_close(&u);
}
#endif

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_free_alloc_same_address),
#if UCT_API >= UCT_VERSION(1, 22)
    GDRX_TEST_CASE(test_query_free_alloc_same_address),
#endif
    GDRX_TEST_END
};

#define UT_SUITE UT_HOOKS_SUITE("ucx_memtype_race")

static const struct gdrx_test_suite suites[] = {
    { UT_SUITE, ut_suite_init, NULL, cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
#if UCT_API < UCT_VERSION(1, 22)
    const char *not_run = "test_query_free_alloc_same_address (UCX < 1.22 "
                          "writes no memory-type entry at a query)";
#else
    const char *not_run = NULL;
#endif

    return ut_ucx_hooks_main(argc, argv, UT_HOOKS_BUILD, UT_SUITE, suites, not_run);
}
