/*
 * cuda_hooks.c - which libcuda addresses get hooks, and installing them:
 * the exports, and what cuGetProcAddress hands out for the same names
 * (its own hooks adopt later results).  What the hooks do is
 * cuda_hooks_handlers.c's.
 *
 * SPDX-License-Identifier: MIT
 */
#include "cuda_hooks_priv.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

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
/* ---------------------------------------------------- cuGetProcAddress */

static int patch_locked(void *addr, enum hook_kind kind);

/* Patch what cuGetProcAddress returned for a hooked name, if new. */
static void adopt(const char *sym, int version, void *fn)
{
    if (!sym || !fn || gdrx_cuda_hooks_in_hook)
        return;
    for (size_t i = 0; i < N_GPA_NAMES; i++) {
        const struct gpa_entry *g = &gpa_names[i];
        if (strcmp(sym, g->name) != 0)
            continue;
        enum hook_kind kind = version >= g->since ? g->kind_new : g->kind_old;
        hooks_lock();
        gdrx_cuda_hooks_in_hook = true;
        int rc = patch_locked(fn, kind);
        gdrx_cuda_hooks_in_hook = false;
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

/* The hook of each kind. */
static void *hook_of(enum hook_kind kind)
{
    if (kind == K_GPA)
        return (void *)h_gpa;
    if (kind == K_GPA2)
        return (void *)h_gpa2;
    return gdrx_cuda_hooks_handler(kind);
}

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
    int rc = gdrx_entry_patch(addr, hook_of(kind), (int)kind, &patches[npatches]);
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
    gdrx_cuda_hooks_handlers_init(s, (range_fn)dlsym(lib, "cuMemGetAddressRange_v2"),
                                  (attr_fn)dlsym(lib, "cuPointerGetAttribute"));
#ifndef GDRX_HAVE_FREE_HOOKS
    pthread_once(&atfork_once, register_atfork);
#endif
    gdrx_cuda_hooks_in_hook = true;
    rc = install_locked(lib);
    gdrx_cuda_hooks_in_hook = false;
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
