/*
 * sim_internal.h - state shared by the simulated GPU's source files.
 *
 * SPDX-License-Identifier: MIT
 *
 * One mutex (sim.lock) protects everything below except the per-thread
 * context stack (thread-local) and the failure rules (their own lock in
 * sim_control.c).  Observer and RM hooks always run with sim.lock dropped.
 */
#ifndef SIM_INTERNAL_H
#define SIM_INTERNAL_H

#include <cuda.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "sim_backing.h"
#include "simcu.h"

#define SIM_OBJECT_ALIGN  ((size_t)2 << 20)  /* object size and VA granule */
#define SIM_VA_PER_DEVICE ((size_t)64 << 30) /* device VA reserved per GPU */
#define SIM_DRIVER_VERSION 13000

/* A primary context, or one cuCtxCreate made (sim_context.c).  A
 * created one is never freed: after cuCtxDestroy its handle stays
 * recognisable as destroyed. */
struct CUctx_st {
    int                device;
    int                refcount; /* primary: retains minus releases; 0 = inactive */
    unsigned long long id;       /* cuCtxGetId: new each time it is made
                                    (first retain, reset); atomic */
    int                created;  /* by cuCtxCreate */
    int                destroyed; /* created, then cuCtxDestroy'ed; atomic */
    struct CUctx_st   *next_created; /* in sim_context.c's list */
};

/* A stream cuStreamCreate made (the default streams are no objects). */
struct CUstream_st {
    struct CUstream_st *next; /* in sim.streams */
    struct CUctx_st    *ctx;  /* current at creation; dies with it */
    unsigned int        flags;
};

/* Lifecycle of objects and allocations: CREATING and DYING ones are
 * invisible to the CUDA API (their creation or free is being reported to
 * observers) but still hold their device VA and offsets. */
enum sim_state { SIM_CREATING, SIM_LIVE, SIM_DYING };

struct sim_va_hole {
    uint64_t va;
    size_t   size;
};

struct sim_device {
    uint64_t            va_base, va_end; /* reserved PROT_NONE range */
    uint64_t            va_next;         /* never-used VA starts here */
    struct sim_va_hole *holes;           /* freed VA, a LIFO stack */
    size_t              nholes, holes_cap;
    struct CUctx_st     primary;
};

struct sim_object;
struct sim_vmm_handle;

struct sim_alloc {
    struct sim_alloc  *next; /* in obj->allocs, sorted by offset */
    struct sim_object *obj;
    size_t             offset, size, span; /* span: size rounded to the alignment */
    uint64_t           buffer_id;
    int                sync_memops;
    enum sim_state     state;
};

struct sim_object {
    struct sim_object        *next; /* in sim.objects */
    uint64_t                  id;
    int                       device;
    struct CUctx_st          *ctx;    /* the context that owns it (VMM: none) */
    struct sim_vmm_handle    *vmm;    /* a cuMemMap of this handle's pages, or NULL */
    int                       ipc;    /* with vmm: a cuIpcOpenMemHandle mapping, whose
                                         VA is the sim's (sim_ipc.c) */
    int                       shared; /* a pool for sub-allocations */
    /* The device's, not the context's (a context reset or destroy leaves
     * it, as on the H100): stream_pool, memory of cuMemAllocAsync; graph,
     * a graph allocation, whose VA is its node's and whose pages are the
     * device's graph pool's (sim_graph.c). */
    int                       stream_pool, graph;
    uint64_t                  va;
    size_t                    size;
    size_t                    high_water; /* end of the highest offset ever used */
    enum sim_state            state;
    struct sim_backing_object bk;
    struct sim_alloc         *allocs;
};

struct sim_global {
    pthread_mutex_t               lock;
    int                           initialized; /* atomic loads outside lock */
    int                           forked;      /* a fork child of an initialised
                                                  sim: every call refused (atomic) */
    int                           device_count;      /* 0 until cuInit */
    int                           requested_devices; /* simcu_set_device_count, 0 = env */
    struct sim_device             dev[SIMCU_MAX_DEVICES];
    const struct sim_backing_ops *backing;
    size_t                        suballoc_threshold, suballoc_align;
    int                           va_reuse;
    struct sim_object            *objects;
    uint64_t                      next_object_id, next_buffer_id;
    long                          live_allocs, live_objects, live_streams;
    struct CUstream_st           *streams;
    unsigned long long            next_ctx_id;
    simcu_observer_t              observer;
};

extern struct sim_global sim;

void sim_lock(void);
void sim_unlock(void);
/* Once, at the first successful cuInit: keep sim.lock consistent across
 * fork(), and mark the child as one the driver refuses. */
void sim_register_atfork(void);

/* Entry check of every CUDA function: an injected failure, then (unless
 * SIM_NO_INIT) initialisation and not being a fork child of an initialised
 * process, then (with SIM_NEED_CTX) a usable current context.  SIM_IS_INIT
 * (cuInit's): needs no initialisation but is refused in such a child. */
#define SIM_NO_INIT  1
#define SIM_NEED_CTX 2
#define SIM_IS_INIT  (4 | SIM_NO_INIT)
CUresult sim_begin(const char *function_name, int flags);
/* sim_begin for calls that write through @out: then, if it is NULL,
 * CUDA_ERROR_INVALID_VALUE. */
CUresult sim_begin_out(const char *function_name, int flags, const void *out);
/* sim_control.c: the injected failure for this call, or CUDA_SUCCESS. */
CUresult sim_injected_failure(const char *function_name);

/* sim_device.c */
int sim_is_initialized(void);
struct CUctx_st *sim_current_ctx(void);
int sim_ctx_is_valid(const struct CUctx_st *ctx);
/* Push ctx on the calling thread's stack (CUDA_ERROR_OUT_OF_MEMORY when
 * full); pop it if it is the top (what cuCtxDestroy does). */
CUresult sim_ctx_push(struct CUctx_st *ctx);
void sim_ctx_pop_if_current(const struct CUctx_st *ctx);
/* Give ctx a new cuCtxGetId. */
void sim_ctx_new_id(struct CUctx_st *ctx);
/* Whether ctx is a device's primary context. */
int sim_ctx_is_primary(const struct CUctx_st *ctx);

/* sim_context.c: whether ctx is one cuCtxCreate made (destroyed or not). */
int sim_ctx_is_created(const struct CUctx_st *ctx);

/* sim_memory.c (callers hold sim.lock for the _locked ones) */
int sim_in_device_va(uint64_t p);
/* sim_dmabuf.c: 1 while SIMCU_COHERENT=1 (a coherent GPU, NVLink-C2C). */
int sim_coherent(void);
struct sim_alloc *sim_find_alloc_locked(uint64_t p, int any_state);
struct sim_object *sim_find_object_locked(uint64_t p);
void sim_describe_locked(const struct sim_alloc *a, uint64_t p, struct simcu_alloc_info *out);
/* An allocation owned by ctx (on its device); stream_pool: the device's
 * memory pool's (cuMemAllocAsync), an object of its own, never
 * sub-allocated with cuMemAlloc's. */
CUresult sim_mem_alloc(CUdeviceptr *dptr, size_t size, struct CUctx_st *ctx, int stream_pool);
CUresult sim_mem_free(CUdeviceptr dptr);
/* sim_mem_api.c: cuGetProcAddress's internal entry points (not
 * exported): the frees' implementations, entered without passing through
 * the exports. */
CUresult sim_tbl_cuMemFree_v2(CUdeviceptr dptr);
CUresult sim_ptds_cuMemFreeAsync(CUdeviceptr dptr, CUstream s);
CUresult sim_v11_cuMemFreeAsync(CUdeviceptr dptr, CUstream s);
/* What a destroyed context takes with it. */
void sim_mem_free_ctx(const struct CUctx_st *ctx);
/* A graph allocation node's launch: the graph pool's pages bk (not the
 * object's to destroy) at the node's va; sim_graph_pages_freed(bk) gets
 * them back when it is freed (free node, cuMemFree, cuMemFreeAsync). */
CUresult sim_mem_map_graph(uint64_t va, size_t size, int device, struct CUctx_st *ctx,
                           const struct sim_backing_object *bk);
void sim_graph_pages_freed(int device, const struct sim_backing_object *bk);
/* 1 if p is the base of a live graph allocation. */
int sim_mem_is_graph_alloc(uint64_t p);
/* Device VA (sim_memory.c's allocator, which takes sim.lock itself): 0 if
 * none is left. */
uint64_t sim_va_take(int device, size_t size);
void sim_va_release(int device, uint64_t va, size_t size);
/* VMM (sim_vmm.c) and IPC (sim_ipc.c): an object at va showing
 * [bk + offset, + size) of the handle's pages, with one allocation:
 * spanning it (part NULL), or part[0] bytes from part[1] (an IPC import of
 * one allocation of the exporter's object); and its removal
 * (CUDA_ERROR_INVALID_VALUE unless a mapping of that kind starts at va, of
 * exactly size bytes for VMM). */
CUresult sim_mem_map_vmm(uint64_t va, size_t size, size_t offset, struct sim_vmm_handle *h,
                         const struct sim_backing_object *bk, int device, const size_t *part);
CUresult sim_mem_unmap_vmm(uint64_t va, size_t size, int ipc);
/* sim_vmm.c: a mapping of h went (its object was destroyed). */
void sim_vmm_unmapped(struct sim_vmm_handle *h);
/* sim_vmm.c: a released handle of size bytes of fd from offset (the fd is
 * the handle's from now on, mapped for the sim's CPU view), for one
 * mapping that the caller makes next. */
CUresult sim_vmm_adopt(int fd, off_t offset, size_t size, int device,
                       struct sim_vmm_handle **out, struct sim_backing_object *bk);

/* sim_vmm.c: the handle types h was created exportable as (fixed at
 * creation; a mapping holds h, so callers may read it under sim.lock). */
CUmemAllocationHandleType sim_vmm_handle_types(const struct sim_vmm_handle *h);

/* sim_mempool.c: device's default memory pool (cuMemAllocAsync's). */
CUmemoryPool sim_mempool_default(int device);

/* sim_host.c (without sim.lock held): the registration holding p, if
 * any (1, *out filled; else 0); and what a context takes with it. */
struct sim_host_info {
    uint64_t         start;
    size_t           size;
    struct CUctx_st *ctx;
    int              device;
};
int sim_host_find(uint64_t p, struct sim_host_info *out);
void sim_host_ctx_gone(const struct CUctx_st *ctx);

/* sim_callback.c: stream callbacks (cuStreamAddCallback, cuLaunchHostFunc)
 * run on the driver's own thread.  Wait until those queued on s (NULL:
 * all) have run; whether the calling thread is that thread. */
void sim_callbacks_wait(CUstream s);
int sim_in_callback(void);

/* sim_stream.c (without sim.lock held) */
/* Whether work may be queued on s in the current context: CUDA_SUCCESS
 * (then *legacy says whether it waits for the legacy default stream),
 * CUDA_ERROR_INVALID_HANDLE or CUDA_ERROR_INVALID_CONTEXT. */
CUresult sim_stream_check(CUstream s, int *legacy);
/* The context is gone (last release, reset): so are its streams. */
void sim_streams_ctx_gone(struct CUctx_st *ctx);
/* A copy of n bytes succeeded on stream s (NULL: a synchronous copy). */
void sim_copy_record(uint64_t dst, uint64_t src, size_t n, CUstream s, int legacy);

/* sim_control.c: observer and RM notifications (call without sim.lock). */
void sim_notify_object_created(const struct simcu_alloc_info *obj);
void sim_notify_object_destroyed(uint64_t object_id);
void sim_notify_alloc_created(const struct simcu_alloc_info *a);
void sim_notify_alloc_freed(const struct simcu_alloc_info *a);

static inline size_t sim_round_up(size_t v, size_t align)
{
    return (v + align - 1) & ~(align - 1);
}

#endif /* SIM_INTERNAL_H */
