/*
 * test_ucp_aside.c - a gdrx that cannot serve steps aside: named in
 * UCX_TLS with its backend forced to one that does not open (through the
 * environment, which the listing sees, or UCP's own configuration, which
 * only the MD's first use sees), or with CUDA failing at that first use,
 * ucp_init and ucp_worker_create succeed, host memory moves (eager and
 * rendezvous, default protocols and UCX_PROTO_ENABLE=y) and gdrx copies
 * nothing; device memory ends as it ends without gdrx, and where UCX has a
 * usable cuda_copy (a GPU machine) goes through cuda_copy.
 * (tests/ucx/test_md_setup.c checks the MD and interface themselves.)
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ut_ucp.h"

/* Set in a child this program runs again as: "aside" (ut_aside_outcome),
 * "cuda_copy" (ut_has_cuda_copy). */
#define UT_CHILD_ENV "GDRX_UT_UCP_ASIDE_CHILD"

/* The child: UCP over $UCX_TLS with gdrx's MD forced, in UCP's own
 * configuration, to a gdrdrv backend that cannot open, then one message
 * between two device buffers.  Prints how far it got; whatever UCX does
 * with the buffers may end the process (no core file). */
static int ut_child_main(void)
{
    ucp_request_param_t param = {0};
    ucs_status_t send_status, recv_status, status;
    CUdeviceptr src, dst;
    struct ut_ucp t;
    void *rreq;

    setrlimit(RLIMIT_CORE, &(struct rlimit){0, 0});
    if ((ut_load_plugin() != 0) || (tc_setup(0) != 0) ||
        !(src = tc_alloc(1000)) || !(dst = tc_alloc(1000))) {
        printf("set-up failed\n");
        return 1;
    }
    setenv("GDRX_GDRDRV_PATH", "/nonexistent/gdrdrv", 1);
    status = ut_ucp_init(&t, getenv("UCX_TLS"), "gdrdrv");
    if (status == UCS_OK) {
        status = ut_ucp_worker(&t);
    }
    if (status != UCS_OK) {
        printf("ucp start failed: %s\n", ucs_status_string(status));
        return 1;
    }
    printf("worker up\n");
    fflush(stdout);
    rreq        = ucp_tag_recv_nbx(t.worker, (void*)dst, 1000, 7, (ucp_tag_t)-1,
                                   &param);
    send_status = ut_wait_status(&t, ucp_tag_send_nbx(t.ep, (void*)src, 1000,
                                                      7, &param));
    recv_status = ut_wait_status(&t, rreq);
    printf("transfer returned: send %s, receive %s\n",
           ucs_status_string(send_status), ucs_status_string(recv_status));
    fflush(stdout);
    return 0;
}

/* gdrx named in UCX_TLS but unable to serve, its backend forced to a
 * gdrdrv without its device node: through the environment (the listing
 * sees it: no gdrx resource) or through UCP's own configuration (the MD
 * finds out at its first use and stands aside).  Either way ucp_init and
 * ucp_worker_create succeed, host memory moves, gdrx copies nothing. */
static void ut_forced_backend_run(const char *tls, const char *env_backend,
                                  const char *ucp_backend)
{
    /* eager sizes, and one past the rendezvous threshold */
    static const size_t sizes[] = {1, 63, 1000, 4097, 256 << 10};
    struct ut_ucp t;
    size_t i;

    if (tc_setup(0) != 0) {
        return;
    }
    setenv("GDRX_GDRDRV_PATH", "/nonexistent/gdrdrv", 1);
    if (env_backend != NULL) {
        setenv("UCX_GDRX_BACKEND", env_backend, 1);
    }
    ut_ucp_open_tls(&t, tls, ucp_backend);
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        ut_transfer(&t, UT_HOST, UT_HOST, sizes[i], (uint32_t)(i + 21));
    }
    ut_ucp_close(&t);
    CU_ASSERT_EQUAL(ut_gdrx_bytes(t.stats), 0);
    CU_ASSERT(ut_counter(t.stats, "md", "pins") <= 0);
    if (ucp_backend != NULL) {
        /* listed, opened, stood aside: its counters were written */
        CU_ASSERT_EQUAL(ut_counter(t.stats, "md", "pins"), 0);
    } else {
        /* not listed: no gdrx MD was ever opened */
        CU_ASSERT_EQUAL(access(t.stats, F_OK), -1);
    }
    unlink(t.stats);
}

static void test_forced_backend_not_listed(void)
{
    ut_forced_backend_run("self,gdrx", "gdrdrv", NULL);
}

static void test_forced_backend_stands_aside(void)
{
    ut_forced_backend_run("sm,self,gdrx", NULL, "gdrdrv");
}

static void test_forced_backend_stands_aside_proto_v2(void)
{
    setenv("UCX_PROTO_ENABLE", "y", 1);
    ut_forced_backend_run("sm,self,gdrx", NULL, "gdrdrv");
}

/* CUDA failing at gdrx's first use (its libgdrx context counts the GPUs
 * again, after the listing did): the worker comes up, gdrx stands aside,
 * host memory moves. */
static void test_cuda_failure_stands_aside(void)
{
    struct ut_ucp t;

    if (tc_setup(0) != 0) {
        return;
    }
    CU_ASSERT_EQUAL_FATAL(ut_ucp_init(&t, "self,gdrx", NULL), UCS_OK);
    CU_ASSERT_EQUAL_FATAL(tsim.fail_next("cuDeviceGetCount", CUDA_ERROR_UNKNOWN,
                                         1), 0);
    CU_ASSERT_EQUAL_FATAL(ut_ucp_worker(&t), UCS_OK);
    ut_transfer(&t, UT_HOST, UT_HOST, 4097, 31);
    ut_ucp_close(&t);
    CU_ASSERT_EQUAL(ut_gdrx_bytes(t.stats), 0);
    CU_ASSERT_EQUAL(ut_counter(t.stats, "md", "pins"), 0);
    CU_ASSERT(ut_stats_has(t.stats, "events_source off"));
    unlink(t.stats);
}

/* How the child (ut_child_main) ended with this UCX_TLS. */
struct ut_outcome {
    char how[128];     /* wait status, how far it got */
    int  gdrx_error;   /* gdrx said it copied nothing (it stands aside) */
    int  gdrx_crashed; /* a crash whose backtrace names gdrx's library */
};

static void ut_aside_outcome(const char *tls, struct ut_outcome *o)
{
    static char out[65536];
    const char *bt;
    char cmd[1024];
    int status;

    snprintf(cmd, sizeof(cmd), "env %s=aside UCX_TLS=%s UCX_GDRX_STATS_DUMP=n "
             "/proc/%d/exe 2>&1", UT_CHILD_ENV, tls, (int)getpid());
    status = gdrx_test_capture(cmd, out, sizeof(out));
    snprintf(o->how, sizeof(o->how), "%s %d, %s, %s",
             WIFSIGNALED(status) ? "signal" : "exit",
             WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
             strstr(out, "worker up") ? "worker up" : "no worker",
             strstr(out, "transfer returned") ? "transfer returned" :
                                                "no transfer");
    o->gdrx_error   = strstr(out, "not copied: gdrx maps nothing") != NULL;
    /* UCX's backtrace, or a sanitizer's report */
    bt              = strstr(out, "backtrace");
    bt              = (bt != NULL) ? bt : strstr(out, "Sanitizer");
    o->gdrx_crashed = (bt != NULL) && (strstr(bt, "libuct_gdrx") != NULL);
    if (!strstr(out, "worker up") || o->gdrx_crashed) {
        fprintf(stderr, "    child %s said:\n%s\n", tls, out);
    }
}

/* Device memory while gdrx stands aside ends as it ends without gdrx, or
 * with gdrx's clear error, never in gdrx's code.  With a UCX without CUDA
 * nothing claims the buffers as GPU memory: UCX copies them as host memory
 * (the CPU cannot reach them, on the simulated GPU as on a real one), with
 * and without gdrx alike.  A UCX with CUDA hooks of its own (cuda_copy
 * left out) knows them as GPU memory and hands them to gdrx's memory-type
 * lanes, which copy nothing and say so. */
static void test_aside_device_memory_as_without_gdrx(void)
{
    struct ut_outcome with, without;

    ut_aside_outcome("sm,self,gdrx", &with);
    ut_aside_outcome("sm,self", &without);
    printf("\n    sm,self,gdrx aside: %s%s\n    sm,self: %s\n", with.how,
           with.gdrx_error ? " (gdrx: not copied)" : "", without.how);
    CU_ASSERT_PTR_NOT_NULL(strstr(with.how, "worker up"));
    CU_ASSERT(!strcmp(with.how, without.how) || with.gdrx_error);
    CU_ASSERT_FALSE(with.gdrx_crashed);
}

/* With UCX's own cuda_copy enabled, gdrx standing aside leaves GPU memory
 * to it: cuda_copy finds the buffers and wins the memory-type endpoint's
 * lanes; every message arrives (eager and rendezvous, each direction) and
 * gdrx copies nothing.  Registered only where this UCX has a usable
 * cuda_copy (a CUDA-enabled UCX on a GPU). */
static void test_aside_leaves_gpu_memory_to_cuda_copy(void)
{
    static const size_t sizes[] = {1, 63, 1000, 4097, 256 << 10};
    static const enum ut_kind kinds[][2] = {
        {UT_DEV, UT_DEV}, {UT_HOST, UT_DEV}, {UT_DEV, UT_HOST}
    };
    struct ut_ucp t;
    size_t i, k;

    if (tc_setup(0) != 0) {
        return;
    }
    setenv("GDRX_GDRDRV_PATH", "/nonexistent/gdrdrv", 1);
    ut_ucp_open_tls(&t, "sm,self,cuda_copy,gdrx", "gdrdrv");
    for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); ++k) {
        for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
            ut_transfer(&t, kinds[k][0], kinds[k][1], sizes[i],
                        (uint32_t)(10 * k + i));
        }
    }
    ut_ucp_close(&t);
    CU_ASSERT_EQUAL(ut_gdrx_bytes(t.stats), 0);
    CU_ASSERT_EQUAL(ut_counter(t.stats, "md", "pins"), 0);
    unlink(t.stats);
}

/* The child's "cuda_copy" mode: whether this UCX lists cuda_copy, asked in
 * a process of its own (it initialises CUDA, which the process that forks
 * the test cases must not). */
static int ut_child_cuda_copy(void)
{
    uct_component_attr_t attr = {
        .field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                      UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT
    };
    uct_component_h *components;
    unsigned i, count;
    int found = 0;

    if (uct_query_components(&components, &count) == UCS_OK) {
        for (i = 0; i < count; ++i) {
            found |= (uct_component_query(components[i], &attr) == UCS_OK) &&
                     !strcmp(attr.name, "cuda_cpy") &&
                     (attr.md_resource_count > 0);
        }
        uct_release_component_list(components);
    }
    printf("cuda_copy %d\n", found);
    return 0;
}

static int ut_has_cuda_copy(void)
{
    char cmd[256], out[4096];

    snprintf(cmd, sizeof(cmd), "env %s=cuda_copy /proc/%d/exe 2>&1",
             UT_CHILD_ENV, (int)getpid());
    return (gdrx_test_capture(cmd, out, sizeof(out)) == 0) &&
           (strstr(out, "cuda_copy 1") != NULL);
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_forced_backend_not_listed),
    GDRX_TEST_CASE(test_forced_backend_stands_aside),
    GDRX_TEST_CASE(test_forced_backend_stands_aside_proto_v2),
    GDRX_TEST_CASE(test_cuda_failure_stands_aside),
    GDRX_TEST_CASE(test_aside_device_memory_as_without_gdrx),
    GDRX_TEST_END
};

static const struct gdrx_test_case cuda_copy_cases[] = {
    GDRX_TEST_CASE(test_aside_leaves_gpu_memory_to_cuda_copy),
    GDRX_TEST_END
};

static const struct gdrx_test_suite suites[] = {
    { "ucx_ucp_aside", ut_suite_init, NULL, cases },
    GDRX_SUITE_END
};

static const struct gdrx_test_suite suites_cuda_copy[] = {
    { "ucx_ucp_aside", ut_suite_init, NULL, cases },
    { "ucx_ucp_aside_cuda_copy", ut_suite_init, NULL, cuda_copy_cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    const char *child = getenv(UT_CHILD_ENV);

    if (child != NULL) {
        return !strcmp(child, "cuda_copy") ? ut_child_cuda_copy() :
                                             ut_child_main();
    }
    if (!ut_has_cuda_copy()) {
        tc_report_skip("ucx_ucp_aside_cuda_copy", "this UCX lists no cuda_copy "
                       "transport: built without CUDA, or no GPU it can use");
        return gdrx_test_main(argc, argv, suites);
    }
    return gdrx_test_main(argc, argv, suites_cuda_copy);
}
