/*
 * sim_memory.c - simulated device memory: objects, the device VA
 * allocator, sub-allocation, free and lookup (the CUDA functions that
 * use them are sim_mem_api.c's).
 *
 * SPDX-License-Identifier: MIT
 *
 * An object is one backing file mapped at a 2 MiB-aligned device VA.  Large
 * allocations own an object; small ones share 2 MiB "pool" objects.  The
 * device VA itself stays PROT_NONE: only the sim's private view of each
 * object (obj->bk.cpu) is accessible, and only the copy code uses it.
 */
#include "sim_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int sim_in_device_va(uint64_t p)
{
    for (int i = 0; i < sim.device_count; i++)
        if (p >= sim.dev[i].va_base && p < sim.dev[i].va_end)
            return 1;
    return 0;
}

/* The object whose VA range holds p, in any state. */
static struct sim_object *object_at_locked(uint64_t p)
{
    for (struct sim_object *o = sim.objects; o; o = o->next)
        if (p >= o->va && p - o->va < o->size)
            return o;
    return NULL;
}

struct sim_object *sim_find_object_locked(uint64_t p)
{
    struct sim_object *o = object_at_locked(p);
    return o && o->state == SIM_LIVE ? o : NULL;
}

struct sim_alloc *sim_find_alloc_locked(uint64_t p, int any_state)
{
    struct sim_object *o = object_at_locked(p);
    if (!o)
        return NULL;
    for (struct sim_alloc *a = o->allocs; a; a = a->next) {
        uint64_t base = o->va + a->offset;
        if (p >= base && p - base < a->size)
            return any_state || a->state == SIM_LIVE ? a : NULL;
    }
    return NULL;
}

static void describe_object(const struct sim_object *o, struct simcu_alloc_info *out)
{
    memset(out, 0, sizeof(*out));
    out->object_id = o->id;
    out->object_va = o->va;
    out->object_size = o->size;
    out->device = o->device;
    out->memfd = o->bk.fd;
    out->memfd_offset = o->bk.offset;
}

void sim_describe_locked(const struct sim_alloc *a, uint64_t p, struct simcu_alloc_info *out)
{
    describe_object(a->obj, out);
    out->offset = (size_t)(p - a->obj->va);
    out->alloc_base = a->obj->va + a->offset;
    out->alloc_size = a->size;
    out->buffer_id = a->buffer_id;
    out->sync_memops = a->sync_memops;
}

/* ---- device VA: bump pointer plus a LIFO stack of freed ranges ---- */

static uint64_t va_take_locked(struct sim_device *d, size_t size)
{
    if (sim.va_reuse) {
        for (size_t i = d->nholes; i-- > 0;) {
            struct sim_va_hole *h = &d->holes[i];
            if (h->size < size)
                continue;
            uint64_t va = h->va;
            h->va += size;
            h->size -= size;
            if (h->size == 0) {
                memmove(h, h + 1, (d->nholes - i - 1) * sizeof(*h));
                d->nholes--;
            }
            return va;
        }
    }
    if (size > d->va_end - d->va_next)
        return 0;
    uint64_t va = d->va_next;
    d->va_next += size;
    return va;
}

/* Room for one more hole: 0, or -1 (the VA that would have gone there is
 * lost, nothing else). */
static int holes_reserve_locked(struct sim_device *d)
{
    if (d->nholes == d->holes_cap) {
        size_t cap = d->holes_cap ? d->holes_cap * 2 : 64;
        struct sim_va_hole *h = realloc(d->holes, cap * sizeof(*h));
        if (!h)
            return -1;
        d->holes = h;
        d->holes_cap = cap;
    }
    return 0;
}

/* With reuse off the range is simply never handed out again. */
static void va_release_locked(struct sim_device *d, uint64_t va, size_t size)
{
    if (!sim.va_reuse || holes_reserve_locked(d) != 0)
        return;
    d->holes[d->nholes].va = va;
    d->holes[d->nholes].size = size;
    d->nholes++;
}

/* [want, want + size) if all of it is free VA of d (never used, or inside
 * one freed range), else 0: a test's placement (simcu_place_next_alloc). */
static uint64_t va_take_at_locked(struct sim_device *d, uint64_t want, size_t size)
{
    if (want < d->va_base || want >= d->va_end || size > d->va_end - want)
        return 0;
    if (want >= d->va_next) {
        /* what it skips is freed VA like any other */
        if (want > d->va_next)
            va_release_locked(d, d->va_next, want - d->va_next);
        d->va_next = want + size;
        return want;
    }
    if (!sim.va_reuse)
        return 0;
    for (size_t i = 0; i < d->nholes; i++) {
        struct sim_va_hole *h = &d->holes[i];
        if (want < h->va || want - h->va > h->size || size > h->size - (want - h->va))
            continue;
        uint64_t end = h->va + h->size;
        size_t left = want - h->va, right = end - (want + size);
        if (left && right) {
            if (holes_reserve_locked(d) != 0)
                return 0;
            h = &d->holes[i];
            memmove(h + 2, h + 1, (d->nholes - i - 1) * sizeof(*h));
            d->nholes++;
            h[1].va = want + size;
            h[1].size = right;
            h->size = left;
        } else if (left) {
            h->size = left;
        } else if (right) {
            h->va = want + size;
            h->size = right;
        } else {
            memmove(h, h + 1, (d->nholes - i - 1) * sizeof(*h));
            d->nholes--;
        }
        return want;
    }
    return 0;
}

/* ---- a test's placement of the calling thread's next allocation ---- */

static __thread int place_set;         /* simcu_place_next_alloc was called */
static __thread uint64_t place_va;     /* 0: an object of its own, anywhere */
static __thread unsigned place_flags;  /* SIMCU_PLACE_* */

int simcu_place_next_alloc(CUdeviceptr va, unsigned flags)
{
    if (va % SIM_OBJECT_ALIGN != 0 || (flags & ~(unsigned)SIMCU_PLACE_ALONE))
        return -EINVAL;
    place_va = va;
    place_flags = flags;
    place_set = 1;
    return 0;
}

/* ---- allocations inside objects ---- */

static int use_pool(size_t size)
{
    return sim.suballoc_threshold && size < sim.suballoc_threshold &&
           sim_round_up(size, sim.suballoc_align) <= SIM_OBJECT_ALIGN;
}

/* Link a into o at offset, keeping o->allocs sorted by offset. */
static void link_alloc_locked(struct sim_object *o, struct sim_alloc *a, size_t offset)
{
    struct sim_alloc **pp = &o->allocs;
    while (*pp && (*pp)->offset < offset)
        pp = &(*pp)->next;
    a->offset = offset;
    a->obj = o;
    a->next = *pp;
    *pp = a;
    if (offset + a->span > o->high_water)
        o->high_water = offset + a->span;
    a->buffer_id = ++sim.next_buffer_id;
    a->state = SIM_CREATING;
    sim.live_allocs++;
}

/* A free offset for span bytes in pool object o, or (size_t)-1.  With
 * reuse on: the lowest gap (a freed offset is reusable at once); off: only
 * never-used space. */
static size_t pool_fit_locked(const struct sim_object *o, size_t span)
{
    size_t align = sim.suballoc_align;
    size_t start = 0;

    if (!sim.va_reuse) {
        start = sim_round_up(o->high_water, align);
        return start <= o->size && o->size - start >= span ? start : (size_t)-1;
    }
    for (const struct sim_alloc *a = o->allocs; a; a = a->next) {
        if (a->offset >= start && a->offset - start >= span)
            return start;
        start = sim_round_up(a->offset + a->span, align);
    }
    return start <= o->size && o->size - start >= span ? start : (size_t)-1;
}

static int pool_place_locked(const struct CUctx_st *ctx, struct sim_alloc *a)
{
    for (struct sim_object *o = sim.objects; o; o = o->next) {
        if (o->ctx != ctx || !o->shared || o->state != SIM_LIVE)
            continue;
        size_t off = pool_fit_locked(o, a->span);
        if (off != (size_t)-1) {
            link_alloc_locked(o, a, off);
            return 1;
        }
    }
    return 0;
}

/* A new object o, not yet visible, with its first allocation a at offset
 * (an IPC import shows the exported allocation where it sits in the
 * exporter's object). */
static void add_object_locked(struct sim_object *o, struct sim_alloc *a, size_t offset)
{
    o->state = SIM_CREATING;
    o->next = sim.objects;
    sim.objects = o;
    sim.live_objects++;
    link_alloc_locked(o, a, offset);
}

/* Report a new allocation (and its object when new), then make it live. */
static void publish(struct sim_alloc *a, int new_object)
{
    struct simcu_alloc_info info;
    struct sim_object *o = a->obj;

    if (new_object) {
        sim_lock();
        describe_object(o, &info);
        sim_unlock();
        sim_notify_object_created(&info);
    }
    sim_lock();
    sim_describe_locked(a, o->va + a->offset, &info);
    sim_unlock();
    sim_notify_alloc_created(&info);
    sim_lock();
    o->state = SIM_LIVE;
    a->state = SIM_LIVE;
    sim_unlock();
}

static CUresult mem_alloc_driver_locked(CUdeviceptr *dptr, size_t size, struct CUctx_st *ctx,
                                        int stream_pool);

/* libcuda holds a lock of its own over a whole allocation or free, its RM
 * ioctls included: a thread held inside such an ioctl keeps every other
 * thread's cuMemAlloc and cuMemFree waiting (issue 43, defect 7: the ioctl
 * trace of libgdrx's nvrm backend runs inside it).  Not taken by the fork
 * handler: a fork while another thread allocates does not wait for it, as
 * on the H100.  Recursive: a context destroy frees from inside a call. */
static pthread_mutex_t driver_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

CUresult sim_mem_alloc(CUdeviceptr *dptr, size_t size, struct CUctx_st *ctx, int stream_pool)
{
    pthread_mutex_lock(&driver_lock);
    CUresult rc = mem_alloc_driver_locked(dptr, size, ctx, stream_pool);
    pthread_mutex_unlock(&driver_lock);
    return rc;
}

static CUresult mem_alloc_driver_locked(CUdeviceptr *dptr, size_t size, struct CUctx_st *ctx,
                                        int stream_pool)
{
    int device = ctx->device;
    struct sim_alloc *a = calloc(1, sizeof(*a));
    struct sim_object *o = NULL;
    struct sim_device *d = &sim.dev[device];

    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* a test's placement: an object of its own, at place_va if not 0 */
    int placed = place_set;
    uint64_t want = place_va;
    int alone = placed && (place_flags & SIMCU_PLACE_ALONE);
    place_set = 0;
    sim_lock();
    a->size = size;
    a->span = sim_round_up(size, sim.suballoc_align);
    int pooled = !stream_pool && use_pool(size);
    if (pooled && !placed && pool_place_locked(ctx, a)) {
        sim_unlock();
        *dptr = a->obj->va + a->offset;
        publish(a, 0);
        return CUDA_SUCCESS;
    }

    size_t osize = pooled ? SIM_OBJECT_ALIGN : sim_round_up(size, SIM_OBJECT_ALIGN);
    uint64_t va = placed && want ? va_take_at_locked(d, want, osize) : va_take_locked(d, osize);
    uint64_t id = ++sim.next_object_id;
    const struct sim_backing_ops *backing = sim.backing;
    sim_unlock();
    if (!va || !(o = calloc(1, sizeof(*o))) || backing->create(id, device, osize, &o->bk) != 0) {
        free(o);
        free(a);
        if (va) {
            sim_lock();
            va_release_locked(d, va, osize);
            sim_unlock();
        }
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    o->id = id;
    o->device = device;
    o->ctx = ctx;
    o->shared = pooled && !alone;
    o->stream_pool = stream_pool;
    o->va = va;
    o->size = osize;

    sim_lock();
    add_object_locked(o, a, 0);
    sim_unlock();
    *dptr = va;
    publish(a, 1);
    return CUDA_SUCCESS;
}

/* A VMM mapping's pages are the handle's and its VA the reservation's:
 * both outlive it. */
static void destroy_object(struct sim_object *o)
{
    sim_notify_object_destroyed(o->id);
    if (o->graph) { /* the pages go back to the graph pool, the VA stays the node's */
        sim_graph_pages_freed(o->device, &o->bk);
        free(o);
        return;
    }
    if (o->vmm) {
        sim_vmm_unmapped(o->vmm);
        free(o);
        return;
    }
    sim.backing->destroy(&o->bk);
    sim_lock();
    va_release_locked(&sim.dev[o->device], o->va, o->size);
    sim_unlock();
    free(o);
}

uint64_t sim_va_take(int device, size_t size)
{
    sim_lock();
    uint64_t va = va_take_locked(&sim.dev[device], size);
    sim_unlock();
    return va;
}

void sim_va_release(int device, uint64_t va, size_t size)
{
    sim_lock();
    va_release_locked(&sim.dev[device], va, size);
    sim_unlock();
}

CUresult sim_mem_map_vmm(uint64_t va, size_t size, size_t offset, struct sim_vmm_handle *h,
                         const struct sim_backing_object *bk, int device, const size_t *part)
{
    struct sim_alloc *a = calloc(1, sizeof(*a));
    struct sim_object *o = calloc(1, sizeof(*o));

    if (!a || !o) {
        free(a);
        free(o);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    o->bk = *bk;
    o->bk.cpu = (char *)bk->cpu + offset;
    o->bk.offset = bk->offset + (off_t)offset;
    o->bk.size = size;
    o->device = device;
    o->vmm = h;
    o->va = va;
    o->size = size;
    o->ipc = part != NULL;
    a->size = part ? part[0] : size;
    a->span = part ? sim_round_up(part[0], sim.suballoc_align ? sim.suballoc_align : 1) : size;
    sim_lock();
    o->id = ++sim.next_object_id;
    add_object_locked(o, a, part ? part[1] : 0);
    sim_unlock();
    publish(a, 1);
    return CUDA_SUCCESS;
}

CUresult sim_mem_map_graph(uint64_t va, size_t size, int device, struct CUctx_st *ctx,
                           const struct sim_backing_object *bk)
{
    struct sim_alloc *a = calloc(1, sizeof(*a));
    struct sim_object *o = calloc(1, sizeof(*o));

    if (!a || !o) {
        free(a);
        free(o);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    o->bk = *bk;
    o->device = device;
    o->ctx = ctx;
    o->graph = 1;
    o->va = va;
    o->size = bk->size;
    a->size = size;
    a->span = size;
    sim_lock();
    o->id = ++sim.next_object_id;
    add_object_locked(o, a, 0);
    sim_unlock();
    publish(a, 1);
    return CUDA_SUCCESS;
}

int sim_mem_is_graph_alloc(uint64_t p)
{
    sim_lock();
    const struct sim_alloc *a = sim_find_alloc_locked(p, 0);
    int yes = a && a->obj->graph && a->obj->va + a->offset == p;
    sim_unlock();
    return yes;
}

static CUresult free_alloc(CUdeviceptr dptr, int kind, size_t size);
static CUresult free_alloc_driver_locked(CUdeviceptr dptr, int kind, size_t size);

/* Free the live allocation based at dptr; CUDA_ERROR_INVALID_VALUE if
 * there is none (a VMM mapping goes by cuMemUnmap only). */
CUresult sim_mem_free(CUdeviceptr dptr)
{
    return free_alloc(dptr, 0, 0);
}

CUresult sim_mem_unmap_vmm(uint64_t va, size_t size, int ipc)
{
    return free_alloc(va, ipc ? 2 : 1, size);
}

/* kind 0: a cuMemAlloc'ed allocation; 1: only a VMM mapping, of exactly
 * size bytes; 2: only an IPC import. */
static CUresult free_alloc(CUdeviceptr dptr, int kind, size_t size)
{
    pthread_mutex_lock(&driver_lock);
    CUresult rc = free_alloc_driver_locked(dptr, kind, size);
    pthread_mutex_unlock(&driver_lock);
    return rc;
}

static CUresult free_alloc_driver_locked(CUdeviceptr dptr, int kind, size_t size)
{
    struct simcu_alloc_info info;

    sim_lock();
    struct sim_alloc *a = sim_find_alloc_locked(dptr, 0);
    int have = a ? (a->obj->vmm ? 1 + a->obj->ipc : 0) : -1;
    if (!a || a->obj->va + a->offset != dptr || have != kind ||
        (kind == 1 && a->size != size)) {
        sim_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    a->state = SIM_DYING;
    sim_describe_locked(a, dptr, &info);
    sim_unlock();

    sim_notify_alloc_freed(&info);

    sim_lock();
    struct sim_object *o = a->obj;
    struct sim_alloc **pp = &o->allocs;
    while (*pp != a)
        pp = &(*pp)->next;
    *pp = a->next;
    sim.live_allocs--;
    int last = o->allocs == NULL;
    if (last) {
        struct sim_object **op = &sim.objects;
        while (*op != o)
            op = &(*op)->next;
        *op = o->next;
        o->state = SIM_DYING;
        sim.live_objects--;
    }
    sim_unlock();
    free(a);
    if (last)
        destroy_object(o);
    return CUDA_SUCCESS;
}

void sim_mem_free_ctx(const struct CUctx_st *ctx)
{
    for (;;) {
        uint64_t base = 0;
        sim_lock();
        for (struct sim_object *o = sim.objects; o && !base; o = o->next) {
            /* pool and graph memory is the device's (the H100 keeps it
             * over a context reset: issue 43) */
            if (o->ctx != ctx || o->stream_pool || o->graph)
                continue;
            for (struct sim_alloc *a = o->allocs; a && !base; a = a->next)
                if (a->state == SIM_LIVE)
                    base = o->va + a->offset;
        }
        sim_unlock();
        if (!base || sim_mem_free(base) != CUDA_SUCCESS)
            return;
    }
}
