/*
 * test_reg.c - what gdrx pins and what it does when it cannot: messages at
 * any offset of a buffer share one pin (registrations cover the whole CUDA
 * allocation, or aligned windows of a large one), the cache is bounded by
 * default, a pin the driver refuses leaves the memory to CUDA copies
 * rather than failing, and the MD allocates CUDA memory itself.  Data is
 * always checked through CUDA.
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include "ut_uct.h"

/* The UCX_GDRX_RCACHE_MAX_REGIONS / _MAX_SIZE defaults (uct_gdrx_md.c). */
#define UT_MAX_REGIONS 4096
#define UT_MAX_SIZE    (4ul << 30)

/* 256 messages from 256 offsets of one buffer, through keys held all at
 * once and then without keys (UCP's memory-type copies): one pin. */
static void test_one_pin_per_buffer(void)
{
    static struct ut_reg r[256];
    const size_t len = 1 << 20;
    struct ut_uct u;
    CUdeviceptr d, other;
    uint8_t buf[8];
    int i;

    if ((tc_setup(0) != 0) || (ut_open(&u) != 0) ||
        !(d = tc_alloc(len)) || !(other = tc_alloc(4096))) {
        return;
    }
    tc_fill(d, len, 1);
    for (i = 0; i < 256; ++i) {
        CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)(d + i * 4093), 8, &r[i]),
                              UCS_OK);
        tc_pattern(buf, sizeof(buf), 100 + i);
        CU_ASSERT_EQUAL(uct_ep_put_short(u.ep, buf, sizeof(buf), d + i * 4093,
                                         r[i].rkey.rkey), UCS_OK);
    }
    for (i = 0; i < 256; ++i) {
        ut_dereg(&u, &r[i]);
        CU_ASSERT(tc_check(d + i * 4093, 8, 100 + i));
        tc_pattern(buf, sizeof(buf), 500 + i);
        CU_ASSERT_EQUAL(uct_ep_put_short(u.ep, buf, sizeof(buf),
                                         d + i * 4093 + 8, UCT_INVALID_RKEY),
                        UCS_OK);
        CU_ASSERT(tc_check(d + i * 4093 + 8, 8, 500 + i));
    }
    /* another allocation is another pin */
    CU_ASSERT_EQUAL(uct_ep_put_short(u.ep, buf, sizeof(buf), other + 8,
                                     UCT_INVALID_RKEY), UCS_OK);
    ut_close(&u);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "md", "pins"), 2);
    tc_free(d);
    tc_free(other);
}

static uint64_t ut_align_down(uint64_t v, uint64_t a) { return v & ~(a - 1); }

/* An allocation larger than UCX_GDRX_REG_WINDOW is pinned by aligned
 * windows of it: a key reaches exactly its window, and a message across
 * two windows gets both in one region. */
static void test_large_allocation_windows(void)
{
    static const size_t offsets[] = {8, 100000, (1 << 20) + 5,
                                     (3 << 20) + 7, (3 << 20) + 100};
    const uint64_t win = 1 << 20, len = 8 << 20;
    uint64_t starts[8], ws, we;
    struct ut_reg r;
    struct ut_uct u;
    uint8_t buf[8] = {0};
    unsigned i, j, windows = 0;
    CUdeviceptr d;

    setenv("UCX_GDRX_REG_WINDOW", "1m", 1);
    if ((tc_setup(0) != 0) || (ut_open(&u) != 0) || !(d = tc_alloc(len))) {
        return;
    }
    for (i = 0; i < sizeof(offsets) / sizeof(offsets[0]); ++i) {
        ws = ut_align_down(d + offsets[i], win);
        we = (ws + win < d + len) ? ws + win : d + len;
        ws = (ws < d) ? d : ws;
        for (j = 0; (j < windows) && (starts[j] != ws); ++j) {
        }
        if (j == windows) {
            starts[windows++] = ws;
        }
        CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)(d + offsets[i]), 8, &r),
                              UCS_OK);
        CU_ASSERT_EQUAL(uct_ep_put_short(u.ep, buf, 8, ws, r.rkey.rkey),
                        UCS_OK);
        CU_ASSERT_EQUAL(uct_ep_put_short(u.ep, buf, 8, we - 8, r.rkey.rkey),
                        UCS_OK);
        CU_ASSERT_EQUAL(uct_ep_put_short(u.ep, buf, 8, we - 4, r.rkey.rkey),
                        UCS_ERR_OUT_OF_RANGE);
        ut_dereg(&u, &r);
    }
    /* across the boundary of two windows already pinned: one new region */
    ws = ut_align_down(d + (3 << 20), win);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)(ws - 4), 8, &r), UCS_OK);
    tc_pattern(buf, sizeof(buf), 7);
    CU_ASSERT_EQUAL(uct_ep_put_short(u.ep, buf, 8, ws - 4, r.rkey.rkey),
                    UCS_OK);
    ut_dereg(&u, &r);
    CU_ASSERT(tc_check(ws - 4, 8, 7));
    ut_close(&u);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "md", "pins"), windows + 1);
    tc_free(d);
}

/* Register and release each buffer once, then the first again: a second
 * pin of it proves the cache let it go under the default bounds. */
static void ut_default_bound(size_t size, unsigned count)
{
    CUdeviceptr *d = calloc(count, sizeof(*d));
    struct ut_reg r;
    struct ut_uct u;
    unsigned i;

    unsetenv("UCX_GDRX_RCACHE_MAX_REGIONS");
    unsetenv("UCX_GDRX_RCACHE_MAX_SIZE");
    if ((tc_setup(0) != 0) || (ut_open(&u) != 0)) {
        free(d);
        return;
    }
    for (i = 0; i < count; ++i) {
        CU_ASSERT_FATAL((d[i] = tc_alloc(size)) != 0);
        CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)d[i], 8, &r), UCS_OK);
        ut_dereg(&u, &r);
    }
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)d[0], 8, &r), UCS_OK);
    ut_dereg(&u, &r);
    ut_close(&u);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "md", "pins"), count + 1);
    for (i = 0; i < count; ++i) {
        tc_free(d[i]);
    }
    free(d);
}

static void test_default_max_regions(void)
{
    ut_default_bound(4096, UT_MAX_REGIONS + 1);
}

static void test_default_max_size(void)
{
    ut_default_bound(16 << 20, (unsigned)(UT_MAX_SIZE / (16 << 20)) + 1);
}

/* A bad window is refused when the MD opens, with a message. */
static void test_bad_window(void)
{
    static const char *bad[] = {"3000", "96k", "0"};
    uct_component_h *components;
    uct_component_attr_t attr;
    uct_md_config_t *config;
    uct_md_h md;
    unsigned i, n, found = 0;

    CU_ASSERT_EQUAL_FATAL(uct_query_components(&components, &n), UCS_OK);
    for (i = 0; i < n; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        CU_ASSERT_EQUAL_FATAL(uct_component_query(components[i], &attr), UCS_OK);
        if (strcmp(attr.name, "gdrx") != 0) {
            continue;
        }
        for (found = 0; found < sizeof(bad) / sizeof(bad[0]); ++found) {
            setenv("UCX_GDRX_REG_WINDOW", bad[found], 1);
            CU_ASSERT_EQUAL_FATAL(uct_md_config_read(components[i], NULL, NULL,
                                                     &config), UCS_OK);
            CU_ASSERT_EQUAL(uct_md_open(components[i], "gdrx", config, &md),
                            UCS_ERR_INVALID_PARAM);
            uct_config_release(config);
        }
    }
    uct_release_component_list(components);
    CU_ASSERT_EQUAL(found, sizeof(bad) / sizeof(bad[0]));
}

/* Every pin refused (a full BAR, the kernel's map limit): registrations
 * still succeed and every path moves the right bytes through CUDA; once
 * pins work again, new buffers are pinned. */
static void ut_pin_refused(const char *rcache)
{
    const size_t len = 3000;
    uint8_t *host = malloc(len), *want = malloc(len);
    struct ut_reg dev, hreg;
    struct ut_uct u;
    uct_iov_t iov;
    CUdeviceptr d, d2;

    setenv("UCX_GDRX_RCACHE", rcache, 1);
    if ((tc_setup(0) != 0) || (ut_open(&u) != 0) || !(d = tc_alloc(len))) {
        return;
    }
    CU_ASSERT_EQUAL(tsim.fail_next("cuMemGetHandleForAddressRange",
                                   CUDA_ERROR_OUT_OF_MEMORY, 1 << 20), 0);
    tc_fill(d, len, 1);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)d, len, &dev), UCS_OK);
    /* short put and get through the key */
    tc_pattern(host, 100, 2);
    CU_ASSERT_EQUAL(uct_ep_put_short(u.ep, host, 100, d + 5, dev.rkey.rkey),
                    UCS_OK);
    CU_ASSERT(tc_check(d + 5, 100, 2));
    memset(host, 0, len);
    CU_ASSERT_EQUAL(uct_ep_get_short(u.ep, host, 100, d + 5, dev.rkey.rkey),
                    UCS_OK);
    tc_pattern(want, 100, 2);
    CU_ASSERT_EQUAL(memcmp(host, want, 100), 0);
    /* without a key, as UCP's memory-type copies */
    tc_pattern(host, 64, 3);
    CU_ASSERT_EQUAL(uct_ep_put_short(u.ep, host, 64, d + 1000,
                                     UCT_INVALID_RKEY), UCS_OK);
    CU_ASSERT(tc_check(d + 1000, 64, 3));
    /* zcopy whose local buffer is the unpinned device memory, to and from
     * host memory */
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, host, len, &hreg), UCS_OK);
    tc_fill(d, len, 4);
    memset(host, 0, len);
    iov = (uct_iov_t){(void*)d, len, dev.memh, 0, 1};
    CU_ASSERT_EQUAL(uct_ep_put_zcopy(u.ep, &iov, 1, (uintptr_t)host,
                                     hreg.rkey.rkey, NULL), UCS_OK);
    tc_pattern(want, len, 4);
    CU_ASSERT_EQUAL(memcmp(host, want, len), 0);
    tc_pattern(host, len, 5);
    CU_ASSERT_EQUAL(uct_ep_get_zcopy(u.ep, &iov, 1, (uintptr_t)host,
                                     hreg.rkey.rkey, NULL), UCS_OK);
    CU_ASSERT(tc_check(d, len, 5));
    ut_dereg(&u, &hreg);
    ut_dereg(&u, &dev);

    tsim.fail_next("cuMemGetHandleForAddressRange", CUDA_SUCCESS, 0);
    CU_ASSERT_FATAL((d2 = tc_alloc(len)) != 0);
    tc_pattern(host, 64, 6);
    CU_ASSERT_EQUAL(uct_ep_put_short(u.ep, host, 64, d2, UCT_INVALID_RKEY),
                    UCS_OK);
    CU_ASSERT(tc_check(d2, 64, 6));
    ut_close(&u);
    CU_ASSERT(ut_counter(u.stats, "md", "reg_fallbacks") >= 1);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "md", "pins"), 1);
    tc_free(d);
    tc_free(d2);
    free(host);
    free(want);
}

static void test_pin_refused_rcache(void)
{
    ut_pin_refused("try");
}

static void test_pin_refused_no_rcache(void)
{
    ut_pin_refused("n");
}

/* The MD allocates CUDA memory (a UCX without CUDA has no other way), in
 * the current context, registered: its memh is the registration. */
static void test_mem_alloc(void)
{
    uct_allocated_memory_t mem;
    uct_md_attr_t attr;
    struct ut_uct u;
    uint8_t buf[200];
    uct_mem_h memh;
    uct_rkey_bundle_t rkey;
    unsigned mem_type = 0;
    void *rkey_buffer;
    CUcontext ctx;
    long live;

    if ((tc_setup(0) != 0) || (ut_open(&u) != 0)) {
        return;
    }
    CU_ASSERT_EQUAL_FATAL(uct_md_query(u.md, &attr), UCS_OK);
    CU_ASSERT(attr.cap.flags & UCT_MD_FLAG_ALLOC);
    CU_ASSERT_EQUAL(attr.cap.alloc_mem_types, UCS_BIT(UCS_MEMORY_TYPE_CUDA));
    live = tsim.live_allocations ? tsim.live_allocations() : -1;

    CU_ASSERT_EQUAL_FATAL(ut_alloc(&u, 100000, &mem), UCS_OK);
    CU_ASSERT_PTR_EQUAL(mem.md, u.md);
    CU_ASSERT_EQUAL(mem.method, UCT_ALLOC_METHOD_MD);
    CU_ASSERT(mem.length >= 100000);
    CU_ASSERT_EQUAL(tc.PointerGetAttribute(&mem_type,
                                           CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                           (CUdeviceptr)mem.address),
                    CUDA_SUCCESS);
    CU_ASSERT_EQUAL(mem_type, CU_MEMORYTYPE_DEVICE);
    rkey_buffer = malloc(attr.rkey_packed_size);
    memh        = mem.memh;
    CU_ASSERT_EQUAL_FATAL(uct_md_mkey_pack(u.md, memh, rkey_buffer), UCS_OK);
    CU_ASSERT_EQUAL_FATAL(uct_rkey_unpack(u.component, rkey_buffer, &rkey),
                          UCS_OK);
    tc_pattern(buf, sizeof(buf), 9);
    CU_ASSERT_EQUAL(uct_ep_put_short(u.ep, buf, sizeof(buf),
                                     (uintptr_t)mem.address + 99000,
                                     rkey.rkey), UCS_OK);
    CU_ASSERT(tc_check((uintptr_t)mem.address + 99000, sizeof(buf), 9));
    uct_rkey_release(u.component, &rkey);
    free(rkey_buffer);
    CU_ASSERT_EQUAL(uct_mem_free(&mem), UCS_OK);
    if (live >= 0) {
        CU_ASSERT_EQUAL(tsim.live_allocations(), live);
    }

    /* no current context: refused, nothing allocated */
    CU_ASSERT_EQUAL_FATAL(tc.CtxGetCurrent(&ctx), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(tc.CtxSetCurrent(NULL), CUDA_SUCCESS);
    CU_ASSERT_NOT_EQUAL(ut_alloc(&u, 4096, &mem), UCS_OK);
    CU_ASSERT_EQUAL_FATAL(tc.CtxSetCurrent(ctx), CUDA_SUCCESS);
    if (live >= 0) {
        CU_ASSERT_EQUAL(tsim.live_allocations(), live);
    }
    ut_close(&u);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "md", "allocs"), 1);
}

/* A registration may end a little past its allocation: UCP 1.23 aligns
 * its registrations to 16 bytes, so a 1-byte allocation registers as 16.
 * Up to CUDA's 256-byte allocation alignment the range is served by its
 * allocation (no other allocation starts there; refusing it hung UCP 1.23's
 * sends); the key still reaches only the allocation, and a range past that
 * boundary is a span.  With and without the cache. */
static void ut_past_end(const char *rcache)
{
    uint8_t byte = 0x5a, got = 0, buf[16] = {0};
    struct ut_reg r, r2;
    struct ut_uct u;
    CUdeviceptr d, next, odd;

    setenv("UCX_GDRX_RCACHE", rcache, 1);
    if ((tc_setup(0) != 0) || (ut_open(&u) != 0) || !(d = tc_alloc(1)) ||
        !(next = tc_alloc(1)) || !(odd = tc_alloc(1000))) {
        CU_FAIL("setup");
        return;
    }
    tc_fill(next, 1, 7);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)d, 16, &r), UCS_OK);
    CU_ASSERT_EQUAL(uct_ep_put_short(u.ep, &byte, 1, d, r.rkey.rkey), UCS_OK);
    CU_ASSERT_EQUAL(uct_ep_get_short(u.ep, &got, 1, d, r.rkey.rkey), UCS_OK);
    CU_ASSERT_EQUAL(got, byte);
    /* the key is the allocation's: its 16 bytes are not all there */
    CU_ASSERT_EQUAL(uct_ep_put_short(u.ep, buf, 16, d, r.rkey.rkey),
                    UCS_ERR_OUT_OF_RANGE);
    /* up to the 256-byte boundary, inside a larger allocation's end too */
    CU_ASSERT_EQUAL(ut_reg(&u, (void*)d, 256, &r2), UCS_OK);
    ut_dereg(&u, &r2);
    CU_ASSERT_EQUAL(ut_reg(&u, (void*)(odd + 990), 34, &r2), UCS_OK);
    CU_ASSERT_EQUAL(uct_ep_put_short(u.ep, buf, 10, odd + 990, r2.rkey.rkey),
                    UCS_OK);
    CU_ASSERT_EQUAL(uct_ep_put_short(u.ep, buf, 11, odd + 990, r2.rkey.rkey),
                    UCS_ERR_OUT_OF_RANGE);
    ut_dereg(&u, &r2);
    /* past it: a span (it may reach another allocation), whose copies
     * reach only one allocation each (issue 43, defect 4) */
    CU_ASSERT_EQUAL(ut_reg(&u, (void*)d, 257, &r2), UCS_OK);
    CU_ASSERT_EQUAL(uct_ep_put_short(u.ep, &byte, 1, d, r2.rkey.rkey), UCS_OK);
    CU_ASSERT_EQUAL(uct_ep_put_short(u.ep, buf, 16, d + 241, r2.rkey.rkey),
                    UCS_ERR_INVALID_ADDR);
    ut_dereg(&u, &r2);
    CU_ASSERT_EQUAL(ut_reg(&u, (void*)(odd + 990), 35, &r2), UCS_OK);
    CU_ASSERT_EQUAL(uct_ep_put_short(u.ep, buf, 10, odd + 990, r2.rkey.rkey),
                    UCS_OK);
    ut_dereg(&u, &r2);
    ut_dereg(&u, &r);
    ut_close(&u);
    CU_ASSERT(tc_check(next, 1, 7));
    tc_free(d);
    tc_free(next);
    tc_free(odd);
}

static void test_past_end_rcache(void)
{
    ut_past_end("try");
}

static void test_past_end_no_rcache(void)
{
    ut_past_end("n");
}

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_one_pin_per_buffer),
    GDRX_TEST_CASE(test_large_allocation_windows),
    GDRX_TEST_CASE(test_default_max_regions),
    GDRX_TEST_CASE(test_default_max_size),
    GDRX_TEST_CASE(test_bad_window),
    GDRX_TEST_CASE(test_mem_alloc),
    GDRX_TEST_CASE(test_past_end_rcache),
    GDRX_TEST_CASE(test_past_end_no_rcache),
    GDRX_TEST_END
};

/* Need the simulated GPU's failure injection. */
static const struct gdrx_test_case sim_cases[] = {
    GDRX_TEST_CASE(test_pin_refused_rcache),
    GDRX_TEST_CASE(test_pin_refused_no_rcache),
    GDRX_TEST_END
};

static const struct gdrx_test_suite suites[] = {
    { "ucx_reg", ut_suite_init, NULL, cases },
    GDRX_SUITE_END
};

static const struct gdrx_test_suite sim_suites[] = {
    { "ucx_reg_sim", ut_suite_init, NULL, sim_cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    if (tc_load() && (tsim.fail_next != NULL)) {
        return gdrx_test_main(argc, argv, tc_suites(suites, sim_suites));
    }
    tc_report_skip("ucx_reg_sim", "no simulated GPU failure injection");
    return gdrx_test_main(argc, argv, suites);
}
