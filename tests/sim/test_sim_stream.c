/*
 * test_sim_stream.c - the simulated GPU's streams: creation and the rules
 * of their use, their end with their context, context ids, and the record
 * of the last copy (which stream, whether it waited for the legacy one).
 *
 * SPDX-License-Identifier: MIT
 */
#include "test_sim.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

static void test_stream_create_destroy(void)
{
    CUstream s = NULL, s2 = NULL;
    sim_test_setup();
    CU_ASSERT(cuStreamCreate(NULL, 0) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuStreamCreate(&s, 0x80) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(simcu_live_streams() == 0);
    CU_ASSERT_FATAL(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(cuStreamCreate(&s2, CU_STREAM_DEFAULT) == CUDA_SUCCESS);
    CU_ASSERT(s != NULL && s2 != NULL && s != s2);
    CU_ASSERT(s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD);
    CU_ASSERT(simcu_live_streams() == 2);
    CU_ASSERT(cuStreamSynchronize(s) == CUDA_SUCCESS);
    CU_ASSERT(cuStreamDestroy(s) == CUDA_SUCCESS);
    /* gone: every use of the handle is refused */
    CU_ASSERT(cuStreamSynchronize(s) == CUDA_ERROR_INVALID_HANDLE);
    CU_ASSERT(cuStreamDestroy(s) == CUDA_ERROR_INVALID_HANDLE);
    CU_ASSERT(cuStreamDestroy_v2(s2) == CUDA_SUCCESS);
    CU_ASSERT(simcu_live_streams() == 0);
    /* stream-ordered allocation works on a created stream too */
    CUdeviceptr p = 0;
    CU_ASSERT_FATAL(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    CU_ASSERT(cuMemAllocAsync(&p, 4096, s) == CUDA_SUCCESS);
    CU_ASSERT(cuMemFreeAsync(p, s) == CUDA_SUCCESS);
    CU_ASSERT(cuStreamDestroy(s) == CUDA_SUCCESS);
    /* creation needs a context */
    CU_ASSERT(cuCtxSetCurrent(NULL) == CUDA_SUCCESS);
    CU_ASSERT(cuStreamCreate(&s, 0) == CUDA_ERROR_INVALID_CONTEXT);
}

/* Work on a stream needs its own context current; it dies with it. */
static void test_stream_context(void)
{
    CUcontext c0 = NULL, c1 = NULL, got = NULL;
    CUstream s0 = NULL, s1 = NULL;
    CUdeviceptr p;
    char buf[64];
    unsigned long long id0 = 0, id1 = 0, again = 0;
    unsigned int flags = 1;
    int active = 1;

    CU_ASSERT_FATAL(simcu_set_device_count(2) == 0);
    CU_ASSERT_FATAL(cuInit(0) == CUDA_SUCCESS);
    CU_ASSERT(cuDevicePrimaryCtxGetState(1, &flags, &active) == CUDA_SUCCESS);
    CU_ASSERT(flags == 0 && active == 0);
    CU_ASSERT(cuDevicePrimaryCtxGetState(2, &flags, &active) == CUDA_ERROR_INVALID_DEVICE);
    CU_ASSERT(cuDevicePrimaryCtxGetState(0, NULL, &active) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT_FATAL(cuDevicePrimaryCtxRetain(&c0, 0) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(cuDevicePrimaryCtxRetain(&c1, 1) == CUDA_SUCCESS);
    CU_ASSERT(cuDevicePrimaryCtxGetState(1, &flags, &active) == CUDA_SUCCESS && active == 1);
    CU_ASSERT(cuCtxGetId(c0, &id0) == CUDA_SUCCESS);
    CU_ASSERT(cuCtxGetId(c1, &id1) == CUDA_SUCCESS);
    CU_ASSERT(id0 != 0 && id1 != 0 && id0 != id1);
    CU_ASSERT(cuCtxGetId(NULL, &again) == CUDA_ERROR_INVALID_CONTEXT); /* none current */
    CU_ASSERT(cuCtxGetId(c0, NULL) == CUDA_ERROR_INVALID_VALUE);

    CU_ASSERT_FATAL(cuCtxSetCurrent(c1) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(cuCtxPushCurrent(c0) == CUDA_SUCCESS);
    CU_ASSERT(cuCtxGetId(NULL, &again) == CUDA_SUCCESS && again == id0);
    CU_ASSERT_FATAL(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    p = sim_test_alloc(4096);
    CU_ASSERT(cuMemcpyDtoHAsync(buf, p, sizeof(buf), s0) == CUDA_SUCCESS);
    CU_ASSERT(cuMemcpyDtoHAsync(buf, p, sizeof(buf), s1) == CUDA_ERROR_INVALID_CONTEXT);
    CU_ASSERT(cuStreamSynchronize(s1) == CUDA_ERROR_INVALID_CONTEXT);
    CU_ASSERT(cuCtxPopCurrent(&got) == CUDA_SUCCESS && got == c0);
    CU_ASSERT(cuStreamSynchronize(s1) == CUDA_SUCCESS);

    /* a reset makes the context again: its streams are gone, its id new */
    CU_ASSERT(cuDevicePrimaryCtxReset(0) == CUDA_SUCCESS);
    CU_ASSERT(simcu_live_streams() == 1);
    CU_ASSERT(cuCtxGetId(c0, &again) == CUDA_SUCCESS && again != id0);
    CU_ASSERT(cuStreamDestroy(s0) == CUDA_ERROR_INVALID_HANDLE);
    /* and so does the last release */
    CU_ASSERT(cuDevicePrimaryCtxRelease(1) == CUDA_SUCCESS);
    CU_ASSERT(simcu_live_streams() == 0);
    CU_ASSERT(cuCtxGetId(c1, &again) == CUDA_ERROR_INVALID_CONTEXT);
    CU_ASSERT_FATAL(cuDevicePrimaryCtxRetain(&c1, 1) == CUDA_SUCCESS);
    CU_ASSERT(cuCtxGetId(c1, &again) == CUDA_SUCCESS && again != id1);
}

/* What the record says of each kind of copy. */
static void test_last_copy(void)
{
    struct simcu_copy_info info;
    CUstream nb = NULL, blocking = NULL;
    CUcontext ctx = NULL;
    char buf[256], back[256];
    CUdeviceptr p;

    CU_ASSERT(simcu_last_copy(NULL) == -EINVAL);
    CU_ASSERT(simcu_last_copy(&info) == -ENOENT);
    sim_test_setup();
    CU_ASSERT_FATAL(cuCtxGetCurrent(&ctx) == CUDA_SUCCESS);
    p = sim_test_alloc(4096);
    sim_test_fill(buf, sizeof(buf), 7);
    CU_ASSERT_FATAL(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(cuStreamCreate(&blocking, 0) == CUDA_SUCCESS);

    CU_ASSERT(cuMemcpyHtoD(p + 8, buf, sizeof(buf)) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(simcu_last_copy(&info) == 0);
    CU_ASSERT(info.dst == p + 8 && info.src == (uintptr_t)buf && info.bytes == sizeof(buf));
    CU_ASSERT(info.stream == NULL && info.legacy == 1 && info.ctx == ctx && info.count == 1);

    memset(back, 0, sizeof(back));
    CU_ASSERT(cuMemcpyDtoHAsync(back, p + 8, sizeof(back), nb) == CUDA_SUCCESS);
    CU_ASSERT(memcmp(back, buf, sizeof(buf)) == 0); /* done on return */
    CU_ASSERT_FATAL(simcu_last_copy(&info) == 0);
    CU_ASSERT(info.stream == nb && info.legacy == 0 && info.count == 2);
    CU_ASSERT(info.dst == (uintptr_t)back && info.src == p + 8);

    /* unified addressing: device to host, host to device */
    memset(back, 0, sizeof(back));
    CU_ASSERT(cuMemcpyAsync((uintptr_t)back, p + 8, 64, nb) == CUDA_SUCCESS);
    CU_ASSERT(memcmp(back, buf, 64) == 0);
    CU_ASSERT_FATAL(simcu_last_copy(&info) == 0);
    CU_ASSERT(info.stream == nb && info.legacy == 0 && info.count == 3);
    CU_ASSERT(info.dst == (uintptr_t)back && info.src == p + 8 && info.bytes == 64);
    CU_ASSERT(cuMemcpyAsync(p + 100, (uintptr_t)buf, 8, nb) == CUDA_SUCCESS);
    CU_ASSERT(simcu_last_copy(&info) == 0 && info.dst == p + 100 && info.count == 4);
    CU_ASSERT(cuMemcpyAsync(p + 4090, (uintptr_t)buf, 8, nb) == CUDA_ERROR_INVALID_VALUE);

    CU_ASSERT(cuMemcpyHtoDAsync(p, buf, 16, blocking) == CUDA_SUCCESS);
    CU_ASSERT(simcu_last_copy(&info) == 0 && info.stream == blocking && info.legacy == 1);
    CU_ASSERT(cuMemcpyHtoDAsync(p, buf, 16, CU_STREAM_PER_THREAD) == CUDA_SUCCESS);
    CU_ASSERT(simcu_last_copy(&info) == 0 && info.legacy == 1);

    /* a failed copy is not recorded */
    CU_ASSERT(cuMemcpyDtoHAsync(back, p + 4000, 200, nb) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(simcu_fail_next("cuMemcpyDtoHAsync", CUDA_ERROR_LAUNCH_FAILED, 1) == 0);
    CU_ASSERT(cuMemcpyDtoHAsync(back, p, 16, nb) == CUDA_ERROR_LAUNCH_FAILED);
    CU_ASSERT(simcu_last_copy(&info) == 0 && info.count == 6 && info.stream == CU_STREAM_PER_THREAD);
    CU_ASSERT(cuMemcpyDtoHAsync(back, p, 16, (CUstream)&info) == CUDA_ERROR_INVALID_HANDLE);
    CU_ASSERT(cuStreamDestroy(nb) == CUDA_SUCCESS);
    CU_ASSERT(cuStreamDestroy(blocking) == CUDA_SUCCESS);
}

/* What a callback saw. */
struct cb_seen {
    int       runs;
    pthread_t thread;
    CUstream  stream;
    CUresult  status, call; /* passed; what a CUDA call from it got */
    int       slow;         /* sleep first (work queued after waits) */
};

static void CUDA_CB stream_cb(CUstream s, CUresult status, void *arg)
{
    struct cb_seen *seen = arg;
    CUcontext ctx;

    if (seen->slow)
        usleep(100 * 1000);
    seen->thread = pthread_self();
    seen->stream = s;
    seen->status = status;
    seen->call = cuCtxGetCurrent(&ctx);
    __atomic_add_fetch(&seen->runs, 1, __ATOMIC_RELEASE);
}

static void CUDA_CB host_fn(void *arg)
{
    struct cb_seen *seen = arg;
    seen->thread = pthread_self();
    __atomic_add_fetch(&seen->runs, 1, __ATOMIC_RELEASE);
}

/* Callbacks run once each, on a thread of the driver's, after the work
 * before them and before the work after them; CUDA calls from them are
 * refused (UCX's cuda transports arm their event fd with one). */
static void test_stream_callback(void)
{
    struct cb_seen a = { 0 }, b = { 0 }, c = { 0 };
    char buf[64] = { 0 };
    CUstream s = NULL;

    sim_test_setup();
    CUdeviceptr p = sim_test_alloc(4096);
    CU_ASSERT_FATAL(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    CU_ASSERT(cuStreamAddCallback(s, stream_cb, &a, 1) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuStreamAddCallback(s, NULL, &a, 0) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuStreamAddCallback((CUstream)&a, stream_cb, &a, 0) == CUDA_ERROR_INVALID_HANDLE);
    CU_ASSERT(cuStreamAddCallback(s, stream_cb, &a, 0) == CUDA_SUCCESS);
    CU_ASSERT(cuStreamSynchronize(s) == CUDA_SUCCESS);
    CU_ASSERT(__atomic_load_n(&a.runs, __ATOMIC_ACQUIRE) == 1);
    CU_ASSERT(!pthread_equal(a.thread, pthread_self()));
    CU_ASSERT(a.stream == s && a.status == CUDA_SUCCESS);
    CU_ASSERT(a.call == CUDA_ERROR_NOT_PERMITTED);
    /* a slow callback holds the copy queued after it */
    b.slow = 1;
    CU_ASSERT(cuStreamAddCallback(s, stream_cb, &b, 0) == CUDA_SUCCESS);
    CU_ASSERT(cuMemcpyHtoDAsync(p, buf, sizeof(buf), s) == CUDA_SUCCESS);
    CU_ASSERT(__atomic_load_n(&b.runs, __ATOMIC_ACQUIRE) == 1);
    /* on the legacy stream, waited for by cuCtxSynchronize */
    CU_ASSERT(cuLaunchHostFunc(NULL, host_fn, &c) == CUDA_SUCCESS);
    CU_ASSERT(cuCtxSynchronize() == CUDA_SUCCESS);
    CU_ASSERT(__atomic_load_n(&c.runs, __ATOMIC_ACQUIRE) == 1);
    CU_ASSERT(!pthread_equal(c.thread, pthread_self()));
    CU_ASSERT(__atomic_load_n(&a.runs, __ATOMIC_ACQUIRE) == 1);
    CU_ASSERT(cuStreamDestroy(s) == CUDA_SUCCESS);
}

const struct gdrx_test_case sim_stream_cases[] = {
    GDRX_TEST_CASE(test_stream_create_destroy),
    GDRX_TEST_CASE(test_stream_context),
    GDRX_TEST_CASE(test_last_copy),
    GDRX_TEST_CASE(test_stream_callback),
    GDRX_TEST_END,
};
