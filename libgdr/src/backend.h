/*
 * backend.h - the ops table every mapping backend implements.
 *
 * SPDX-License-Identifier: MIT
 *
 * The core (gdrx.c / pin.c) owns handles, locking, alignment and staleness
 * bookkeeping; a backend only turns "this GPU-page aligned window of this
 * CUDA allocation" into a CPU mapping.  The core serialises calls on one
 * pin, but calls on different pins of one backend context may run
 * concurrently: a backend protects its own shared state.
 */
#ifndef GDRX_BACKEND_H
#define GDRX_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include "gdrx.h"
#include "range.h"

#define GDRX_GPU_PAGE_SHIFT 16
#define GDRX_GPU_PAGE_SIZE  (1ull << GDRX_GPU_PAGE_SHIFT)

/** What the core asks a backend to pin (all addresses are device VAs). */
struct gdrx_pin_req {
    uint64_t dptr;        /* first byte the caller wants */
    size_t   len;         /* bytes the caller wants (> 0) */
    uint64_t alloc_base;  /* cuMemGetAddressRange of dptr */
    size_t   alloc_size;
    uint64_t win_base;    /* dptr rounded down to GDRX_GPU_PAGE_SIZE */
    size_t   win_size;    /* covers [dptr, dptr+len), multiple of page size */
    int      device;      /* CUDA ordinal owning the memory */
    uint64_t buffer_id;   /* CU_POINTER_ATTRIBUTE_BUFFER_ID at pin time */
    uint32_t flags;       /* GDRX_PIN_FLAG_* */
    int      launch_bound; /* a graph launch may free it unseen (graph_mem.h) */
};

/* Whether [dptr, dptr+len) reaches past its allocation (GDRX_PIN_FLAG_SPAN):
 * the backend must then prove the window is one piece of driver memory. */
static inline int gdrx_pin_req_spans(const struct gdrx_pin_req *req)
{
    return !gdrx_range_within(req->alloc_base, req->alloc_size, req->dptr, req->len);
}

/* CUDA frees overlapping [alloc_base, this) revoke the pin: its allocation,
 * and a SPAN's request past it (the mapping's pages around them are not
 * guarded, as copies never reach them). */
static inline uint64_t gdrx_pin_req_guard_end(const struct gdrx_pin_req *req)
{
    uint64_t end = req->dptr + req->len, alloc_end = req->alloc_base + req->alloc_size;

    return end > alloc_end ? end : alloc_end;
}

/** A backend's pin, filled by pin() and map(). */
struct gdrx_backend_pin {
    void               *priv;       /* backend's own per-pin state */
    /* The device range actually pinned.  The core presets it to the
     * request's window; pin() may change it (e.g. to a host-page cover
     * when the driver refuses a window that crosses the allocation), as
     * long as it still covers [dptr, dptr+len). */
    uint64_t            pin_base;
    size_t              pin_size;
    size_t              page_size;  /* set by pin() */
    /* Set by map(): CPU address cpu_base corresponds to device VA dbase;
     * the mapping is map_size bytes long and covers [dptr, dptr+len). */
    void               *cpu_base;
    uint64_t            dbase;
    size_t              map_size;
    gdrx_mapping_type_t type;
};

struct gdrx_backend_ops {
    const char     *name;
    gdrx_backend_t  id;
    /* Create per-context state; -ENODEV/-ENOTSUP etc. when unavailable
     * (the core then tries the next backend in AUTO mode). */
    int  (*open)(void **bctx);
    void (*close)(void *bctx);
    /* Optional: whether open() would succeed, leaving nothing behind (for
     * gdrx_probe).  Without it a probe is open() then close(). */
    int  (*probe)(void);
    /* Whether the backend's prerequisites are there, told without loading
     * libcuda or initialising CUDA and leaving nothing behind (gdrx_probe
     * with GDRX_PROBE_FLAG_NO_CUDA): 0 or a negative errno.  May be NULL
     * (never counts). */
    int  (*precheck)(void);
    /* Called with the primary context of req->device current. */
    int  (*pin)(void *bctx, const struct gdrx_pin_req *req,
                struct gdrx_backend_pin *bp);
    /* Release the pin.  The core calls unmap() first when the pin is
     * mapped, except when it revokes a pin whose memory CUDA freed (the
     * only revocation there is: the core's, pin_state.c): then it has
     * already replaced [cpu_base, cpu_base+map_size) with an inaccessible
     * mapping of its own (or, if that failed, made the backend's mapping
     * PROT_NONE and keeps it forever) and calls unpin() alone, with
     * cpu_base/map_size still set.  So unpin() releases everything the pin
     * holds, including what only unmap() would otherwise release, and
     * never touches the CPU range itself; the core never calls unmap()
     * after that. */
    int  (*unpin)(void *bctx, struct gdrx_backend_pin *bp);
    /* Map the pin for the CPU.  Every CPU mapping a backend creates (the
     * whole of it, also a window shared by several pins) must be marked
     * with gdrx_mapping_dontfork() before map() returns: a fork child
     * must not inherit access to the parent's GPU memory. */
    int  (*map)(void *bctx, struct gdrx_backend_pin *bp);
    int  (*unmap)(void *bctx, struct gdrx_backend_pin *bp);
    /* 1 if the backend learnt that the memory was freed (e.g. gdrdrv's
     * callback flag), 0 if not, negative errno on error.  May be NULL. */
    int  (*is_stale)(void *bctx, struct gdrx_backend_pin *bp);
    /* 1 if pin() honours GDRX_PIN_FLAG_FORCE_PCIE (a mapping through the
     * BAR where the memory is also reachable coherently), 0 if it refuses
     * the flag.  NULL: always honoured (the backend maps the BAR only, or
     * asks the driver for it). */
    int  (*force_pcie)(void *bctx);
    /* Backend-driver version, major<<16|minor; may be NULL. */
    int  (*driver_version)(void *bctx, uint64_t *version);
    /* The library's fork handlers (fork.c) call these, whether or not a
     * context of the backend is open: take every process-wide lock of the
     * backend in the lock order (lock_order.h, from rank BACKEND on), and
     * release them again, in the parent and in the child.  May be NULL (no
     * such lock).  A backend registers no fork handler of its own. */
    void (*fork_lock)(void);
    void (*fork_unlock)(void);
    /* In the child instead of fork_unlock (NULL: fork_unlock): also
     * resets what fork_lock does not take because it is taken inside
     * libcuda (lock_order.h, TRACE), which a vanished thread may hold. */
    void (*fork_child)(void);
};

/* Keep a CPU mapping out of fork children (MADV_DONTFORK): 0 or -1 with
 * errno set.  Every backend's map() calls it on what it maps. */
static inline int gdrx_mapping_dontfork(void *addr, size_t len)
{
    return madvise(addr, len, MADV_DONTFORK);
}

/*
 * The backends.  gdrx_backend_nvrm_ops is defined by libgdr/src/nvrm/, whose
 * local.mk adds -DGDRX_HAVE_NVRM to libgdr_libgdrx_la_CPPFLAGS together with
 * its sources; backend_select.c references it only under that define.
 */
extern const struct gdrx_backend_ops gdrx_backend_gdrdrv_ops;
extern const struct gdrx_backend_ops gdrx_backend_nvrm_ops;
extern const struct gdrx_backend_ops gdrx_backend_dmabuf_ops;

#endif /* GDRX_BACKEND_H */
