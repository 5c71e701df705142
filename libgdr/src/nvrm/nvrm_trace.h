/*
 * nvrm_trace.h - learn which RM memory object backs a CUDA device address
 * by watching libcuda's own ioctls.
 *
 * SPDX-License-Identifier: MIT
 *
 * libcuda's `ioctl` import slot is pointed at a wrapper that calls what the
 * slot held before (libc's ioctl, or whoever patched the slot before us)
 * and then records, on success:
 *   UVM_MAP_EXTERNAL_ALLOCATION   [base, base+length) -> (hClient, hMemory,
 *                                 offset of base in the object)
 *   UVM_FREE / UVM_UNMAP_EXTERNAL the range's records are dropped
 *   RM_ALLOC of vidmem            the object's parent (so freeing a device
 *                                 kills its memory too)
 *   RM_FREE                       the object (or client, or device) is
 *                                 gone: its "source serial" dies;
 *   EXPORT_TO_DMABUF_FD           only while this thread asked for it
 *                                 (nvrm_trace_capture_begin).
 * Every RM object seen gets a serial number when first seen; an object of
 * ours duplicated from it remembers that serial, and asks whether it is
 * still live.  This guards against CUDA reusing a handle value for new
 * memory after freeing the old (our duplicate keeps the old pages alive).
 *
 * Installed by the first nvrm gdrx_open, after the driver version passed
 * the backend's checks (nvrm_client_open), never at load.  Only memory
 * CUDA maps after that is recorded (see docs/nvrm.md for the other
 * routes).  Cost per ioctl: non-RM requests leave after a few compares;
 * RM_ALLOC/RM_FREE are hash updates under one leaf lock; UVM map/unmap
 * are a binary search plus an insertion into a sorted array.  After fork()
 * the child starts with empty tables: the parent's CUDA objects are not
 * the child's.
 */
#ifndef GDRX_NVRM_TRACE_H
#define GDRX_NVRM_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "nvrm_abi.h"

struct nvrm_trace_hit {
    uint64_t      base;     /* device VA mapped onto the object ... */
    uint64_t      length;   /* ... for this many bytes ... */
    uint64_t      offset;   /* ... starting at this offset in the object */
    nvrm_handle_t h_client;
    nvrm_handle_t h_memory;
    uint64_t      serial;   /* of the source object */
};

/*
 * What the trace needs from the import patcher (gdrx_got_patch_import in
 * hooks/got_import.h; tests pass their own): point the import slot(s) of `symbol` in the loaded object
 * whose path contains `object` at `replacement`.  Before any slot changes,
 * store into *previous (atomically, release) the function the slot led to,
 * resolved (never a lazy-binding PLT stub): libc's definition, or a
 * function someone else had put there, which the replacement must call.
 * 0, -ENOENT (no such object or import), -EEXIST (the slots already lead
 * to replacement), or -errno (nothing changed).
 */
typedef int (*nvrm_patch_slot_fn)(const char *object, const char *symbol, void *replacement,
                                  void **previous);

/* Patch libcuda's ioctl import through `patch` (once per process;
 * idempotent afterwards).  The caller has validated the driver version.
 * 0, or the patcher's -errno (-ENOENT: libcuda not loaded). */
int nvrm_trace_install(nvrm_patch_slot_fn patch);
/* 1 once nvrm_trace_install() succeeded in this process. */
int nvrm_trace_installed(void);

/* The record covering device address va whose source is still live: 0, or
 * -ENOENT. */
int nvrm_trace_lookup(uint64_t va, struct nvrm_trace_hit *out);

/* Serial of a live source object, registering it if new (for handles
 * learnt another way, e.g. from an IPC handle); 0 on allocation failure. */
uint64_t nvrm_trace_adopt(nvrm_handle_t h_client, nvrm_handle_t h_memory);

/* 1 while the source object with that serial has not been freed (neither
 * itself, nor its device, nor its client). */
int nvrm_trace_source_live(nvrm_handle_t h_client, nvrm_handle_t h_memory, uint64_t serial);

/* What libcuda told the RM when the calling thread asked CUDA for a
 * dma-buf of a device range (cuMemGetHandleForAddressRange): the first
 * exported piece's RM object and its offset there.  The route to memory
 * CUDA mapped before the trace was installed (nvrm_discover.c). */
struct nvrm_export_seen {
    int           count;        /* export requests seen (1 expected) */
    uint32_t      num_objects;  /* pieces in the last one */
    nvrm_handle_t h_client, h_memory;
    uint64_t      offset, size; /* of piece 0 in h_memory */
};

/* Record into *seen the exports the calling thread's libcuda sends until
 * nvrm_trace_capture_end().  Other threads' exports are not recorded. */
void nvrm_trace_capture_begin(struct nvrm_export_seen *seen);
void nvrm_trace_capture_end(void);

/* The wrapper's work on one completed ioctl (exposed for unit tests). */
void nvrm_trace_observe(int fd, unsigned long req, void *arg);

/* Take / release the trace's install lock around fork(), from the
 * backend's fork ops (after its own lock: lock_order.h).  The tables' lock
 * is not taken (nvrm_trace.c says why); the child handler gives the child
 * a new one and empty tables. */
void nvrm_trace_fork_lock(void);
void nvrm_trace_fork_unlock(void);
void nvrm_trace_fork_child(void);

#endif /* GDRX_NVRM_TRACE_H */
