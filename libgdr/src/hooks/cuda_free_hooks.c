/*
 * cuda_free_hooks.c - wrappers for the CUDA driver's free functions and
 * the three ways to hand them out (GOT, dlsym, cuGetProcAddress).
 *
 * SPDX-License-Identifier: MIT
 *
 * Substitution is by pointer identity: wherever an application would get
 * the address of one of libcuda's free functions (a dlsym result, a
 * cuGetProcAddress result, a GOT slot), it gets the matching wrapper.
 * Identity, not the name asked for, decides which wrapper, so the legacy
 * vs _v2 and default vs per-thread-stream variants cuGetProcAddress picks
 * from (name, cudaVersion, flags) always reach the matching original.
 */
#include "cuda_free_hooks.h"

#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "dl_caller.h"
#include "got_patch.h"

enum {
    F_FREE,             /* cuMemFree: legacy, 32-bit CUdeviceptr_v1 */
    F_FREE_V2,
    F_FREE_ASYNC,
    F_FREE_ASYNC_PTSZ,
    F_UNMAP,
    F_GPA,              /* cuGetProcAddress: 4 arguments */
    F_GPA_V2,           /* cuGetProcAddress_v2: 5 arguments (CUDA 12+) */
    F_COUNT
};

static const char *const fname[F_COUNT] = {
    "cuMemFree", "cuMemFree_v2", "cuMemFreeAsync", "cuMemFreeAsync_ptsz",
    "cuMemUnmap", "cuGetProcAddress", "cuGetProcAddress_v2",
};

typedef CUresult (*free_v1_fn)(unsigned int dptr);
typedef CUresult (*free_fn)(CUdeviceptr dptr);
typedef CUresult (*free_async_fn)(CUdeviceptr dptr, CUstream stream);
typedef CUresult (*unmap_fn)(CUdeviceptr ptr, size_t size);
typedef CUresult (*gpa_fn)(const char *sym, void **pfn, int ver, cuuint64_t flags);
typedef CUresult (*gpa_v2_fn)(const char *sym, void **pfn, int ver, cuuint64_t flags,
                              CUdriverProcAddressQueryResult *status);
typedef CUresult (*range_fn)(CUdeviceptr *base, size_t *size, CUdeviceptr dptr);

/* libcuda's definitions, found with dlsym on the already loaded
 * libcuda.so.1 (RTLD_NOLOAD), or from the GOT slots got_patch rewrote. */
static void *real[F_COUNT];
static void *real_range;            /* cuMemGetAddressRange_v2 */
static void *real_dlsym;
static void *cuda_lib;              /* our reference to libcuda.so.1 */

static pthread_rwlock_t cb_lock = PTHREAD_RWLOCK_INITIALIZER;
static void (*cb_fn)(uint64_t base, size_t size, void *arg);
static void *cb_arg;

/* Set while this thread is inside a wrapper: a free issued from the
 * callback or from the real free is passed straight through. */
static _Thread_local bool in_free;

static void *load_ptr(void *const *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void *cuda_handle(void)
{
    void *h = load_ptr(&cuda_lib), *expected = NULL;

    if (h)
        return h;
    /* Never load libcuda ourselves: if it is not there, nobody can have
     * one of its functions to call. */
    h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h && !__atomic_compare_exchange_n(&cuda_lib, &expected, h, false,
                                          __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        dlclose(h); /* another thread won; keep one reference */
        h = expected;
    }
    return h;
}

static void *resolve(void **slot, const char *name)
{
    void *p = load_ptr(slot), *h, *expected = NULL;

    if (p || !(h = cuda_handle()) || !(p = dlsym(h, name)))
        return p;
    if (!__atomic_compare_exchange_n(slot, &expected, p, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        p = expected;
    return p;
}

static void *real_fn(int i)
{
    return resolve(&real[i], fname[i]);
}

/* Tell the callback about [ptr, ptr + size); size 0 = the allocation
 * holding ptr. */
static void report(uint64_t ptr, size_t size)
{
    pthread_rwlock_rdlock(&cb_lock);
    if (cb_fn) {
        CUdeviceptr base = ptr;
        size_t len = size;
        range_fn range = (range_fn)resolve(&real_range, "cuMemGetAddressRange_v2");

        if (!len && (!range || range(&base, &len, ptr) != CUDA_SUCCESS || !len)) {
            base = ptr; /* unknown: revoke whatever contains the pointer */
            len = 1;
        }
        cb_fn(base, len, cb_arg);
    }
    pthread_rwlock_unlock(&cb_lock);
}

/* Common wrapper entry: returns fn, after reporting the free unless this
 * thread is already inside a wrapper.  *outer says whether free_leave
 * must clear the flag. */
static void *free_enter_fn(void *fn, uint64_t ptr, size_t size, bool *outer)
{
    *outer = !in_free;
    if (*outer) {
        in_free = true;
        if (fn && ptr)
            report(ptr, size);
    }
    return fn;
}

static void *free_enter(int i, uint64_t ptr, size_t size, bool *outer)
{
    return free_enter_fn(real_fn(i), ptr, size, outer);
}

static void free_leave(bool outer)
{
    if (outer)
        in_free = false;
}

static CUresult w_free(unsigned int dptr)
{
    bool outer;
    free_v1_fn fn = (free_v1_fn)free_enter(F_FREE, dptr, 0, &outer);
    CUresult r = fn ? fn(dptr) : CUDA_ERROR_NOT_INITIALIZED;

    free_leave(outer);
    return r;
}

static CUresult w_free_v2(CUdeviceptr dptr)
{
    bool outer;
    free_fn fn = (free_fn)free_enter(F_FREE_V2, dptr, 0, &outer);
    CUresult r = fn ? fn(dptr) : CUDA_ERROR_NOT_INITIALIZED;

    free_leave(outer);
    return r;
}

/* Stream-ordered frees are reported when enqueued, not when the stream
 * reaches them: earlier than needed, never later. */
static CUresult free_async(int i, CUdeviceptr dptr, CUstream stream)
{
    bool outer;
    free_async_fn fn = (free_async_fn)free_enter(i, dptr, 0, &outer);
    CUresult r = fn ? fn(dptr, stream) : CUDA_ERROR_NOT_INITIALIZED;

    free_leave(outer);
    return r;
}

static CUresult w_free_async(CUdeviceptr dptr, CUstream stream)
{
    return free_async(F_FREE_ASYNC, dptr, stream);
}

static CUresult w_free_async_ptsz(CUdeviceptr dptr, CUstream stream)
{
    return free_async(F_FREE_ASYNC_PTSZ, dptr, stream);
}

static CUresult w_unmap(CUdeviceptr ptr, size_t size)
{
    bool outer;
    unmap_fn fn = (unmap_fn)free_enter(F_UNMAP, ptr, size, &outer);
    CUresult r = fn ? fn(ptr, size) : CUDA_ERROR_NOT_INITIALIZED;

    free_leave(outer);
    return r;
}

/* The CUDA runtime's cudaFree/cudaFreeAsync(_ptsz), reached through a GOT
 * slot (a shared libcudart).  They matter when the runtime fetched its
 * driver table before installation, so its cuMemFree calls bypass us; when
 * they do reach us, the flag makes them pass through unreported.  The
 * originals come from the patched slots (no libcuda lookup). */
enum { RT_FREE, RT_FREE_ASYNC, RT_FREE_ASYNC_PTSZ, RT_COUNT };
static void *real_rt[RT_COUNT];
#define RT_ERROR_INIT 3 /* cudaErrorInitializationError */

typedef int (*rt_free_fn)(void *dptr);
typedef int (*rt_free_async_fn)(void *dptr, void *stream);

static int w_rt_free(void *dptr)
{
    bool outer;
    rt_free_fn fn = (rt_free_fn)free_enter_fn(load_ptr(&real_rt[RT_FREE]), (uintptr_t)dptr, 0, &outer);
    int r = fn ? fn(dptr) : RT_ERROR_INIT;

    free_leave(outer);
    return r;
}

static int rt_free_async(int i, void *dptr, void *stream)
{
    bool outer;
    rt_free_async_fn fn = (rt_free_async_fn)free_enter_fn(load_ptr(&real_rt[i]), (uintptr_t)dptr, 0, &outer);
    int r = fn ? fn(dptr, stream) : RT_ERROR_INIT;

    free_leave(outer);
    return r;
}

static int w_rt_free_async(void *dptr, void *stream)
{
    return rt_free_async(RT_FREE_ASYNC, dptr, stream);
}

static int w_rt_free_async_ptsz(void *dptr, void *stream)
{
    return rt_free_async(RT_FREE_ASYNC_PTSZ, dptr, stream);
}

static CUresult w_gpa(const char *sym, void **pfn, int ver, cuuint64_t flags);
static CUresult w_gpa_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                         CUdriverProcAddressQueryResult *status);

static void *const wrapper[F_COUNT] = {
    (void *)w_free, (void *)w_free_v2, (void *)w_free_async, (void *)w_free_async_ptsz,
    (void *)w_unmap, (void *)w_gpa, (void *)w_gpa_v2,
};

/* The wrapper to hand out instead of p, or p itself. */
static void *substitute(void *p)
{
    for (int i = 0; p && i < F_COUNT; i++)
        if (p == real_fn(i))
            return wrapper[i];
    return p;
}

static CUresult w_gpa(const char *sym, void **pfn, int ver, cuuint64_t flags)
{
    gpa_fn fn = (gpa_fn)real_fn(F_GPA);
    CUresult r = fn ? fn(sym, pfn, ver, flags) : CUDA_ERROR_NOT_INITIALIZED;

    if (r == CUDA_SUCCESS && pfn)
        *pfn = substitute(*pfn);
    return r;
}

static CUresult w_gpa_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                         CUdriverProcAddressQueryResult *status)
{
    gpa_v2_fn fn = (gpa_v2_fn)real_fn(F_GPA_V2);
    CUresult r = fn ? fn(sym, pfn, ver, flags, status) : CUDA_ERROR_NOT_INITIALIZED;

    if (r == CUDA_SUCCESS && pfn)
        *pfn = substitute(*pfn);
    return r;
}

/* dlsym as reached through a patched GOT slot.  The lookup itself is done
 * as the real caller would have (RTLD_NEXT/RTLD_DEFAULT depend on it). */
static __attribute__((noinline)) void *w_dlsym(void *handle, const char *name)
{
    gdrx_dlsym_fn fn = (gdrx_dlsym_fn)load_ptr(&real_dlsym);
    void *p;

    if (!fn)
        fn = dlsym;
    p = gdrx_dl_sym_for(__builtin_return_address(0), handle, name, fn);
    if (p && name && name[0] == 'c' && name[1] == 'u')
        p = substitute(p);
    return p;
}

/* libcuda is skipped: its own calls need no interception (and reporting
 * from inside the driver could re-enter it). */
#define CUDA_HOOK(i) { NULL, NULL, &real[i], NULL, "libcuda.so" }
#define RT_HOOK(i, name, fn) { name, (void *)fn, &real_rt[i], NULL, "libcudart.so" }
#define N_HOOKS (F_COUNT + 1 + RT_COUNT)
static struct gdrx_got_hook hooks[N_HOOKS] = {
    CUDA_HOOK(F_FREE), CUDA_HOOK(F_FREE_V2), CUDA_HOOK(F_FREE_ASYNC),
    CUDA_HOOK(F_FREE_ASYNC_PTSZ), CUDA_HOOK(F_UNMAP), CUDA_HOOK(F_GPA), CUDA_HOOK(F_GPA_V2),
    { "dlsym", (void *)w_dlsym, &real_dlsym, NULL, "libcuda.so" },
    RT_HOOK(RT_FREE, "cudaFree", w_rt_free),
    RT_HOOK(RT_FREE_ASYNC, "cudaFreeAsync", w_rt_free_async),
    RT_HOOK(RT_FREE_ASYNC_PTSZ, "cudaFreeAsync_ptsz", w_rt_free_async_ptsz),
};

static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

int gdrx_free_hooks_install(void)
{
    int err;

    pthread_mutex_lock(&install_lock);
    for (int i = 0; i < F_COUNT; i++) {
        hooks[i].symbol = fname[i];
        hooks[i].replacement = wrapper[i];
        /* Prefer libcuda's own definitions over GOT contents, so identity
         * matching in dlsym/cuGetProcAddress compares with them. */
        (void)real_fn(i);
    }
    (void)resolve(&real_range, "cuMemGetAddressRange_v2");
    err = gdrx_got_patch(hooks, N_HOOKS);
    pthread_mutex_unlock(&install_lock);
    return err;
}

int gdrx_free_hooks_uninstall(void)
{
    int err = 0;

    pthread_mutex_lock(&install_lock);
    if (hooks[0].symbol) {
        err = gdrx_got_unpatch(hooks, N_HOOKS);
        if (err == -ENOENT)
            err = 0; /* not installed (any more): nothing to undo */
    }
    pthread_mutex_unlock(&install_lock);
    return err;
}

void gdrx_free_hooks_set_callback(void (*cb)(uint64_t base, size_t size, void *arg), void *arg)
{
    /* The write lock waits for running callbacks, so the caller may free
     * the old arg once this returns. */
    pthread_rwlock_wrlock(&cb_lock);
    cb_fn = cb;
    cb_arg = arg;
    pthread_rwlock_unlock(&cb_lock);
}
