/*
 * test_ucp.c - tag send/recv of GPU buffers through UCP on the simulated
 * GPU, with only self and gdrx enabled: UCP must find the device buffers
 * through gdrx (memory-type cache fed by gdrx's events, no
 * UCX_MEMTYPE_CACHE=n) and copy them through gdrx's memtype endpoint.
 * gdrx's counters prove which copies it made.  Data is checked through CUDA.
 * Also: a UCP whose UCX_TLS leaves gdrx out finds gdrx's libcuda untouched,
 * and a process that had not loaded or initialised CUDA still has not (next
 * to a UCX with CUDA of its own: as that UCX leaves them);
 * many offsets of one buffer cost one pin; refused pins leave transfers
 * working; ucp_mem_map allocates CUDA memory through gdrx.
 * (When gdrx cannot serve: test_ucp_aside.c; buffers older than the
 * context, and fork: test_ucp_lifetime.c.)
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

/* Bytes of one device buffer sent from many offsets (each message its own
 * address and length, as the 256 sends of 8 B), and one large
 * message GPU to GPU: gdrx pins each allocation once. */
static void ut_offsets_one_pin(const char *proto)
{
    ucp_request_param_t param = {0};
    const size_t len = 1 << 20;
    uint8_t host[8], want[8];
    CUdeviceptr src, dst;
    struct ut_ucp t;
    long own;
    int i;

    setenv("UCX_PROTO_ENABLE", proto, 1);
    if (tc_setup(0) != 0) {
        return;
    }
    ut_ucp_open(&t);
    CU_ASSERT_FATAL((src = tc_alloc(len)) != 0);
    CU_ASSERT_FATAL((dst = tc_alloc(len)) != 0);
    tc_fill(src, len, 3);
    for (i = 0; i < 256; ++i) {
        void *rreq = ucp_tag_recv_nbx(t.worker, host, 8, 9, (ucp_tag_t)-1,
                                      &param);
        ut_wait(&t, ucp_tag_send_nbx(t.ep, (void*)(src + i * 4001), 8, 9,
                                     &param));
        ut_wait(&t, rreq);
        tc.MemcpyDtoH(want, src + i * 4001, 8);
        CU_ASSERT_EQUAL(memcmp(host, want, 8), 0);
    }
    {
        void *rreq = ucp_tag_recv_nbx(t.worker, (void*)dst, len, 10,
                                      (ucp_tag_t)-1, &param);
        ut_wait(&t, ucp_tag_send_nbx(t.ep, (void*)src, len, 10, &param));
        ut_wait(&t, rreq);
    }
    CU_ASSERT(tc_check(dst, len, 3));
    ut_ucp_close(&t);
    /* one pin per buffer, and one per buffer UCP allocated itself */
    own = (proto[0] == 'y') ? UT_UCP_OWN_ALLOCS(2) : 0;
    CU_ASSERT_EQUAL(ut_counter(t.stats, "md", "allocs"), own);
    CU_ASSERT_EQUAL(ut_counter(t.stats, "md", "pins"), 2 + own);
    tc_free(src);
    tc_free(dst);
}

static void test_offsets_one_pin(void)    { ut_offsets_one_pin("n"); }
static void test_offsets_one_pin_v2(void) { ut_offsets_one_pin("y"); }

/* Every pin refused: UCP's transfers still complete with the right data
 * (gdrx copies that memory with CUDA), they do not fail or abort.  Refused
 * from before UCP starts: from 1.22 on, UCP's endpoint allocates device
 * memory of its own through gdrx (UT_UCP_OWN_ALLOCS), and that pin is
 * refused too. */
static void ut_pin_refused(enum ut_kind from, enum ut_kind to)
{
    struct ut_ucp t;
    size_t i;

    if (tc_setup(0) != 0) {
        return;
    }
    CU_ASSERT_EQUAL(tsim.fail_next("cuMemGetHandleForAddressRange",
                                   CUDA_ERROR_OUT_OF_MEMORY, 1 << 20), 0);
    ut_ucp_open(&t);
    for (i = 0; i < sizeof(ut_sizes) / sizeof(ut_sizes[0]); ++i) {
        ut_transfer(&t, from, to, ut_sizes[i], (uint32_t)(i + 21));
    }
    ut_transfer(&t, from, to, 1 << 20, 29);
    ut_ucp_close(&t);
    tsim.fail_next("cuMemGetHandleForAddressRange", CUDA_SUCCESS, 0);
    CU_ASSERT(ut_counter(t.stats, "md", "reg_fallbacks") >= 1);
    CU_ASSERT_EQUAL(ut_counter(t.stats, "md", "pins"), 0);
}

static void test_pin_refused_dev_to_dev(void)
{
    ut_pin_refused(UT_DEV, UT_DEV);
}

static void test_pin_refused_dev_to_host_v2(void)
{
    setenv("UCX_PROTO_ENABLE", "y", 1);
    ut_pin_refused(UT_DEV, UT_HOST);
}

static void test_pin_refused_host_to_dev_v2(void)
{
    setenv("UCX_PROTO_ENABLE", "y", 1);
    ut_pin_refused(UT_HOST, UT_DEV);
}

/* ucp_mem_map of CUDA memory (what ucx_perftest -m cuda does) on a UCX
 * whose only CUDA transport is gdrx: gdrx allocates it; data sent into it
 * arrives, and unmapping frees it. */
static void test_mem_map_cuda(void)
{
    ucp_request_param_t param = {0};
    ucp_mem_map_params_t mparams;
    ucp_mem_attr_t attr;
    const size_t len = 70000;
    uint8_t *host = malloc(len);
    unsigned mem_type = 0;
    struct ut_ucp t;
    ucp_mem_h memh;
    void *rreq;
    long live;

    if (tc_setup(0) != 0) {
        free(host);
        return;
    }
    ut_ucp_open(&t);
    live = tsim.live_allocations ? tsim.live_allocations() : -1;
    mparams.field_mask  = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                          UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                          UCP_MEM_MAP_PARAM_FIELD_FLAGS |
                          UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    mparams.address     = NULL;
    mparams.length      = len;
    mparams.flags       = UCP_MEM_MAP_ALLOCATE;
    mparams.memory_type = UCS_MEMORY_TYPE_CUDA;
    CU_ASSERT_EQUAL_FATAL(ucp_mem_map(t.context, &mparams, &memh), UCS_OK);
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
    CU_ASSERT_EQUAL_FATAL(ucp_mem_query(memh, &attr), UCS_OK);
    CU_ASSERT(attr.length >= len);
    CU_ASSERT_EQUAL(tc.PointerGetAttribute(&mem_type,
                                           CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                           (CUdeviceptr)attr.address),
                    CUDA_SUCCESS);
    CU_ASSERT_EQUAL(mem_type, CU_MEMORYTYPE_DEVICE);

    tc_pattern(host, len, 31);
    rreq = ucp_tag_recv_nbx(t.worker, attr.address, len, 11, (ucp_tag_t)-1,
                            &param);
    ut_wait(&t, ucp_tag_send_nbx(t.ep, host, len, 11, &param));
    ut_wait(&t, rreq);
    CU_ASSERT(tc_check((CUdeviceptr)attr.address, len, 31));
    CU_ASSERT_EQUAL(ucp_mem_unmap(t.context, memh), UCS_OK);
    if (live >= 0) {
        CU_ASSERT_EQUAL(tsim.live_allocations(), live);
    }
    ut_ucp_close(&t);
    CU_ASSERT_EQUAL(ut_counter(t.stats, "md", "allocs"),
                    1 + UT_UCP_OWN_ALLOCS(1));
    free(host);
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
 * Named, gdrx sets up at the worker's interfaces: the positive control.
 * A UCX with CUDA hooks of its own patches libcuda itself, at its first
 * context: those go in first here, and gdrx is held to the code as UCX
 * left it. */
static void ut_side_effects(const char *tls, int expect_hooks)
{
    ucp_params_t params = {0};
    ucp_worker_params_t wparams = {0};
    unsigned char pristine[16], before[16], after[16];
    ucp_context_h context;
    ucp_worker_h worker;
    char stats[128];
    int ucx_cuda;

    /* a CUDA program: where only dmabuf serves, gdrx lists itself only
     * once CUDA is initialised */
    if (tc_setup(0) != 0) {
        return;
    }
    /* the counters gdrx's MD writes when closed: proof it was opened */
    ut_stats_file(stats, sizeof(stats), "side");
    ut_free_entry(pristine, sizeof(pristine));
    ucx_cuda = ut_ucx_has_cuda();
    ut_free_entry(before, sizeof(before));
    CU_ASSERT_EQUAL(memcmp(pristine, before, sizeof(before)) != 0, ucx_cuda);
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
#define UT_CHILD_UCX_ALONE_ENV "GDRX_UT_UCP_UCX_ALONE"

/* The child: load the plugin (as LD_PRELOAD; not with
 * UT_CHILD_UCX_ALONE_ENV set), maybe libcuda (and CUDA initialised), then
 * UCP with $UCX_TLS up to a worker; prints what became of libcuda. */
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
    if (((getenv(UT_CHILD_UCX_ALONE_ENV) == NULL) && (ut_load_plugin() != 0)) ||
        (ucp_init(&params, NULL, &context) != UCS_OK)) {
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

/* The report of a child with this mode and UCX_TLS, of one with UCX alone
 * (no plugin) if ucx_alone ("" if it failed). */
static const char *ut_child(const char *mode, const char *tls, int ucx_alone)
{
    static char out[4096];
    char cmd[1024];

    snprintf(cmd, sizeof(cmd), "env %s=%s %s UCX_TLS=%s UCX_GDRX_STATS_DUMP=n "
             "/proc/%d/exe 2>&1", UT_CHILD_ENV, mode,
             ucx_alone ? UT_CHILD_UCX_ALONE_ENV "=1" : "", tls, (int)getpid());
    if (gdrx_test_capture(cmd, out, sizeof(out)) != 0) {
        fprintf(stderr, "    child %s %s said:\n%s\n", mode, tls, out);
        return "";
    }
    return out;
}

/* 1 if UCX's own CUDA transports (libuct_cuda: cuda_copy, cuda_ipc,
 * gdr_copy) load here: where NVML is found (cuda_leg.sh runs this suite
 * without it), UCX's first context initialises CUDA itself. */
static int ut_ucx_cuda_tls(void)
{
    uct_component_h *components;
    unsigned count;
    void *lib;

    /* UCT loads its modules at the first query */
    if (uct_query_components(&components, &count) == UCS_OK) {
        uct_release_component_list(components);
    }
    lib = dlopen("libuct_cuda.so.0", RTLD_LAZY | RTLD_NOLOAD);
    if (lib != NULL) {
        dlclose(lib);
    }
    return lib != NULL;
}

/* The child (mode, tls) reports want, and if ucx_too, so does one with
 * UCX alone. */
static void ut_child_says(const char *mode, const char *tls, const char *want,
                          int ucx_too)
{
    const char *got;
    int alone;

    for (alone = 0; alone <= ucx_too; ++alone) {
        got = ut_child(mode, tls, alone);
        if (strstr(got, want) == NULL) {
            fprintf(stderr, "    child %s %s%s, not \"%s\": %s\n", mode, tls,
                    alone ? " of UCX alone" : "", want, got);
        }
        CU_ASSERT_PTR_NOT_NULL(strstr(got, want));
    }
}

/* UCX_TLS without gdrx: UCP lists gdrx's resources and opens its MD, and
 * libcuda is neither loaded nor, where the program loaded it, initialised.
 * Named, with dmabuf the only backend (the simulated GPU's), gdrx cannot
 * be told to work before CUDA is initialised: it is not listed, the worker
 * comes up without it, and CUDA stays as it was.  A program that
 * initialised CUDA itself: the check sees it (its positive control).
 * A UCX with CUDA hooks of its own loads libcuda itself at ucp_init (its
 * libucm_cuda links it), and one with CUDA transports initialises CUDA
 * too: gdrx is held to what that UCX does alone. */
static void test_left_out_loads_no_cuda(void)
{
    const int ucx_tls = ut_ucx_cuda_tls();
    const char *loaded = ucx_tls ? "libcuda mapped 1 initialised 1" :
                                   "libcuda mapped 1 initialised 0";
    const char *none   = (ucx_tls || ut_ucx_has_cuda()) ? loaded :
                         "libcuda mapped 0 initialised 0";

    ut_child_says("none", "self,tcp", none, 1);
    ut_child_says("loaded", "self,tcp", loaded, 1);
    ut_child_says("loaded", "self,tcp,gdrx", loaded, 0);
    ut_child_says("init", "self,tcp", "libcuda mapped 1 initialised 1", 0);
}

/* The caches-off mode ucx_plugin/README.md documents for a job that wants
 * no CUDA hooks: UCX_GDRX_MEM_EVENTS=n installs none (no events reach UCP),
 * UCX_MEMTYPE_CACHE=n makes UCP ask the MDs for every buffer, and
 * UCX_RCACHE_ENABLE=n turns off UCP's own registration cache (which keeps
 * CUDA registrations from 1.15 on: without it this hung on 1.23).  They
 * must be in the environment when UCX loads (libucs reads its global
 * options then), so the case runs in a copy of this program started so
 * (test_caches_off).  Every direction, sizes from 1 byte to past the
 * rendezvous threshold, with the sim handing each freed buffer's address
 * to the next allocation: every byte arrives, gdrx moved the device bytes,
 * no event was raised and cache hits were checked against the buffer id. */
#define UT_CACHES_OFF_ENV "UT_UCP_CACHES_OFF"

static void test_caches_off_run(void)
{
    static const size_t sizes[] = {1, 4097, 70000};
    static const enum ut_kind dirs[][2] = {
        {UT_DEV, UT_DEV}, {UT_DEV, UT_HOST}, {UT_HOST, UT_DEV}
    };
    struct ut_ucp t;
    uint32_t seed = 40;
    size_t i, j;
    int round;

    if (tc_setup(0) != 0) {
        return;
    }
    ut_ucp_memtype_cache = "n";
    ut_ucp_open(&t);
    for (round = 0; round < 3; ++round) {
        for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); ++i) {
            for (j = 0; j < sizeof(sizes) / sizeof(sizes[0]); ++j) {
                ut_transfer(&t, dirs[i][0], dirs[i][1], sizes[j], ++seed);
            }
        }
    }
    ut_ucp_close(&t);
    CU_ASSERT(ut_stats_has(t.stats, "events_source off"));
    CU_ASSERT(ut_stats_has(t.stats, "cache_check buffer-id"));
    CU_ASSERT_EQUAL(ut_counter(t.stats, "md", "events_alloc"), 0);
    CU_ASSERT(ut_gdrx_bytes(t.stats) > 0);
}

static void test_caches_off(void)
{
    static const char *const env[] = {
        UT_CACHES_OFF_ENV "=1", "UCX_MEMTYPE_CACHE=n", "UCX_GDRX_MEM_EVENTS=n",
        "UCX_RCACHE_ENABLE=n", NULL
    };
    static struct gdrx_test_rerun r;

    gdrx_test_rerun(env, "test_caches_off_run", &r);
    CU_ASSERT_FATAL(r.status >= 0);
    CU_ASSERT(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    CU_ASSERT(r.ran == 1 && r.passed == 1);
    if (r.ran != 1 || r.passed != 1) {
        fprintf(stderr, "    the copy said:\n%s\n", r.output);
    }
}

static const struct gdrx_test_case caches_off_cases[] = {
    GDRX_TEST_CASE(test_caches_off_run),
    GDRX_TEST_END
};

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
    GDRX_TEST_CASE(test_offsets_one_pin),
    GDRX_TEST_CASE(test_offsets_one_pin_v2),
    GDRX_TEST_CASE(test_mem_map_cuda),
    GDRX_TEST_CASE(test_caches_off),
    GDRX_TEST_END
};

/* Need the simulated GPU's failure injection. */
static const struct gdrx_test_case sim_cases[] = {
    GDRX_TEST_CASE(test_pin_refused_dev_to_dev),
    GDRX_TEST_CASE(test_pin_refused_dev_to_host_v2),
    GDRX_TEST_CASE(test_pin_refused_host_to_dev_v2),
    GDRX_TEST_END
};

static const struct gdrx_test_suite suites[] = {
    { "ucx_ucp", ut_suite_init, NULL, cases },
    GDRX_SUITE_END
};

static const struct gdrx_test_suite caches_off_suites[] = {
    { "ucx_ucp_caches_off", ut_suite_init, NULL, caches_off_cases },
    GDRX_SUITE_END
};

static const struct gdrx_test_suite sim_suites[] = {
    { "ucx_ucp_sim", ut_suite_init, NULL, sim_cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    const char *child = getenv(UT_CHILD_ENV);

    if (child != NULL) {
        return ut_child_main(child);
    }
    if (getenv(UT_CACHES_OFF_ENV) != NULL) {
        return gdrx_test_main(argc, argv, caches_off_suites);
    }

    if (tc_load() && (tsim.fail_next != NULL)) {
        return gdrx_test_main(argc, argv, tc_suites(suites, sim_suites));
    }
    tc_report_skip("ucx_ucp_sim", "no simulated GPU failure injection");
    return gdrx_test_main(argc, argv, suites);
}
