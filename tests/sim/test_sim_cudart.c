/*
 * test_sim_cudart.c - the simulated runtime (sim_cudart.c), loaded by its
 * soname as a CUDA-enabled UCX loads the real one: the implicit primary
 * context, copies through a stream, events, cudaMalloc/cudaFree and
 * cudaHostRegister's refusals.
 *
 * SPDX-License-Identifier: MIT
 */
#include "test_sim.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)

static struct {
    int (*count)(int *);
    int (*stream_create)(CUstream *, unsigned);
    int (*stream_destroy)(CUstream);
    int (*stream_sync)(CUstream);
    int (*memcpy_async)(void *, const void *, size_t, int, CUstream);
    int (*event_create)(CUevent *, unsigned);
    int (*event_record)(CUevent, CUstream);
    int (*event_query)(CUevent);
    int (*event_destroy)(CUevent);
    int (*host_register)(void *, size_t, unsigned);
    int (*host_unregister)(void *);
    int (*malloc)(void **, size_t);
    int (*free)(void *);
} rt;

/* libcudart.so.<this CUDA's major>, found on LD_LIBRARY_PATH (make check
 * puts tests/sim/.libs first), never the toolkit's. */
static void load_runtime(void)
{
    char name[64];
    snprintf(name, sizeof(name), "libcudart.so.%d", CUDA_VERSION / 1000);
    void *h = dlopen(name, RTLD_NOW);
    if (h == NULL)
        fprintf(stderr, "    dlopen %s: %s\n", name, dlerror());
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
#define SYM(field, fn) \
    CU_ASSERT_PTR_NOT_NULL_FATAL(*(void **)&rt.field = dlsym(h, fn))
    SYM(count, "cudaGetDeviceCount");
    SYM(stream_create, "cudaStreamCreateWithFlags");
    SYM(stream_destroy, "cudaStreamDestroy");
    SYM(stream_sync, "cudaStreamSynchronize");
    SYM(memcpy_async, "cudaMemcpyAsync");
    SYM(event_create, "cudaEventCreateWithFlags");
    SYM(event_record, "cudaEventRecord");
    SYM(event_query, "cudaEventQuery");
    SYM(event_destroy, "cudaEventDestroy");
    SYM(host_register, "cudaHostRegister");
    SYM(host_unregister, "cudaHostUnregister");
    SYM(malloc, "cudaMalloc");
    SYM(free, "cudaFree");
#undef SYM
    Dl_info info;
    CU_ASSERT_FATAL(dladdr(*(void **)&rt.count, &info) != 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(strstr(info.dli_fname, "tests/sim/"));
}

/* No context current: the runtime's calls make device 0's primary context
 * current, and every later call of the thread uses it. */
static void test_cudart_primary_context(void)
{
    CUcontext cur = NULL, primary = NULL;
    CUstream s = NULL;
    int n = -1;

    load_runtime();
    CU_ASSERT(rt.count(&n) == 0);
    CU_ASSERT(n == 1);
    CU_ASSERT(cuCtxGetCurrent(&cur) == CUDA_SUCCESS);
    CU_ASSERT(cur == NULL);
    CU_ASSERT_FATAL(rt.stream_create(&s, CU_STREAM_NON_BLOCKING) == 0);
    CU_ASSERT(cuCtxGetCurrent(&cur) == CUDA_SUCCESS);
    CU_ASSERT(cuDevicePrimaryCtxRetain(&primary, 0) == CUDA_SUCCESS);
    CU_ASSERT(cur != NULL && cur == primary);
    CU_ASSERT(rt.stream_destroy(s) == 0);
    CU_ASSERT(rt.stream_destroy(s) == 400); /* gone */
}

/* Host to device to host through a stream; every byte checked. */
static void test_cudart_copy_event(void)
{
    enum { LEN = 70000 };
    unsigned char *a = malloc(LEN), *b = calloc(1, LEN);
    CUstream s = NULL;
    CUevent ev = NULL;

    load_runtime();
    sim_test_setup();
    CUdeviceptr d = sim_test_alloc(LEN);
    sim_test_fill(a, LEN, 7);
    CU_ASSERT_FATAL(rt.stream_create(&s, CU_STREAM_NON_BLOCKING) == 0);
    CU_ASSERT_FATAL(rt.event_create(&ev, 0) == 0);
    CU_ASSERT(rt.event_query(ev) == 0); /* never recorded: complete */
    CU_ASSERT(rt.memcpy_async((void *)(uintptr_t)d, a, LEN, 1, s) == 0);
    CU_ASSERT(rt.memcpy_async(b, (void *)(uintptr_t)d, LEN, 2, s) == 0);
    CU_ASSERT(rt.event_record(ev, s) == 0);
    CU_ASSERT(rt.event_query(ev) == 0);
    CU_ASSERT(rt.stream_sync(s) == 0);
    CU_ASSERT(memcmp(a, b, LEN) == 0);
    CU_ASSERT(rt.event_destroy(ev) == 0);
    CU_ASSERT(rt.event_query(ev) == 400);
    CU_ASSERT(rt.event_destroy(ev) == 400);
    CU_ASSERT(rt.stream_destroy(s) == 0);
    CU_ASSERT(cuMemFree(d) == CUDA_SUCCESS);
    free(a);
    free(b);
}

/* cudaMalloc is device memory of the primary context (made current by the
 * call), usable by the driver API; cudaFree frees it once; NULL is a no-op;
 * a refused size is cudaErrorInvalidValue (the driver's refusal). */
static void test_cudart_malloc_free(void)
{
    unsigned char a[300], b[300];
    CUcontext cur = NULL, primary = NULL;
    void *p = NULL;
    unsigned int mtype = 0;

    load_runtime();
    CU_ASSERT_FATAL(rt.malloc(&p, sizeof(a)) == 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT(cuCtxGetCurrent(&cur) == CUDA_SUCCESS);
    CU_ASSERT(cuDevicePrimaryCtxRetain(&primary, 0) == CUDA_SUCCESS);
    CU_ASSERT(cur != NULL && cur == primary);
    CU_ASSERT(cuPointerGetAttribute(&mtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    (CUdeviceptr)(uintptr_t)p) == CUDA_SUCCESS);
    CU_ASSERT(mtype == CU_MEMORYTYPE_DEVICE);
    sim_test_fill(a, sizeof(a), 3);
    CU_ASSERT(cuMemcpyHtoD((CUdeviceptr)(uintptr_t)p, a, sizeof(a)) == CUDA_SUCCESS);
    CU_ASSERT(cuMemcpyDtoH(b, (CUdeviceptr)(uintptr_t)p, sizeof(b)) == CUDA_SUCCESS);
    CU_ASSERT(memcmp(a, b, sizeof(a)) == 0);
    CU_ASSERT(rt.free(p) == 0);
    CU_ASSERT(rt.free(p) == 1); /* freed */
    CU_ASSERT(rt.free(NULL) == 0);
    CU_ASSERT(rt.malloc(NULL, 64) == 1);
}

/* The refusals UCX's cuda_copy meets when it registers host memory. */
static void test_cudart_host_register(void)
{
    char *buf = malloc(1 << 16);

    load_runtime();
    sim_test_setup();
    CUdeviceptr d = sim_test_alloc(4096);
    CU_ASSERT(rt.host_register(buf, 4096, 1) == 0);
    CU_ASSERT(rt.host_register(buf + 100, 10, 1) == 712); /* overlaps */
    CU_ASSERT(rt.host_register(buf + 4096, 4096, 1) == 0); /* adjacent */
    CU_ASSERT(rt.host_register((void *)(uintptr_t)d, 4096, 1) == 1);
    CU_ASSERT(rt.host_register(NULL, 4096, 1) == 1);
    CU_ASSERT(rt.host_register(buf + 8192, 0, 1) == 1);
    CU_ASSERT(rt.host_unregister(buf + 1) == 713);
    CU_ASSERT(rt.host_unregister(buf) == 0);
    CU_ASSERT(rt.host_unregister(buf) == 713);
    CU_ASSERT(rt.host_register(buf + 100, 10, 1) == 0);  /* free again */
    CU_ASSERT(rt.host_unregister(buf + 100) == 0);
    CU_ASSERT(rt.host_unregister(buf + 4096) == 0);
    CU_ASSERT(cuMemFree(d) == CUDA_SUCCESS);
    free(buf);
}

const struct gdrx_test_case sim_cudart_cases[] = {
    GDRX_TEST_CASE(test_cudart_primary_context),
    GDRX_TEST_CASE(test_cudart_copy_event),
    GDRX_TEST_CASE(test_cudart_host_register),
    GDRX_TEST_CASE(test_cudart_malloc_free),
    GDRX_TEST_END
};
