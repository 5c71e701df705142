/*
 * gdrx.h - public API of libgdrx: pin CUDA device memory, map it into the
 * CPU through the GPU's BAR1 and copy to/from that mapping with CPU
 * instructions.
 *
 * SPDX-License-Identifier: MIT
 *
 * Conventions
 *  - Every function returning int returns 0 on success or a negative errno
 *    (-EINVAL, -ENOMEM, ...), as liburing does.  gdrx_strerror() names it.
 *  - Contexts and pins are small value handles (64-bit ids carrying a
 *    generation), not pointers, and are never dereferenced unchecked: a
 *    context handle that names no open context (closed, or garbage) gives
 *    -EBADF; a pin handle that names no live pin (unpinned, closed with its
 *    context, garbage) or belongs to another context gives -EINVAL.
 *  - A call that fails changes nothing and writes no output argument.
 *  - Nothing aborts, asserts on caller input or prints, unless the
 *    environment variable GDRX_LOG_LEVEL asks for messages on stderr
 *    (0 = off (default), 1 = error, 2 = warn, 3 = info, 4 = debug).
 *  - Thread safety: every function may be called from any thread, on the same
 *    or different contexts and pins, concurrently; state changes of one pin
 *    are serialised inside the library, and copies take no lock.  The one
 *    rule is the usual lifetime rule: a thread must not copy through a
 *    mapping while another thread unmaps/unpins/closes it.  A copy that
 *    starts after the unmap returns -EINVAL; one already running when the
 *    mapping goes is a use after munmap (it may fault, or reach whatever is
 *    mapped at that address next).  CUDA freeing the memory is different:
 *    the library revokes the mapping in place, see docs/semantics.md.
 *  - fork(): libgdrx's fork handlers hold its locks while the process is
 *    copied.  A fork handler registered before libgdrx's (before the first
 *    gdrx_open, subscription or gdrx_fork_handlers_register) runs after it
 *    and may still call gdrx_unpin and gdrx_unmap (done once the locks are
 *    free, before fork() returns; the call returns 0 at once, or its
 *    argument error, or -ECHILD in the child) and the copies (which fail
 *    with -EDEADLK there if another thread's CUDA free holds the pin);
 *    any other call there fails with -EDEADLK.
 *
 * Environment: GDRX_BACKEND=gdrdrv|nvrm|dmabuf|auto (overrides
 * GDRX_BACKEND_AUTO; an unknown name makes gdrx_open fail with -EINVAL),
 * GDRX_LOG_LEVEL (above), GDRX_COPY_VARIANT=<name> (copy routine),
 * GDRX_COPY_TO_VARIANT / GDRX_COPY_FROM_VARIANT (one direction each),
 * GDRX_GDRDRV_PATH (device node of the gdrdrv backend, default /dev/gdrdrv),
 * GDRX_FREE_HOOKS=0 (never patch libcuda's allocation and free entry
 * points: stale pins are then found by gdrx_pin_query/gdrx_map only, and
 * gdrx_mem_events_subscribe fails with -ENOSYS; by default they are
 * patched at the first pin or subscription, or at a gdrx_open while a
 * subscription is live; never at load),
 * GDRX_NVRM_IPC=1 (where CUDA refuses a dma-buf of memory it mapped
 * before the first nvrm gdrx_open, the default way nvrm finds it, find it
 * through cuIpcGetMemHandle, which makes that allocation dup-able by any
 * process on the node).
 *
 * Ordering (CPU accesses through the mapping vs CUDA's work on the memory)
 *  - cuMemAlloc / cudaMalloc memory (sub-allocations included): gdrx_pin()
 *    sets CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on the allocation, so a
 *    *synchronous* CUDA memory operation on it (cuMemcpy*, cuMemset* without
 *    a stream argument) has completed when it returns, including a
 *    cuMemcpyHtoD from pageable host memory, and CPU accesses through the
 *    mapping that follow it see its result with no further call.
 *  - cuMemAllocAsync / cudaMallocAsync (memory pool) memory and cuMemCreate
 *    (VMM) memory: SYNC_MEMOPS does not apply.  Pools accept the attribute
 *    but do not honour it; VMM memory refuses it (CUDA error 801, and
 *    gdrx_pin pins it anyway).  CUDA documents that a cuMemcpyHtoD from
 *    pageable host memory may return before its DMA has landed, and that
 *    device-to-device copies and memsets return before they complete.  For
 *    these kinds, CPU accesses through the mapping are ordered after such an
 *    operation only once the caller has synchronised the stream that did it
 *    (cuStreamSynchronize, an event), or the context (cuCtxSynchronize) for
 *    calls without a stream argument, which run on the legacy default
 *    stream.  Seen on the H200: old bytes read right after a pageable
 *    cuMemcpyHtoD into pool memory, all correct after cuCtxSynchronize.
 *  - For every kind: an asynchronous operation (*Async, kernels) is ordered
 *    only after the caller synchronised its stream; cuMemcpyDtoH and a
 *    cuMemcpyHtoD from page-locked host memory complete before returning.
 *  - gdrx_copy_to_mapping() ends with a store fence: when it returns, the data
 *    has left the CPU's write-combining buffers, for every kind of memory.  A
 *    GPU kernel that is *already running* and polls the memory may still need
 *    cuFlushGPUDirectRDMAWrites() (or a flag written last) to observe the
 *    bytes in order; work launched after the copy returns sees them.
 *  - gdrx_copy_from_mapping() observes everything the GPU wrote before the
 *    CPU learned (via stream/event synchronisation) that the work finished.
 *  See docs/semantics.md, "Ordering".
 *
 * After CUDA frees pinned memory: see gdrx_pin_info.stale and docs/semantics.md.
 */
#ifndef GDRX_H
#define GDRX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GDRX_API_VERSION_MAJOR 0
#define GDRX_API_VERSION_MINOR 1
#define GDRX_API_VERSION_PATCH 0

/** A library context (one per process or per GPU is typical). */
typedef struct gdrx_ctx_handle {
    uint64_t id;
} gdrx_t;

/** A pinned device address range. */
typedef struct gdrx_pin_handle {
    uint64_t id;
} gdrx_pin_t;

typedef enum gdrx_backend {
    GDRX_BACKEND_AUTO   = 0, /**< first that works: gdrdrv, nvrm, dmabuf */
    GDRX_BACKEND_GDRDRV = 1, /**< /dev/gdrdrv (ours or NVIDIA's gdrdrv 2.x) */
    GDRX_BACKEND_NVRM   = 2, /**< NVIDIA RM ioctls, no extra kernel module */
    GDRX_BACKEND_DMABUF = 3, /**< cuMemGetHandleForAddressRange + mmap */
} gdrx_backend_t;

typedef enum gdrx_mapping_type {
    GDRX_MAPPING_NONE    = 0, /**< not mapped */
    GDRX_MAPPING_WC      = 1, /**< write-combined (BAR1 on x86) */
    GDRX_MAPPING_CACHING = 2, /**< cache-coherent (e.g. Grace Hopper) */
    GDRX_MAPPING_DEVICE  = 3, /**< device/uncached */
} gdrx_mapping_type_t;

/** Options for gdrx_open(); initialise with gdrx_open_params_init(). */
struct gdrx_open_params {
    uint32_t       struct_size; /**< sizeof(struct gdrx_open_params) */
    gdrx_backend_t backend;     /**< GDRX_BACKEND_AUTO unless forced;
                                     the GDRX_BACKEND env variable
                                     (gdrdrv|nvrm|dmabuf) overrides AUTO */
    uint32_t       flags;       /**< gdrx_open takes
                                     GDRX_OPEN_FLAG_NO_CUDA_FALLBACK,
                                     gdrx_probe GDRX_PROBE_FLAG_NO_CUDA */
};

/**
 * gdrx_probe() without CUDA: whether a backend params allow has what it
 * needs, told from what is visible without loading libcuda or initialising
 * CUDA (for code that lists devices in processes that may never use a GPU).
 * gdrdrv: its device node opens and passes the version check; nvrm:
 * /sys/module/nvidia/version names a validated driver branch and
 * /dev/nvidiactl is there, read-write (not opened); dmabuf needs CUDA, so
 * it counts only where the program already loaded libcuda and initialised
 * CUDA, and CUDA sees a GPU.  gdrx_open refuses the flag (-EINVAL).
 */
#define GDRX_PROBE_FLAG_NO_CUDA 1u

/**
 * gdrx_open() where the driver refuses CUDA to this process (cuInit answers
 * CUDA_ERROR_NOT_INITIALIZED, as in a fork() child of a process that
 * initialised CUDA): instead of failing, open a context without CUDA if a
 * backend params allow passes the GDRX_PROBE_FLAG_NO_CUDA check.  That
 * context pins nothing: gdrx_pin() returns -ENODEV (and logs why);
 * gdrx_get_attr() answers BACKEND (the backend that passed the check),
 * DEVICE_COUNT and PIN_COUNT (0) and the copy variants, and -ENODEV for
 * DRIVER_VERSION and CUDA_DRIVER_VERSION; gdrx_close() closes it.
 * Elsewhere the flag changes nothing.  For gdrcopy's gdr_open(), which
 * opens without CUDA and fails at the pin; a caller that decides from
 * gdrx_open() whether gdrx can pin here (a UCX transport) leaves it out.
 * gdrx_probe() refuses the flag (-EINVAL).
 */
#define GDRX_OPEN_FLAG_NO_CUDA_FALLBACK 2u

/** Flags for gdrx_pin(). */
#define GDRX_PIN_FLAG_DEFAULT 0u
/**
 * The range may go past the end of dptr's allocation, over neighbouring
 * allocations and the unallocated bytes between them, as gdrcopy pins
 * whole GPU pages.  dptr must be in an allocation (whose buffer id and
 * device the pin takes); the rest is pinned only where the backend can pin
 * it as one piece of the same driver memory (else -EINVAL, nothing
 * changed).  Once pinned, the allocations found after dptr's in the range
 * get SYNC_MEMOPS; with the CUDA hooks, a free of any allocation that
 * overlaps the range revokes the pin (without them: dptr's buffer id
 * only).  A later allocation in a gap it covers is reachable through it.
 */
#define GDRX_PIN_FLAG_SPAN 1u
/**
 * The pin is never mapped: gdrx_map() refuses it with -EPERM.  For a layer
 * that must pin a range but may not expose it to raw CPU access (gdrx's
 * libgdrapi: gdrcopy pins an address inside a GPU page but refuses to map
 * it, since the mapping would start at the page and reach the bytes
 * before the address, which may be another allocation's).
 */
#define GDRX_PIN_FLAG_NO_MAP 2u
/**
 * Map through the GPU's PCIe BAR even where the CPU could reach the memory
 * coherently (Grace Hopper's NVLink-C2C): a write-combined mapping, copied
 * with the streaming variants, as on a PCIe host.  Without it a coherent
 * GPU's memory is mapped cached (GDRX_MAPPING_CACHING) and copied with
 * memcpy.  On PCIe hosts every mapping is through the BAR already, and the
 * flag changes nothing.  -EOPNOTSUPP where the backend cannot honour it
 * (GDRX_ATTR_PIN_FLAG_FORCE_PCIE says 0: a gdrdrv whose NVIDIA driver
 * lacks the BAR1 flag).  gdrcopy's GDR_PIN_FLAG_FORCE_PCIE.
 */
#define GDRX_PIN_FLAG_FORCE_PCIE 4u

/** What gdrx_pin_query() reports. */
struct gdrx_pin_info {
    uint64_t            dptr;        /**< device address the caller pinned */
    size_t              len;         /**< length the caller pinned */
    uint64_t            alloc_base;  /**< base of the CUDA allocation */
    size_t              alloc_size;  /**< size of the CUDA allocation */
    uint64_t            pinned_base; /**< GPU-page aligned start actually pinned */
    size_t              pinned_size; /**< ... and its size */
    size_t              page_size;   /**< GPU page size (64 KiB) */
    int                 device;      /**< CUDA device ordinal */
    gdrx_backend_t      backend;
    gdrx_mapping_type_t mapping_type; /**< GDRX_MAPPING_NONE if not mapped */
    void               *cpu_ptr;     /**< CPU address of byte dptr, or NULL */
    int                 stale;       /**< 1 once CUDA freed the memory */
};

/** Global attributes for gdrx_get_attr(). */
typedef enum gdrx_attr {
    GDRX_ATTR_BACKEND            = 1, /**< gdrx_backend_t of the context */
    GDRX_ATTR_DRIVER_VERSION     = 2, /**< backend driver version (major<<16|minor) */
    GDRX_ATTR_CUDA_DRIVER_VERSION = 3,/**< cuDriverGetVersion() */
    GDRX_ATTR_DEVICE_COUNT       = 4, /**< CUDA devices visible */
    GDRX_ATTR_COPY_TO_VARIANT    = 5, /**< gdrx_copy_variant_t used by copy_to */
    GDRX_ATTR_COPY_FROM_VARIANT  = 6, /**< gdrx_copy_variant_t used by copy_from */
    GDRX_ATTR_PIN_COUNT          = 7, /**< live pins in the context */
    GDRX_ATTR_PIN_FLAG_FORCE_PCIE = 8,/**< 1 if gdrx_pin honours GDRX_PIN_FLAG_FORCE_PCIE */
} gdrx_attr_t;

/** CPU copy routines; GDRX_COPY_VARIANT=<name> forces one. */
typedef enum gdrx_copy_variant {
    GDRX_COPY_AUTO      = 0,
    GDRX_COPY_LIBC      = 1, /**< memcpy (cached mappings only) */
    GDRX_COPY_SSE2      = 2,
    GDRX_COPY_SSE41     = 3, /**< MOVNTDQA streaming loads */
    GDRX_COPY_AVX2      = 4,
    GDRX_COPY_AVX512    = 5,
    GDRX_COPY_MOVDIR64B = 6,
    GDRX_COPY_NEON      = 7, /**< aarch64: Advanced SIMD, with DSB barriers */
} gdrx_copy_variant_t;

/** The highest variant this architecture has (a loop from GDRX_COPY_LIBC
 * to it meets every variant that may be supported here). */
#if defined(__aarch64__)
#define GDRX_COPY_LAST_OF_ARCH GDRX_COPY_NEON
#else
#define GDRX_COPY_LAST_OF_ARCH GDRX_COPY_MOVDIR64B
#endif

void gdrx_open_params_init(struct gdrx_open_params *params);

/**
 * Open a context.  params may be NULL for defaults.  -ENODEV (or the
 * forced backend's error) if no backend can be used, -ELIBACC if
 * libcuda.so.1 cannot be loaded, -EINVAL for bad params or GDRX_BACKEND.
 */
int gdrx_open(const struct gdrx_open_params *params, gdrx_t *ctx_out);

/**
 * Whether gdrx_open(params) would find a GPU and a working backend, without
 * what gdrx_open sets up for the whole process: no CUDA free hooks, no fork
 * handlers, no trace of libcuda.  It loads libcuda (as any CUDA user does)
 * and opens and closes the backend.  0 and *backend_out (may be NULL) set
 * to the backend that would be used; otherwise gdrx_open's errors, and
 * -ENODEV when CUDA sees no GPU (where gdrx_open would open a context
 * with no device).  With GDRX_PROBE_FLAG_NO_CUDA in params->flags it loads
 * and initialises nothing (see the flag): 0 then means only that the
 * backend's prerequisites are there, and -ENODEV (or the backend's own
 * error, e.g. -ENOTSUP for an nvrm driver branch not validated) that none
 * of the allowed backends can be told to work.
 */
int gdrx_probe(const struct gdrx_open_params *params, gdrx_backend_t *backend_out);

/**
 * Register libgdrx's fork handlers now, rather than at the first gdrx_open
 * or memory-event subscription.  glibc runs prepare handlers in the reverse
 * of their registration order, and libgdrx's holds the library's locks
 * until fork() is done: a library that calls libgdrx while holding a lock
 * that its own fork handler takes (UCX's registration caches) needs
 * libgdrx's registered first, so that its handler runs, and its lock is
 * free, before libgdrx takes its own.  gdrx's UCX plugin calls this when
 * UCX opens its memory domain, before ucp_init makes UCP's cache.  The
 * handlers take uncontended locks and change nothing in a process that
 * never pins.  0, or the error of pthread_atfork.
 */
int gdrx_fork_handlers_register(void);

/** Close a context; unmaps and unpins whatever it still holds. */
int gdrx_close(gdrx_t ctx);

/**
 * Pin [dptr, dptr+len) of one CUDA allocation.  Any address and length
 * inside the allocation is accepted; the library rounds to GPU pages.
 * flags: GDRX_PIN_FLAG_* (SPAN, NO_MAP), or 0.
 * -EINVAL for len 0, a range that is not device memory or crosses the end
 * of its allocation (unless GDRX_PIN_FLAG_SPAN), unknown flags.
 */
int gdrx_pin(gdrx_t ctx, uint64_t dptr, size_t len, uint32_t flags,
             gdrx_pin_t *pin_out);

/** Unpin (unmapping first if still mapped).  The handle is dead afterwards
 *  even if the backend reported an error (which is returned). */
int gdrx_unpin(gdrx_t ctx, gdrx_pin_t pin);

/** Map a pin into the CPU; *cpu_ptr receives the address of byte dptr.
 *  -EEXIST if already mapped, -ESTALE if CUDA freed the memory, -EPERM
 *  for a pin made with GDRX_PIN_FLAG_NO_MAP. */
int gdrx_map(gdrx_t ctx, gdrx_pin_t pin, void **cpu_ptr);

/** Remove the CPU mapping of a pin (-EINVAL if not mapped).  Also releases
 *  the inaccessible range a stale pin's mapping was replaced with. */
int gdrx_unmap(gdrx_t ctx, gdrx_pin_t pin);

/** Describe a pin; also refreshes info->stale. */
int gdrx_pin_query(gdrx_t ctx, gdrx_pin_t pin, struct gdrx_pin_info *info);

/**
 * Copy len bytes from host memory src to the mapping at map_dst, which must
 * lie inside pin's mapping [cpu_ptr, cpu_ptr + len of the pin).  Returns
 * -ERANGE if it does not, -ESTALE if CUDA freed the memory, -EINVAL if the
 * pin is not live or not mapped (or src is NULL).  len 0 copies nothing.
 * Lock-free; safe to call from any number of threads on one pin.
 * In a fork child, every call on the parent's contexts and pins (these
 * copies included) returns -ECHILD; the parent's mappings are not inherited.
 */
int gdrx_copy_to_mapping(gdrx_pin_t pin, void *map_dst, const void *src,
                         size_t len);

/** Copy len bytes from the mapping at map_src to host memory dst; errors
 *  as gdrx_copy_to_mapping(). */
int gdrx_copy_from_mapping(gdrx_pin_t pin, void *dst, const void *map_src,
                           size_t len);

/**
 * The copy variants gdrx_copy_to_mapping() (*to) and
 * gdrx_copy_from_mapping() (*from) use for a mapped pin, chosen when it was
 * mapped from its mapping type: LIBC both ways for GDRX_MAPPING_CACHING
 * (coherent memory), the process's default (GDRX_ATTR_COPY_TO_VARIANT,
 * GDRX_ATTR_COPY_FROM_VARIANT) for a write-combined one.  Either pointer
 * may be NULL.  -EINVAL if the pin is not live or not mapped, -ESTALE if
 * CUDA freed its memory.
 */
int gdrx_pin_copy_variants(gdrx_t ctx, gdrx_pin_t pin, gdrx_copy_variant_t *to,
                           gdrx_copy_variant_t *from);

/** -EINVAL for an unknown attr; -EOPNOTSUPP if the backend cannot say. */
int gdrx_get_attr(gdrx_t ctx, gdrx_attr_t attr, uint64_t *value);

/*
 * CUDA memory: what a device address belongs to, and the allocation and free
 * events gdrx sees.  Both work without a context (gdrx_open) and load libcuda
 * only if the process already has it.
 */

/** What gdrx_mem_query() reports about one address. */
struct gdrx_mem_info {
    uint64_t base;      /**< start of the CUDA allocation holding the address */
    size_t   size;      /**< its size */
    int      device;    /**< CUDA device ordinal */
    uint64_t buffer_id; /**< CU_POINTER_ATTRIBUTE_BUFFER_ID: unique per allocation */
};

/**
 * Describe the CUDA device allocation holding addr.  -ENOENT if addr is not
 * CUDA device memory (host, managed or unknown), -ENODEV if the process has
 * no usable CUDA driver (or has not loaded libcuda: it is never loaded for
 * this), -EINVAL if info is NULL.
 */
int gdrx_mem_query(uint64_t addr, struct gdrx_mem_info *info);

/**
 * Set CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on the CUDA allocation holding addr,
 * as gdrx_pin() does: CUDA's synchronous copies into it have landed when
 * they return.  For code that detects CUDA memory for copies that CUDA does
 * not order after the program's own (UCX's transports).  The caller's
 * current context is unchanged.  0; -EOPNOTSUPP for memory that does not
 * take it (pool and VMM memory, see "Ordering"); -ENOENT if addr is not
 * CUDA device memory; -ENODEV as gdrx_mem_query(); else CUDA's error.
 */
int gdrx_mem_sync_memops(uint64_t addr);

typedef enum gdrx_mem_event_type {
    GDRX_MEM_EVENT_ALLOC = 1u << 0, /**< CUDA device memory became valid */
    GDRX_MEM_EVENT_FREE  = 1u << 1, /**< ... was released (CUDA said yes) */
    /** A CUDA graph was launched (base 0, size 0, device -1).  Its memory
     *  free nodes release memory with no FREE event: a cache that trusts
     *  FREE events must re-check what it holds (gdrx_mem_query's buffer_id,
     *  gdrx_pin_query) before trusting it after this event. */
    GDRX_MEM_EVENT_GRAPH_LAUNCH = 1u << 2,
} gdrx_mem_event_type_t;

/** One event: [base, base + size) of device memory on device: the whole
 *  allocation (cuMemGetAddressRange), or for cuMemMap/cuMemUnmap the range
 *  mapped or unmapped; size 1 at the pointer if CUDA cannot tell. */
struct gdrx_mem_event {
    gdrx_mem_event_type_t type;
    uint64_t              base;
    size_t                size;
    int                   device; /**< ordinal, or -1 if unknown */
};

/**
 * Called in the allocating or freeing thread: ALLOC after the allocation
 * succeeded, FREE after CUDA released the memory, never for a free CUDA
 * refused.  An ALLOC of an address whose FREE callbacks have not all
 * returned yet waits for them, so the events of one address come in the
 * order of its lifetimes.  It must not call CUDA allocation or free
 * functions, nor gdrx_mem_events_subscribe/unsubscribe.
 */
typedef void (*gdrx_mem_event_cb_t)(const struct gdrx_mem_event *event,
                                    void *arg);

/** A subscription to memory events. */
typedef struct gdrx_mem_sub_handle {
    uint64_t id;
} gdrx_mem_sub_t;

/**
 * Call cb(event, arg) for every event whose type is in the mask events
 * (GDRX_MEM_EVENT_*), made by any thread through any route CUDA offers
 * (direct calls, dlsym, cuGetProcAddress, the CUDA runtime).  Installs the
 * interception on first use, not before.  -EINVAL for a NULL cb or an empty
 * or unknown mask, or a NULL sub_out; -ENOSYS if interception is unavailable
 * on this platform or disabled (GDRX_FREE_HOOKS=0); -ENOSPC if 32
 * subscriptions exist.  If the process has not loaded libcuda yet this
 * succeeds, and events start when the interception is installed: at the
 * next gdrx_open() or subscription (libcuda is never loaded for this).
 * Calls the cb makes to CUDA allocation/free functions are not reported.
 */
int gdrx_mem_events_subscribe(uint32_t events, gdrx_mem_event_cb_t cb,
                              void *arg, gdrx_mem_sub_t *sub_out);

/**
 * End a subscription.  When this returns no call of its cb is still
 * running (so it must not be called from inside the cb: -EDEADLK).
 * -EINVAL for an unknown or already ended subscription.
 */
int gdrx_mem_events_unsubscribe(gdrx_mem_sub_t sub);

/**
 * The index-th libcuda entry point the interception patches: its name in
 * *name and, in *result, how its installation went: 0 hooked, -ENOENT not
 * exported by this libcuda (nobody can call it), -ENODATA not installed
 * (yet), else why it could not be hooked (frees through it are then not
 * seen).  Returns 0, -ENOENT past the last one, -EINVAL for NULL pointers,
 * -ENOSYS without interception on this platform.  For diagnostics
 * (gdrx-info); installs nothing.
 */
int gdrx_mem_events_hook(unsigned index, const char **name, int *result);

/** Library version (of the .so actually loaded). */
void gdrx_get_version(int *major, int *minor, int *patch);

/** Name of a negative errno returned by gdrx (never NULL). */
const char *gdrx_strerror(int err);

const char *gdrx_backend_name(gdrx_backend_t backend);
const char *gdrx_mapping_type_name(gdrx_mapping_type_t type);
const char *gdrx_copy_variant_name(gdrx_copy_variant_t variant);

#ifdef __cplusplus
}
#endif
#endif /* GDRX_H */
