/*
 * simcu.h - control API of the simulated GPU (tests/sim), a test-only
 * libcuda.so.1.  Never installed, never a backend.
 *
 * SPDX-License-Identifier: MIT
 *
 * Memory model
 *  - Each simulated GPU owns a 64 GiB device VA range reserved PROT_NONE in
 *    this process: a device pointer is an address in it, so CPU code that
 *    dereferences one gets SIGSEGV.  The range is never made accessible.
 *  - Physical pages ("VRAM") are *objects*: one backing file each (a memfd by
 *    default, see sim_backing.h), 2 MiB-aligned in device VA, sizes rounded
 *    to 2 MiB.  Allocations of at least the sub-allocation threshold
 *    (default 2 MiB) get their own object; smaller ones are packed into
 *    shared 2 MiB objects at the sub-allocation alignment (default 512 B),
 *    so a small buffer may start at a non-64KiB-aligned address, as with the
 *    real driver.
 *  - cuMemFree of an object's last allocation destroys the object: the sim
 *    unmaps its private view and closes the file.  Pages then survive only
 *    while someone else holds them (an exported fd, a CPU mapping), exactly
 *    like dma-buf refcounting.
 *  - cuMemGetHandleForAddressRange(DMA_BUF_FD) returns a new open file
 *    description of the object's file.  THE EXPORTED RANGE STARTS AT THE
 *    FD'S FILE POSITION (lseek(fd, 0, SEEK_CUR)); real dma-buf fds have
 *    position 0 = range start.  mmap(fd, offset = that position) aliases the
 *    pages the device pointer names.
 *  - Freed device VA is reused LIFO by default, so free-then-alloc of the
 *    same size returns the same address (with a new BUFFER_ID).
 *
 * Environment (read at cuInit): SIMCU_DEVICES=N (1..8, default 1),
 * SIMCU_BACKING=memfd (default; see sim_backing.h).  Any other value makes
 * cuInit fail with CUDA_ERROR_NO_DEVICE.  simcu_set_device_count() wins
 * over SIMCU_DEVICES.  SIMCU_DMABUF_MMAP=refuse (read at each call):
 * cuMemGetHandleForAddressRange hands out fds whose mmap fails with ENODEV,
 * as drivers that do not allow mmap of their dma-bufs.  SIMCU_COHERENT=1
 * (read at each call): the GPUs are coherent with the CPU, as Grace
 * Hopper's over NVLink-C2C (sim_dmabuf.c): the pageable-memory-access
 * attributes answer 1, an export stands for the coherent path unless it
 * passes CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE.
 *
 * Driver behaviours reproduced that tests may rely on
 *  - cuMemGetAddressRange of an unknown address: CUDA_ERROR_NOT_FOUND;
 *    cuPointerGetAttribute of host or unknown memory: CUDA_ERROR_INVALID_VALUE;
 *    cuPointerGetAttributes of it: CUDA_SUCCESS with every value zero.
 *  - Boolean pointer attributes, MEMORY_TYPE and DEVICE_ORDINAL are written
 *    as 4 bytes; CONTEXT, pointers, sizes and ids as 8.
 *  - Copies and memsets must lie inside one live allocation; an address in
 *    a GPU's VA range is device memory wherever it is passed (UVA).
 *  - The last cuDevicePrimaryCtxRelease, and cuDevicePrimaryCtxReset, free
 *    every allocation of that device.
 *  - Failure injection is checked first, before cuInit state and arguments.
 *
 *  - A created stream belongs to the context current at its creation and
 *    dies with it (last primary release, reset); a primary context made
 *    again (first retain, reset) has a new cuCtxGetId.
 *  - cuCtxCreate (every version) / cuCtxDestroy, with memory and streams
 *    owned by a context (sim_context.c); VMM (sim_vmm.c); IPC handles
 *    across processes (sim_ipc.c): an import holds the pages itself and
 *    outlives the exporter's free; cuMemFree and cuMemUnmap refuse it.
 *
 *  - In a fork() child of a process whose cuInit succeeded, every call
 *    that needs cuInit, and cuInit itself, returns
 *    CUDA_ERROR_NOT_INITIALIZED and changes nothing (after failure
 *    injection, as always); what works before cuInit (cuDriverGetVersion,
 *    cuGetErrorName/String, cuGetProcAddress) still works.  A child of a
 *    process that never initialised CUDA initialises its own.  So a test
 *    that wants CUDA in a child forks before cuInit, or execs.
 *
 * Deviations a test may notice: async work completes before the call
 * returns; work on a created stream needs its context current (the driver
 * may be lenient); an IPC handle opens in the process that made it too,
 * and its import belongs to no context; the unversioned cuGetProcAddress
 * has the 4-argument signature of the real unversioned symbol
 * (cuGetProcAddress_v2 has 5).
 *
 * Control functions return 0 or a negative errno and never abort.
 */
#ifndef SIMCU_H
#define SIMCU_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* CUDA 12.8 named this cuMemGetHandleForAddressRange flag; older headers
 * (Debian's 12.4 cuda.h, which config/deps.sh can provide) lack it. */
#if CUDA_VERSION < 12080
#define CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE 0x1
#endif

/* cuCtxCreate_v4 and CUctxCreateParams came with CUDA 12.5; the simulated
 * libcuda offers what the cuda.h it is built with declares. */
#define SIMCU_HAS_CTX_CREATE_V4 (CUDA_VERSION >= 12050)

#ifdef __cplusplus
extern "C" {
#endif

#define SIMCU_MAX_DEVICES 8

/** What simcu_lookup() and the observer callbacks describe. */
struct simcu_alloc_info {
    uint64_t object_id;     /**< unique per object, never reused */
    uint64_t object_va;     /**< device VA of the object's first byte */
    size_t   object_size;   /**< object size (multiple of 2 MiB) */
    size_t   offset;        /**< offset of the looked-up pointer in the object
                                 (allocation base for alloc callbacks, 0 for
                                 object_created) */
    uint64_t alloc_base;    /**< allocation base (0 for object_created) */
    size_t   alloc_size;    /**< size passed to cuMemAlloc (0 for object_created) */
    int      device;        /**< device ordinal */
    uint64_t buffer_id;     /**< CU_POINTER_ATTRIBUTE_BUFFER_ID (0 for object_created) */
    int      sync_memops;   /**< CU_POINTER_ATTRIBUTE_SYNC_MEMOPS as last set */
    int      memfd;         /**< simcu_lookup: a fresh dup, the caller closes it.
                                 Callbacks: the sim's own fd, valid only during
                                 the callback (dup it to keep it). */
    off_t    memfd_offset;  /**< file offset of the object's first byte in memfd
                                 (0 for the memfd backing) */
};

/** Make the next `count` calls of `function_name` (the cuda.h source name:
 *  "cuMemAlloc" also covers cuMemAlloc_v2) fail with `err`, changing
 *  nothing.  count <= 0 removes the rule.  At most 32 rules. */
int simcu_fail_next(const char *function_name, CUresult err, int count);
/** Remove every failure rule. */
void simcu_fail_clear(void);

/** hide = 1: cuGetProcAddress answers CUDA_ERROR_NOT_FOUND for `symbol`
 *  (as a driver that lacks it: cuCtxGetId before CUDA 12.0); 0: found
 *  again.  The exported function stays.  At most 4 hidden (-ENOSPC). */
int simcu_hide_entry_point(const char *symbol, int hide);

/** Number of GPUs (1..SIMCU_MAX_DEVICES); before cuInit only (-EBUSY after). */
int simcu_set_device_count(int n);
/** Allocations smaller than this are sub-allocated (0 = never; default 2 MiB). */
int simcu_set_suballoc_threshold(size_t bytes);
/** Alignment of sub-allocations: a power of two, 1..2 MiB (default 512). */
int simcu_set_suballoc_alignment(size_t bytes);
/** on = 1: freed device VA / sub-allocation offsets are reused (LIFO,
 *  default); on = 0: never reused. */
int simcu_set_va_reuse(int on);

/** A test's placement of the calling thread's next allocation (cuMemAlloc,
 *  cuMemAllocAsync, cudaMalloc): it gets an object of its own (a small one
 *  is not sub-allocated in an existing object), at va, or where the VA
 *  allocator puts it if va is 0.  If [va, va + the object's size) is not
 *  all free VA of the allocating device, that allocation fails with
 *  CUDA_ERROR_OUT_OF_MEMORY.  flags: SIMCU_PLACE_ALONE, no later
 *  allocation is sub-allocated in that object either.  CUDA makes no such
 *  promise; it does hand freed VA out again, which is what a test places
 *  an allocation in.  0, or -EINVAL if va is not 2 MiB-aligned or a flag
 *  is unknown. */
#define SIMCU_PLACE_ALONE 1u
int simcu_place_next_alloc(CUdeviceptr va, unsigned flags);

/** Describe the live allocation containing p.  0, or -ENOENT if p is in no
 *  allocation, -EINVAL if out is NULL, -EMFILE etc. if the dup fails.
 *  Also finds an allocation whose creation or free is being reported to
 *  the observer. */
int simcu_lookup(CUdeviceptr p, struct simcu_alloc_info *out);

/** What simcu_last_copy() reports of a cuMemcpy* call. */
struct simcu_copy_info {
    uint64_t      dst, src;
    size_t        bytes;
    CUstream      stream; /**< of an async copy as passed; NULL for the
                               synchronous ones */
    int           legacy; /**< 1 if it waited for the legacy default
                               stream's work: synchronous copies, the NULL,
                               legacy and per-thread streams, and streams
                               created without CU_STREAM_NON_BLOCKING */
    CUcontext     ctx;    /**< current during the copy */
    unsigned long count;  /**< copies this thread made so far */
};

/** The last copy that succeeded in the calling thread: 0, -ENOENT if there
 *  was none, -EINVAL if out is NULL. */
int simcu_last_copy(struct simcu_copy_info *out);
/** The flags of the calling thread's last successful
 *  cuMemGetHandleForAddressRange (CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE:
 *  the PCIe BAR; 0: the driver's default, the coherent path under
 *  SIMCU_COHERENT=1).  0, -ENOENT if there was none, -EINVAL if flags is
 *  NULL. */
int simcu_last_export(unsigned long long *flags);
/** Streams cuStreamCreate made that are still alive (for leak tests). */
long simcu_live_streams(void);

/** Allocations / objects currently alive (for leak tests). */
long simcu_live_allocations(void);

/** Free the allocation based at p the way a path libgdrx does not hook
 *  would (a graph's free node, a driver-internal release): no exported
 *  entry point runs.  CUDA_ERROR_INVALID_VALUE if p is no allocation's base. */
CUresult simcu_free_unhooked(CUdeviceptr p);

/** An executable graph of one memory free node: its first cuGraphLaunch
 *  frees the allocation based at p as simcu_free_unhooked does (later
 *  launches do nothing); cuGraphExecDestroy frees it. */
CUresult simcu_graph_free_node(CUdeviceptr p, CUgraphExec *out);
long simcu_live_objects(void);

/**
 * Object lifecycle observer, for test doubles that mirror objects.
 * Callbacks run with the sim's lock NOT held (they may call simcu_lookup
 * and CUDA functions), in the thread doing the CUDA call:
 *  object_created  after the pages exist, before any allocation in the
 *                  object is returned to the caller;
 *  alloc_created   before cuMemAlloc returns the pointer;
 *  alloc_freed     before the allocation's memory becomes reusable;
 *  object_destroyed before the object's file is closed and its VA reusable.
 * Any callback may be NULL.  The table is copied; pass NULL to remove it.
 */
typedef struct simcu_observer {
    void (*object_created)(const struct simcu_alloc_info *obj, void *arg);
    void (*object_destroyed)(uint64_t object_id, void *arg);
    void (*alloc_created)(const struct simcu_alloc_info *a, void *arg);
    void (*alloc_freed)(const struct simcu_alloc_info *a, void *arg);
    void *arg;
} simcu_observer_t;

int simcu_set_observer(const simcu_observer_t *observer);

#ifdef __cplusplus
}
#endif

#endif /* SIMCU_H */
