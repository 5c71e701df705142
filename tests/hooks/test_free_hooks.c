/*
 * test_free_hooks.c - CUDA free interception against the simulated GPU:
 * every way an application reaches a free function, and what the
 * callback sees.  Also holds the suite's main and shared helpers.
 *
 * SPDX-License-Identifier: MIT
 */
#include "test_hooks.h"

#include <cuda.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_free_hooks.h"
#include "got_patch.h"
#include "hooks_custub.h"

const char *hooks_lib_path(const char *file, char *buf, size_t size)
{
    const char *top = getenv("GDRX_TEST_BUILDDIR");
    char exe[PATH_MAX];
    ssize_t n;

    if (top) {
        snprintf(buf, size, "%s/tests/hooks/.libs/%s", top, file);
        if (access(buf, R_OK) == 0)
            return buf;
    }
    /* Run by hand: the libraries sit next to libtool's real binary
     * (tests/hooks/.libs/) or in .libs below the program. */
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        *strrchr(exe, '/') = '\0';
        snprintf(buf, size, "%s/%s", exe, file);
        if (access(buf, R_OK) == 0)
            return buf;
        snprintf(buf, size, "%s/.libs/%s", exe, file);
    }
    return buf;
}

void *hooks_dlopen(const char *file, int mode)
{
    char path[PATH_MAX];
    void *h = dlopen(hooks_lib_path(file, path, sizeof(path)), mode);

    if (!h)
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    return h;
}

/* ------------------------------------------------------------ recorder */

struct record {
    pthread_mutex_t lock;
    int        calls;
    uint64_t   base;
    size_t     size;
    int        valid_inside;  /* cuPointerGetAttribute worked in the callback */
    CUdeviceptr nested;       /* freed from inside the callback when set */
};

static struct record rec = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void on_free(uint64_t base, size_t size, void *arg)
{
    struct record *r = arg;
    unsigned long long id = 0;
    int valid = cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, base) == CUDA_SUCCESS;
    CUdeviceptr nested;

    pthread_mutex_lock(&r->lock);
    r->calls++;
    r->base = base;
    r->size = size;
    r->valid_inside = valid;
    nested = r->nested;
    r->nested = 0;
    pthread_mutex_unlock(&r->lock);
    if (nested)
        cuMemFree(nested); /* must neither recurse nor be reported */
}

static void setup(void)
{
    CUcontext ctx = NULL;

    CU_ASSERT_FATAL(cuInit(0) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
    CU_ASSERT_FATAL(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
    gdrx_free_hooks_set_callback(on_free, &rec);
    CU_ASSERT_EQUAL_FATAL(gdrx_free_hooks_install(), 0);
}

static CUdeviceptr alloc(size_t size)
{
    CUdeviceptr p = 0;

    CU_ASSERT_FATAL(cuMemAlloc(&p, size) == CUDA_SUCCESS && p);
    return p;
}

/* The allocation range CUDA reports for p, before it is freed. */
static void range_of(CUdeviceptr p, CUdeviceptr *base, size_t *size)
{
    CU_ASSERT_FATAL(cuMemGetAddressRange(base, size, p) == CUDA_SUCCESS);
}

/* Check that exactly one more free of [base, size) was reported, while
 * the memory was still valid. */
static void expect_report(int calls_before, CUdeviceptr base, size_t size)
{
    CU_ASSERT_EQUAL(rec.calls, calls_before + 1);
    CU_ASSERT_EQUAL(rec.base, base);
    CU_ASSERT_EQUAL(rec.size, size);
    CU_ASSERT_TRUE(rec.valid_inside);
}

/* Free @p through @free_fn, which must succeed, and check that exactly
 * its allocation range was reported, once.  The range is left in @base
 * and @size for further checks. */
static void free_reported(CUresult (*free_fn)(CUdeviceptr), CUdeviceptr p,
                          CUdeviceptr *base, size_t *size)
{
    int n;

    range_of(p, base, size);
    n = rec.calls;
    CU_ASSERT_EQUAL(free_fn(p), CUDA_SUCCESS);
    expect_report(n, *base, *size);
}

/* Direct calls, so that each goes through this program's own GOT slot. */
static CUresult direct_free(CUdeviceptr p)
{
    return cuMemFree(p);
}

static CUresult direct_free_async(CUdeviceptr p)
{
    return cuMemFreeAsync(p, NULL);
}

static CUresult direct_free_async_ptsz(CUdeviceptr p)
{
    return cuMemFreeAsync_ptsz(p, NULL);
}

static CUresult direct_cuda_free(CUdeviceptr p)
{
    return (CUresult)cudaFree((void *)(uintptr_t)p);
}

static void *libcuda(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    return h;
}

/* ---------------------------------------------------------------- cases */

/* (a) this program is linked with -lcuda: its GOT slot for cuMemFree_v2.
 * A sub-allocated buffer reports its own range, not the 2 MiB object's. */
static void test_direct_got_suballoc(void)
{
    CUdeviceptr a, b, base;
    size_t size;

    setup();
    a = alloc(4096);
    b = alloc(4096);
    free_reported(direct_free, b, &base, &size);
    CU_ASSERT(size < (2u << 20));
    CU_ASSERT(gdrx_got_count("cuMemFree_v2") >= 1);
    /* Freed for real afterwards. */
    CU_ASSERT_NOT_EQUAL(cuMemGetAddressRange(&base, &size, b), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(cuMemFree(a), CUDA_SUCCESS);
}

static void test_direct_got_large(void)
{
    CUdeviceptr p, base;
    size_t size;
    int n;

    setup();
    p = alloc(8u << 20);
    range_of(p + 12345, &base, &size);
    CU_ASSERT_EQUAL(base, p);
    n = rec.calls;
    CU_ASSERT_EQUAL(cuMemFree(p), CUDA_SUCCESS);
    expect_report(n, base, size);
    CU_ASSERT(size >= (8u << 20));
}

/* (b) dlsym hands out the wrapper for the free functions only. */
static void test_dlsym(void)
{
    void *h = libcuda();
    void *real_free = dlsym(h, "cuMemFree_v2"), *real_alloc = dlsym(h, "cuMemAlloc_v2");
    CUresult (*f)(CUdeviceptr);
    CUdeviceptr p, base;
    size_t size;

    setup();
    f = (CUresult (*)(CUdeviceptr))dlsym(h, "cuMemFree_v2");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_PTR_NOT_EQUAL((void *)f, real_free);
    CU_ASSERT_PTR_EQUAL(dlsym(RTLD_DEFAULT, "cuMemFree_v2"), (void *)f);
    CU_ASSERT_PTR_EQUAL(dlsym(h, "cuMemAlloc_v2"), real_alloc);
    p = alloc(100000);
    free_reported(f, p, &base, &size);
    dlclose(h);
}

/* (c) the CUDA runtime's path: dlsym(cuGetProcAddress_v2), then ask it
 * for "cuMemFree" at CUDA 12.0, which means cuMemFree_v2. */
static void test_get_proc_address(void)
{
    void *h = libcuda(), *fn = NULL, *again = NULL;
    CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    CUresult (*gpa_legacy)(const char *, void **, int, cuuint64_t);
    CUdriverProcAddressQueryResult st;
    void *real_alloc = dlsym(h, "cuMemAlloc_v2");
    CUdeviceptr p, base;
    size_t size;

    setup();
    gpa = (CUresult (*)(const char *, void **, int, cuuint64_t,
                        CUdriverProcAddressQueryResult *))dlsym(h, "cuGetProcAddress_v2");
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpa);
    CU_ASSERT_EQUAL(gpa("cuMemFree", &fn, 12000, 0, &st), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(st, CU_GET_PROC_ADDRESS_SUCCESS);
    CU_ASSERT_PTR_EQUAL(fn, dlsym(h, "cuMemFree_v2")); /* the _v2 wrapper */
    p = alloc(3000);
    free_reported((CUresult (*)(CUdeviceptr))fn, p, &base, &size);

    /* Other names pass through; the per-thread-stream flag still wraps. */
    CU_ASSERT_EQUAL(gpa("cuMemAlloc", &fn, 12000, 0, &st), CUDA_SUCCESS);
    CU_ASSERT_PTR_EQUAL(fn, real_alloc);
    CU_ASSERT_EQUAL(gpa("cuMemFreeAsync", &fn, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                        &st), CUDA_SUCCESS);
    /* The real driver answers with cuMemFreeAsync_ptsz, the sim with
     * cuMemFreeAsync: either way the matching wrapper. */
    again = dlsym(h, "cuMemFreeAsync_ptsz");
    CU_ASSERT_PTR_EQUAL(fn, again ? again : dlsym(h, "cuMemFreeAsync"));
    again = NULL;
    /* Asking for cuGetProcAddress itself yields the wrapper again, and the
     * direct (GOT) call and the 4-argument legacy entry wrap too. */
    CU_ASSERT_EQUAL(gpa("cuGetProcAddress", &again, 12000, 0, &st), CUDA_SUCCESS);
    CU_ASSERT_PTR_EQUAL(again, (void *)gpa);
    CU_ASSERT_EQUAL(cuGetProcAddress("cuMemFree", &fn, 12000, 0, &st), CUDA_SUCCESS);
    CU_ASSERT_PTR_EQUAL(fn, dlsym(h, "cuMemFree_v2"));
    gpa_legacy = (CUresult (*)(const char *, void **, int, cuuint64_t))dlsym(h, "cuGetProcAddress");
    CU_ASSERT_PTR_NOT_NULL_FATAL(gpa_legacy);
    fn = NULL;
    CU_ASSERT_EQUAL(gpa_legacy("cuMemFree", &fn, 12000, 0), CUDA_SUCCESS);
    CU_ASSERT_PTR_EQUAL(fn, dlsym(h, "cuMemFree_v2"));
    dlclose(h);
}

static void test_free_async(void)
{
    CUdeviceptr p = 0, base;
    size_t size;

    setup();
    CU_ASSERT_FATAL(cuMemAllocAsync(&p, 65536, NULL) == CUDA_SUCCESS);
    free_reported(direct_free_async, p, &base, &size);
    CU_ASSERT_EQUAL(cuStreamSynchronize(NULL), CUDA_SUCCESS);
}

/* Entry points the sim lacks, provided by libhooks_custub (see there). */
static void test_stub_entry_points(void)
{
    CUdeviceptr p, base;
    size_t size;
    int n;

    setup();
    n = rec.calls;
    CU_ASSERT_EQUAL(cuMemUnmap(0x7000000000ull, 4u << 20), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(hooks_stub_last_size, 4u << 20);
    CU_ASSERT_EQUAL(rec.calls, n + 1);
    CU_ASSERT_EQUAL(rec.base, 0x7000000000ull); /* VMM: the range given */
    CU_ASSERT_EQUAL(rec.size, 4u << 20);

    p = alloc(5000);
    free_reported(direct_free_async_ptsz, p, &base, &size);
    CU_ASSERT_EQUAL(hooks_stub_last_ptr, p);

    /* Legacy cuMemFree: no allocation at that 32-bit address, so the range
     * is unknown and the pointer itself is reported. */
    n = rec.calls;
    CU_ASSERT_EQUAL(hooks_legacy_cuMemFree(0x1000u), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(hooks_stub_last_ptr, 0x1000u);
    CU_ASSERT_EQUAL(rec.calls, n + 1);
    CU_ASSERT_EQUAL(rec.base, 0x1000u);
    CU_ASSERT_EQUAL(rec.size, 1);
}

/* The runtime's cudaFree (here libhooks_custub's) is reported once, even
 * though it frees through the hooked cuMemFree_v2 itself. */
static void test_runtime_free(void)
{
    CUdeviceptr p, base;
    size_t size;

    setup();
    CU_ASSERT(gdrx_got_count("cudaFree") >= 1);
    p = alloc(70000);
    free_reported(direct_cuda_free, p, &base, &size);
    CU_ASSERT_EQUAL(hooks_stub_last_ptr, p);
    CU_ASSERT_NOT_EQUAL(cuMemGetAddressRange(&base, &size, p), CUDA_SUCCESS);
}

/* A library loaded after installation, calling cuMemFree_v2 via its GOT. */
static void test_late_library(void)
{
    void *h;
    CUresult (*late_free)(CUdeviceptr);
    CUdeviceptr p, base;
    size_t size;

    setup();
    h = hooks_dlopen("libhooks_late.so", RTLD_NOW | RTLD_LOCAL);
    late_free = (CUresult (*)(CUdeviceptr))dlsym(h, "hooks_late_free");
    CU_ASSERT_PTR_NOT_NULL_FATAL(late_free);
    p = alloc(1u << 20);
    free_reported(late_free, p, &base, &size);
}

static void test_uninstall_restores(void)
{
    void *h = libcuda(), *real_free = dlsym(h, "cuMemFree_v2");
    CUdeviceptr p;
    int n;

    setup();
    CU_ASSERT_PTR_NOT_EQUAL(dlsym(h, "cuMemFree_v2"), real_free);
    CU_ASSERT_EQUAL(gdrx_free_hooks_uninstall(), 0);
    CU_ASSERT_EQUAL(gdrx_got_count("cuMemFree_v2"), 0);
    CU_ASSERT_EQUAL(gdrx_got_count("dlsym"), 0);
    CU_ASSERT_EQUAL(gdrx_got_count("dlopen"), 0);
    CU_ASSERT_PTR_EQUAL(dlsym(h, "cuMemFree_v2"), real_free);
    p = alloc(4096);
    n = rec.calls;
    CU_ASSERT_EQUAL(cuMemFree(p), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(rec.calls, n);
    CU_ASSERT_EQUAL(gdrx_free_hooks_uninstall(), 0); /* twice: nothing to do */
    /* And it can be installed again. */
    CU_ASSERT_EQUAL(gdrx_free_hooks_install(), 0);
    p = alloc(4096);
    CU_ASSERT_EQUAL(cuMemFree(p), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(rec.calls, n + 1);
    dlclose(h);
}

static void test_install_idempotent(void)
{
    CUdeviceptr p;
    long slots;
    int n;

    setup();
    slots = gdrx_got_count("cuMemFree_v2");
    CU_ASSERT(slots >= 1);
    CU_ASSERT_EQUAL(gdrx_free_hooks_install(), 0);
    CU_ASSERT_EQUAL(gdrx_free_hooks_install(), 0);
    CU_ASSERT_EQUAL(gdrx_got_count("cuMemFree_v2"), slots);
    p = alloc(4096);
    n = rec.calls;
    CU_ASSERT_EQUAL(cuMemFree(p), CUDA_SUCCESS);
    CU_ASSERT_EQUAL(rec.calls, n + 1);
}

/* A free inside the callback goes straight to CUDA: not reported, no
 * recursion, and the memory is really freed. */
static void test_free_inside_callback(void)
{
    CUdeviceptr p, q, base;
    size_t size;

    setup();
    p = alloc(4096);
    q = alloc(4096);
    rec.nested = q;
    free_reported(direct_free, p, &base, &size);
    CU_ASSERT_EQUAL(rec.nested, 0);
    CU_ASSERT_NOT_EQUAL(cuMemGetAddressRange(&base, &size, q), CUDA_SUCCESS);
}

#define THREADS 8
#define ROUNDS  200

/* Each thread's frees must be reported once each, in that thread. */
static _Thread_local CUdeviceptr expected;
static _Thread_local int hits, misses;
static int thread_errors;

static void on_free_mt(uint64_t base, size_t size, void *arg)
{
    (void)arg;
    (void)size;
    if (base == expected)
        hits++;
    else
        misses++;
}

static void *free_loop(void *arg)
{
    CUcontext ctx = arg;
    int bad = 0;

    if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        bad++;
    for (int i = 0; i < ROUNDS && !bad; i++) {
        CUdeviceptr p = 0;
        if (cuMemAlloc(&p, (size_t)(i % 3 == 0 ? 3u << 20 : 512u * (unsigned)(i + 1))) != CUDA_SUCCESS) {
            bad++;
            break;
        }
        expected = p;
        bad += cuMemFree(p) != CUDA_SUCCESS;
        bad += hits != i + 1;
    }
    bad += misses;
    __atomic_add_fetch(&thread_errors, bad, __ATOMIC_RELAXED);
    return NULL;
}

static void test_threads(void)
{
    pthread_t t[THREADS];
    CUcontext ctx = NULL;

    setup();
    gdrx_free_hooks_set_callback(on_free_mt, NULL);
    CU_ASSERT_FATAL(cuCtxGetCurrent(&ctx) == CUDA_SUCCESS);
    for (int i = 0; i < THREADS; i++)
        CU_ASSERT_FATAL(pthread_create(&t[i], NULL, free_loop, ctx) == 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    CU_ASSERT_EQUAL(thread_errors, 0);
    gdrx_free_hooks_set_callback(NULL, NULL);
}

const struct gdrx_test_case free_hook_cases[] = {
    GDRX_TEST_CASE(test_direct_got_suballoc),
    GDRX_TEST_CASE(test_direct_got_large),
    GDRX_TEST_CASE(test_dlsym),
    GDRX_TEST_CASE(test_get_proc_address),
    GDRX_TEST_CASE(test_free_async),
    GDRX_TEST_CASE(test_stub_entry_points),
    GDRX_TEST_CASE(test_runtime_free),
    GDRX_TEST_CASE(test_late_library),
    GDRX_TEST_CASE(test_uninstall_restores),
    GDRX_TEST_CASE(test_install_idempotent),
    GDRX_TEST_CASE(test_free_inside_callback),
    GDRX_TEST_CASE(test_threads),
    GDRX_TEST_END
};

static const struct gdrx_test_suite suites[] = {
    { "got_patch", NULL, NULL, got_patch_cases },
    { "free_hooks", NULL, NULL, free_hook_cases },
    GDRX_SUITE_END
};

int main(int argc, char **argv)
{
    return gdrx_test_main(argc, argv, suites);
}
