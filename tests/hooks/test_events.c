/*
 * test_events.c - gdrx_mem_events_* and gdrx_mem_query through libgdrx's
 * public API, on the simulated GPU: every route to a free or an
 * allocation, the ranges reported, and the subscription rules.
 *
 * SPDX-License-Identifier: MIT
 */
#include "test_hooks.h"

#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gdrx.h"
#include "test_events.h"

struct event_log ev_log = { .lock = PTHREAD_MUTEX_INITIALIZER };

void ev_record(const struct gdrx_mem_event *ev, void *arg)
{
    struct event_log *l = arg;
    unsigned long long id = 0;
    int valid = cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, ev->base) == CUDA_SUCCESS;

    pthread_mutex_lock(&l->lock);
    if (l->n < EV_LOG_MAX) {
        l->ev[l->n] = *ev;
        l->valid[l->n] = valid;
    }
    l->n++;
    pthread_mutex_unlock(&l->lock);
}

void ev_cuda_setup(void)
{
    CUcontext ctx = NULL;

    CU_ASSERT_FATAL(cuInit(0) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
}

gdrx_mem_sub_t ev_subscribe(void)
{
    gdrx_mem_sub_t sub;

    CU_ASSERT_EQUAL_FATAL(gdrx_mem_events_subscribe(GDRX_MEM_EVENT_ALLOC | GDRX_MEM_EVENT_FREE,
                                                    ev_record, &ev_log, &sub), 0);
    return sub;
}

CUdeviceptr ev_alloc(size_t size)
{
    CUdeviceptr p = 0;

    CU_ASSERT_FATAL(cuMemAlloc(&p, size) == CUDA_SUCCESS && p);
    return p;
}

/* Free p through free_fn and check one FREE event of its whole
 * allocation, delivered once CUDA released it (issue 29: a free CUDA
 * refuses raises none, so the event waits for the driver's yes). */
void ev_expect_free(CUresult (*free_fn)(CUdeviceptr), CUdeviceptr p)
{
    CUdeviceptr base = 0;
    size_t size = 0;

    CU_ASSERT_FATAL(cuMemGetAddressRange(&base, &size, p) == CUDA_SUCCESS);
    int n = ev_log.n;
    CU_ASSERT_EQUAL(free_fn(p), CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(ev_log.n, n + 1);
    CU_ASSERT_EQUAL(ev_log.ev[n].type, GDRX_MEM_EVENT_FREE);
    CU_ASSERT_EQUAL(ev_log.ev[n].base, base);
    CU_ASSERT_EQUAL(ev_log.ev[n].size, size);
    CU_ASSERT_EQUAL(ev_log.ev[n].device, 0);
    CU_ASSERT_FALSE(ev_log.valid[n]);
}

static CUresult free_direct(CUdeviceptr p)
{
    return cuMemFree(p);
}

static CUresult (*free_ptr)(CUdeviceptr);
static CUresult (*free_async_ptr)(CUdeviceptr, CUstream);

static CUresult free_via_ptr(CUdeviceptr p)
{
    return free_ptr(p);
}

static CUresult free_via_async_ptr(CUdeviceptr p)
{
    return free_async_ptr(p, NULL);
}

static void *gpa(const char *name, int version, cuuint64_t flags)
{
    void *fn = NULL;

    CU_ASSERT_FATAL(cuGetProcAddress(name, &fn, version, flags, NULL) == CUDA_SUCCESS && fn);
    return fn;
}

/* Direct calls: ALLOC with the range, FREE with the range. */
static void test_direct(void)
{
    ev_cuda_setup();
    ev_subscribe();
    CUdeviceptr p = ev_alloc(100000);
    CUdeviceptr base = 0;
    size_t size = 0;

    CU_ASSERT_FATAL(cuMemGetAddressRange(&base, &size, p) == CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(ev_log.n, 1);
    CU_ASSERT_EQUAL(ev_log.ev[0].type, GDRX_MEM_EVENT_ALLOC);
    CU_ASSERT_EQUAL(ev_log.ev[0].base, base);
    CU_ASSERT_EQUAL(ev_log.ev[0].size, size);
    CU_ASSERT_TRUE(size >= 100000);
    CU_ASSERT_EQUAL(ev_log.ev[0].device, 0);
    ev_expect_free(free_direct, p);
}

static void test_async(void)
{
    CUdeviceptr p = 0;

    ev_cuda_setup();
    ev_subscribe();
    CU_ASSERT_FATAL(cuMemAllocAsync(&p, 4096, NULL) == CUDA_SUCCESS);
    CU_ASSERT_EQUAL(ev_log.n, 1);
    CU_ASSERT_EQUAL(ev_log.ev[0].base, p);
    free_async_ptr = cuMemFreeAsync;
    ev_expect_free(free_via_async_ptr, p);
}

static void test_dlsym_pointer(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

    CU_ASSERT_PTR_NOT_NULL_FATAL(lib);
    ev_cuda_setup();
    ev_subscribe();
    free_ptr = (CUresult (*)(CUdeviceptr))dlsym(lib, "cuMemFree_v2");
    CU_ASSERT_PTR_NOT_NULL_FATAL(free_ptr);
    ev_expect_free(free_via_ptr, ev_alloc(4096));
    dlclose(lib);
}

/* After installation: the export, and internal variants handed out
 * later (per-thread stream; an older cudaVersion), each seen once. */
static void test_get_proc_address(void)
{
    ev_cuda_setup();
    ev_subscribe();
    free_ptr = (CUresult (*)(CUdeviceptr))gpa("cuMemFree", 12000, CU_GET_PROC_ADDRESS_DEFAULT);
    ev_expect_free(free_via_ptr, ev_alloc(4096));
    free_async_ptr = (CUresult (*)(CUdeviceptr, CUstream))gpa(
        "cuMemFreeAsync", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    CU_ASSERT_PTR_NOT_EQUAL(free_async_ptr, cuMemFreeAsync); /* an internal one */
    ev_expect_free(free_via_async_ptr, ev_alloc(4096));
    free_async_ptr = (CUresult (*)(CUdeviceptr, CUstream))gpa("cuMemFreeAsync", 11020,
                                                               CU_GET_PROC_ADDRESS_DEFAULT);
    CU_ASSERT_PTR_NOT_EQUAL(free_async_ptr, cuMemFreeAsync);
    ev_expect_free(free_via_async_ptr, ev_alloc(4096));
}

/* Pointers fetched before anything was installed (a static CUDA runtime
 * fetches its driver table once): patched where they point. */
static void test_pointer_fetched_before(void)
{
    ev_cuda_setup();
    CUresult (*f_default)(CUdeviceptr) =
        (CUresult (*)(CUdeviceptr))gpa("cuMemFree", 12000, CU_GET_PROC_ADDRESS_DEFAULT);
    CUresult (*f_ptds)(CUdeviceptr, CUstream) = (CUresult (*)(CUdeviceptr, CUstream))gpa(
        "cuMemFreeAsync", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    CUresult (*f_v11)(CUdeviceptr, CUstream) = (CUresult (*)(CUdeviceptr, CUstream))gpa(
        "cuMemFreeAsync", 11030, CU_GET_PROC_ADDRESS_DEFAULT);

    ev_subscribe();
    free_ptr = f_default;
    ev_expect_free(free_via_ptr, ev_alloc(4096));
    free_async_ptr = f_ptds;
    ev_expect_free(free_via_async_ptr, ev_alloc(4096));
    free_async_ptr = f_v11;
    ev_expect_free(free_via_async_ptr, ev_alloc(4096));
}

static CUresult (*late_free)(CUdeviceptr);

static CUresult free_via_late(CUdeviceptr p)
{
    return late_free(p);
}

static void test_library_loaded_later(void)
{
    ev_cuda_setup();
    ev_subscribe();
    void *h = hooks_dlopen("tests/hooks", "libhooks_late.so", RTLD_NOW | RTLD_LOCAL);
    late_free = (CUresult (*)(CUdeviceptr))dlsym(h, "hooks_late_free");
    CU_ASSERT_PTR_NOT_NULL_FATAL(late_free);
    ev_expect_free(free_via_late, ev_alloc(4096));
}

/* Only the subscribed types; nothing after unsubscribe. */
static void test_mask_and_unsubscribe(void)
{
    gdrx_mem_sub_t sub;

    ev_cuda_setup();
    CU_ASSERT_EQUAL_FATAL(gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE, ev_record, &ev_log, &sub), 0);
    ev_expect_free(free_direct, ev_alloc(4096)); /* the ALLOC was not delivered */
    CU_ASSERT_EQUAL(ev_log.n, 1);
    CU_ASSERT_EQUAL(gdrx_mem_events_unsubscribe(sub), 0);
    CU_ASSERT_EQUAL(cuMemFree(ev_alloc(4096)), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(ev_log.n, 1);
    CU_ASSERT_EQUAL(gdrx_mem_events_unsubscribe(sub), -EINVAL);
}

static void test_bad_input(void)
{
    gdrx_mem_sub_t sub = { 0 };
    struct gdrx_mem_info info;

    ev_cuda_setup();
    CU_ASSERT_EQUAL(gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE, NULL, NULL, &sub), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_mem_events_subscribe(0, ev_record, NULL, &sub), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_mem_events_subscribe(1u << 5, ev_record, NULL, &sub), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE, ev_record, NULL, NULL), -EINVAL);
    CU_ASSERT_EQUAL(sub.id, 0);
    CU_ASSERT_EQUAL(gdrx_mem_events_unsubscribe(sub), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_mem_events_unsubscribe((gdrx_mem_sub_t){ 12345 }), -EINVAL);
    CU_ASSERT_EQUAL(gdrx_mem_query(0x1000, NULL), -EINVAL);
    /* A failed subscribe installed nothing that reports. */
    CU_ASSERT_EQUAL(gdrx_mem_query(ev_alloc(4096), &info), 0);
}

static void test_disabled_by_env(void)
{
    gdrx_mem_sub_t sub = { 0 };
    uint8_t before[16];

    ev_cuda_setup();
    memcpy(before, (const void *)(uintptr_t)cuMemFree, sizeof(before));
    setenv("GDRX_FREE_HOOKS", "0", 1);
    CU_ASSERT_EQUAL(gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE, ev_record, &ev_log, &sub), -ENOSYS);
    CU_ASSERT_EQUAL(memcmp(before, (const void *)(uintptr_t)cuMemFree, sizeof(before)), 0);
    CU_ASSERT_EQUAL(cuMemFree(ev_alloc(4096)), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(ev_log.n, 0);
}

/* The result gdrx_mem_events_hook gives for the entry point `want`. */
static int hook_result(const char *want)
{
    const char *name;
    int res;

    for (unsigned i = 0; gdrx_mem_events_hook(i, &name, &res) == 0; i++)
        if (strcmp(name, want) == 0)
            return res;
    return 1;
}

/* The page where entry_patch.h's one-byte patch of fn lands. */
static uintptr_t landing_page(const uint8_t *fn)
{
    int32_t d;

    memcpy(&d, fn + 1, 4);
    return ((uintptr_t)fn + 5 + (intptr_t)d) & ~(uintptr_t)4095;
}

/* An entry point whose landing address is taken is left alone, the others
 * are hooked, and gdrx_mem_events_hook says which is which. */
static void test_partial_install(void)
{
    gdrx_mem_sub_t sub;
    const char *name;
    int res, n = 0;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    const uint8_t *fn = lib ? dlsym(lib, "cuDevicePrimaryCtxReset") : NULL;
    const uint8_t *fr = lib ? dlsym(lib, "cuMemFree_v2") : NULL;

    CU_ASSERT_FATAL(fn && fr);
    ev_cuda_setup();
    CU_ASSERT_EQUAL(hook_result("cuMemFree_v2"), -ENODATA); /* nothing installed yet */
    uintptr_t page = landing_page(fn);
    CU_ASSERT_NOT_EQUAL_FATAL(page, landing_page(fr)); /* the frees keep theirs */
    void *m = mmap((void *)page, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                   -1, 0);
    CU_ASSERT(m == (void *)page || (m == MAP_FAILED && errno == EEXIST)); /* taken either way */
    CU_ASSERT_EQUAL_FATAL(gdrx_mem_events_subscribe(GDRX_MEM_EVENT_FREE, ev_record, &ev_log, &sub), 0);
    CU_ASSERT_EQUAL(hook_result("cuDevicePrimaryCtxReset"), -EADDRINUSE);
    CU_ASSERT_EQUAL(hook_result("cuMemFree_v2"), 0);
    CU_ASSERT_EQUAL(hook_result("cuMemAlloc"), -ENOENT); /* the sim has no legacy export */
    while (gdrx_mem_events_hook((unsigned)n, &name, &res) == 0)
        n++;
    CU_ASSERT(n > 16);
    CU_ASSERT_EQUAL(gdrx_mem_events_hook((unsigned)n, &name, &res), -ENOENT);
    CU_ASSERT_EQUAL(gdrx_mem_events_hook(0, NULL, &res), -EINVAL);
    ev_expect_free(free_direct, ev_alloc(4096)); /* the rest works */
}

static void test_query(void)
{
    struct gdrx_mem_info info;
    unsigned long long id = 0;
    CUdeviceptr base = 0;
    size_t size = 0;
    int host = 0;

    ev_cuda_setup();
    CUdeviceptr p = ev_alloc(70000);
    CU_ASSERT_FATAL(cuMemGetAddressRange(&base, &size, p) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) == CUDA_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(gdrx_mem_query(p + 100, &info), 0);
    CU_ASSERT_EQUAL(info.base, base);
    CU_ASSERT_EQUAL(info.size, size);
    CU_ASSERT_EQUAL(info.device, 0);
    CU_ASSERT_EQUAL(info.buffer_id, id);
    CU_ASSERT_EQUAL(gdrx_mem_query((uint64_t)(uintptr_t)&host, &info), -ENOENT);
    CU_ASSERT_EQUAL(cuMemFree(p), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(gdrx_mem_query(p, &info), -ENOENT);
}

/* gdrx_mem_sync_memops: the attribute on the whole allocation holding
 * the address (and on no neighbour), the caller's context unchanged;
 * host memory and freed memory refused. */
static void test_sync_memops(void)
{
    CUcontext before = NULL, after = NULL;
    unsigned int sync = 7;
    int host = 0;

    ev_cuda_setup();
    CUdeviceptr p = ev_alloc(70000), q = ev_alloc(4096);
    CU_ASSERT_FATAL(cuPointerGetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p) ==
                    CUDA_SUCCESS);
    CU_ASSERT_EQUAL(sync, 0);
    CU_ASSERT_FATAL(cuCtxGetCurrent(&before) == CUDA_SUCCESS);
    CU_ASSERT_EQUAL(gdrx_mem_sync_memops(p + 60000), 0);
    CU_ASSERT_FATAL(cuCtxGetCurrent(&after) == CUDA_SUCCESS);
    CU_ASSERT_PTR_EQUAL(after, before);
    CU_ASSERT(cuPointerGetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p) ==
              CUDA_SUCCESS && sync == 1);
    CU_ASSERT(cuPointerGetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, q) ==
              CUDA_SUCCESS && sync == 0);
    CU_ASSERT_EQUAL(gdrx_mem_sync_memops((uint64_t)(uintptr_t)&host), -ENOENT);
    CU_ASSERT_EQUAL(cuMemFree(q), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(gdrx_mem_sync_memops(q), -ENOENT);
    CU_ASSERT_EQUAL(cuMemFree(p), CUDA_SUCCESS);
}

const struct gdrx_test_case event_cases[] = {
    GDRX_TEST_CASE(test_direct),
    GDRX_TEST_CASE(test_async),
    GDRX_TEST_CASE(test_dlsym_pointer),
    GDRX_TEST_CASE(test_get_proc_address),
    GDRX_TEST_CASE(test_pointer_fetched_before),
    GDRX_TEST_CASE(test_library_loaded_later),
    GDRX_TEST_CASE(test_mask_and_unsubscribe),
    GDRX_TEST_CASE(test_bad_input),
    GDRX_TEST_CASE(test_disabled_by_env),
    GDRX_TEST_CASE(test_query),
    GDRX_TEST_CASE(test_sync_memops),
    GDRX_TEST_CASE(test_partial_install),
    GDRX_TEST_END
};
