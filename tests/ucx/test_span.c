/*
 * test_span.c - registrations that no one CUDA allocation holds, and keys
 * that outlive their allocation (issue 43, defects 2, 4 and 5).  UCX's
 * memory-type cache merges touching allocations and keeps the extent of
 * memory a context reset freed, and UCP registers what it holds whole;
 * another transport's alignment widens a range to 64 KiB; a key held in
 * UCX's own registration cache outlives a graph launch that freed its
 * memory.  Each transfer completes with every byte where it belongs: the
 * message at the receiver, the neighbouring allocation untouched.  UCP
 * cases run next to the system's UCX, over sm,gdrx and with UCX_TLS unset.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ut_ucp.h"

#include <ucs/memory/memtype_cache.h>

#define UT_KIB 1024ul
#define UT_MIB (1024ul * 1024ul)

/* UCP over tls, its memory-type cache fed by gdrx's events from here on
 * (one message through device memory sets gdrx up). */
static void ut_span_ucp_open(struct ut_ucp *t, const char *tls)
{
    ut_ucp_open_tls(t, tls, NULL);
    ut_transfer(t, UT_DEV, UT_HOST, 64, 1);
}

/* Messages between the device buffer d of size bytes and host memory,
 * both ways, at three lengths, and between d and the device buffer peer
 * (if not 0); every byte of each receive buffer checked. */
static void ut_span_messages(struct ut_ucp *t, CUdeviceptr d,
                             CUdeviceptr peer, size_t size, uint32_t seed)
{
    static const size_t parts[] = {1, 7, 2};  /* size / parts[i] bytes */
    uint8_t *host = calloc(1, size);
    size_t i, len, off;

    CU_ASSERT_PTR_NOT_NULL_FATAL(host);
    for (i = 0; i < sizeof(parts) / sizeof(parts[0]); ++i) {
        len = size / parts[i];
        off = (size - len) / 2;
        ut_transfer_at(t, (void*)(d + off), UT_DEV, host, UT_HOST, len,
                       seed + 4 * i);
        ut_transfer_at(t, host, UT_HOST, (void*)(d + off), UT_DEV, len,
                       seed + 4 * i + 1);
        if (peer != 0) {
            ut_transfer_at(t, (void*)peer, UT_DEV, (void*)(d + off), UT_DEV,
                           len, seed + 4 * i + 2);
            ut_transfer_at(t, (void*)(d + off), UT_DEV, (void*)peer, UT_DEV,
                           len, seed + 4 * i + 3);
        }
    }
    free(host);
}

/* Two live allocations of size bytes next to each other: UCX's cache
 * holds them as one CUDA region, and UCP 1.13 registers that region whole
 * for a message of either (UCX_MEMTYPE_REG_WHOLE_ALLOC_TYPES=cuda).  gdrx
 * registered it as a span, and every copy went to the right allocation. */
static void ut_ucp_neighbours(const char *tls, size_t size)
{
    CUdeviceptr a, b;
    struct ut_ucp t;

    if (tc_setup(0) != 0) {
        return;
    }
    ut_span_ucp_open(&t, tls);
    /* neighbours: a starts an object of its own, b follows it there */
    a = tc_alloc_at(0, size, 0);
    CU_ASSERT_FATAL(a != 0);
    b = tc_alloc(size);
    CU_ASSERT_EQUAL_FATAL(b, a + size);
    tc_fill(a, size, 3);
    ut_span_messages(&t, b, 0, size, 10);
    CU_ASSERT(tc_check(a, size, 3));
    ut_span_messages(&t, a, b, size, 30);
    ut_ucp_close(&t);
    CU_ASSERT_EQUAL(ut_counter(t.stats, "md", "reg_errors"), 0);
    tc_free(a);
    tc_free(b);
}

static void test_ucp_neighbours_sm(void)
{
    ut_ucp_neighbours("sm,gdrx", 4 * UT_KIB);
}

static void test_ucp_neighbours_default(void)
{
    ut_ucp_neighbours(NULL, 4 * UT_KIB);
}

/* Past the rendezvous threshold: two 1 MiB allocations. */
static void test_ucp_neighbours_large_sm(void)
{
    ut_ucp_neighbours("sm,gdrx", UT_MIB);
}

static void test_ucp_neighbours_large_default(void)
{
    ut_ucp_neighbours(NULL, UT_MIB);
}

/* 1 if UCX's memory-type cache holds [addr, addr + len) as CUDA memory of
 * the extent [base, base + len_want); says what it holds if not. */
static int ut_cache_holds(CUdeviceptr addr, size_t len, CUdeviceptr base,
                          size_t len_want)
{
    ucs_memory_info_t info;
    ucs_status_t status;

    status = ucs_memtype_cache_lookup((void*)addr, len, &info);
    if ((status == UCS_OK) && (info.type == UCS_MEMORY_TYPE_CUDA) &&
        ((uintptr_t)info.base_address == base) &&
        (info.alloc_length == len_want)) {
        return 1;
    }
    fprintf(stderr, "    memory-type cache at 0x%llx: %s, type %d, %p length "
            "%zu; wanted CUDA 0x%llx length %zu\n", (unsigned long long)addr,
            ucs_status_string(status), (status == UCS_OK) ? (int)info.type : -1,
            (status == UCS_OK) ? info.base_address : NULL,
            (status == UCS_OK) ? info.alloc_length : 0,
            (unsigned long long)base, len_want);
    return 0;
}

/* A 4 MiB allocation freed by a primary-context reset (no FREE event:
 * nobody pinned it, so UCX keeps its extent), then a small allocation and
 * a 2 MiB one in that extent: UCP registers the stale 4 MiB for a message
 * of the 2 MiB one (1.23; see UT_UCP_REGISTERS_WHOLE_EXTENT).
 * start_freed: the small one is freed first (with its event), so the
 * stale region starts in freed memory, which is no device memory: a host
 * memh would have had the CPU copy device memory.
 * The precondition is made and checked, never assumed: CUDA hands freed VA
 * out again in no promised order, and UCP allocates device memory of its
 * own (1.23: 512 MiB of rendezvous fragments, 1-byte probes).  So the
 * simulated GPU puts the two allocations at x and x + 2 MiB, the small one
 * alone in its object (a probe sub-allocated next to it punched a hole in
 * the extent), and hands no freed range out again after that; UCX's
 * memory-type cache must hold the extent over the 2 MiB one before and
 * after the messages.  The UCP context that set gdrx's events up is closed
 * before the reset, and the messages go through a new one: a reset under
 * a live UCP takes the device memory UCP allocated with it (1.23's
 * fragments: the copies into them fail and the request never completes),
 * which is no case of gdrx's.
 * Next to a UCX with CUDA hooks of its own there is no stale extent to
 * register: UCX raises each allocation with its own extent, of unknown
 * type (for the MDs to detect), which cuts the stale one out of its cache
 * before gdrx's event names it CUDA memory.  There the cache must hold
 * each allocation's exact extent, and the messages check every byte. */
static void ut_ucp_stale_extent(const char *tls, int start_freed)
{
    const CUdeviceptr stale_len = start_freed ? 4 * UT_MIB - 4 * UT_KIB :
                                                4 * UT_MIB;
    CUdeviceptr x, small, big, attr, ext, ext_len;
    struct ut_ucp t0, t;
    CUdevice dev;
    int ucx_cuda;

    CU_ASSERT_PTR_NOT_NULL_FATAL(tsim.set_va_reuse);
    if (tc_setup(0) != 0) {
        return;
    }
    ut_span_ucp_open(&t0, tls);
    x = tc_alloc(4 * UT_MIB);
    CU_ASSERT_FATAL(x != 0);
    ut_ucp_close(&t0);
    CU_ASSERT_EQUAL(ut_counter(t0.stats, "md", "reg_errors"), 0);
    CU_ASSERT_EQUAL_FATAL(tc.DeviceGet(&dev, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(tc.DevicePrimaryCtxReset(dev), CUDA_SUCCESS);
    if (tc_setup(0) != 0) {
        return;
    }
    small = tc_alloc_at(x, 4 * UT_KIB, 1);
    big   = tc_alloc_at(x + 2 * UT_MIB, 2 * UT_MIB, 0);
    CU_ASSERT_FATAL((small == x) && (big == x + 2 * UT_MIB));
    CU_ASSERT_EQUAL_FATAL(tsim.set_va_reuse(0), 0);
    if (start_freed) {
        tc_free(small);
    } else {
        tc_fill(small, 4 * UT_KIB, 5);
    }
    /* the stale extent over big: from x, or from small's end; next to
     * UCX's own CUDA hooks big's own, and small's own over small */
    ucx_cuda = ut_ucx_has_cuda();
    ext      = ucx_cuda ? big : x + 4 * UT_MIB - stale_len;
    ext_len  = ucx_cuda ? 2 * UT_MIB : stale_len;
    CU_ASSERT_FATAL(ut_cache_holds(big, 2 * UT_MIB, ext, ext_len));
    if (ucx_cuda && !start_freed) {
        CU_ASSERT(ut_cache_holds(small, 4 * UT_KIB, small, 4 * UT_KIB));
    }

    ut_ucp_open_tls(&t, tls, NULL);
    ut_span_messages(&t, big, 0, 2 * UT_MIB, 50);
    if (!start_freed) {
        CU_ASSERT(tc_check(small, 4 * UT_KIB, 5));
        ut_span_messages(&t, small, 0, 4 * UT_KIB, 70);
    } else {
        /* still freed memory */
        CU_ASSERT_NOT_EQUAL(tc.PointerGetAttribute(
                &attr, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, x), CUDA_SUCCESS);
    }
    /* nothing UCP did in between changed the extent */
    CU_ASSERT(ut_cache_holds(big, 2 * UT_MIB, ext, ext_len));
    if (!start_freed) {
        tc_free(small);
    }
    ut_ucp_close(&t);
    CU_ASSERT_EQUAL(ut_counter(t.stats, "md", "reg_errors"), 0);
    if (ucx_cuda) {
        /* exact extents: no registration reached past an allocation */
        CU_ASSERT_EQUAL(ut_counter(t.stats, "md", "span_regs"), 0);
    } else if (UT_UCP_REGISTERS_WHOLE_EXTENT) {
        /* UCP registered the stale extent: the case reached its point */
        CU_ASSERT(ut_counter(t.stats, "md", "span_regs") >= 1);
    }
    tc_free(big);
    tsim.set_va_reuse(1);
}

static void test_ucp_stale_extent_sm(void) { ut_ucp_stale_extent("sm,gdrx", 0); }
static void test_ucp_stale_extent_default(void) { ut_ucp_stale_extent(NULL, 0); }
static void test_ucp_stale_extent_self(void) { ut_ucp_stale_extent("self,gdrx", 0); }
static void test_ucp_stale_start_freed_self(void) { ut_ucp_stale_extent("self,gdrx", 1); }
static void test_ucp_stale_start_freed_sm(void) { ut_ucp_stale_extent("sm,gdrx", 1); }
static void test_ucp_stale_start_freed_default(void) { ut_ucp_stale_extent(NULL, 1); }

/* Host to device memory at raddr through rkey and back, by every
 * operation, len bytes; every byte checked through CUDA. */
static void ut_span_ops(struct ut_uct *u, uint64_t raddr, uct_rkey_t rkey,
                        size_t len, uint32_t seed)
{
    static const enum ut_op ops[] = {UT_SHORT, UT_BCOPY, UT_ZCOPY};
    uint8_t *buf = malloc(len), *want = malloc(len);
    size_t i;

    for (i = 0; i < sizeof(ops) / sizeof(ops[0]); ++i) {
        tc_pattern(buf, len, seed + i);
        CU_ASSERT_EQUAL(ut_put(u, ops[i], buf, len, raddr, rkey), UCS_OK);
        CU_ASSERT(tc_check(raddr, len, seed + i));
        memset(buf, 0, len);
        CU_ASSERT_EQUAL(ut_get(u, ops[i], buf, len, raddr, rkey), UCS_OK);
        tc_pattern(want, len, seed + i);
        CU_ASSERT_EQUAL(memcmp(buf, want, len), 0);
    }
    free(buf);
    free(want);
}

/* A registration another transport aligned to 64 KiB (gdr_copy without
 * its cache; UCP >= 1.16 registers with the largest alignment of its
 * MDs): it starts in the neighbour a and ends past every allocation.
 * Registered (a span), its key copies into b and its memh serves as the
 * local side of a zcopy, a untouched. */
static void ut_aligned(const char *rcache)
{
    const size_t len = 1000;
    uint8_t host[1000], want[1000];
    struct ut_reg r, h;
    CUdeviceptr a, b;
    uint64_t base;
    struct ut_uct u;

    setenv("UCX_GDRX_RCACHE", rcache, 1);
    if (tc_setup(0) != 0) {
        return;
    }
    /* neighbours in one 64 KiB window: a starts an object of its own */
    a = tc_alloc_at(0, 4 * UT_KIB, 0);
    CU_ASSERT_FATAL(a != 0);
    b = tc_alloc(4 * UT_KIB);
    base = b & ~(uint64_t)(64 * UT_KIB - 1);
    CU_ASSERT_FATAL((b == a + 4 * UT_KIB) && (base <= a));
    CU_ASSERT_EQUAL_FATAL(ut_open(&u), 0);
    tc_fill(a, 4 * UT_KIB, 1);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)base, 64 * UT_KIB, &r), UCS_OK);
    ut_span_ops(&u, b + 100, r.rkey.rkey, len, 20);
    ut_span_ops(&u, a + 5, r.rkey.rkey, len, 30);
    tc_fill(a, 4 * UT_KIB, 1);
    /* the span as a zcopy's local memh, into host memory */
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, host, len, &h), UCS_OK);
    tc_fill(b, 4 * UT_KIB, 40);
    CU_ASSERT_EQUAL(ut_put_memh(&u, UT_ZCOPY, (void*)(b + 7), r.memh, len,
                                (uintptr_t)host, h.rkey.rkey), UCS_OK);
    CU_ASSERT_EQUAL(tc.MemcpyDtoH(want, b + 7, len), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(memcmp(host, want, len), 0);
    ut_dereg(&u, &h);
    ut_dereg(&u, &r);
    CU_ASSERT(tc_check(a, 4 * UT_KIB, 1));
    ut_close(&u);
    CU_ASSERT(ut_counter(u.stats, "md", "span_regs") >= 1);
    CU_ASSERT_EQUAL(ut_counter(u.stats, "md", "reg_errors"), 0);
    tc_free(a);
    tc_free(b);
}

static void test_aligned_64k(void) { ut_aligned("y"); }
static void test_aligned_64k_nocache(void) { ut_aligned("n"); }

/* CUDA's graph memory nodes, from the simulated libcuda. */
static struct {
    __typeof__(&cuGraphCreate)               Create;
    __typeof__(&cuGraphAddMemAllocNode)      AddAlloc;
    __typeof__(&cuGraphAddMemFreeNode)       AddFree;
    __typeof__(&cuGraphInstantiateWithFlags) Instantiate;
} ut_gr;

/* An executable graph of one node: an allocation of len bytes on device 0
 * (free_ptr 0; *dptr its fixed address), or the free of free_ptr. */
static CUgraphExec ut_graph(CUdeviceptr free_ptr, size_t len,
                            CUdeviceptr *dptr)
{
    CUDA_MEM_ALLOC_NODE_PARAMS p;
    CUgraphExec e = NULL;
    CUgraphNode n;
    CUgraph g;

    memset(&p, 0, sizeof(p));
    p.poolProps.allocType     = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.bytesize                = len;
    CU_ASSERT_EQUAL_FATAL(ut_gr.Create(&g, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(free_ptr ?
                          ut_gr.AddFree(&n, g, NULL, 0, free_ptr) :
                          ut_gr.AddAlloc(&n, g, NULL, 0, &p), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(ut_gr.Instantiate(&e, g, 0), CUDA_SUCCESS);
    if (dptr != NULL) {
        *dptr = p.dptr;
    }
    return e;
}

/* A key and a memh held over graph launches that free their allocation
 * and allocate it again at its fixed address (as UCP >= 1.15 keeps them in
 * its registration cache): libgdrx revoked the pin, and each copy serves
 * the allocation now at the address, as a CUDA copy would, rather than
 * failing a copy UCP cannot recover from.  Once the memory is gone, the
 * copy fails and nothing is written. */
static void ut_graph_key(const char *rcache)
{
    const size_t len = 2 * UT_MIB, part = 3000;
    uint8_t host[3000], want[3000];
    CUgraphExec ealloc, efree;
    struct ut_reg r, h;
    struct ut_uct u;
    CUdeviceptr g;
    void *cuda;

    setenv("UCX_GDRX_RCACHE", rcache, 1);
    if (tc_setup(0) != 0) {
        return;
    }
    cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cuda);
    *(void**)&ut_gr.Create      = dlsym(cuda, "cuGraphCreate");
    *(void**)&ut_gr.AddAlloc    = dlsym(cuda, "cuGraphAddMemAllocNode");
    *(void**)&ut_gr.AddFree     = dlsym(cuda, "cuGraphAddMemFreeNode");
    *(void**)&ut_gr.Instantiate = dlsym(cuda, "cuGraphInstantiateWithFlags");
    CU_ASSERT_FATAL(ut_gr.Create && ut_gr.AddAlloc && ut_gr.AddFree &&
                    ut_gr.Instantiate && tc.GraphLaunch);
    ealloc = ut_graph(0, len, &g);
    efree  = ut_graph(g, 0, NULL);
    CU_ASSERT_EQUAL_FATAL(tc.GraphLaunch(ealloc, NULL), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(ut_open(&u), 0);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, (void*)g, len, &r), UCS_OK);
    CU_ASSERT_EQUAL_FATAL(ut_reg(&u, host, part, &h), UCS_OK);
    ut_span_ops(&u, g + 64, r.rkey.rkey, part, 60);

    /* freed and allocated again at g: a new allocation */
    CU_ASSERT_EQUAL(tc.GraphLaunch(efree, NULL), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(tc.GraphLaunch(ealloc, NULL), CUDA_SUCCESS);
    ut_span_ops(&u, g + 4096, r.rkey.rkey, part, 70);
    tc_fill(g, len, 80);
    CU_ASSERT_EQUAL(tc.GraphLaunch(efree, NULL), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(tc.GraphLaunch(ealloc, NULL), CUDA_SUCCESS);
    tc_fill(g, len, 81);
    /* the stale memh as a zcopy's local side */
    CU_ASSERT_EQUAL(ut_put_memh(&u, UT_ZCOPY, (void*)(g + 9), r.memh, part,
                                (uintptr_t)host, h.rkey.rkey), UCS_OK);
    CU_ASSERT_EQUAL(tc.MemcpyDtoH(want, g + 9, part), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(memcmp(host, want, part), 0);

    /* freed, nothing at g: refused, never a CPU copy of the address */
    CU_ASSERT_EQUAL(tc.GraphLaunch(efree, NULL), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(ut_put(&u, UT_SHORT, host, part, g + 64, r.rkey.rkey),
                    UCS_ERR_INVALID_ADDR);
    CU_ASSERT_EQUAL(ut_get(&u, UT_BCOPY, host, part, g + 64, r.rkey.rkey),
                    UCS_ERR_INVALID_ADDR);
    CU_ASSERT_EQUAL_FATAL(tc.GraphLaunch(ealloc, NULL), CUDA_SUCCESS);
    ut_dereg(&u, &h);
    ut_dereg(&u, &r);
    ut_close(&u);
    CU_ASSERT(ut_counter(u.stats, "md", "resolved") > 0);
    CU_ASSERT_EQUAL(tc.GraphLaunch(efree, NULL), CUDA_SUCCESS);
}

static void test_graph_launch_key(void) { ut_graph_key("y"); }
static void test_graph_launch_key_nocache(void) { ut_graph_key("n"); }

static const struct gdrx_test_case cases[] = {
    GDRX_TEST_CASE(test_ucp_neighbours_sm),
    GDRX_TEST_CASE(test_ucp_neighbours_default),
    GDRX_TEST_CASE(test_ucp_neighbours_large_sm),
    GDRX_TEST_CASE(test_ucp_neighbours_large_default),
    GDRX_TEST_CASE(test_ucp_stale_extent_sm),
    GDRX_TEST_CASE(test_ucp_stale_extent_default),
    GDRX_TEST_CASE(test_ucp_stale_start_freed_sm),
    GDRX_TEST_CASE(test_ucp_stale_extent_self),
    GDRX_TEST_CASE(test_ucp_stale_start_freed_self),
    GDRX_TEST_CASE(test_ucp_stale_start_freed_default),
    GDRX_TEST_CASE(test_aligned_64k),
    GDRX_TEST_CASE(test_aligned_64k_nocache),
    GDRX_TEST_CASE(test_graph_launch_key),
    GDRX_TEST_CASE(test_graph_launch_key_nocache),
    GDRX_TEST_END
};

static const struct gdrx_test_suite suites[] = {
    { "ucx_span", ut_suite_init, NULL, cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    /* the cases place allocations and launch graphs on the simulated GPU */
    if (!tc_load()) {
        tc_report_skip("ucx_span", "no simulated GPU");
        return 0;
    }
    return gdrx_test_main(argc, argv, suites);
}
