/*
 * test_sim_context.c - contexts made by cuCtxCreate: every exported
 * version, the stack, ownership of memory and of streams, cuCtxDestroy and
 * what it refuses; and the driver's refusal of a fork child.
 *
 * SPDX-License-Identifier: MIT
 */
#include "test_sim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim_legacy.h"

/* cuCtxCreate under each exported name makes a new context on the device,
 * pushed on the caller's stack; cuCtxDestroy pops it. */
static void test_create_versions(void)
{
    CUcontext prim, c[4], cur = NULL;
    CUdevice dev = -1;
    unsigned long long id[4];

    sim_test_setup();
    CU_ASSERT_FATAL(cuCtxGetCurrent(&prim) == CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuCtxCreate(&c[0], 0, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuCtxCreate_v2(&c[1], CU_CTX_SCHED_AUTO, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuCtxCreate_v3(&c[2], NULL, 0, 0, 0), CUDA_SUCCESS);
#if SIMCU_HAS_CTX_CREATE_V4
    CUctxCreateParams params = { 0 };
    CU_ASSERT_EQUAL(cuCtxCreate_v4(&c[3], &params, 0, 0), CUDA_SUCCESS);
#else
    CU_ASSERT_EQUAL(cuCtxCreate_v3(&c[3], NULL, 0, 0, 0), CUDA_SUCCESS);
#endif
    for (int i = 0; i < 4; i++) {
        CU_ASSERT(c[i] != prim);
        CU_ASSERT_EQUAL(cuCtxGetId(c[i], &id[i]), CUDA_SUCCESS);
        for (int j = 0; j < i; j++)
            CU_ASSERT(c[i] != c[j] && id[i] != id[j]);
    }
    /* the stack: c3 on top, then c2, c1, c0, the primary */
    for (int i = 3; i >= 0; i--) {
        CU_ASSERT_EQUAL(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
        CU_ASSERT(cur == c[i]);
        CU_ASSERT_EQUAL(cuCtxGetDevice(&dev), CUDA_SUCCESS);
        CU_ASSERT_EQUAL(dev, 0);
        CU_ASSERT_EQUAL(cuCtxDestroy_v2(c[i]), CUDA_SUCCESS);
    }
    CU_ASSERT_EQUAL(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    CU_ASSERT(cur == prim);
}

/* What cuCtxCreate and cuCtxDestroy refuse, changing nothing. */
static void test_refusals(void)
{
    CUcontext prim, c = NULL, cur = NULL;
    CUexecAffinityParam aff;

    sim_test_setup();
    CU_ASSERT_FATAL(cuCtxGetCurrent(&prim) == CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuCtxCreate_v2(NULL, 0, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuCtxCreate_v2(&c, 0, 99), CUDA_ERROR_INVALID_DEVICE);
    CU_ASSERT_EQUAL(cuCtxCreate_v2(&c, 0x10000, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuCtxCreate_v3(&c, NULL, 1, 0, 0), CUDA_ERROR_INVALID_VALUE);
    (void)aff;
    CU_ASSERT_EQUAL(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    CU_ASSERT(cur == prim); /* nothing pushed */

    CU_ASSERT_EQUAL(cuCtxDestroy_v2(NULL), CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuCtxDestroy_v2(prim), CUDA_ERROR_INVALID_CONTEXT);
    CU_ASSERT_EQUAL(cuCtxDestroy_v2((CUcontext)&cur), CUDA_ERROR_INVALID_CONTEXT);
    CU_ASSERT_EQUAL(cuCtxCreate_v2(&c, 0, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(simcu_fail_next("cuCtxDestroy", CUDA_ERROR_LAUNCH_FAILED, 1), 0);
    CU_ASSERT_EQUAL(cuCtxDestroy(c), CUDA_ERROR_LAUNCH_FAILED);
    CU_ASSERT_EQUAL(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    CU_ASSERT(cur == c); /* still there, still current */
    CU_ASSERT_EQUAL(cuCtxDestroy(c), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuCtxDestroy(c), CUDA_ERROR_INVALID_CONTEXT); /* twice */
    CU_ASSERT_EQUAL(cuCtxPushCurrent(c), CUDA_ERROR_INVALID_CONTEXT);
    CU_ASSERT_EQUAL(cuCtxSetCurrent(c), CUDA_ERROR_INVALID_CONTEXT);
    CU_ASSERT_EQUAL(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    CU_ASSERT(cur == prim);
}

/* Memory belongs to the context current at allocation: the CONTEXT
 * attribute names it, and it goes with that context only. */
static void test_memory_owned_by_context(void)
{
    CUcontext prim, c, owner = NULL;
    CUdeviceptr in_c, in_c_small, in_prim;
    unsigned long long id = 0;
    CUstream s;

    sim_test_setup();
    CU_ASSERT_FATAL(cuCtxGetCurrent(&prim) == CUDA_SUCCESS);
    in_prim = sim_test_alloc(4 * MiB);
    CU_ASSERT_FATAL(cuCtxCreate_v2(&c, 0, 0) == CUDA_SUCCESS);
    in_c = sim_test_alloc(4 * MiB);
    in_c_small = sim_test_alloc(1000); /* sub-allocated: in c's own pool */
    CU_ASSERT_EQUAL(cuStreamCreate(&s, 0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, in_c),
                    CUDA_SUCCESS);
    CU_ASSERT(owner == c);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, in_c_small),
                    CUDA_SUCCESS);
    CU_ASSERT(owner == c);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, in_prim),
                    CUDA_SUCCESS);
    CU_ASSERT(owner == prim);
    long live = simcu_live_allocations(), streams = simcu_live_streams();
    CU_ASSERT_EQUAL(cuCtxDestroy_v2(c), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(simcu_live_allocations(), live - 2);
    CU_ASSERT_EQUAL(simcu_live_streams(), streams - 1);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, in_c),
                    CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, in_prim),
                    CUDA_SUCCESS);
    /* and a primary reset takes the primary's memory only */
    CU_ASSERT_FATAL(cuCtxCreate_v2(&c, 0, 0) == CUDA_SUCCESS);
    in_c = sim_test_alloc(4 * MiB);
    CU_ASSERT_EQUAL(cuDevicePrimaryCtxReset_v2(0), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, in_prim),
                    CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_EQUAL(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, in_c),
                    CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuCtxDestroy_v2(c), CUDA_SUCCESS);
}

/* cuGetProcAddress hands out the version the caller's CUDA asks for. */
static void test_proc_address(void)
{
    void *fn = NULL;

    sim_test_setup();
    CU_ASSERT_EQUAL(cuGetProcAddress_v2("cuCtxCreate", &fn, 13000, 0, NULL), CUDA_SUCCESS);
#if SIMCU_HAS_CTX_CREATE_V4
    CU_ASSERT(fn == (void *)cuCtxCreate_v4);
#else
    CU_ASSERT(fn == (void *)cuCtxCreate_v3);
#endif
    CU_ASSERT_EQUAL(cuGetProcAddress_v2("cuCtxCreate", &fn, 12000, 0, NULL), CUDA_SUCCESS);
    CU_ASSERT(fn == (void *)cuCtxCreate_v3);
    CU_ASSERT_EQUAL(cuGetProcAddress_v2("cuCtxCreate", &fn, 11000, 0, NULL), CUDA_SUCCESS);
    CU_ASSERT(fn == (void *)cuCtxCreate_v2);
    CU_ASSERT_EQUAL(cuGetProcAddress_v2("cuCtxDestroy", &fn, 12000, 0, NULL), CUDA_SUCCESS);
    CU_ASSERT(fn == dlsym(RTLD_DEFAULT, "cuCtxDestroy_v2"));
}

/* Run fn in a fork child; its exit status, or -1 if it did not exit. */
static int in_child(int (*fn)(CUdeviceptr), CUdeviceptr arg)
{
    int status = 0;

    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0)
        _exit(fn(arg));
    while (waitpid(pid, &status, 0) < 0)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A child of a process that never initialised CUDA initialises its own. */
static int child_uses_cuda(CUdeviceptr unused)
{
    CUdeviceptr p = 0;
    CUcontext ctx;
    int bad = 0;

    (void)unused;
    /* One statement per call: the operands of | have no evaluation order. */
    bad |= (cuInit(0) != CUDA_SUCCESS);
    bad |= (cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS) << 1;
    bad |= (cuCtxSetCurrent(ctx) != CUDA_SUCCESS) << 2;
    bad |= (cuMemAlloc(&p, 4096) != CUDA_SUCCESS) << 3;
    bad |= (cuMemFree(p) != CUDA_SUCCESS) << 4;
    return bad;
}

/* A child of one that did: every call refused, cuInit included, after an
 * injected failure; what works before cuInit still works.  One bit per
 * check that failed. */
static int child_refused(CUdeviceptr parent_ptr)
{
    const CUresult no = CUDA_ERROR_NOT_INITIALIZED;
    CUdeviceptr p = 0;
    CUcontext ctx = NULL;
    int n = -1, v = 0, bit = 0, bad = 0;
    const char *str = NULL;

#define EXPECT(cond) (bad |= (cond) ? 0 : 1 << bit, bit++)
    EXPECT(cuInit(0) == no);
    EXPECT(cuDeviceGetCount(&n) == no && n == -1);
    EXPECT(cuCtxGetCurrent(&ctx) == no);
    EXPECT(cuDevicePrimaryCtxRetain(&ctx, 0) == no && ctx == NULL);
    EXPECT(cuMemAlloc(&p, 4096) == no && p == 0);
    EXPECT(cuMemFree(parent_ptr) == no);
    EXPECT(cuMemcpyHtoD(parent_ptr, &v, sizeof(v)) == no);
    EXPECT(simcu_fail_next("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY, 1) == 0);
    EXPECT(cuMemAlloc(&p, 4096) == CUDA_ERROR_OUT_OF_MEMORY); /* injection first */
    EXPECT(cuMemAlloc(&p, 4096) == no && p == 0);
    EXPECT(cuDriverGetVersion(&v) == CUDA_SUCCESS && v > 0);
    EXPECT(cuGetErrorName(no, &str) == CUDA_SUCCESS && str != NULL);
    EXPECT(in_child(child_uses_cuda, 0) != 0); /* and its own children */
#undef EXPECT
    return bad;
}

/* The driver refuses CUDA in a fork() child of a process that initialised
 * it, and only there; the parent's memory is untouched by the child. */
static void test_fork_child_refused(void)
{
    unsigned char in[4096], out[4096];
    struct simcu_alloc_info info;

    CU_ASSERT_EQUAL(in_child(child_uses_cuda, 0), 0);
    CU_ASSERT_EQUAL(simcu_fail_next("cuInit", CUDA_ERROR_UNKNOWN, 1), 0);
    CU_ASSERT_EQUAL(cuInit(0), CUDA_ERROR_UNKNOWN); /* not initialised yet */
    CU_ASSERT_EQUAL(in_child(child_uses_cuda, 0), 0);
    sim_test_setup();
    CUdeviceptr d = sim_test_alloc(sizeof(in));
    sim_test_fill(in, sizeof(in), 3);
    CU_ASSERT_EQUAL(cuMemcpyHtoD(d, in, sizeof(in)), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(in_child(child_refused, d), 0);
    CU_ASSERT_EQUAL(simcu_lookup(d, &info), 0);
    if (info.memfd >= 0)
        close(info.memfd);
    CU_ASSERT_EQUAL(cuMemcpyDtoH(out, d, sizeof(out)), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(memcmp(in, out, sizeof(out)), 0);
    CU_ASSERT_EQUAL(cuMemFree(d), CUDA_SUCCESS);
}

const struct gdrx_test_case sim_context_cases[] = {
    GDRX_TEST_CASE(test_create_versions),
    GDRX_TEST_CASE(test_refusals),
    GDRX_TEST_CASE(test_memory_owned_by_context),
    GDRX_TEST_CASE(test_proc_address),
    GDRX_TEST_CASE(test_fork_child_refused),
    GDRX_TEST_END,
};
