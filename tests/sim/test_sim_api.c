/*
 * test_sim_api.c - the sim's CUDA API surface: initialisation, devices,
 * contexts, pointer attributes, failure injection, cuGetProcAddress,
 * error paths, the observer and concurrency.
 *
 * SPDX-License-Identifier: MIT
 */
#include "test_sim.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_uninitialised(void)
{
    int n = -1, v = 0;
    CUdeviceptr p = 0;
    CUcontext ctx = NULL;
    CU_ASSERT(cuDeviceGetCount(&n) == CUDA_ERROR_NOT_INITIALIZED);
    CU_ASSERT(cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_ERROR_NOT_INITIALIZED);
    CU_ASSERT(cuMemAlloc(&p, 16) == CUDA_ERROR_NOT_INITIALIZED);
    CU_ASSERT(cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, 1) ==
              CUDA_ERROR_NOT_INITIALIZED);
    CU_ASSERT(cuDriverGetVersion(&v) == CUDA_SUCCESS && v == 13000);
    CU_ASSERT(cuDriverGetVersion(NULL) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuInit(1) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuDeviceGetCount(&n) == CUDA_ERROR_NOT_INITIALIZED);
    CU_ASSERT(cuInit(0) == CUDA_SUCCESS);
    CU_ASSERT(cuInit(0) == CUDA_SUCCESS);
    CU_ASSERT(cuDeviceGetCount(&n) == CUDA_SUCCESS && n == 1);
    CU_ASSERT(simcu_set_device_count(2) == -EBUSY);
}

static void test_device_queries(void)
{
    static const struct { CUdevice_attribute a; int v; } want[] = {
        {CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0x19},
        {CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 0},
        {CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0},
        {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
        {CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 1},
        {CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, 1},
        {CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 0},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, CU_COMPUTEMODE_DEFAULT}, /* gdrcopy's tests ask */
    };
    int v = -1;
    CUdevice dev = -1;
    char s[64];
    CU_ASSERT_FATAL(cuInit(0) == CUDA_SUCCESS);
    CU_ASSERT(cuDeviceGet(&dev, 0) == CUDA_SUCCESS && dev == 0);
    CU_ASSERT(cuDeviceGet(&dev, 1) == CUDA_ERROR_INVALID_DEVICE);
    CU_ASSERT(cuDeviceGet(&dev, -1) == CUDA_ERROR_INVALID_DEVICE);
    CU_ASSERT(cuDeviceGet(NULL, 0) == CUDA_ERROR_INVALID_VALUE);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        v = -1;
        CU_ASSERT(cuDeviceGetAttribute(&v, want[i].a, 0) == CUDA_SUCCESS);
        CU_ASSERT(v == want[i].v);
    }
    CU_ASSERT(cuDeviceGetAttribute(&v, (CUdevice_attribute)100000, 0) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 1) ==
              CUDA_ERROR_INVALID_DEVICE);
    CU_ASSERT(cuDeviceGetAttribute(NULL, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0) ==
              CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuDeviceGetPCIBusId(s, sizeof(s), 0) == CUDA_SUCCESS);
    CU_ASSERT_STRING_EQUAL(s, "0000:19:00.0");
    CU_ASSERT(cuDeviceGetPCIBusId(NULL, 16, 0) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuDeviceGetPCIBusId(s, sizeof(s), 3) == CUDA_ERROR_INVALID_DEVICE);
    CU_ASSERT(cuDeviceGetName(s, sizeof(s), 0) == CUDA_SUCCESS && strlen(s) > 0);
    CU_ASSERT(cuDeviceGetName(s, 0, 0) == CUDA_ERROR_INVALID_VALUE);
}

static void test_contexts(void)
{
    CUcontext ctx = NULL, cur = (CUcontext)1, popped = NULL;
    CUdevice dev = -1;
    CUdeviceptr p;
    CU_ASSERT_FATAL(cuInit(0) == CUDA_SUCCESS);
    CU_ASSERT(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == NULL);
    CU_ASSERT(cuMemAlloc(&p, 16) == CUDA_ERROR_INVALID_CONTEXT);
    CU_ASSERT(cuCtxGetDevice(&dev) == CUDA_ERROR_INVALID_CONTEXT);
    CU_ASSERT(cuCtxSynchronize() == CUDA_ERROR_INVALID_CONTEXT);
    CU_ASSERT(cuCtxPopCurrent(&popped) == CUDA_ERROR_INVALID_CONTEXT);
    CU_ASSERT(cuDevicePrimaryCtxRetain(NULL, 0) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuDevicePrimaryCtxRetain(&ctx, 1) == CUDA_ERROR_INVALID_DEVICE);
    CU_ASSERT_FATAL(cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS && ctx != NULL);
    CUcontext again = NULL;
    CU_ASSERT(cuDevicePrimaryCtxRetain(&again, 0) == CUDA_SUCCESS && again == ctx);
    CU_ASSERT(cuCtxSetCurrent((CUcontext)&dev) == CUDA_ERROR_INVALID_CONTEXT);
    CU_ASSERT(cuCtxPushCurrent(ctx) == CUDA_SUCCESS);
    CU_ASSERT(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == ctx);
    CU_ASSERT(cuCtxGetDevice(&dev) == CUDA_SUCCESS && dev == 0);
    CU_ASSERT(cuCtxSynchronize() == CUDA_SUCCESS);
    CU_ASSERT(cuCtxGetDevice(NULL) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuCtxPopCurrent(&popped) == CUDA_SUCCESS && popped == ctx);
    CU_ASSERT(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == NULL);
    CU_ASSERT(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
    CU_ASSERT(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == ctx);
    CU_ASSERT(cuCtxSetCurrent(NULL) == CUDA_SUCCESS);
    CU_ASSERT(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == NULL);
    /* Two retains need two releases before the context is gone. */
    CU_ASSERT(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
    CU_ASSERT(cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS);
    CU_ASSERT(cuMemAlloc(&p, 16) == CUDA_SUCCESS);
    CU_ASSERT(cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS);
    CU_ASSERT(cuMemAlloc(&p, 16) == CUDA_ERROR_INVALID_CONTEXT);
    CU_ASSERT(cuDevicePrimaryCtxRelease(5) == CUDA_ERROR_INVALID_DEVICE);
}

struct thread_ctx_arg {
    CUcontext set, seen_before, seen_after;
    int device;
};

static void *thread_ctx_main(void *p)
{
    struct thread_ctx_arg *a = p;
    cuCtxGetCurrent(&a->seen_before);
    cuCtxSetCurrent(a->set);
    cuCtxGetCurrent(&a->seen_after);
    CUdeviceptr d = 0;
    a->device = -1;
    if (cuMemAlloc(&d, 64) == CUDA_SUCCESS)
        cuPointerGetAttribute(&a->device, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d);
    return NULL;
}

static void test_two_gpus(void)
{
    CU_ASSERT(simcu_set_device_count(0) == -EINVAL);
    CU_ASSERT(simcu_set_device_count(SIMCU_MAX_DEVICES + 1) == -EINVAL);
    CU_ASSERT_FATAL(simcu_set_device_count(2) == 0);
    sim_test_setup_device(0);
    int n = 0;
    CU_ASSERT(cuDeviceGetCount(&n) == CUDA_SUCCESS && n == 2);
    char bus0[32], bus1[32];
    CU_ASSERT(cuDeviceGetPCIBusId(bus0, sizeof(bus0), 0) == CUDA_SUCCESS);
    CU_ASSERT(cuDeviceGetPCIBusId(bus1, sizeof(bus1), 1) == CUDA_SUCCESS);
    CU_ASSERT(strcmp(bus0, bus1) != 0);
    CU_ASSERT(strlen(bus1) == strlen("0000:3b:00.0"));

    CUcontext c0, c1;
    CU_ASSERT_FATAL(cuCtxGetCurrent(&c0) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(cuDevicePrimaryCtxRetain(&c1, 1) == CUDA_SUCCESS && c1 != c0);
    CUdeviceptr p0 = sim_test_alloc(4 * MiB);

    /* Another thread starts with no context and its choice stays its own. */
    struct thread_ctx_arg arg = {.set = c1};
    pthread_t t;
    CU_ASSERT_FATAL(pthread_create(&t, NULL, thread_ctx_main, &arg) == 0);
    pthread_join(t, NULL);
    CU_ASSERT(arg.seen_before == NULL && arg.seen_after == c1 && arg.device == 1);
    CUcontext cur;
    CU_ASSERT(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == c0);

    CU_ASSERT(cuCtxPushCurrent(c1) == CUDA_SUCCESS);
    CUdeviceptr p1 = sim_test_alloc(4 * MiB);
    int ord = -1;
    CU_ASSERT(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p1) == CUDA_SUCCESS);
    CU_ASSERT(ord == 1);
    CU_ASSERT(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p0) == CUDA_SUCCESS);
    CU_ASSERT(ord == 0);
    CUcontext owner = NULL;
    CU_ASSERT(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p1) == CUDA_SUCCESS);
    CU_ASSERT(owner == c1);
    /* Separate VA ranges, both PROT_NONE; copies work across GPUs. */
    CU_ASSERT((p0 > p1 ? p0 - p1 : p1 - p0) >= ((uint64_t)64 << 30));
    CU_ASSERT(sim_test_read_faults(p1));
    unsigned char buf[256];
    sim_test_fill(buf, sizeof(buf), 3);
    CU_ASSERT(cuMemcpyHtoD(p0, buf, sizeof(buf)) == CUDA_SUCCESS);
    CU_ASSERT(cuMemcpyDtoD(p1, p0, sizeof(buf)) == CUDA_SUCCESS);
    memset(buf, 0, sizeof(buf));
    CU_ASSERT(cuMemcpyDtoH(buf, p1, sizeof(buf)) == CUDA_SUCCESS);
    CU_ASSERT(sim_test_check(buf, sizeof(buf), 3));
}

static void test_devices_from_environment(void)
{
    setenv("SIMCU_DEVICES", "3", 1);
    int n = 0;
    CU_ASSERT_FATAL(cuInit(0) == CUDA_SUCCESS);
    CU_ASSERT(cuDeviceGetCount(&n) == CUDA_SUCCESS && n == 3);
}

static void test_bad_environment(void)
{
    setenv("SIMCU_DEVICES", "9", 1);
    CU_ASSERT(cuInit(0) == CUDA_ERROR_NO_DEVICE);
    setenv("SIMCU_DEVICES", "1", 1);
    setenv("SIMCU_BACKING", "nonsense", 1);
    CU_ASSERT(cuInit(0) == CUDA_ERROR_NO_DEVICE);
    setenv("SIMCU_BACKING", "memfd", 1);
    CU_ASSERT(cuInit(0) == CUDA_SUCCESS);
}

static void test_pointer_attributes(void)
{
    sim_test_setup();
    CUcontext ctx;
    CU_ASSERT_FATAL(cuCtxGetCurrent(&ctx) == CUDA_SUCCESS);
    CUdeviceptr other = sim_test_alloc(100);
    CUdeviceptr p = sim_test_alloc(300);
    CUdeviceptr in = p + 123;
    unsigned int u = 99;
    int i = -1;
    unsigned long long id = 0, id2 = 0;
    CUdeviceptr d = 0, start = 0;
    size_t size = 0;
    CUcontext c = NULL;
    void *host = NULL;

    CU_ASSERT(cuPointerGetAttribute(&u, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, in) == CUDA_SUCCESS);
    CU_ASSERT(u == CU_MEMORYTYPE_DEVICE);
    CU_ASSERT(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, in) == CUDA_SUCCESS);
    CU_ASSERT(c == ctx);
    CU_ASSERT(cuPointerGetAttribute(&i, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, in) == CUDA_SUCCESS);
    CU_ASSERT(i == 0);
    CU_ASSERT(cuPointerGetAttribute(&d, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, in) == CUDA_SUCCESS);
    CU_ASSERT(d == in);
    CU_ASSERT(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, in) ==
              CUDA_SUCCESS);
    CU_ASSERT(start == p);
    CU_ASSERT(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, in) == CUDA_SUCCESS);
    CU_ASSERT(size == 300);
    CU_ASSERT(cuPointerGetAttribute(&u, CU_POINTER_ATTRIBUTE_IS_MANAGED, in) == CUDA_SUCCESS);
    CU_ASSERT(u == 0);
    CU_ASSERT(cuPointerGetAttribute(&u, CU_POINTER_ATTRIBUTE_MAPPED, in) == CUDA_SUCCESS);
    CU_ASSERT(u == 1);
    CU_ASSERT(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, in) == CUDA_SUCCESS);
    CU_ASSERT(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, other) == CUDA_SUCCESS);
    CU_ASSERT(id != 0 && id2 != 0 && id != id2);
    CU_ASSERT(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, in) ==
              CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr base = 0;
    CU_ASSERT(cuMemGetAddressRange(&base, &size, in) == CUDA_SUCCESS);
    CU_ASSERT(base == p && size == 300);

    /* SYNC_MEMOPS is remembered per allocation. */
    CU_ASSERT(cuPointerGetAttribute(&u, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p) == CUDA_SUCCESS);
    CU_ASSERT(u == 0);
    unsigned int one = 1;
    CU_ASSERT(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, in) == CUDA_SUCCESS);
    CU_ASSERT(cuPointerGetAttribute(&u, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p) == CUDA_SUCCESS);
    CU_ASSERT(u == 1);
    CU_ASSERT(cuPointerGetAttribute(&u, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, other) == CUDA_SUCCESS);
    CU_ASSERT(u == 0);
    struct simcu_alloc_info info;
    CU_ASSERT_FATAL(simcu_lookup(in, &info) == 0);
    CU_ASSERT(info.sync_memops == 1 && info.buffer_id == id && info.alloc_base == p);
    CU_ASSERT(info.offset == in - info.object_va);
    struct stat st;
    CU_ASSERT(fstat(info.memfd, &st) == 0 && (size_t)st.st_size >= info.object_size);
    close(info.memfd);
    CU_ASSERT(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) ==
              CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuPointerSetAttribute(NULL, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p) ==
              CUDA_ERROR_INVALID_VALUE);

    /* The batch query: same values; host memory reads as zeros. */
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR};
    unsigned int type = 0, sync = 0;
    unsigned long long bid = 0;
    int ord = -1;
    CUdeviceptr rs = 0;
    void *data[] = {&type, &bid, &ord, &sync, &rs};
    CU_ASSERT(cuPointerGetAttributes(5, attrs, data, in) == CUDA_SUCCESS);
    CU_ASSERT(type == CU_MEMORYTYPE_DEVICE && bid == id && ord == 0 && sync == 1 && rs == p);
    CU_ASSERT(cuPointerGetAttributes(5, attrs, data, (CUdeviceptr)(uintptr_t)&type) ==
              CUDA_SUCCESS);
    CU_ASSERT(type == 0 && bid == 0 && rs == 0);
    CU_ASSERT(cuPointerGetAttributes(0, attrs, data, in) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuPointerGetAttributes(5, attrs, NULL, in) == CUDA_ERROR_INVALID_VALUE);

    /* Host memory and unknown addresses. */
    CU_ASSERT(cuPointerGetAttribute(&u, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    (CUdeviceptr)(uintptr_t)&u) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuPointerGetAttribute(&u, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p + 300) ==
              CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuPointerGetAttribute(NULL, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) ==
              CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuPointerGetAttribute(&u, (CUpointer_attribute)1000, p) == CUDA_ERROR_INVALID_VALUE);
    /* DEVICE_POINTER needs a current context. */
    CU_ASSERT(cuCtxSetCurrent(NULL) == CUDA_SUCCESS);
    CU_ASSERT(cuPointerGetAttribute(&d, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p) ==
              CUDA_ERROR_INVALID_CONTEXT);
    CU_ASSERT(cuPointerGetAttribute(&i, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) == CUDA_SUCCESS);
    /* As the driver: the allocation's range comes from pointer attributes
     * with no current context, not from cuMemGetAddressRange. */
    CUdeviceptr rbase = 0;
    size_t rsize = 0;
    CU_ASSERT(cuPointerGetAttribute(&rbase, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, in) ==
              CUDA_SUCCESS);
    CU_ASSERT(cuPointerGetAttribute(&rsize, CU_POINTER_ATTRIBUTE_RANGE_SIZE, in) == CUDA_SUCCESS);
    CU_ASSERT(rbase == p && rsize > 0);
    CU_ASSERT(cuMemGetAddressRange(&rbase, &rsize, in) == CUDA_ERROR_INVALID_CONTEXT);
}

static void test_failure_injection(void)
{
    sim_test_setup();
    CUdeviceptr keep = sim_test_alloc(64), p = 0x1234;
    CU_ASSERT(simcu_fail_next("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY, 2) == 0);
    CU_ASSERT(cuMemAlloc(&p, 64) == CUDA_ERROR_OUT_OF_MEMORY);
    CU_ASSERT(cuMemAlloc(&p, 64) == CUDA_ERROR_OUT_OF_MEMORY);
    CU_ASSERT(p == 0x1234);
    CU_ASSERT(simcu_live_allocations() == 1);
    CU_ASSERT(cuMemAlloc(&p, 64) == CUDA_SUCCESS && p != 0x1234);

    /* The _v2 name is the same rule; a failed free frees nothing. */
    CU_ASSERT(simcu_fail_next("cuMemFree_v2", CUDA_ERROR_ILLEGAL_ADDRESS, 1) == 0);
    CU_ASSERT(cuMemFree(keep) == CUDA_ERROR_ILLEGAL_ADDRESS);
    unsigned char b = 7;
    CU_ASSERT(cuMemcpyHtoD(keep, &b, 1) == CUDA_SUCCESS);
    CU_ASSERT(cuMemFree(keep) == CUDA_SUCCESS);

    /* Failures hit before argument checks and before cuInit state. */
    CU_ASSERT(simcu_fail_next("cuDeviceGetCount", CUDA_ERROR_UNKNOWN, 1) == 0);
    CU_ASSERT(cuDeviceGetCount(NULL) == CUDA_ERROR_UNKNOWN);
    CU_ASSERT(cuDeviceGetCount(NULL) == CUDA_ERROR_INVALID_VALUE);

    CU_ASSERT(simcu_fail_next("cuMemcpyHtoD", CUDA_ERROR_LAUNCH_FAILED, 5) == 0);
    CU_ASSERT(simcu_fail_next("cuMemsetD8", CUDA_ERROR_LAUNCH_FAILED, 5) == 0);
    simcu_fail_clear();
    CU_ASSERT(cuMemcpyHtoD(p, &b, 1) == CUDA_SUCCESS);
    CU_ASSERT(simcu_fail_next("cuMemcpyHtoD", CUDA_ERROR_LAUNCH_FAILED, 5) == 0);
    CU_ASSERT(simcu_fail_next("cuMemcpyHtoD", CUDA_ERROR_LAUNCH_FAILED, 0) == 0);
    CU_ASSERT(cuMemcpyHtoD(p, &b, 1) == CUDA_SUCCESS);

    CU_ASSERT(simcu_fail_next(NULL, CUDA_ERROR_UNKNOWN, 1) == -EINVAL);
    CU_ASSERT(simcu_fail_next("", CUDA_ERROR_UNKNOWN, 1) == -EINVAL);
    CU_ASSERT(simcu_fail_next("cuInit", CUDA_SUCCESS, 1) == -EINVAL);
}

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*proc_v1_fn)(const char *, void **, int, cuuint64_t);

static void test_get_proc_address(void)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    /* Works before cuInit. */
    CU_ASSERT(cuGetProcAddress("cuMemAlloc", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st) ==
              CUDA_SUCCESS);
    CU_ASSERT(st == CU_GET_PROC_ADDRESS_SUCCESS && fn == (void *)cuMemAlloc_v2);
    sim_test_setup();
    CUdeviceptr p = 0;
    CU_ASSERT(((alloc_fn)fn)(&p, 100) == CUDA_SUCCESS);
    CU_ASSERT(cuGetProcAddress("cuMemFree", &fn, 12000, 0, NULL) == CUDA_SUCCESS);
    CU_ASSERT(((free_fn)fn)(p) == CUDA_SUCCESS);
    CU_ASSERT(simcu_live_allocations() == 0);

    CU_ASSERT(cuGetProcAddress("cuDevicePrimaryCtxRelease", &fn, 11000, 0, &st) == CUDA_SUCCESS);
    CU_ASSERT(fn == (void *)cuDevicePrimaryCtxRelease_v2);
    void *old = NULL;
    CU_ASSERT(cuGetProcAddress("cuDevicePrimaryCtxRelease", &old, 10020, 0, &st) == CUDA_SUCCESS);
    CU_ASSERT(old != NULL && st == CU_GET_PROC_ADDRESS_SUCCESS);
    CU_ASSERT(cuGetProcAddress("cuDevicePrimaryCtxRelease", &old, 6000, 0, &st) ==
              CUDA_ERROR_NOT_FOUND);
    CU_ASSERT(old == NULL && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    CU_ASSERT(cuGetProcAddress("cuMemAlloc", &fn, 3000, 0, &st) == CUDA_ERROR_NOT_FOUND);
    CU_ASSERT(st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT && fn == NULL);
    CU_ASSERT(cuGetProcAddress("cuNoSuchThing", &fn, 13000, 0, &st) == CUDA_ERROR_NOT_FOUND);
    CU_ASSERT(st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    CU_ASSERT(cuGetProcAddress(NULL, &fn, 13000, 0, &st) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuGetProcAddress("cuInit", NULL, 13000, 0, &st) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuGetProcAddress("cuInit", &fn, 13000, 8, &st) == CUDA_ERROR_INVALID_VALUE);

    /* The unversioned export has the 4-argument form of CUDA 11.3. */
    proc_v1_fn v1 = NULL;
    CU_ASSERT(cuGetProcAddress("cuGetProcAddress", &fn, 11030, 0, &st) == CUDA_SUCCESS);
    memcpy(&v1, &fn, sizeof(v1));
    CU_ASSERT_FATAL(v1 != NULL);
    CU_ASSERT(v1("cuMemcpyHtoD", &fn, 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM) == CUDA_SUCCESS);
    CU_ASSERT(fn == (void *)cuMemcpyHtoD_v2);

    /* An entry point taken away is not found, until given back. */
    CU_ASSERT(simcu_hide_entry_point("cuCtxGetId", 1) == 0);
    CU_ASSERT(cuGetProcAddress("cuCtxGetId", &fn, 12000, 0, &st) == CUDA_ERROR_NOT_FOUND);
    CU_ASSERT(st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND && fn == NULL);
    CU_ASSERT(simcu_hide_entry_point("cuCtxGetId", 0) == 0);
    CU_ASSERT(cuGetProcAddress("cuCtxGetId", &fn, 12000, 0, &st) == CUDA_SUCCESS);
    CU_ASSERT(fn == (void *)cuCtxGetId);
    CU_ASSERT(simcu_hide_entry_point(NULL, 1) == -EINVAL);
}

static void test_error_strings(void)
{
    const char *s = NULL;
    CU_ASSERT(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &s) == CUDA_SUCCESS);
    CU_ASSERT_STRING_EQUAL(s, "CUDA_ERROR_INVALID_VALUE");
#if CUDA_VERSION >= 12080 /* the last code of the table (older headers lack it) */
    CU_ASSERT(cuGetErrorName(CUDA_ERROR_KEY_ROTATION, &s) == CUDA_SUCCESS);
    CU_ASSERT_STRING_EQUAL(s, "CUDA_ERROR_KEY_ROTATION");
#else
    CU_ASSERT(cuGetErrorName(CUDA_ERROR_STUB_LIBRARY, &s) == CUDA_SUCCESS);
    CU_ASSERT_STRING_EQUAL(s, "CUDA_ERROR_STUB_LIBRARY");
#endif
    CU_ASSERT(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s) == CUDA_SUCCESS);
    CU_ASSERT_STRING_EQUAL(s, "out of memory");
    CU_ASSERT(cuGetErrorString((CUresult)12345, &s) == CUDA_ERROR_INVALID_VALUE && s == NULL);
    CU_ASSERT(cuGetErrorName(CUDA_SUCCESS, NULL) == CUDA_ERROR_INVALID_VALUE);
}

static void test_null_arguments_and_streams(void)
{
    sim_test_setup();
    CUdeviceptr p = 0;
    CU_ASSERT(cuMemAlloc(NULL, 16) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemAlloc(&p, 0) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemAlloc(&p, (size_t)1 << 40) == CUDA_ERROR_OUT_OF_MEMORY);
    CU_ASSERT(cuMemFree(0) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuCtxGetCurrent(NULL) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuDeviceGetCount(NULL) == CUDA_ERROR_INVALID_VALUE);
    CU_ASSERT(cuMemGetAddressRange(NULL, NULL, 0) == CUDA_ERROR_NOT_FOUND);
    CU_ASSERT(simcu_lookup(0, NULL) == -EINVAL);

    /* The default streams; async work is done on return. */
    CU_ASSERT(cuMemAllocAsync(&p, 4096, NULL) == CUDA_SUCCESS);
    CU_ASSERT(cuMemsetD32(p, 0xdeadbeef, 1024) == CUDA_SUCCESS);
    CU_ASSERT(cuStreamSynchronize(CU_STREAM_PER_THREAD) == CUDA_SUCCESS);
    CU_ASSERT(cuStreamSynchronize((CUstream)&p) == CUDA_ERROR_INVALID_HANDLE);
    CU_ASSERT(cuMemFreeAsync(p, (CUstream)&p) == CUDA_ERROR_INVALID_HANDLE);
    CU_ASSERT(cuMemFreeAsync(p, CU_STREAM_LEGACY) == CUDA_SUCCESS);
    CU_ASSERT(simcu_live_allocations() == 0);
    /* An interior pointer is no allocation to free. */
    p = sim_test_alloc(100);
    CU_ASSERT(cuMemFree(p + 1) == CUDA_ERROR_INVALID_VALUE);
}

/* ---- observer ---- */

#define MAX_EVENTS 16

struct events {
    int n;
    char kind[MAX_EVENTS];          /* O object, o destroyed, A alloc, F freed */
    struct simcu_alloc_info info[MAX_EVENTS];
    uint64_t destroyed[MAX_EVENTS];
    int lookup_ok[MAX_EVENTS];      /* simcu_lookup worked inside the callback */
    int fd_ok[MAX_EVENTS];          /* info->memfd was open inside the callback */
};

static void record(struct events *ev, char kind, const struct simcu_alloc_info *info)
{
    if (ev->n >= MAX_EVENTS)
        return;
    int i = ev->n++;
    ev->kind[i] = kind;
    if (!info)
        return;
    ev->info[i] = *info;
    struct stat st;
    ev->fd_ok[i] = fstat(info->memfd, &st) == 0;
    struct simcu_alloc_info again;
    if (kind != 'O' && simcu_lookup(info->alloc_base, &again) == 0) {
        ev->lookup_ok[i] = again.buffer_id == info->buffer_id;
        close(again.memfd);
    }
}

static void on_object(const struct simcu_alloc_info *o, void *arg) { record(arg, 'O', o); }
static void on_alloc(const struct simcu_alloc_info *a, void *arg) { record(arg, 'A', a); }
static void on_freed(const struct simcu_alloc_info *a, void *arg)
{
    /* CUDA calls are allowed: the lock is not held. */
    int n;
    CU_ASSERT(cuDeviceGetCount(&n) == CUDA_SUCCESS);
    record(arg, 'F', a);
}
static void on_destroyed(uint64_t id, void *arg)
{
    struct events *ev = arg;
    if (ev->n < MAX_EVENTS)
        ev->destroyed[ev->n] = id;
    record(ev, 'o', NULL);
}

static void test_observer(void)
{
    static struct events ev;
    simcu_observer_t obs = {on_object, on_destroyed, on_alloc, on_freed, &ev};
    sim_test_setup();
    CU_ASSERT_FATAL(simcu_set_observer(&obs) == 0);
    CUdeviceptr a = sim_test_alloc(3 * MiB), b = sim_test_alloc(100), c = sim_test_alloc(200);
    CU_ASSERT_FATAL(ev.n == 5);
    CU_ASSERT(ev.kind[0] == 'O' && ev.kind[1] == 'A' && ev.kind[2] == 'O' && ev.kind[3] == 'A' &&
              ev.kind[4] == 'A');
    CU_ASSERT(ev.info[0].object_va == a && ev.info[0].object_size == 4 * MiB && ev.fd_ok[0]);
    CU_ASSERT(ev.info[1].alloc_base == a && ev.info[1].alloc_size == 3 * MiB &&
              ev.info[1].object_id == ev.info[0].object_id && ev.lookup_ok[1] && ev.fd_ok[1]);
    CU_ASSERT(ev.info[3].alloc_base == b && ev.info[4].alloc_base == c);
    CU_ASSERT(ev.info[3].object_id == ev.info[2].object_id &&
              ev.info[4].object_id == ev.info[2].object_id);
    CU_ASSERT(ev.info[4].offset == c - ev.info[4].object_va);

    CU_ASSERT(cuMemFree(b) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(ev.n == 6);
    CU_ASSERT(ev.kind[5] == 'F' && ev.info[5].alloc_base == b && ev.lookup_ok[5]);
    CU_ASSERT(cuMemFree(c) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(ev.n == 8);
    CU_ASSERT(ev.kind[6] == 'F' && ev.kind[7] == 'o');
    CU_ASSERT(ev.destroyed[7] == ev.info[2].object_id);
    CU_ASSERT(simcu_set_observer(NULL) == 0);
    CU_ASSERT(cuMemFree(a) == CUDA_SUCCESS);
    CU_ASSERT(ev.n == 8);
}

/* ---- concurrency ---- */

struct worker {
    CUcontext ctx;
    uint64_t seed;
    int errors;
};

static void *worker_main(void *p)
{
    struct worker *w = p;
    static const size_t sizes[] = {1, 100, 4096, 70000, 2 * MiB, 3 * MiB + 5};
    unsigned char *buf = malloc(4 * MiB), *back = malloc(4 * MiB);
    if (!buf || !back || cuCtxSetCurrent(w->ctx) != CUDA_SUCCESS) {
        w->errors++;
        goto out;
    }
    for (int i = 0; i < 40; i++) {
        size_t n = sizes[gdrx_test_rand(&w->seed) % 6];
        CUdeviceptr a = 0, b = 0;
        uint64_t s = gdrx_test_rand(&w->seed);
        sim_test_fill(buf, n, s);
        if (cuMemAlloc(&a, n) != CUDA_SUCCESS || cuMemAlloc(&b, n) != CUDA_SUCCESS ||
            cuMemcpyHtoD(a, buf, n) != CUDA_SUCCESS || cuMemcpyDtoD(b, a, n) != CUDA_SUCCESS ||
            cuMemcpyDtoH(back, b, n) != CUDA_SUCCESS || !sim_test_check(back, n, s))
            w->errors++;
        if (cuMemFree(a) != CUDA_SUCCESS || cuMemFree(b) != CUDA_SUCCESS)
            w->errors++;
    }
out:
    free(buf);
    free(back);
    return NULL;
}

static void test_concurrency(void)
{
    enum { T = 8 };
    struct worker w[T];
    pthread_t t[T];
    CUcontext ctx;
    sim_test_setup();
    CU_ASSERT_FATAL(cuCtxGetCurrent(&ctx) == CUDA_SUCCESS);
    for (int i = 0; i < T; i++) {
        w[i] = (struct worker){.ctx = ctx, .seed = 1000u + (uint64_t)i};
        CU_ASSERT_FATAL(pthread_create(&t[i], NULL, worker_main, &w[i]) == 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(t[i], NULL);
        CU_ASSERT(w[i].errors == 0);
    }
    CU_ASSERT(simcu_live_allocations() == 0);
    CU_ASSERT(simcu_live_objects() == 0);
}

const struct gdrx_test_case sim_api_cases[] = {
    GDRX_TEST_CASE(test_uninitialised),
    GDRX_TEST_CASE(test_device_queries),
    GDRX_TEST_CASE(test_contexts),
    GDRX_TEST_CASE(test_two_gpus),
    GDRX_TEST_CASE(test_devices_from_environment),
    GDRX_TEST_CASE(test_bad_environment),
    GDRX_TEST_CASE(test_pointer_attributes),
    GDRX_TEST_CASE(test_failure_injection),
    GDRX_TEST_CASE(test_get_proc_address),
    GDRX_TEST_CASE(test_error_strings),
    GDRX_TEST_CASE(test_null_arguments_and_streams),
    GDRX_TEST_CASE(test_observer),
    GDRX_TEST_CASE(test_concurrency),
    GDRX_TEST_END,
};
