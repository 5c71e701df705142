/*
 * cuda_hooks.c - the hooks on libcuda's allocation and free entry points,
 * and which addresses get them.
 *
 * SPDX-License-Identifier: MIT
 *
 * A hook is entered through entry_patch's stub with the caller's arguments
 * and the patch record as its 6th argument (r9); it calls the record's
 * original, so the same hook serves every address patched for one ABI
 * (the export, and other addresses cuGetProcAddress hands out).
 */
#include "cuda_hooks.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include <cuda.h>

#include "entry_patch.h"
#include "log.h"

/* In libgdrx the patch table's lock has its rank in the library's lock
 * order (lock_order.h: CUDA_HOOKS), checked where it is taken; a program
 * built on these files alone has no lock order. */
#ifdef GDRX_HAVE_FREE_HOOKS
#  include "lock_order.h"
#  define hooks_lock()   gdrx_mutex_lock(&lock, GDRX_LOCK_CUDA_HOOKS)
#  define hooks_unlock() gdrx_mutex_unlock(&lock, GDRX_LOCK_CUDA_HOOKS)
#else
#  define hooks_lock()   pthread_mutex_lock(&lock)
#  define hooks_unlock() pthread_mutex_unlock(&lock)
#endif

/* One kind per ABI of the hooked functions. */
enum hook_kind {
    K_FREE32, K_FREE, K_FREE_ASYNC, K_UNMAP,
    K_ALLOC32, K_ALLOC, K_PITCH32, K_PITCH, K_ALLOC_ASYNC, K_ALLOC_POOL, K_MAP,
    K_CTX_RESET, K_CTX_DESTROY, K_GRAPH_LAUNCH,
    K_GPA, K_GPA2,
    K_COUNT
};

typedef uintptr_t U; /* argument slots a hook does not use */
typedef const struct gdrx_entry_patch *REC;

/* The ABIs, spelled without cuda.h's version macros (which rename
 * cuMemAlloc to cuMemAlloc_v2 and so on). */
typedef CUresult (*free32_fn)(unsigned int);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);
typedef CUresult (*unmap_fn)(CUdeviceptr, size_t);
typedef CUresult (*alloc32_fn)(unsigned int *, unsigned int);
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*pitch32_fn)(unsigned int *, unsigned int *, unsigned int, unsigned int,
                               unsigned int);
typedef CUresult (*pitch_fn)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
typedef CUresult (*alloc_async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*alloc_pool_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                           unsigned long long);
typedef CUresult (*ctx_reset_fn)(CUdevice);
typedef CUresult (*ctx_destroy_fn)(CUcontext);
typedef CUresult (*graph_launch_fn)(CUgraphExec, CUstream);
typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);
typedef CUresult (*range_fn)(CUdeviceptr *, size_t *, CUdeviceptr);
typedef CUresult (*attr_fn)(void *, CUpointer_attribute, CUdeviceptr);

/* libcuda's exports we patch, with their kinds. */
static const struct export_entry {
    const char    *name;
    enum hook_kind kind;
} exports[] = {
    { "cuMemFree", K_FREE32 }, { "cuMemFree_v2", K_FREE },
    { "cuMemFreeAsync", K_FREE_ASYNC }, { "cuMemFreeAsync_ptsz", K_FREE_ASYNC },
    { "cuMemUnmap", K_UNMAP },
    /* An imported allocation goes from this process as a free would. */
    { "cuIpcCloseMemHandle", K_FREE },
    { "cuMemAlloc", K_ALLOC32 }, { "cuMemAlloc_v2", K_ALLOC },
    { "cuMemAllocPitch", K_PITCH32 }, { "cuMemAllocPitch_v2", K_PITCH },
    { "cuMemAllocAsync", K_ALLOC_ASYNC }, { "cuMemAllocAsync_ptsz", K_ALLOC_ASYNC },
    { "cuMemAllocFromPoolAsync", K_ALLOC_POOL }, { "cuMemAllocFromPoolAsync_ptsz", K_ALLOC_POOL },
    { "cuMemMap", K_MAP },
    /* Whole contexts: every allocation they own goes with them. */
    { "cuDevicePrimaryCtxReset", K_CTX_RESET }, { "cuDevicePrimaryCtxReset_v2", K_CTX_RESET },
    { "cuCtxDestroy", K_CTX_DESTROY }, { "cuCtxDestroy_v2", K_CTX_DESTROY },
    /* A graph's memory free nodes free without a call of their own. */
    { "cuGraphLaunch", K_GRAPH_LAUNCH }, { "cuGraphLaunch_ptsz", K_GRAPH_LAUNCH },
    /* Last: installation queries cuGetProcAddress before patching it. */
    { "cuGetProcAddress", K_GPA }, { "cuGetProcAddress_v2", K_GPA2 },
};
#define N_EXPORTS (sizeof(exports) / sizeof(exports[0]))

/* cuGetProcAddress names: the kind of the result at cudaVersion >= since,
 * and below it. */
static const struct gpa_entry {
    const char    *name;
    int            since;
    enum hook_kind kind_new, kind_old;
} gpa_names[] = {
    { "cuMemFree", 3020, K_FREE, K_FREE32 },
    { "cuMemFreeAsync", 0, K_FREE_ASYNC, K_FREE_ASYNC },
    { "cuMemUnmap", 0, K_UNMAP, K_UNMAP },
    { "cuIpcCloseMemHandle", 0, K_FREE, K_FREE },
    { "cuMemAlloc", 3020, K_ALLOC, K_ALLOC32 },
    { "cuMemAllocPitch", 3020, K_PITCH, K_PITCH32 },
    { "cuMemAllocAsync", 0, K_ALLOC_ASYNC, K_ALLOC_ASYNC },
    { "cuMemAllocFromPoolAsync", 0, K_ALLOC_POOL, K_ALLOC_POOL },
    { "cuMemMap", 0, K_MAP, K_MAP },
    { "cuDevicePrimaryCtxReset", 0, K_CTX_RESET, K_CTX_RESET },
    { "cuCtxDestroy", 0, K_CTX_DESTROY, K_CTX_DESTROY },
    { "cuGraphLaunch", 0, K_GRAPH_LAUNCH, K_GRAPH_LAUNCH },
    { "cuGetProcAddress", 12000, K_GPA2, K_GPA },
};
#define N_GPA_NAMES (sizeof(gpa_names) / sizeof(gpa_names[0]))

#define MAX_PATCHES 64

enum install_state { HOOKS_NONE, HOOKS_INSTALLED };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static enum install_state state = HOOKS_NONE;           /* under lock */
static struct gdrx_entry_patch patches[MAX_PATCHES];    /* [0, npatches) under lock */
static int npatches;                                    /* written under lock */
static void *libcuda;                                   /* under lock: install's reference */
static int export_rc[N_EXPORTS];                       /* under lock: each export's last install */
static struct gdrx_cuda_hooks_sinks sinks;              /* set once, before any patch */
static range_fn real_range;
static attr_fn real_attr;

/* Set while this thread runs a hook's report or original, so that nested
 * CUDA calls (libcuda's own, a sink's) pass straight through; and while it
 * patches, so cuGetProcAddress calls made meanwhile do not re-enter. */
static _Thread_local bool in_hook;

/* ------------------------------------------------------------ reporting */

static int device_of(CUdeviceptr p)
{
    int dev = -1;

    if (!real_attr || real_attr(&dev, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) != CUDA_SUCCESS)
        return -1;
    return dev;
}

/* size 0: the allocation holding ptr. */
static void report(gdrx_mem_event_type_t type, CUdeviceptr ptr, size_t size)
{
    struct gdrx_mem_event ev = { .type = type, .base = ptr, .size = size };
    CUdeviceptr base = 0;
    size_t len = 0;

    if (!ptr)
        return;
    if (!size) {
        if (real_range && real_range(&base, &len, ptr) == CUDA_SUCCESS && len) {
            ev.base = base;
            ev.size = len;
        } else {
            ev.size = 1; /* unknown: whatever contains the pointer */
        }
    }
    ev.device = device_of(ptr);
    sinks.event(&ev);
}

/* Whether this call is the outermost hooked one on its thread. */
static bool enter(void)
{
    if (in_hook)
        return false;
    in_hook = true;
    return true;
}

static void leave(bool outer)
{
    if (outer)
        in_hook = false;
}

/* --------------------------------------------------------------- frees */

/* What a free of p may release, told before the call (the range is gone
 * after it).  CUDA frees only the base of an allocation and refuses
 * anything else (CUDA_ERROR_INVALID_VALUE): then nothing.  A range that
 * cannot be read for another reason (no current context, ...) is (p, 1):
 * whatever holds p, if the driver takes the free after all. */
static bool free_target(CUdeviceptr p, struct gdrx_cuda_hooks_release *what)
{
    CUdeviceptr base = 0;
    size_t len = 0;

    *what = (struct gdrx_cuda_hooks_release){ .base = p, .size = 1, .device = -1 };
    if (!p)
        return false;
    CUresult r = real_range ? real_range(&base, &len, p) : CUDA_ERROR_NOT_SUPPORTED;
    if (r == CUDA_SUCCESS && (base != p || !len))
        return false;
    if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_NOT_FOUND)
        return false;
    if (r == CUDA_SUCCESS)
        what->size = len;
    return true;
}

/* Around a call that may release what: the owner holds its pins over the
 * call; they are revoked, and the FREE event raised, only if the driver
 * said yes (r == CUDA_SUCCESS). */
static void *release_begin(const struct gdrx_cuda_hooks_release *what)
{
    return sinks.release_begin ? sinks.release_begin(what) : NULL;
}

static void release_end(void *token, const struct gdrx_cuda_hooks_release *what, CUresult r)
{
    if (sinks.release_end) {
        sinks.release_end(token, what, r == CUDA_SUCCESS); /* raises FREE itself */
    } else if (r == CUDA_SUCCESS && what->kind == GDRX_RELEASE_RANGE) {
        struct gdrx_mem_event ev = { .type = GDRX_MEM_EVENT_FREE, .base = what->base,
                                     .size = what->size, .device = what->device };
        sinks.event(&ev);
    }
}

/* a2: the size (cuMemUnmap) or the stream (cuMemFreeAsync). */
static CUresult free_common(CUdeviceptr p, U a2, REC pt)
{
    void *original = gdrx_entry_original(pt); /* first: entry_patch.h */
    bool outer = enter();
    struct gdrx_cuda_hooks_release what;
    bool seen = false;
    void *token = NULL;
    CUresult r;

    if (outer && pt->kind == K_UNMAP && p) {
        what = (struct gdrx_cuda_hooks_release){ .base = p, .size = a2 ? a2 : 1, .device = -1 };
        seen = true;
    } else if (outer) {
        seen = free_target(p, &what);
    }
    if (seen) {
        what.device = device_of(p);
        token = release_begin(&what);
    }
    switch (pt->kind) {
    case K_FREE32: r = ((free32_fn)original)((unsigned int)p); break;
    case K_FREE:   r = ((free_fn)original)(p); break;
    case K_UNMAP:  r = ((unmap_fn)original)(p, a2); break;
    default:       r = ((free_async_fn)original)(p, (CUstream)a2); break;
    }
    if (seen)
        release_end(token, &what, r);
    leave(outer);
    return r;
}

static CUresult h_free32(unsigned int p, U a2, U a3, U a4, U a5, REC pt)
{
    (void)a2; (void)a3; (void)a4; (void)a5;
    return free_common(p, 0, pt);
}

static CUresult h_free(CUdeviceptr p, U a2, U a3, U a4, U a5, REC pt)
{
    (void)a2; (void)a3; (void)a4; (void)a5;
    return free_common(p, 0, pt);
}

/* Stream-ordered frees are reported when enqueued: earlier than needed,
 * never later. */
static CUresult h_free_async(CUdeviceptr p, CUstream s, U a3, U a4, U a5, REC pt)
{
    (void)a3; (void)a4; (void)a5;
    return free_common(p, (U)s, pt);
}

static CUresult h_unmap(CUdeviceptr p, size_t size, U a3, U a4, U a5, REC pt)
{
    (void)a3; (void)a4; (void)a5;
    return free_common(p, size, pt);
}

/* ------------------------------------------------------------ contexts */

/* A primary context reset (a1: the device) or a context destroyed (a1:
 * the context) takes every allocation of the context with it, without a
 * free call: its pins are held over the call and revoked if it succeeded. */
static CUresult h_ctx_gone(uintptr_t a1, U a2, U a3, U a4, U a5, REC pt)
{
    void *original = gdrx_entry_original(pt); /* first: entry_patch.h */
    bool outer = enter();
    struct gdrx_cuda_hooks_release what = { .device = -1 };
    bool seen = outer && (pt->kind == K_CTX_RESET || a1);
    void *token = NULL;
    CUresult r;

    (void)a2; (void)a3; (void)a4; (void)a5;
    if (pt->kind == K_CTX_RESET) {
        what.kind = GDRX_RELEASE_PRIMARY_CTX;
        what.device = (int)a1;
    } else {
        what.kind = GDRX_RELEASE_CTX;
        what.ctx = (void *)a1;
    }
    if (seen)
        token = release_begin(&what);
    if (pt->kind == K_CTX_RESET)
        r = ((ctx_reset_fn)original)((CUdevice)a1);
    else
        r = ((ctx_destroy_fn)original)((CUcontext)a1);
    if (seen)
        release_end(token, &what, r);
    leave(outer);
    return r;
}

/* A graph launch (a1: the executable graph, a2: the stream) may run
 * memory free nodes, which release memory with no call gdrx can see: each
 * launch that CUDA took is reported, after it was enqueued, so that
 * whoever trusts FREE events re-checks (the nodes run later, in stream
 * order; a freed address is reused only by a later launch, reported too). */
static CUresult h_graph_launch(CUgraphExec g, CUstream s, U a3, U a4, U a5, REC pt)
{
    bool outer = enter();
    CUresult r = ((graph_launch_fn)gdrx_entry_original(pt))(g, s);

    (void)a3; (void)a4; (void)a5;
    if (outer && r == CUDA_SUCCESS) {
        struct gdrx_mem_event ev = { .type = GDRX_MEM_EVENT_GRAPH_LAUNCH, .device = -1 };
        sinks.event(&ev);
    }
    leave(outer);
    return r;
}

/* --------------------------------------------------------- allocations */

static void alloc_done(CUresult r, bool outer, CUdeviceptr p, size_t size)
{
    if (outer && r == CUDA_SUCCESS)
        report(GDRX_MEM_EVENT_ALLOC, p, size);
    leave(outer);
}

static CUresult h_alloc32(unsigned int *p, unsigned int size, U a3, U a4, U a5, REC pt)
{
    bool outer = enter();
    CUresult r = ((alloc32_fn)gdrx_entry_original(pt))(p, size);

    (void)a3; (void)a4; (void)a5;
    alloc_done(r, outer, p ? *p : 0, 0);
    return r;
}

static CUresult h_alloc(CUdeviceptr *p, size_t size, U a3, U a4, U a5, REC pt)
{
    bool outer = enter();
    CUresult r = ((alloc_fn)gdrx_entry_original(pt))(p, size);

    (void)a3; (void)a4; (void)a5;
    alloc_done(r, outer, p ? *p : 0, 0);
    return r;
}

static CUresult h_pitch32(unsigned int *p, unsigned int *pitch, unsigned int w, unsigned int h,
                          unsigned int elem, REC pt)
{
    bool outer = enter();
    CUresult r = ((pitch32_fn)gdrx_entry_original(pt))(p, pitch, w, h, elem);

    alloc_done(r, outer, p ? *p : 0, 0);
    return r;
}

static CUresult h_pitch(CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned int elem,
                        REC pt)
{
    bool outer = enter();
    CUresult r = ((pitch_fn)gdrx_entry_original(pt))(p, pitch, w, h, elem);

    alloc_done(r, outer, p ? *p : 0, 0);
    return r;
}

static CUresult h_alloc_async(CUdeviceptr *p, size_t size, CUstream s, U a4, U a5, REC pt)
{
    bool outer = enter();
    CUresult r = ((alloc_async_fn)gdrx_entry_original(pt))(p, size, s);

    (void)a4; (void)a5;
    alloc_done(r, outer, p ? *p : 0, 0);
    return r;
}

static CUresult h_alloc_pool(CUdeviceptr *p, size_t size, CUmemoryPool pool, CUstream s, U a5,
                             REC pt)
{
    bool outer = enter();
    CUresult r = ((alloc_pool_fn)gdrx_entry_original(pt))(p, size, pool, s);

    (void)a5;
    alloc_done(r, outer, p ? *p : 0, 0);
    return r;
}

static CUresult h_map(CUdeviceptr p, size_t size, size_t off, CUmemGenericAllocationHandle hd,
                      unsigned long long flags, REC pt)
{
    bool outer = enter();
    CUresult r = ((map_fn)gdrx_entry_original(pt))(p, size, off, hd, flags);

    alloc_done(r, outer, p, size ? size : 1);
    return r;
}

/* ---------------------------------------------------- cuGetProcAddress */

static int patch_locked(void *addr, enum hook_kind kind);

/* Patch what cuGetProcAddress returned for a hooked name, if new. */
static void adopt(const char *sym, int version, void *fn)
{
    if (!sym || !fn || in_hook)
        return;
    for (size_t i = 0; i < N_GPA_NAMES; i++) {
        const struct gpa_entry *g = &gpa_names[i];
        if (strcmp(sym, g->name) != 0)
            continue;
        enum hook_kind kind = version >= g->since ? g->kind_new : g->kind_old;
        hooks_lock();
        in_hook = true;
        int rc = patch_locked(fn, kind);
        in_hook = false;
        hooks_unlock();
        if (rc)
            gdrx_warn("cannot hook %s at %p from cuGetProcAddress (%d): its frees are not seen",
                      sym, fn, rc);
        return;
    }
}

static CUresult h_gpa(const char *sym, void **pfn, int ver, cuuint64_t flags, U a5, REC pt)
{
    CUresult r = ((gpa_fn)gdrx_entry_original(pt))(sym, pfn, ver, flags);

    (void)a5;
    if (r == CUDA_SUCCESS && pfn)
        adopt(sym, ver, *pfn);
    return r;
}

static CUresult h_gpa2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *st, REC pt)
{
    CUresult r = ((gpa2_fn)gdrx_entry_original(pt))(sym, pfn, ver, flags, st);

    if (r == CUDA_SUCCESS && pfn)
        adopt(sym, ver, *pfn);
    return r;
}

static void *const hook_fn[K_COUNT] = {
    [K_FREE32] = (void *)h_free32, [K_FREE] = (void *)h_free,
    [K_FREE_ASYNC] = (void *)h_free_async, [K_UNMAP] = (void *)h_unmap,
    [K_ALLOC32] = (void *)h_alloc32, [K_ALLOC] = (void *)h_alloc,
    [K_PITCH32] = (void *)h_pitch32, [K_PITCH] = (void *)h_pitch,
    [K_ALLOC_ASYNC] = (void *)h_alloc_async, [K_ALLOC_POOL] = (void *)h_alloc_pool,
    [K_MAP] = (void *)h_map, [K_CTX_RESET] = (void *)h_ctx_gone,
    [K_CTX_DESTROY] = (void *)h_ctx_gone, [K_GRAPH_LAUNCH] = (void *)h_graph_launch,
    [K_GPA] = (void *)h_gpa, [K_GPA2] = (void *)h_gpa2,
};

/* -------------------------------------------------------- installation */

static struct gdrx_entry_patch *record_of_locked(const void *addr)
{
    for (int i = 0; i < npatches; i++)
        if (patches[i].target == addr)
            return &patches[i];
    return NULL;
}

/* A record stays once built: after gdrx_cuda_hooks_remove() the same
 * landing and trampoline are armed again. */
static int patch_locked(void *addr, enum hook_kind kind)
{
    struct gdrx_entry_patch *p = record_of_locked(addr);

    if (p)
        return p->state == GDRX_PATCH_DISARMED ? gdrx_entry_arm(p) : 0;
    if (npatches == MAX_PATCHES)
        return -ENOSPC;
    int rc = gdrx_entry_patch(addr, hook_fn[kind], (int)kind, &patches[npatches]);
    if (rc == 0)
        __atomic_store_n(&npatches, npatches + 1, __ATOMIC_RELEASE);
    return rc;
}

static void patch_gpa_result(gpa2_fn gp2, gpa_fn gp1, const struct gpa_entry *g, int ver,
                             cuuint64_t flags)
{
    void *fn = NULL;
    CUresult r = gp2 ? gp2(g->name, &fn, ver, flags, NULL)
               : gp1 ? gp1(g->name, &fn, ver, flags) : CUDA_ERROR_NOT_FOUND;

    if (r == CUDA_SUCCESS && fn && patch_locked(fn, ver >= g->since ? g->kind_new : g->kind_old))
        gdrx_dbg("cannot hook %s at %p", g->name, fn);
}

/* Patch the addresses cuGetProcAddress gives for our names now (default
 * and per-thread stream), which a runtime may have fetched before us. */
static void patch_gpa_results(void *lib)
{
    gpa2_fn gp2 = (gpa2_fn)dlsym(lib, "cuGetProcAddress_v2");
    gpa_fn gp1 = (gpa_fn)dlsym(lib, "cuGetProcAddress");
    /* Runtimes ask with their own version: ours, 12.0 and 11.3 (the
     * first with cuGetProcAddress) cover the internal variants seen. */
    static const int versions[] = { CUDA_VERSION, 12000, 11030 };

    for (size_t i = 0; i < N_GPA_NAMES; i++)
        for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++)
            for (cuuint64_t flags = 0; flags <= CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
                 flags++)
                patch_gpa_result(gp2, gp1, &gpa_names[i], versions[v], flags);
}

static int install_locked(void *lib)
{
    int hooked_frees = 0, first_err = 0;

    real_range = (range_fn)dlsym(lib, "cuMemGetAddressRange_v2");
    real_attr = (attr_fn)dlsym(lib, "cuPointerGetAttribute");
    for (size_t i = 0; i < N_EXPORTS; i++) {
        if (exports[i].kind == K_GPA)
            patch_gpa_results(lib);
        void *fn = dlsym(lib, exports[i].name);
        int rc = fn ? patch_locked(fn, exports[i].kind) : -ENOENT;
        export_rc[i] = rc;
        if (rc == 0) {
            hooked_frees += exports[i].kind <= K_UNMAP;
            continue;
        }
        if (rc == -ENOENT)
            continue; /* not in this libcuda: nobody can call it */
        gdrx_warn("cannot hook %s (%d): its callers' events are not seen", exports[i].name, rc);
        if (!first_err)
            first_err = rc;
    }
    return hooked_frees ? 0 : first_err ? first_err : -ENOENT;
}

static int armed_locked(void)
{
    int n = 0;

    for (int i = 0; i < npatches; i++)
        n += patches[i].state == GDRX_PATCH_ARMED;
    return n;
}

/* A fork while another thread patches would leave `lock` held in the
 * child, whose next cuGetProcAddress would then hang.  In libgdrx the
 * library's one set of fork handlers (fork.c) takes it in the lock order
 * (lock_order.h: CUDA_HOOKS); a program built on these files alone
 * registers its own. */
void gdrx_cuda_hooks_fork_lock(void)
{
    hooks_lock();
}

void gdrx_cuda_hooks_fork_unlock(void)
{
    hooks_unlock();
}

#ifndef GDRX_HAVE_FREE_HOOKS
static void register_atfork(void)
{
    (void)pthread_atfork(gdrx_cuda_hooks_fork_lock, gdrx_cuda_hooks_fork_unlock,
                         gdrx_cuda_hooks_fork_unlock);
}
#endif

int gdrx_cuda_hooks_install(const struct gdrx_cuda_hooks_sinks *s)
{
#ifndef GDRX_HAVE_FREE_HOOKS
    static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
#endif
    int rc = 0;

    if (!s || !s->event)
        return -EINVAL;
    hooks_lock();
    if (state == HOOKS_INSTALLED) {
        hooks_unlock();
        return 0;
    }
    /* Never load libcuda: if it is not there, nobody can call it. */
    void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!lib) {
        hooks_unlock();
        return -ENOENT;
    }
    sinks = *s;
#ifndef GDRX_HAVE_FREE_HOOKS
    pthread_once(&atfork_once, register_atfork);
#endif
    in_hook = true;
    rc = install_locked(lib);
    in_hook = false;
    if (armed_locked() > 0) {
        state = HOOKS_INSTALLED; /* the reference on lib is kept: patched code stays */
        libcuda = lib;
    } else {
        dlclose(lib);
    }
    hooks_unlock();
    return rc;
}

int gdrx_cuda_hooks_count(void)
{
    hooks_lock();
    int n = armed_locked();
    hooks_unlock();
    return n;
}

int gdrx_cuda_hooks_entry(size_t i, const char **name, int *rc)
{
    if (i >= N_EXPORTS)
        return -ENOENT;
    hooks_lock();
    *name = exports[i].name;
    *rc = state == HOOKS_INSTALLED ? export_rc[i] : -ENODATA;
    hooks_unlock();
    return 0;
}

void gdrx_cuda_hooks_remove(void)
{
    hooks_lock();
    for (int i = 0; i < npatches; i++)
        if (patches[i].state == GDRX_PATCH_ARMED)
            (void)gdrx_entry_disarm(&patches[i]);
    if (state == HOOKS_INSTALLED)
        dlclose(libcuda); /* install's reference */
    state = HOOKS_NONE;
    hooks_unlock();
}
