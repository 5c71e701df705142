/*
 * test_ipoint.c - the interleaving points' harness (ipoint.h) against
 * libgdrx's hook: a parked thread stays parked until released, in the
 * order the test chooses; one thread parks per arm; several names at once;
 * every wait ends.  The threads reach the points by calling libgdrx's
 * gdrx_test_ipoint() directly, as GDRX_IPOINT does.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "gdrx_test.h"
#include "ipoint.h"

void gdrx_test_ipoint(const char *name);

#define WAIT_MS 5000u

/* What the threads did, in order: one letter each step. */
static char trace[32];
static atomic_uint trace_len;

static void step(char c)
{
    unsigned i = atomic_fetch_add(&trace_len, 1);
    if (i < sizeof(trace) - 1)
        trace[i] = c;
}

struct walker {
    const char *point;
    char        before, after;
    pthread_t   tid;
};

static void *walk(void *arg)
{
    struct walker *w = arg;

    step(w->before);
    gdrx_test_ipoint(w->point);
    step(w->after);
    return NULL;
}

static int walker_start(struct walker *w, const char *point, char before, char after)
{
    w->point = point;
    w->before = before;
    w->after = after;
    return pthread_create(&w->tid, NULL, walk, w);
}

static void test_parked_thread_waits_for_release(void)
{
    struct walker w;

    CU_ASSERT_EQUAL_FATAL(ipoint_arm("test.a"), 0);
    CU_ASSERT_EQUAL_FATAL(walker_start(&w, "test.a", 'a', 'b'), 0);
    CU_ASSERT_EQUAL(ipoint_wait("test.a", WAIT_MS), 0);
    step('M'); /* the parked thread has not gone on */
    CU_ASSERT_EQUAL(ipoint_release("test.a"), 0);
    pthread_join(w.tid, NULL);
    CU_ASSERT_STRING_EQUAL(trace, "aMb");
}

static void test_one_thread_parks_per_arm(void)
{
    struct walker first, second;

    CU_ASSERT_EQUAL_FATAL(ipoint_arm("test.a"), 0);
    CU_ASSERT_EQUAL_FATAL(walker_start(&first, "test.a", 'a', 'b'), 0);
    CU_ASSERT_EQUAL_FATAL(ipoint_wait("test.a", WAIT_MS), 0);
    /* The second passes the same point while the first is parked. */
    CU_ASSERT_EQUAL_FATAL(walker_start(&second, "test.a", 'x', 'y'), 0);
    pthread_join(second.tid, NULL);
    step('M');
    CU_ASSERT_EQUAL(ipoint_release("test.a"), 0);
    pthread_join(first.tid, NULL);
    CU_ASSERT_STRING_EQUAL(trace, "axyMb");
}

static void test_several_points_released_in_any_order(void)
{
    struct walker a, b;

    CU_ASSERT_EQUAL_FATAL(ipoint_arm("test.a"), 0);
    CU_ASSERT_EQUAL_FATAL(ipoint_arm("test.b"), 0);
    CU_ASSERT_EQUAL_FATAL(walker_start(&a, "test.a", 'a', 'A'), 0);
    CU_ASSERT_EQUAL_FATAL(ipoint_wait("test.a", WAIT_MS), 0);
    CU_ASSERT_EQUAL_FATAL(walker_start(&b, "test.b", 'b', 'B'), 0);
    CU_ASSERT_EQUAL_FATAL(ipoint_wait("test.b", WAIT_MS), 0);
    CU_ASSERT_EQUAL(ipoint_release("test.b"), 0);
    pthread_join(b.tid, NULL);
    CU_ASSERT_EQUAL(ipoint_release("test.a"), 0);
    pthread_join(a.tid, NULL);
    CU_ASSERT_STRING_EQUAL(trace, "abBA");
}

static void test_waits_end(void)
{
    CU_ASSERT_EQUAL(ipoint_wait("test.nobody", 50), -ETIMEDOUT);
    CU_ASSERT_EQUAL(ipoint_arm("test.a"), 0);
    CU_ASSERT_EQUAL(ipoint_wait("test.a", 50), -ETIMEDOUT); /* armed, not reached */
    CU_ASSERT_EQUAL(ipoint_release("test.a"), -ENOENT);      /* and disarmed */
    CU_ASSERT_EQUAL(ipoint_release("test.a"), -ENOENT);
    gdrx_test_ipoint("test.a"); /* passes */
}

static void test_reset_releases_everyone(void)
{
    struct walker a, b;

    CU_ASSERT_EQUAL_FATAL(ipoint_arm("test.a"), 0);
    CU_ASSERT_EQUAL_FATAL(ipoint_arm("test.b"), 0);
    CU_ASSERT_EQUAL_FATAL(ipoint_arm("test.c"), 0);
    CU_ASSERT_EQUAL_FATAL(walker_start(&a, "test.a", 'a', 'A'), 0);
    CU_ASSERT_EQUAL_FATAL(walker_start(&b, "test.b", 'b', 'B'), 0);
    CU_ASSERT_EQUAL(ipoint_wait("test.a", WAIT_MS), 0);
    CU_ASSERT_EQUAL(ipoint_wait("test.b", WAIT_MS), 0);
    ipoint_reset();
    pthread_join(a.tid, NULL);
    pthread_join(b.tid, NULL);
    CU_ASSERT_EQUAL(atomic_load(&trace_len), 4);
    gdrx_test_ipoint("test.c"); /* disarmed by the reset */
    CU_ASSERT_EQUAL(ipoint_arm("test.a"), 0); /* free again */
}

static void test_bad_arms_refused(void)
{
    char name[32];
    char longname[128];
    int armed = 0, rc = 0;

    memset(longname, 'n', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    CU_ASSERT_EQUAL(ipoint_arm(NULL), -EINVAL);
    CU_ASSERT_EQUAL(ipoint_arm(""), -EINVAL);
    CU_ASSERT_EQUAL(ipoint_arm(longname), -EINVAL);
    CU_ASSERT_EQUAL(ipoint_arm("test.a"), 0);
    CU_ASSERT_EQUAL(ipoint_arm("test.a"), -EBUSY);
    while (rc == 0 && armed < 1000) {
        snprintf(name, sizeof(name), "test.%d", armed);
        rc = ipoint_arm(name);
        armed += rc == 0;
    }
    CU_ASSERT_EQUAL(rc, -ENOSPC);
    CU_ASSERT(armed >= 4);
    ipoint_reset();
    CU_ASSERT_EQUAL(ipoint_arm("test.0"), 0);
}

/* Without a hook, and with a hook but nothing armed, a point returns. */
static void test_points_pass_when_unarmed(void)
{
    gdrx_test_ipoint("test.a");
    CU_ASSERT_EQUAL(ipoint_arm("test.a"), 0);
    ipoint_reset();
    for (int i = 0; i < 1000; i++)
        gdrx_test_ipoint("test.a");
    CU_PASS("no point parked");
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_parked_thread_waits_for_release),
    GDRX_TEST_CASE(test_one_thread_parks_per_arm),
    GDRX_TEST_CASE(test_several_points_released_in_any_order),
    GDRX_TEST_CASE(test_waits_end),
    GDRX_TEST_CASE(test_reset_releases_everyone),
    GDRX_TEST_CASE(test_bad_arms_refused),
    GDRX_TEST_CASE(test_points_pass_when_unarmed),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite suites[] = {
    { "ipoint", NULL, NULL, cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    return gdrx_test_main(argc, argv, suites);
}
