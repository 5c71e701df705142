/*
 * test_graph_mem.c - CUDA graph memory and gdrx pins (issue 43, defect 6):
 * no access through a gdrx mapping ever reaches memory of another
 * allocation.  A graph's free node frees its allocation inside
 * cuGraphLaunch, unseen, and the next launch of an allocation node hands
 * the same pages out again, at the same address (a relaunch) or at another
 * (another graph's node).  A pin of graph memory made before must then
 * copy nothing (-ESTALE), and the new owner's bytes stay its own.
 * Memory pools (cuMemAllocAsync) keep their memory over a context reset,
 * as the H100 does (defect 13), and their pins with it.
 *
 * SPDX-License-Identifier: MIT
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcuda.h"

#define MiB (1024u * 1024u)
#define LEN (2 * MiB)

static struct {
    __typeof__(&cuGraphCreate)               Create;
    __typeof__(&cuGraphAddMemAllocNode)      AddAlloc;
    __typeof__(&cuGraphAddMemFreeNode)       AddFree;
    __typeof__(&cuGraphInstantiateWithFlags) Instantiate;
    __typeof__(&cuMemAllocAsync)             AllocAsync;
    __typeof__(&cuMemFreeAsync)              FreeAsync;
} gr;

/* cuInit, the primary context, and the graph entry points; -1 (said) if
 * this libcuda has no graph memory nodes. */
static int setup(void)
{
    if (tc_setup(0))
        return -1;
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cuda);
    *(void **)&gr.Create = dlsym(cuda, "cuGraphCreate");
    *(void **)&gr.AddAlloc = dlsym(cuda, "cuGraphAddMemAllocNode");
    *(void **)&gr.AddFree = dlsym(cuda, "cuGraphAddMemFreeNode");
    *(void **)&gr.Instantiate = dlsym(cuda, "cuGraphInstantiateWithFlags");
    *(void **)&gr.AllocAsync = dlsym(cuda, "cuMemAllocAsync");
    *(void **)&gr.FreeAsync = dlsym(cuda, "cuMemFreeAsync");
    CU_ASSERT_FATAL(gr.Create && gr.AddAlloc && gr.AddFree && gr.Instantiate &&
                    gr.AllocAsync && gr.FreeAsync);
    return 0;
}

/* An executable graph of one allocation node of LEN on device 0 (*dptr:
 * its fixed address). */
static CUgraphExec alloc_graph(CUdeviceptr *dptr)
{
    CUDA_MEM_ALLOC_NODE_PARAMS p;
    CUgraph g;
    CUgraphNode n;
    CUgraphExec e = NULL;

    memset(&p, 0, sizeof(p));
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = 0;
    p.bytesize = LEN;
    CU_ASSERT_EQUAL_FATAL(gr.Create(&g, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(gr.AddAlloc(&n, g, NULL, 0, &p), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(gr.Instantiate(&e, g, 0), CUDA_SUCCESS);
    *dptr = p.dptr;
    return e;
}

/* An executable graph of one free node of dptr. */
static CUgraphExec free_graph(CUdeviceptr dptr)
{
    CUgraph g;
    CUgraphNode n;
    CUgraphExec e = NULL;

    CU_ASSERT_EQUAL_FATAL(gr.Create(&g, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(gr.AddFree(&n, g, NULL, 0, dptr), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(gr.Instantiate(&e, g, 0), CUDA_SUCCESS);
    return e;
}

static unsigned long long buffer_id(CUdeviceptr p)
{
    unsigned long long id = 0;
    CU_ASSERT_EQUAL(tc.PointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p),
                    CUDA_SUCCESS);
    return id;
}

/* The pin of the old allocation, mapped at cpu, after its pages went to
 * the allocation at now (seed 7 written there through CUDA): no copy
 * through it may run, and the new owner's bytes are untouched. */
static void expect_no_reach(gdrx_t g, gdrx_pin_t old, void *cpu, CUdeviceptr now)
{
    static char buf[LEN];
    struct gdrx_pin_info info;

    tc_fill(now, LEN, 7);
    memset(buf, 0x5a, sizeof(buf));
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(old, cpu, buf, LEN), -ESTALE);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(old, buf, cpu, LEN), -ESTALE);
    CU_ASSERT_EQUAL(tc_check(now, LEN, 7), 1);
    CU_ASSERT_EQUAL(gdrx_pin_query(g, old, &info), 0);
    CU_ASSERT_EQUAL(info.stale, 1);
}

/* A pinned and mapped graph allocation, written through the mapping. */
static gdrx_pin_t pin_mapped(gdrx_t g, CUdeviceptr a, void **cpu)
{
    static char buf[LEN];
    gdrx_pin_t pin;

    CU_ASSERT_EQUAL_FATAL(gdrx_pin(g, a, LEN, 0, &pin), 0);
    CU_ASSERT_EQUAL_FATAL(gdrx_map(g, pin, cpu), 0);
    tc_pattern(buf, LEN, 3);
    CU_ASSERT_EQUAL(gdrx_copy_to_mapping(pin, *cpu, buf, LEN), 0);
    CU_ASSERT_EQUAL(tc_check(a, LEN, 3), 1);
    return pin;
}

/* Relaunch: the allocation comes back at its address, on the same pages,
 * as another buffer. */
static void test_relaunch_same_address(void)
{
    CUdeviceptr a, a2;
    void *cpu;

    if (setup())
        return;
    gdrx_t g = tc_open();
    CUgraphExec ealloc = alloc_graph(&a);
    CUgraphExec efree = free_graph(a);
    CU_ASSERT_EQUAL_FATAL(tc.GraphLaunch(ealloc, NULL), CUDA_SUCCESS);
    unsigned long long id = buffer_id(a);
    gdrx_pin_t pin = pin_mapped(g, a, &cpu);
    CU_ASSERT_EQUAL(tc.GraphLaunch(efree, NULL), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(tc.GraphLaunch(ealloc, NULL), CUDA_SUCCESS);
    a2 = a;
    CU_ASSERT_NOT_EQUAL(buffer_id(a2), id);
    expect_no_reach(g, pin, cpu, a2);
    CU_ASSERT_EQUAL(gdrx_unmap(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
}

/* Another graph's node gets the pages at its own address. */
static void test_pages_to_another_node(void)
{
    CUdeviceptr a, b;
    void *cpu;

    if (setup())
        return;
    gdrx_t g = tc_open();
    CUgraphExec ea = alloc_graph(&a);
    CUgraphExec eb = alloc_graph(&b);
    CUgraphExec efree = free_graph(a);
    CU_ASSERT_NOT_EQUAL(a, b);
    CU_ASSERT_EQUAL_FATAL(tc.GraphLaunch(ea, NULL), CUDA_SUCCESS);
    gdrx_pin_t pin = pin_mapped(g, a, &cpu);
    CU_ASSERT_EQUAL(tc.GraphLaunch(efree, NULL), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(tc.GraphLaunch(eb, NULL), CUDA_SUCCESS);
    expect_no_reach(g, pin, cpu, b);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
}

/* A launch CUDA refuses frees nothing: the pin lives on, copies run. */
static void test_refused_launch_keeps_pin(void)
{
    static char buf[4096];
    CUdeviceptr a;
    void *cpu;

    if (setup())
        return;
    gdrx_t g = tc_open();
    CUgraphExec ea = alloc_graph(&a);
    CU_ASSERT_EQUAL_FATAL(tc.GraphLaunch(ea, NULL), CUDA_SUCCESS);
    gdrx_pin_t pin = pin_mapped(g, a, &cpu);
    /* its allocation is still live: CUDA refuses the relaunch */
    CU_ASSERT_NOT_EQUAL(tc.GraphLaunch(ea, NULL), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pin, buf, cpu, sizeof(buf)), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
}

/* cuMemAlloc's memory is no graph's: a launch leaves its pins alone. */
static void test_plain_memory_survives_launch(void)
{
    static char buf[4096];
    CUdeviceptr a, p;
    void *cpu;

    if (setup())
        return;
    gdrx_t g = tc_open();
    CUgraphExec ea = alloc_graph(&a);
    p = tc_alloc(LEN);
    gdrx_pin_t pin = pin_mapped(g, p, &cpu);
    CU_ASSERT_EQUAL(tc.GraphLaunch(ea, NULL), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pin, buf, cpu, sizeof(buf)), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(p);
}

/* Without the hooks no launch is seen: graph memory (and what CUDA cannot
 * tell from it) is refused, cuMemAlloc's still pinned. */
static void test_refused_without_hooks(void)
{
    CUdeviceptr a, p;
    gdrx_pin_t pin;

    setenv("GDRX_FREE_HOOKS", "0", 1); /* read at the first pin */
    if (setup())
        return;
    gdrx_t g = tc_open();
    CUgraphExec ea = alloc_graph(&a);
    CU_ASSERT_EQUAL_FATAL(tc.GraphLaunch(ea, NULL), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(gdrx_pin(g, a, LEN, 0, &pin), -EOPNOTSUPP);
    p = tc_alloc(LEN);
    CU_ASSERT_EQUAL(gdrx_pin(g, p, LEN, 0, &pin), 0);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
    tc_free(p);
}

/* The simulated GPU follows CUDA's refusals: a free node only of an
 * address an allocation node returned, once per graph. */
static void test_sim_free_node_refusals(void)
{
    CUgraph gg;
    CUgraphNode n;
    CUdeviceptr a;

    if (setup())
        return;
    CUdeviceptr p = tc_alloc(LEN);
    (void)alloc_graph(&a);
    CU_ASSERT_EQUAL_FATAL(gr.Create(&gg, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(gr.AddFree(&n, gg, NULL, 0, p), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(gr.AddFree(&n, gg, NULL, 0, a + 4096), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(gr.AddFree(&n, gg, NULL, 0, a), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(gr.AddFree(&n, gg, NULL, 0, a), CUDA_ERROR_INVALID_VALUE);
    tc_free(p);
}

/* Pool memory is the device's: a primary context reset leaves it, as the
 * H100 does, and cuMemFreeAsync still frees it (a hooked free: the pin is
 * revoked there). */
static void test_pool_memory_outlives_reset(void)
{
    static char buf[4096];
    CUdeviceptr p, q;
    CUcontext c;
    CUdevice d;
    void *cpu;

    if (setup())
        return;
    CU_ASSERT_EQUAL_FATAL(gr.AllocAsync(&p, LEN, NULL), CUDA_SUCCESS);
    q = tc_alloc(LEN);
    tc_fill(p, LEN, 9);
    CU_ASSERT_EQUAL_FATAL(tc.DevicePrimaryCtxReset(0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(tc.DeviceGet(&d, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(tc.DevicePrimaryCtxRetain(&c, d), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(tc.CtxSetCurrent(c), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(tc_check(p, LEN, 9), 1);
    unsigned long long id;
    CU_ASSERT_EQUAL(tc.PointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, q),
                    CUDA_ERROR_INVALID_VALUE); /* cuMemAlloc's went */
    gdrx_t g = tc_open();
    gdrx_pin_t pin = pin_mapped(g, p, &cpu);
    CU_ASSERT_EQUAL(gr.FreeAsync(p, NULL), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(gdrx_copy_from_mapping(pin, buf, cpu, sizeof(buf)), -ESTALE);
    CU_ASSERT_EQUAL(gdrx_unpin(g, pin), 0);
    CU_ASSERT_EQUAL(gdrx_close(g), 0);
}

static const struct gdrx_test_case graph_cases[] = {
    GDRX_TEST_CASE(test_relaunch_same_address),
    GDRX_TEST_CASE(test_pages_to_another_node),
    GDRX_TEST_CASE(test_refused_launch_keeps_pin),
    GDRX_TEST_CASE(test_plain_memory_survives_launch),
    GDRX_TEST_CASE(test_refused_without_hooks),
    GDRX_TEST_CASE(test_sim_free_node_refusals),
    GDRX_TEST_CASE(test_pool_memory_outlives_reset),
    GDRX_TEST_END,
};

static const struct gdrx_test_suite suites[] = {
    { "graph_mem", NULL, NULL, graph_cases },
    GDRX_SUITE_END,
};

int main(int argc, char **argv)
{
    return tc_main(argc, argv, suites, NULL);
}
