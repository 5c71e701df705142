/*
 * test_rcache_fork.c - gdrx's registration cache across fork(): purged
 * before it (every registration no one holds unpinned) or kept, and UCX's
 * purge, which unpins through gdrx, never waiting for libgdrx's locks.
 *
 * UCX registers one fork handler, with the first cache that purges on
 * fork; glibc runs prepare handlers in the reverse of their registration
 * order.  The plugin registers libgdrx's handlers when UCX loads it, so in
 * a UCP process UCX's purge runs first, while libgdrx's locks are free
 * (test_rcache_fork).  Where a purging cache already existed when the
 * plugin loaded, the purge runs after libgdrx's prepare handler, on the
 * thread that holds libgdrx's locks, and gdrx's unpins are deferred to its
 * parent handler (libgdr/src/fork_defer.c; the thread's owned locks,
 * lock_order.h, would let them through too): test_rcache_fork_cache_first
 * makes such a cache before it loads the plugin, and hung with neither.
 *
 * SPDX-License-Identifier: MIT
 */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <ucm/api/ucm.h>
#include <ucs/memory/rcache.h>
#include <uct/api/version.h>

#include "ut_uct.h"

/* What purging on fork does: a registration no one holds is dropped (and
 * unpinned) before the fork, so the next one pins again; without it the
 * cache keeps it. */
static void ut_fork(const char *purge_on_fork, long pins)
{
    struct ut_uct u;
    struct ut_reg r;
    CUdeviceptr d;

    setenv("UCX_GDRX_RCACHE_PURGE_ON_FORK", purge_on_fork, 1);
    if ((tc_setup(0) != 0) || !(d = tc_alloc(1 << 20))) {
        return;
    }
    CU_ASSERT_EQUAL_FATAL(ut_open(&u), 0);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)d, 4096, &r), UCS_OK);
    ut_dereg(&u, &r);
    ut_fork_child_exits();
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)d, 4096, &r), UCS_OK);
    ut_dereg(&u, &r);
    ut_close(&u);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "md", "pins"), pins);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "md", "unpins"), pins);
    tc_free(d);
}

static void test_fork_purges(void)
{
    ut_fork("y", 2);
}

/* test_fork_while_registering's thread, inside the host cache's mem_reg
 * (so holding that cache's lock): it waits for the fork to start, then
 * registers device memory through gdrx. */
static struct {
    int          armed;
    int          in_reg;
    struct ut_uct *u;
    CUdeviceptr  d;      /* registered (and cached) before the race */
    CUdeviceptr  fresh;  /* registered in the race: a miss, a new pin */
    ucs_status_t status;
} ut_race;

static ucs_status_t ut_host_reg(void *context, ucs_rcache_t *rcache, void *arg,
                                ucs_rcache_region_t *region, uint16_t flags)
{
    struct ut_reg r;

    (void)context; (void)rcache; (void)arg; (void)region; (void)flags;
    if (__atomic_exchange_n(&ut_race.armed, 0, __ATOMIC_ACQ_REL)) {
        __atomic_store_n(&ut_race.in_reg, 1, __ATOMIC_RELEASE);
        usleep(300 * 1000); /* the fork's prepare handlers are running */
        ut_race.status = ut_reg(ut_race.u, (void*)ut_race.fresh, 4096, &r);
        if (ut_race.status == UCS_OK) {
            ut_dereg(ut_race.u, &r);
        }
    }
    return UCS_OK;
}

static void ut_host_dereg(void *context, ucs_rcache_t *rcache,
                          ucs_rcache_region_t *region)
{
    (void)context; (void)rcache; (void)region;
}

static void ut_host_dump(void *context, ucs_rcache_t *rcache,
                         ucs_rcache_region_t *region, char *buf, size_t max)
{
    (void)context; (void)rcache; (void)region;
    if (max > 0) {
        buf[0] = '\0';
    }
}

static const ucs_rcache_ops_t ut_host_ops = {
    .mem_reg     = ut_host_reg,
    .mem_dereg   = ut_host_dereg,
    .dump_region = ut_host_dump
};

/* A cache of host memory that purges on fork, made before gdrx's first use
 * as ucp_init makes UCP's own (UCX 1.15+); NULL if UCX refuses.  The first
 * such cache of a process registers UCX's fork handler. */
static ucs_rcache_t *ut_earlier_cache(void)
{
    ucs_rcache_params_t params;
    ucs_rcache_t *rcache = NULL;

    memset(&params, 0, sizeof(params));
    params.region_struct_size = sizeof(ucs_rcache_region_t);
#if !UT_UCX_AT_LEAST(1, 17)
    params.alignment          = 4096;
    params.max_alignment      = 4096;
#endif
    params.ucm_events         = UCM_EVENT_VM_UNMAPPED;
    params.ops                = &ut_host_ops;
    params.flags              = UCS_RCACHE_FLAG_PURGE_ON_FORK;
    params.max_regions        = ULONG_MAX;
    params.max_size           = SIZE_MAX;
    return (ucs_rcache_create(&params, "earlier", NULL, &rcache) == UCS_OK) ?
           rcache : NULL;
}

/* The same fork with a purging cache made before gdrx's first use, as in
 * every UCP process from UCX 1.15. */
static void test_fork_purges_after_ucp_cache(void)
{
    ucs_rcache_t *earlier = ut_earlier_cache();

    CU_ASSERT_PTR_NOT_NULL(earlier);
    ut_fork("y", 2);
    if (earlier != NULL) {
        ucs_rcache_destroy(earlier);
    }
}

static void test_fork_keeps_without_purge(void)
{
    ut_fork("n", 1);
}

#ifndef UT_CACHE_FIRST
static void *ut_race_thread(void *arg)
{
    static char host[8192];
    ucs_rcache_region_t *region;
    ucs_rcache_t *rcache = arg;
    void *page = (void*)(((uintptr_t)host + 4095) & ~(uintptr_t)4095);
    ucs_status_t status;

#if UT_UCX_AT_LEAST(1, 17)
    status = ucs_rcache_get(rcache, page, 4096, UCS_RCACHE_MIN_ALIGNMENT,
                            PROT_READ | PROT_WRITE, NULL, &region);
#else
    status = ucs_rcache_get(rcache, page, 4096, PROT_READ | PROT_WRITE, NULL,
                            &region);
#endif
    if (status == UCS_OK) {
        ucs_rcache_region_put(rcache, region);
    }
    return (void*)(uintptr_t)status;
}

/* A thread inside a cache's registration (holding its lock) registers GPU
 * memory through gdrx while the main thread forks: UCX's purge waits for
 * that lock, so it must run while libgdrx's locks are free.  md_first:
 * gdrx's MD opens before the cache is made (UCP's own cache, made after
 * every MD); else after it (an MD with a cache of its own, IB's or
 * gdr_copy's, opened before gdrx's). */
static void ut_fork_while_registering(int md_first)
{
    struct ut_uct u;
    struct ut_reg r;
    ucs_rcache_t *earlier = NULL;
    pthread_t thread;
    void *result;

    if ((tc_setup(0) != 0) || !(ut_race.d = tc_alloc(1 << 20)) ||
        !(ut_race.fresh = tc_alloc(1 << 20))) {
        return;
    }
    if (!md_first) {
        earlier = ut_earlier_cache();
        CU_ASSERT_PTR_NOT_NULL_FATAL(earlier);
    }
    CU_ASSERT_EQUAL_FATAL(ut_open_md(&u), 0);
    if (md_first) {
        earlier = ut_earlier_cache();
        CU_ASSERT_PTR_NOT_NULL_FATAL(earlier);
    }
    /* gdrx's first use, after the cache */
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)ut_race.d, 4096, &r), UCS_OK);
    ut_dereg(&u, &r);
    ut_race.u      = &u;
    ut_race.status = UCS_ERR_LAST;
    ut_race.armed  = 1;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&thread, NULL, ut_race_thread, earlier), 0);
    while (!__atomic_load_n(&ut_race.in_reg, __ATOMIC_ACQUIRE)) {
        usleep(1000);
    }
    ut_fork_child_exits();
    CU_ASSERT_EQUAL(pthread_join(thread, &result), 0);
    CU_ASSERT_EQUAL((ucs_status_t)(uintptr_t)result, UCS_OK);
    CU_ASSERT_EQUAL(ut_race.status, UCS_OK);
    ucs_rcache_destroy(earlier);
    uct_md_close(u.md);
    tc_free(ut_race.d);
    tc_free(ut_race.fresh);
}

static void test_fork_while_registering(void)
{
    ut_fork_while_registering(1);
}

/* libgdrx's handlers are registered when UCX loads the plugin, before any
 * MD opens: with them registered at gdrx's MD open, this hangs. */
static void test_fork_while_registering_md_later(void)
{
    ut_fork_while_registering(0);
}
#endif

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_fork_purges),
    GDRX_TEST_CASE(test_fork_purges_after_ucp_cache),
    GDRX_TEST_CASE(test_fork_keeps_without_purge),
#ifndef UT_CACHE_FIRST
    /* UCX's purge would wait, after libgdrx's prepare handler, for the
     * registering thread, which waits for libgdrx's locks: a cache made
     * before UCX loads its modules is outside what gdrx covers
     * (docs/semantics.md) */
    GDRX_TEST_CASE(test_fork_while_registering),
    GDRX_TEST_CASE(test_fork_while_registering_md_later),
#endif
    GDRX_TEST_END
};

#ifdef UT_CACHE_FIRST
/* In the harness's process, before the plugin loads: UCX's fork handler is
 * then registered before libgdrx's in every case's process too. */
static ucs_rcache_t *ut_first_cache;

static int ut_suite_init_cache_first(void)
{
    ut_first_cache = ut_earlier_cache();
    if (ut_first_cache == NULL) {
        fprintf(stderr, "cannot create a purging UCX cache\n");
        return -1;
    }
    return ut_suite_init();
}

static int ut_suite_cleanup_cache_first(void)
{
    ucs_rcache_destroy(ut_first_cache);
    return 0;
}

static const struct gdrx_test_suite suites[] = {
    { "ucx_rcache_fork/cache-first", ut_suite_init_cache_first,
      ut_suite_cleanup_cache_first, cases },
    GDRX_SUITE_END
};
#else
static const struct gdrx_test_suite suites[] = {
    { "ucx_rcache_fork", ut_suite_init, NULL, cases },
    GDRX_SUITE_END
};
#endif

int main(int argc, char **argv)
{
    return gdrx_test_main(argc, argv, suites);
}
