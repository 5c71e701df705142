/*
 * cuda_hooks_handlers.c - what the hooks on libcuda's allocation, free,
 * context and graph entry points do: report allocations and graph
 * launches, and hold a free's pins over the driver's call (which pins,
 * told before the call; revoked only if the driver said yes).
 *
 * SPDX-License-Identifier: MIT
 *
 * A hook is entered through entry_patch's stub with the caller's arguments
 * and the patch record as its 6th argument (r9); it calls the record's
 * original, so the same hook serves every address patched for one ABI
 * (the export, and other addresses cuGetProcAddress hands out).
 */
#include "cuda_hooks_priv.h"

_Thread_local bool gdrx_cuda_hooks_in_hook;

static struct gdrx_cuda_hooks_sinks sinks; /* set once, before any patch */
static range_fn real_range;
static attr_fn real_attr;

void gdrx_cuda_hooks_handlers_init(const struct gdrx_cuda_hooks_sinks *s, range_fn range,
                                   attr_fn attr)
{
    sinks = *s;
    real_range = range;
    real_attr = attr;
}

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
    if (gdrx_cuda_hooks_in_hook)
        return false;
    gdrx_cuda_hooks_in_hook = true;
    return true;
}

static void leave(bool outer)
{
    if (outer)
        gdrx_cuda_hooks_in_hook = false;
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
 * memory free nodes, which release memory with no call gdrx can see, and
 * allocation nodes, which hand the pages out again.  Which allocations a
 * launch frees cannot be told, so the pins of graph memory are held over
 * every launch, as over a free, and revoked if CUDA took it (graph_mem.h).
 * Each launch that CUDA took is also reported, after it was enqueued, so
 * that whoever trusts FREE events re-checks (the nodes run later, in
 * stream order; a freed address is reused only by a later launch). */
static CUresult h_graph_launch(CUgraphExec g, CUstream s, U a3, U a4, U a5, REC pt)
{
    void *original = gdrx_entry_original(pt); /* first: entry_patch.h */
    bool outer = enter();
    struct gdrx_cuda_hooks_release what = { .kind = GDRX_RELEASE_GRAPH_LAUNCH, .device = -1 };
    void *token = outer ? release_begin(&what) : NULL;
    CUresult r = ((graph_launch_fn)original)(g, s);

    (void)a3; (void)a4; (void)a5;
    if (outer)
        release_end(token, &what, r);
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

static void *const hook_fn[K_GPA] = {
    [K_FREE32] = (void *)h_free32, [K_FREE] = (void *)h_free,
    [K_FREE_ASYNC] = (void *)h_free_async, [K_UNMAP] = (void *)h_unmap,
    [K_ALLOC32] = (void *)h_alloc32, [K_ALLOC] = (void *)h_alloc,
    [K_PITCH32] = (void *)h_pitch32, [K_PITCH] = (void *)h_pitch,
    [K_ALLOC_ASYNC] = (void *)h_alloc_async, [K_ALLOC_POOL] = (void *)h_alloc_pool,
    [K_MAP] = (void *)h_map, [K_CTX_RESET] = (void *)h_ctx_gone,
    [K_CTX_DESTROY] = (void *)h_ctx_gone, [K_GRAPH_LAUNCH] = (void *)h_graph_launch,
};

void *gdrx_cuda_hooks_handler(enum hook_kind kind)
{
    return kind < K_GPA ? hook_fn[kind] : NULL;
}
