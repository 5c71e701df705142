/*
 * test_ucp.c - tag send/recv of GPU buffers through UCP on the simulated
 * GPU, with only self and gdrx enabled: UCP must find the device buffers
 * through gdrx (memory-type cache fed by gdrx's events, no
 * UCX_MEMTYPE_CACHE=n) and copy them through gdrx's memtype endpoint.
 * gdrx's counters prove which copies it made.  Data is checked through CUDA.
 * Also: a UCP whose UCX_TLS leaves gdrx out finds gdrx's libcuda untouched,
 * and a process that had not loaded or initialised CUDA still has not.
 * (When gdrx cannot serve: test_ucp_aside.c.)
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ut_ucp.h"

static void ut_ucp_open(struct ut_ucp *t)
{
    ut_ucp_open_tls(t, "self,gdrx", NULL);
}

static const size_t ut_sizes[] = {1, 63, 1000, 4097};

static long ut_total(void)
{
    long total = 0;
    size_t i;

    for (i = 0; i < sizeof(ut_sizes) / sizeof(ut_sizes[0]); ++i) {
        total += (long)ut_sizes[i];
    }
    return total;
}

static void ut_run(enum ut_kind from, enum ut_kind to)
{
    struct ut_ucp t;
    size_t i;

    if (tc_setup(0) != 0) {
        return;
    }
    ut_ucp_open(&t);
    for (i = 0; i < sizeof(ut_sizes) / sizeof(ut_sizes[0]); ++i) {
        ut_transfer(&t, from, to, ut_sizes[i], (uint32_t)(i + 11));
    }
    ut_ucp_close(&t);
    /* UCP learnt of the buffers from gdrx's events, and every byte that
     * left or reached the GPU went through gdrx (v1 packs with get_short
     * and unpacks with put_short; v2's rendezvous moves GPU to GPU in one
     * put_zcopy, counted once) */
    CU_ASSERT(ut_counter(t.stats, "md", "events_alloc") >= 4);
    CU_ASSERT(ut_gdrx_bytes(t.stats) >= ut_total());
}

static void test_host_to_dev(void) { ut_run(UT_HOST, UT_DEV); }
static void test_dev_to_host(void) { ut_run(UT_DEV, UT_HOST); }
static void test_dev_to_dev(void)  { ut_run(UT_DEV, UT_DEV); }

static void test_proto_v2_host_to_dev(void)
{
    setenv("UCX_PROTO_ENABLE", "y", 1);
    ut_run(UT_HOST, UT_DEV);
}

static void test_proto_v2_dev_to_host(void)
{
    setenv("UCX_PROTO_ENABLE", "y", 1);
    ut_run(UT_DEV, UT_HOST);
}

static void test_proto_v2_dev_to_dev(void)
{
    setenv("UCX_PROTO_ENABLE", "y", 1);
    ut_run(UT_DEV, UT_DEV);
}

/* The first bytes of libcuda's cuMemFree_v2, where libgdrx's CUDA free
 * hooks patch (libcuda is the simulated one, loaded by the suite). */
static void ut_free_entry(unsigned char *out, size_t len)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *entry = (lib != NULL) ? dlsym(lib, "cuMemFree_v2") : NULL;

    CU_ASSERT_PTR_NOT_NULL_FATAL(entry);
    memcpy(out, entry, len);
}

/* UCP opens the MD of every component, also gdrx's when UCX_TLS leaves it
 * out: then libgdrx must install nothing (libcuda's code stays as it was).
 * Named, gdrx sets up at the worker's interfaces: the positive control. */
static void ut_side_effects(const char *tls, int expect_hooks)
{
    ucp_params_t params = {0};
    ucp_worker_params_t wparams = {0};
    unsigned char before[16], after[16];
    ucp_context_h context;
    ucp_worker_h worker;

    char stats[128];

    /* a CUDA program: where only dmabuf serves, gdrx lists itself only
     * once CUDA is initialised */
    if (tc_setup(0) != 0) {
        return;
    }
    /* the counters gdrx's MD writes when closed: proof it was opened */
    snprintf(stats, sizeof(stats), "/tmp/gdrx-ucp-side.%d", (int)getpid());
    unlink(stats);
    setenv("UCX_GDRX_STATS_DUMP", stats, 1);
    ut_free_entry(before, sizeof(before));
    setenv("UCX_TLS", tls, 1);
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG;
    CU_ASSERT_EQUAL_FATAL(ucp_init(&params, NULL, &context), UCS_OK);
    ut_free_entry(after, sizeof(after));
    CU_ASSERT_EQUAL(memcmp(before, after, sizeof(before)), 0);
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    CU_ASSERT_EQUAL_FATAL(ucp_worker_create(context, &wparams, &worker), UCS_OK);
    ut_free_entry(after, sizeof(after));
    CU_ASSERT_EQUAL(memcmp(before, after, sizeof(before)) != 0, expect_hooks);
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    CU_ASSERT_EQUAL(ut_counter(stats, "md", "reg_calls"), 0);
    unlink(stats);
}

static void test_left_out_installs_nothing(void)
{
    ut_side_effects("self", 0);
}

static void test_named_installs_at_worker(void)
{
    ut_side_effects("self,gdrx", 1);
}

/* ---- what UCP costs a process that leaves gdrx out: run in a fresh
 * process (this program again) that has not loaded libcuda, or has loaded
 * it without initialising CUDA. ---- */

#define UT_CHILD_ENV "GDRX_UT_UCP_CHILD"

/* The child: load the plugin (as LD_PRELOAD), maybe libcuda (and CUDA
 * initialised), then UCP with $UCX_TLS up to a worker; prints what became
 * of libcuda. */
static int ut_child_main(const char *mode)
{
    __typeof__(&cuDeviceGetCount) get_count;
    ucp_params_t params = {0};
    ucp_worker_params_t wparams = {0};
    ucp_context_h context;
    ucp_worker_h worker;
    char line[512];
    int mapped = 0, count, initialised = 0;
    void *lib;
    FILE *f;

    if (strcmp(mode, "none") &&
        (dlopen("libcuda.so.1", RTLD_LAZY | RTLD_GLOBAL) == NULL)) {
        printf("cannot load libcuda.so.1\n");
        return 1;
    }
    if (!strcmp(mode, "init") &&
        ((void)tc_load(), (tc.Init == NULL) || (tc.Init(0) != CUDA_SUCCESS))) {
        printf("cannot initialise CUDA\n");
        return 1;
    }
    params.field_mask  = UCP_PARAM_FIELD_FEATURES;
    params.features    = UCP_FEATURE_TAG;
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    if ((ut_load_plugin() != 0) || (ucp_init(&params, NULL, &context) != UCS_OK)) {
        printf("ucp_init failed\n");
        return 1;
    }
    if (ucp_worker_create(context, &wparams, &worker) != UCS_OK) {
        printf("ucp_worker_create failed\n");
        return 1;
    }
    ucp_worker_destroy(worker);
    ucp_cleanup(context);

    f = fopen("/proc/self/maps", "r");
    while ((f != NULL) && (fgets(line, sizeof(line), f) != NULL)) {
        mapped |= (strstr(line, "/libcuda.so") != NULL);
    }
    if (f != NULL) {
        fclose(f);
    }
    /* before cuInit the sim's count fails, as a real libcuda's does */
    lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (lib != NULL) {
        *(void**)&get_count = dlsym(lib, "cuDeviceGetCount");
        initialised = (get_count != NULL) && (get_count(&count) == CUDA_SUCCESS);
    }
    printf("libcuda mapped %d initialised %d\n", mapped, initialised);
    return 0;
}

/* The child's report with this mode and UCX_TLS ("" if it failed). */
static const char *ut_child(const char *mode, const char *tls)
{
    static char out[4096];
    char cmd[1024];

    snprintf(cmd, sizeof(cmd), "env %s=%s UCX_TLS=%s UCX_GDRX_STATS_DUMP=n "
             "/proc/%d/exe 2>&1", UT_CHILD_ENV, mode, tls, (int)getpid());
    if (gdrx_test_capture(cmd, out, sizeof(out)) != 0) {
        fprintf(stderr, "    child %s %s said:\n%s\n", mode, tls, out);
        return "";
    }
    return out;
}

/* UCX_TLS without gdrx: UCP lists gdrx's resources and opens its MD, and
 * libcuda is neither loaded nor, where the program loaded it, initialised.
 * Named, with dmabuf the only backend (the simulated GPU's), gdrx cannot
 * be told to work before CUDA is initialised: it is not listed, the worker
 * comes up without it, and CUDA stays as it was.  A program that
 * initialised CUDA itself: the check sees it (its positive control). */
static void test_left_out_loads_no_cuda(void)
{
    CU_ASSERT_PTR_NOT_NULL(strstr(ut_child("none", "self,tcp"),
                                  "libcuda mapped 0 initialised 0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(ut_child("loaded", "self,tcp"),
                                  "libcuda mapped 1 initialised 0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(ut_child("loaded", "self,tcp,gdrx"),
                                  "libcuda mapped 1 initialised 0"));
    CU_ASSERT_PTR_NOT_NULL(strstr(ut_child("init", "self,tcp"),
                                  "libcuda mapped 1 initialised 1"));
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_left_out_loads_no_cuda),
    GDRX_TEST_CASE(test_left_out_installs_nothing),
    GDRX_TEST_CASE(test_named_installs_at_worker),
    GDRX_TEST_CASE(test_host_to_dev),
    GDRX_TEST_CASE(test_dev_to_host),
    GDRX_TEST_CASE(test_dev_to_dev),
    GDRX_TEST_CASE(test_proto_v2_host_to_dev),
    GDRX_TEST_CASE(test_proto_v2_dev_to_host),
    GDRX_TEST_CASE(test_proto_v2_dev_to_dev),
    GDRX_TEST_END
};

static const struct gdrx_test_suite suites[] = {
    { "ucx_ucp", ut_suite_init, NULL, cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    const char *child = getenv(UT_CHILD_ENV);

    if (child != NULL) {
        return ut_child_main(child);
    }
    return gdrx_test_main(argc, argv, suites);
}
