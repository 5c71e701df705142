/*
 * test_ucp.c - tag send/recv of GPU buffers through UCP on the simulated
 * GPU, with only self and gdrx enabled: UCP must find the device buffers
 * through gdrx (memory-type cache fed by gdrx's events, no
 * UCX_MEMTYPE_CACHE=n) and copy them through gdrx's memtype endpoint.
 * gdrx's counters prove which copies it made.  Data is checked through CUDA.
 * Also: a UCP whose UCX_TLS leaves gdrx out finds gdrx's libcuda untouched;
 * many offsets of one buffer cost one pin; refused pins leave transfers
 * working; ucp_mem_map allocates CUDA memory through gdrx.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ucp/api/ucp.h>

#include "ut_uct.h"

enum ut_kind { UT_HOST, UT_DEV };

struct ut_ucp {
    ucp_context_h context;
    ucp_worker_h  worker;
    ucp_ep_h      ep;
    char          stats[128];
};

static void ut_ucp_open(struct ut_ucp *t)
{
    ucp_params_t params = {0};
    ucp_worker_params_t wparams = {0};
    ucp_ep_params_t eparams = {0};
    ucp_address_t *addr;
    size_t addr_len;

    snprintf(t->stats, sizeof(t->stats), "/tmp/gdrx-ucp-stats.%d", (int)getpid());
    unlink(t->stats);
    setenv("UCX_GDRX_STATS_DUMP", t->stats, 1);
    setenv("UCX_TLS", "self,gdrx", 1);
    unsetenv("UCX_MEMTYPE_CACHE");
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG;
    CU_ASSERT_EQUAL_FATAL(ucp_init(&params, NULL, &t->context), UCS_OK);
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    CU_ASSERT_EQUAL_FATAL(ucp_worker_create(t->context, &wparams, &t->worker), UCS_OK);
    CU_ASSERT_EQUAL_FATAL(ucp_worker_get_address(t->worker, &addr, &addr_len), UCS_OK);
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = addr;
    CU_ASSERT_EQUAL_FATAL(ucp_ep_create(t->worker, &eparams, &t->ep), UCS_OK);
    ucp_worker_release_address(t->worker, addr);
}

static void ut_wait(struct ut_ucp *t, void *req)
{
    ucs_status_t status;

    if (UCS_PTR_IS_ERR(req)) {
        CU_FAIL("request failed");
        return;
    }
    if (req == NULL) {
        return;
    }
    while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        ucp_worker_progress(t->worker);
    }
    CU_ASSERT_EQUAL(status, UCS_OK);
    ucp_request_free(req);
}

static void ut_ucp_close(struct ut_ucp *t)
{
    ucp_request_param_t param = {0};

    ut_wait(t, ucp_ep_close_nbx(t->ep, &param));
    ucp_worker_destroy(t->worker);
    ucp_cleanup(t->context);
}

static void *ut_buf(enum ut_kind kind, size_t len)
{
    return (kind == UT_DEV) ? (void*)tc_alloc(len) : calloc(1, len);
}

static void ut_buf_free(enum ut_kind kind, void *p)
{
    if (kind == UT_DEV) {
        tc_free((CUdeviceptr)p);
    } else {
        free(p);
    }
}

static void ut_transfer(struct ut_ucp *t, enum ut_kind from, enum ut_kind to,
                        size_t len, uint32_t seed)
{
    ucp_request_param_t param = {0};
    void *src = ut_buf(from, len), *dst = ut_buf(to, len), *rreq, *sreq;
    uint8_t *check = malloc(len);

    if (from == UT_DEV) {
        tc_fill((CUdeviceptr)src, len, seed);
    } else {
        tc_pattern(src, len, seed);
    }
    rreq = ucp_tag_recv_nbx(t->worker, dst, len, 7, (ucp_tag_t)-1, &param);
    sreq = ucp_tag_send_nbx(t->ep, src, len, 7, &param);
    ut_wait(t, sreq);
    ut_wait(t, rreq);
    if (to == UT_DEV) {
        CU_ASSERT(tc_check((CUdeviceptr)dst, len, seed));
    } else {
        tc_pattern(check, len, seed);
        CU_ASSERT_EQUAL(memcmp(dst, check, len), 0);
    }
    ut_buf_free(from, src);
    ut_buf_free(to, dst);
    free(check);
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

/* Bytes gdrx moved, every operation and direction. */
static long ut_gdrx_bytes(const char *stats)
{
    static const char *const ops[] = {
        "iface put_short", "iface put_bcopy", "iface put_zcopy",
        "iface get_short", "iface get_bcopy", "iface get_zcopy", NULL
    };
    const char *const *op;
    long total = 0, v;

    for (op = ops; *op != NULL; ++op) {
        v = ut_counter(stats, *op, "bytes");
        total += (v > 0) ? v : 0;
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
    CU_ASSERT_EQUAL(ut_counter(t.stats, "md", "pins"), 2);
    tc_free(src);
    tc_free(dst);
}

static void test_offsets_one_pin(void)    { ut_offsets_one_pin("n"); }
static void test_offsets_one_pin_v2(void) { ut_offsets_one_pin("y"); }

/* Every pin refused: UCP's transfers still complete with the right data
 * (gdrx copies that memory with CUDA), they do not fail or abort. */
static void ut_pin_refused(enum ut_kind from, enum ut_kind to)
{
    struct ut_ucp t;
    size_t i;

    if (tc_setup(0) != 0) {
        return;
    }
    ut_ucp_open(&t);
    CU_ASSERT_EQUAL(tsim.fail_next("cuMemGetHandleForAddressRange",
                                   CUDA_ERROR_OUT_OF_MEMORY, 1 << 20), 0);
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
    CU_ASSERT_EQUAL(ut_counter(t.stats, "md", "allocs"), 1);
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
 * Named, gdrx sets up at the worker's interfaces: the positive control. */
static void ut_side_effects(const char *tls, int expect_hooks)
{
    ucp_params_t params = {0};
    ucp_worker_params_t wparams = {0};
    unsigned char before[16], after[16];
    ucp_context_h context;
    ucp_worker_h worker;

    char stats[128];

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

static const struct gdrx_test_case cases[] = {
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

static const struct gdrx_test_suite sim_suites[] = {
    { "ucx_ucp_sim", ut_suite_init, NULL, sim_cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    if (tc_load() && (tsim.fail_next != NULL)) {
        return gdrx_test_main(argc, argv, tc_suites(suites, sim_suites));
    }
    tc_report_skip("ucx_ucp_sim", "no simulated GPU failure injection");
    return gdrx_test_main(argc, argv, suites);
}
