/*
 * test_ep.c - every branch of the endpoint's copy paths, data-checked on
 * the simulated GPU: short, bcopy and zcopy (one and several iovs, strided
 * ones), keyed and key-less, host-registered and device memory on either
 * side, each direction, the remote range refused at both ends (also where
 * the copy engine reads), and one status for memory CUDA freed.  Device
 * data is always checked through CUDA, host data around each copy is
 * checked untouched, and the source of a copy is checked unchanged.
 *
 * SPDX-License-Identifier: MIT
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ut_uct.h"

#define UT_ALLOC  (1 << 20)
#define UT_GUARD  0x5a

static const enum ut_op ut_ops[] = {UT_SHORT, UT_BCOPY, UT_ZCOPY};
#define UT_NOPS   (sizeof(ut_ops) / sizeof(ut_ops[0]))

/* 1 if buf[0, size) holds pattern seed but [off, off + len), which holds
 * data. */
static int ut_host_is(const uint8_t *buf, size_t size, uint32_t seed,
                      size_t off, const uint8_t *data, size_t len)
{
    uint8_t *want = malloc(size);
    int same;

    tc_pattern(want, size, seed);
    if (len > 0) {
        memcpy(want + off, data, len);
    }
    same = !memcmp(buf, want, size);
    free(want);
    return same;
}

/* 1 if buf[0, size) is UT_GUARD but [off, off + len), which holds data. */
static int ut_host_guarded(const uint8_t *buf, size_t size, size_t off,
                           const uint8_t *data, size_t len)
{
    size_t i;

    for (i = 0; i < size; ++i) {
        if (((i < off) || (i >= off + len)) ? (buf[i] != UT_GUARD) :
                                              (buf[i] != data[i - off])) {
            return 0;
        }
    }
    return 1;
}

/* 1 if device [d, d + size) holds pattern seed but [off, off + len), which
 * holds data (read through CUDA). */
static int ut_dev_is(CUdeviceptr d, size_t size, uint32_t seed, size_t off,
                     const uint8_t *data, size_t len)
{
    uint8_t *got = malloc(size);
    int same;

    tc.MemcpyDtoH(got, d, size);
    same = ut_host_is(got, size, seed, off, data, len);
    free(got);
    return same;
}

static void ut_ep_open(struct ut_uct *u, const char *dma)
{
    setenv("UCX_GDRX_SEG_SIZE", "64k", 1);
    setenv("UCX_GDRX_DMA_THRESH", dma, 1);
    CU_ASSERT_EQUAL_FATAL(ut_open(u), 0);
}

/* A host registration's key: every size class copies with the CPU, each
 * way, the source unchanged. */
static void test_host_key(void)
{
    static const size_t lens[] = {0, 1, 57, 200};
    uint8_t remote[300], local[300];
    struct ut_uct u;
    struct ut_reg r;
    size_t o, l;

    if (tc_setup(0) != 0) {
        return;
    }
    ut_ep_open(&u, "inf");
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, remote, sizeof(remote), &r), UCS_OK);
    for (o = 0; o < UT_NOPS; ++o) {
        for (l = 0; l < sizeof(lens) / sizeof(lens[0]); ++l) {
            tc_pattern(local, sizeof(local), 1);
            memset(remote, UT_GUARD, sizeof(remote));
            CU_ASSERT_EQUAL(ut_put(&u, ut_ops[o], local + 3, lens[l],
                                   (uintptr_t)(remote + 5), r.rkey.rkey), UCS_OK);
            CU_ASSERT(ut_host_guarded(remote, sizeof(remote), 5, local + 3, lens[l]));
            CU_ASSERT(ut_host_is(local, sizeof(local), 1, 0, NULL, 0));

            tc_pattern(remote, sizeof(remote), 2);
            memset(local, UT_GUARD, sizeof(local));
            CU_ASSERT_EQUAL(ut_get(&u, ut_ops[o], local + 3, lens[l],
                                   (uintptr_t)(remote + 5), r.rkey.rkey), UCS_OK);
            CU_ASSERT(ut_host_guarded(local, sizeof(local), 3, remote + 5, lens[l]));
            CU_ASSERT(ut_host_is(remote, sizeof(remote), 2, 0, NULL, 0));
        }
    }
    ut_dereg(&u, &r);
    ut_close(&u);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "md", "pins"), 0);
}

/* zcopy from and into a registered GPU buffer (the local memh): with a
 * host key (the copy engine from dma on, GPU to host) and with a device
 * key (through the stack, in chunks), both ways, at odd offsets. */
static void ut_local_gpu(const char *dma, long want_dma)
{
    static const size_t sizes[] = {1, 8191, 8192, 8193, 3 * 8192 + 5};
    const size_t hsize = 4 * 8192;
    uint8_t *host = malloc(hsize), *data = malloc(UT_ALLOC);
    struct ut_reg lr, rr, hr;
    CUdeviceptr l, d;
    struct ut_uct u;
    size_t i, s;

    if (tc_setup(0) != 0) {
        return;
    }
    ut_ep_open(&u, dma);
    CU_ASSERT_FATAL((l = tc_alloc(UT_ALLOC)) != 0);
    CU_ASSERT_FATAL((d = tc_alloc(UT_ALLOC)) != 0);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)l, UT_ALLOC, &lr), UCS_OK);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)d, UT_ALLOC, &rr), UCS_OK);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, host, hsize, &hr), UCS_OK);
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        s = sizes[i];
        /* GPU -> host key */
        tc_fill(l, UT_ALLOC, 10 + i);
        tc_pattern(data, UT_ALLOC, 10 + i);
        memset(host, UT_GUARD, hsize);
        CU_ASSERT_EQUAL(ut_put_memh(&u, UT_ZCOPY, (void*)(l + 7), lr.memh, s,
                                    (uintptr_t)(host + 5), hr.rkey.rkey), UCS_OK);
        CU_ASSERT(ut_host_guarded(host, hsize, 5, data + 7, s));
        CU_ASSERT(tc_check(l, UT_ALLOC, 10 + i));
        /* host key -> GPU */
        tc_pattern(host, hsize, 20 + i);
        CU_ASSERT_EQUAL(ut_get_memh(&u, UT_ZCOPY, (void*)(l + 7), lr.memh, s,
                                    (uintptr_t)(host + 5), hr.rkey.rkey), UCS_OK);
        CU_ASSERT(ut_dev_is(l, UT_ALLOC, 10 + i, 7, host + 5, s));
        CU_ASSERT(ut_host_is(host, hsize, 20 + i, 0, NULL, 0));
        /* GPU -> GPU key */
        tc_fill(l, UT_ALLOC, 30 + i);
        tc_fill(d, UT_ALLOC, 40 + i);
        tc_pattern(data, UT_ALLOC, 30 + i);
        CU_ASSERT_EQUAL(ut_put_memh(&u, UT_ZCOPY, (void*)(l + 7), lr.memh, s,
                                    d + 1001, rr.rkey.rkey), UCS_OK);
        CU_ASSERT(ut_dev_is(d, UT_ALLOC, 40 + i, 1001, data + 7, s));
        CU_ASSERT(tc_check(l, UT_ALLOC, 30 + i));
        /* GPU key -> GPU */
        tc_pattern(data, UT_ALLOC, 40 + i);
        tc_fill(d, UT_ALLOC, 40 + i);
        CU_ASSERT_EQUAL(ut_get_memh(&u, UT_ZCOPY, (void*)(l + 7), lr.memh, s,
                                    d + 1001, rr.rkey.rkey), UCS_OK);
        CU_ASSERT(ut_dev_is(l, UT_ALLOC, 30 + i, 7, data + 1001, s));
        CU_ASSERT(tc_check(d, UT_ALLOC, 40 + i));
    }
    ut_dereg(&u, &hr);
    ut_dereg(&u, &rr);
    ut_dereg(&u, &lr);
    ut_close(&u);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "iface get_dma", "count"), want_dma);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "iface put_zcopy", "count"), 10);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "iface get_zcopy", "count"), 10);
    tc_free(l);
    tc_free(d);
    free(host);
    free(data);
}

static void test_zcopy_local_gpu(void) { ut_local_gpu("inf", 0); }
/* the host-key puts of 4 KiB and more: 8191, 8192, 8193, 24581 */
static void test_zcopy_local_gpu_dma(void) { ut_local_gpu("4k", 4); }

/* Several iovs, one strided and one in a registered GPU buffer, land one
 * after the other in the remote range, and come back from it in order. */
static void ut_multi_iov(struct ut_uct *u, CUdeviceptr remote, uint8_t *rhost,
                         uct_rkey_t rkey, CUdeviceptr g, uct_mem_h gmemh)
{
    const size_t rsize = 16384, off = 333, total = 100 + 3 * 33 + 5000 + 5000;
    uint8_t *a = malloc(100), *b = malloc(133), *c = malloc(5000);
    uint8_t *want = malloc(rsize), *got = malloc(rsize);
    uct_iov_t iov[4] = {
        {a, 100, NULL, 0, 1},
        {b, 33, NULL, 50, 3},  /* b[0..33), b[50..83), b[100..133) */
        {(void*)(g + 7), 5000, gmemh, 0, 1},
        {c, 5000, NULL, 0, 1}  /* from DMA_THRESH on: the copy engine */
    };
    uint64_t raddr = remote ? remote + off : (uintptr_t)(rhost + off);

    /* put: the concatenation, nothing around it */
    tc_pattern(a, 100, 1);
    tc_pattern(b, 133, 2);
    tc_pattern(c, 5000, 3);
    tc_fill(g, UT_ALLOC, 4);
    tc_pattern(want, rsize, 5);
    if (remote) {
        tc_fill(remote, rsize, 5);
    } else {
        memcpy(rhost, want, rsize);
    }
    memcpy(want + off, a, 100);
    memcpy(want + off + 100, b, 33);
    memcpy(want + off + 133, b + 50, 33);
    memcpy(want + off + 166, b + 100, 33);
    tc_pattern(got, 5007, 4); /* what g holds */
    memcpy(want + off + 199, got + 7, 5000);
    memcpy(want + off + 5199, c, 5000);
    CU_ASSERT_EQUAL(uct_ep_put_zcopy(u->ep, iov, 4, raddr, rkey, NULL), UCS_OK);
    if (remote) {
        tc.MemcpyDtoH(got, remote, rsize);
    } else {
        memcpy(got, rhost, rsize);
    }
    CU_ASSERT_EQUAL(memcmp(got, want, rsize), 0);

    /* get: each part from its place, the gaps of the stride untouched */
    tc_pattern(want, rsize, 6);
    if (remote) {
        tc_fill(remote, rsize, 6);
    } else {
        memcpy(rhost, want, rsize);
    }
    memset(a, UT_GUARD, 100);
    memset(b, UT_GUARD, 133);
    memset(c, UT_GUARD, 5000);
    tc_fill(g, UT_ALLOC, 7);
    CU_ASSERT_EQUAL(uct_ep_get_zcopy(u->ep, iov, 4, raddr, rkey, NULL), UCS_OK);
    CU_ASSERT_EQUAL(memcmp(a, want + off, 100), 0);
    CU_ASSERT_EQUAL(memcmp(b, want + off + 100, 33), 0);
    CU_ASSERT_EQUAL(memcmp(b + 50, want + off + 133, 33), 0);
    CU_ASSERT_EQUAL(memcmp(b + 100, want + off + 166, 33), 0);
    CU_ASSERT((b[33] == UT_GUARD) && (b[49] == UT_GUARD) && (b[83] == UT_GUARD) &&
              (b[99] == UT_GUARD));
    CU_ASSERT(ut_dev_is(g, UT_ALLOC, 7, 7, want + off + 199, 5000));
    CU_ASSERT_EQUAL(memcmp(c, want + off + 5199, 5000), 0);
    CU_ASSERT(off + total < rsize);
    free(a);
    free(b);
    free(c);
    free(want);
    free(got);
}

static void test_multi_iov(void)
{
    uint8_t *rhost = malloc(16384);
    struct ut_reg rr, hr, gr;
    CUdeviceptr d, g;
    struct ut_uct u;

    if (tc_setup(0) != 0) {
        return;
    }
    ut_ep_open(&u, "4k");
    CU_ASSERT_FATAL((d = tc_alloc(UT_ALLOC)) != 0);
    CU_ASSERT_FATAL((g = tc_alloc(UT_ALLOC)) != 0);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)d, UT_ALLOC, &rr), UCS_OK);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)g, UT_ALLOC, &gr), UCS_OK);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, rhost, 16384, &hr), UCS_OK);
    ut_multi_iov(&u, d, NULL, rr.rkey.rkey, g, gr.memh);
    ut_multi_iov(&u, 0, rhost, hr.rkey.rkey, g, gr.memh);
    ut_dereg(&u, &hr);
    ut_dereg(&u, &gr);
    ut_dereg(&u, &rr);
    ut_close(&u);
    /* the 5000-byte parts the copy engine moves: from the device key into
     * host memory, and from the local GPU buffer into the host key */
    CU_ASSERT_EQUAL(ut_counter(u.stats, "iface get_dma", "count"), 2);
    tc_free(d);
    tc_free(g);
    free(rhost);
}

/* Accesses crossing either end of the key's range (and wrapping the
 * address space), by every size class and direction, are refused and
 * change nothing; those inside reach exactly their bytes.  A key reaches
 * its whole allocation, or its UCX_GDRX_REG_WINDOW window of a larger one:
 * a 64 KiB window makes it the registered range, with device memory of the
 * same allocation on both sides.  With dma "4k" the zcopy gets are the
 * copy engine's, which only gdrx's check guards. */
static void ut_remote_range(const char *dma)
{
    const size_t len = 65536, big = 8192;
    struct {
        uint64_t offset; /* from the registered start, wrapping */
        size_t   length;
    } bad[] = {
        {-1ull, 8}, {-4096ull, big}, {len - 7, 8}, {len - 5000, big},
        {len, 1}, {-131072ull, 16}, {0, 8} /* UINT64_MAX - 4, set below */
    };
    uint8_t *host = malloc(big + 2), *data = malloc(UT_ALLOC);
    struct ut_reg r;
    struct ut_uct u;
    CUdeviceptr d, start;
    size_t o, i, n;

    setenv("UCX_GDRX_REG_WINDOW", "64k", 1);
    if (tc_setup(0) != 0) {
        return;
    }
    ut_ep_open(&u, dma);
    CU_ASSERT_FATAL((d = tc_alloc(UT_ALLOC)) != 0);
    tc_fill(d, UT_ALLOC, 50);
    tc_pattern(data, UT_ALLOC, 50);
    start = d + 65536; /* 64 KiB-aligned: no cache rounds it */
    bad[sizeof(bad) / sizeof(bad[0]) - 1].offset = UINT64_MAX - 4 - start;
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)start, len, &r), UCS_OK);
    for (o = 0; o < UT_NOPS; ++o) {
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
            n = bad[i].length;
            tc_pattern(host, big + 2, 51);
            CU_ASSERT_EQUAL(ut_put(&u, ut_ops[o], host, n, start + bad[i].offset,
                                   r.rkey.rkey), UCS_ERR_OUT_OF_RANGE);
            memset(host, UT_GUARD, big + 2);
            CU_ASSERT_EQUAL(ut_get(&u, ut_ops[o], host + 1, n, start + bad[i].offset,
                                   r.rkey.rkey), UCS_ERR_OUT_OF_RANGE);
            CU_ASSERT(ut_host_guarded(host, big + 2, 0, NULL, 0));
        }
        /* the first and last bytes are in */
        memset(host, UT_GUARD, big + 2);
        CU_ASSERT_EQUAL(ut_get(&u, ut_ops[o], host + 1, 8, start, r.rkey.rkey), UCS_OK);
        CU_ASSERT(ut_host_guarded(host, big + 2, 1, data + 65536, 8));
        memset(host, UT_GUARD, big + 2);
        CU_ASSERT_EQUAL(ut_get(&u, ut_ops[o], host + 1, 8, start + len - 8,
                               r.rkey.rkey), UCS_OK);
        CU_ASSERT(ut_host_guarded(host, big + 2, 1, data + 65536 + len - 8, 8));
    }
    ut_dereg(&u, &r);
    ut_close(&u);
    CU_ASSERT(tc_check(d, UT_ALLOC, 50));
    tc_free(d);
    free(host);
    free(data);
}

static void test_remote_range(void) { ut_remote_range("inf"); }
static void test_remote_range_dma(void) { ut_remote_range("4k"); }

/* zcopy checks every part before it copies one: a remote range crossing
 * the end in a later iov, or a local buffer outside its registration,
 * leaves the destination as it was (64 KiB windows: each registration
 * ends inside its allocation). */
static void test_zcopy_checks_first(void)
{
    const size_t len = 65536;
    uint8_t *host = malloc(2 * len);
    struct ut_reg r, l;
    struct ut_uct u;
    CUdeviceptr d, g;
    uct_iov_t iov[2];

    setenv("UCX_GDRX_REG_WINDOW", "64k", 1);
    if (tc_setup(0) != 0) {
        return;
    }
    ut_ep_open(&u, "inf");
    CU_ASSERT_FATAL((d = tc_alloc(UT_ALLOC)) != 0);
    CU_ASSERT_FATAL((g = tc_alloc(UT_ALLOC)) != 0);
    tc_fill(d, UT_ALLOC, 60);
    tc_fill(g, UT_ALLOC, 61);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)(d + len), len, &r), UCS_OK);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)(g + len), len, &l), UCS_OK);
    tc_pattern(host, 2 * len, 62);
    /* host iovs: 1000 bytes in range, then 20000 crossing the end */
    iov[0] = (uct_iov_t){host, 1000, NULL, 0, 1};
    iov[1] = (uct_iov_t){host + 1000, 20000, NULL, 0, 1};
    CU_ASSERT_EQUAL(uct_ep_put_zcopy(u.ep, iov, 2, d + 2 * len - 20000, r.rkey.rkey,
                                     NULL), UCS_ERR_OUT_OF_RANGE);
    /* GPU to GPU, crossing the remote end after the first chunks */
    iov[0] = (uct_iov_t){(void*)(g + len), 20000, l.memh, 0, 1};
    CU_ASSERT_EQUAL(uct_ep_put_zcopy(u.ep, iov, 1, d + 2 * len - 10000, r.rkey.rkey,
                                     NULL), UCS_ERR_OUT_OF_RANGE);
    CU_ASSERT_EQUAL(uct_ep_get_zcopy(u.ep, iov, 1, d + 2 * len - 10000, r.rkey.rkey,
                                     NULL), UCS_ERR_OUT_OF_RANGE);
    /* the local GPU buffer crossing its registration's end, in a later iov */
    iov[0] = (uct_iov_t){host, 100, NULL, 0, 1};
    iov[1] = (uct_iov_t){(void*)(g + 2 * len - 100), 200, l.memh, 0, 1};
    CU_ASSERT_EQUAL(uct_ep_put_zcopy(u.ep, iov, 2, d + len, r.rkey.rkey, NULL),
                    UCS_ERR_OUT_OF_RANGE);
    CU_ASSERT_EQUAL(uct_ep_get_zcopy(u.ep, iov, 2, d + len, r.rkey.rkey, NULL),
                    UCS_ERR_OUT_OF_RANGE);
    CU_ASSERT(ut_host_is(host, 2 * len, 62, 0, NULL, 0));
    ut_dereg(&u, &l);
    ut_dereg(&u, &r);
    ut_close(&u);
    CU_ASSERT(tc_check(d, UT_ALLOC, 60));
    CU_ASSERT(tc_check(g, UT_ALLOC, 61));
    tc_free(d);
    tc_free(g);
    free(host);
}

/* No key (UCX 1.13's memory-type pipelines): the remote address is found
 * by itself, device or host memory, also after CUDA gave the address to a
 * new allocation. */
static void test_keyless(void)
{
    const size_t len = 3000;
    uint8_t *buf = malloc(len + 2), *rhost = malloc(len + 64);
    struct ut_uct u;
    CUdeviceptr d, d2;
    size_t o;
    int round;

    if (tc_setup(0) != 0) {
        return;
    }
    ut_ep_open(&u, "inf");
    CU_ASSERT_FATAL((d = tc_alloc(UT_ALLOC)) != 0);
    for (round = 0; round < 3; ++round) {
        if (round == 2) {
            tc_free(d);
            CU_ASSERT_FATAL((d2 = tc_alloc(UT_ALLOC)) != 0);
            if (tsim.set_va_reuse) {
                CU_ASSERT_EQUAL(d2, d); /* the sim hands the address out again */
            }
            d = d2;
        }
        for (o = 0; o < UT_NOPS; ++o) {
            /* device */
            tc_fill(d, UT_ALLOC, 70 + round);
            tc_pattern(buf, len + 2, 80 + o);
            CU_ASSERT_EQUAL(ut_put(&u, ut_ops[o], buf + 1, len, d + 9,
                                   UCT_INVALID_RKEY), UCS_OK);
            CU_ASSERT(ut_dev_is(d, UT_ALLOC, 70 + round, 9, buf + 1, len));
            memset(buf, UT_GUARD, len + 2);
            tc_fill(d, UT_ALLOC, 90 + round);
            CU_ASSERT_EQUAL(ut_get(&u, ut_ops[o], buf + 1, len, d + 9,
                                   UCT_INVALID_RKEY), UCS_OK);
            CU_ASSERT(ut_dev_is(d, UT_ALLOC, 90 + round, 0, NULL, 0));
            tc_pattern(rhost, len + 64, 90 + round); /* what the device holds */
            CU_ASSERT(ut_host_guarded(buf, len + 2, 1, rhost + 9, len));
            /* host */
            tc_pattern(buf, len + 2, 100 + o);
            memset(rhost, UT_GUARD, len + 64);
            CU_ASSERT_EQUAL(ut_put(&u, ut_ops[o], buf + 1, len,
                                   (uintptr_t)(rhost + 9), UCT_INVALID_RKEY), UCS_OK);
            CU_ASSERT(ut_host_guarded(rhost, len + 64, 9, buf + 1, len));
            memset(buf, UT_GUARD, len + 2);
            tc_pattern(rhost, len + 64, 110 + o);
            CU_ASSERT_EQUAL(ut_get(&u, ut_ops[o], buf + 1, len,
                                   (uintptr_t)(rhost + 9), UCT_INVALID_RKEY), UCS_OK);
            CU_ASSERT(ut_host_guarded(buf, len + 2, 1, rhost + 9, len));
        }
    }
    ut_close(&u);
    tc_free(d);
    free(buf);
    free(rhost);
}

/* Memory CUDA freed under a key or a local memh: the same status from
 * every path, nothing copied. */
static void test_freed_status(void)
{
    const size_t small = 1000, large = 8192; /* below / above DMA_THRESH */
    uint8_t *host = malloc(large);
    struct ut_reg r, l, h;
    struct ut_uct u;
    CUdeviceptr d, g;
    size_t o;

    if (tc_setup(0) != 0) {
        return;
    }
    ut_ep_open(&u, "4k");
    CU_ASSERT_FATAL((d = tc_alloc(UT_ALLOC)) != 0);
    CU_ASSERT_FATAL((g = tc_alloc(UT_ALLOC)) != 0);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)d, UT_ALLOC, &r), UCS_OK);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)g, UT_ALLOC, &l), UCS_OK);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, host, large, &h), UCS_OK);
    tc_free(d);
    tc_free(g);
    memset(host, UT_GUARD, large);
    for (o = 0; o < UT_NOPS; ++o) {
        CU_ASSERT_EQUAL(ut_put(&u, ut_ops[o], host, small, d + 1, r.rkey.rkey),
                        UCS_ERR_INVALID_ADDR);
        CU_ASSERT_EQUAL(ut_get(&u, ut_ops[o], host, small, d + 1, r.rkey.rkey),
                        UCS_ERR_INVALID_ADDR);
    }
    /* the copy engine's size */
    CU_ASSERT_EQUAL(ut_get(&u, UT_ZCOPY, host, large, d + 1, r.rkey.rkey),
                    UCS_ERR_INVALID_ADDR);
    /* the local GPU buffer freed: to and from host memory, to and from the
     * GPU, by the CPU and by the copy engine */
    CU_ASSERT_EQUAL(ut_put_memh(&u, UT_ZCOPY, (void*)g, l.memh, small,
                                (uintptr_t)host, h.rkey.rkey), UCS_ERR_INVALID_ADDR);
    CU_ASSERT_EQUAL(ut_put_memh(&u, UT_ZCOPY, (void*)g, l.memh, large,
                                (uintptr_t)host, h.rkey.rkey), UCS_ERR_INVALID_ADDR);
    CU_ASSERT_EQUAL(ut_get_memh(&u, UT_ZCOPY, (void*)g, l.memh, small,
                                (uintptr_t)host, h.rkey.rkey), UCS_ERR_INVALID_ADDR);
    CU_ASSERT_EQUAL(ut_put_memh(&u, UT_ZCOPY, (void*)g, l.memh, small, d,
                                r.rkey.rkey), UCS_ERR_INVALID_ADDR);
    CU_ASSERT_EQUAL(ut_get_memh(&u, UT_ZCOPY, (void*)g, l.memh, small, d,
                                r.rkey.rkey), UCS_ERR_INVALID_ADDR);
    CU_ASSERT(ut_host_guarded(host, large, 0, NULL, 0));
    ut_dereg(&u, &h);
    ut_dereg(&u, &l);
    ut_dereg(&u, &r);
    ut_close(&u);
    free(host);
}

struct ut_stack_arg {
    struct ut_uct *u;
    CUdeviceptr   d;
    uct_rkey_t    rkey;
    size_t        len;
    int           ok;
};

static void *ut_stack_main(void *arg)
{
    struct ut_stack_arg *a = arg;
    uint8_t *out = malloc(a->len), *in = malloc(a->len);

    tc_pattern(out, a->len, 120);
    memset(in, 0, a->len);
    a->ok = (ut_put(a->u, UT_BCOPY, out, a->len, a->d + 3, a->rkey) == UCS_OK) &&
            (ut_get(a->u, UT_BCOPY, in, a->len, a->d + 3, a->rkey) == UCS_OK) &&
            !memcmp(in, out, a->len);
    free(out);
    free(in);
    return NULL;
}

/* bcopy of a whole segment from a thread with a small stack (as runtimes
 * with many threads make them): the bounce buffer does not take SEG_SIZE
 * of it. */
static void ut_bcopy_small_stack(const char *seg_size)
{
    struct ut_stack_arg arg = {0};
    pthread_attr_t attr;
    pthread_t thread;
    struct ut_reg r;
    struct ut_uct u;

    if (tc_setup(0) != 0) {
        return;
    }
    setenv("UCX_GDRX_SEG_SIZE", seg_size, 1);
    CU_ASSERT_EQUAL_FATAL(ut_open(&u), 0);
    CU_ASSERT_FATAL((arg.d = tc_alloc(UT_ALLOC)) != 0);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)arg.d, UT_ALLOC, &r), UCS_OK);
    arg.u    = &u;
    arg.rkey = r.rkey.rkey;
    arg.len  = u.attr.cap.put.max_bcopy;
    CU_ASSERT_EQUAL(pthread_attr_init(&attr), 0);
    CU_ASSERT_EQUAL_FATAL(pthread_attr_setstacksize(&attr, 48 * 1024), 0);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&thread, &attr, ut_stack_main, &arg), 0);
    pthread_join(thread, NULL);
    pthread_attr_destroy(&attr);
    CU_ASSERT(arg.ok);
    ut_dereg(&u, &r);
    ut_close(&u);
    tc_free(arg.d);
}

static void test_bcopy_small_stack(void) { ut_bcopy_small_stack("8k"); }
static void test_bcopy_small_stack_64k(void) { ut_bcopy_small_stack("64k"); }

static const struct gdrx_test_case ep_cases[] = {
    GDRX_TEST_CASE(test_host_key),
    GDRX_TEST_CASE(test_zcopy_local_gpu),
    GDRX_TEST_CASE(test_zcopy_local_gpu_dma),
    GDRX_TEST_CASE(test_multi_iov),
    GDRX_TEST_CASE(test_remote_range),
    GDRX_TEST_CASE(test_remote_range_dma),
    GDRX_TEST_CASE(test_zcopy_checks_first),
    GDRX_TEST_CASE(test_keyless),
    GDRX_TEST_CASE(test_freed_status),
    GDRX_TEST_CASE(test_bcopy_small_stack),
    GDRX_TEST_CASE(test_bcopy_small_stack_64k),
    GDRX_TEST_END
};

static const struct gdrx_test_suite suites[] = {
    { "ucx_ep", ut_suite_init, NULL, ep_cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    return gdrx_test_main(argc, argv, suites);
}
