/*
 * nvrm_trace.h - learn which RM memory object backs a CUDA device address
 * by watching libcuda's own ioctls.
 *
 * SPDX-License-Identifier: MIT
 *
 * libcuda's `ioctl` import is redirected (GOT patch, hooks/got_patch.h) to
 * a wrapper that calls the real ioctl and then records, on success:
 *   UVM_MAP_EXTERNAL_ALLOCATION   [base, base+length) -> (hClient, hMemory,
 *                                 offset of base in the object)
 *   UVM_FREE / UVM_UNMAP_EXTERNAL the range's records are dropped
 *   RM_ALLOC of vidmem            the object's parent (so freeing a device
 *                                 drops its memory too)
 *   RM_FREE                       the object (or client, or device subtree)
 *                                 is gone: its records are dropped and its
 *                                 "source serial" dies.
 * Every RM object seen gets a serial number when first seen; an object of
 * ours duplicated from it remembers that serial, and asks whether it is
 * still live.  This guards against CUDA reusing a handle value for new
 * memory after freeing the old (our duplicate keeps the old pages alive).
 *
 * The hook is registered when libgdrx is loaded (a constructor; with
 * GDRX_NVRM_TRACE=0, at the first nvrm gdrx_open instead); a libcuda
 * loaded later is patched when the GOT patcher's dlopen hook sees it
 * come.  Only memory CUDA maps after that is recorded (see docs/nvrm.md
 * for the alternatives).  The wrapper filters on the request number
 * first, takes one leaf lock for the few requests it records, and calls
 * nothing else of the backend.  After fork() the child starts with empty
 * tables: the parent's CUDA objects are not the child's.
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

/* Make sure libcuda's ioctl import is patched (idempotent): registers the
 * hook if the constructor did not, and rescans the loaded objects if no
 * slot is patched yet.  0, -ENOENT when no loaded libcuda imports ioctl,
 * or -errno of the GOT patcher. */
int nvrm_trace_install(void);
/* 1 once nvrm_trace_install() succeeded in this process. */
int nvrm_trace_installed(void);

/* Since when libcuda's ioctls are watched (for messages). */
enum nvrm_trace_since {
    NVRM_TRACE_OFF = 0,        /* not (yet) */
    NVRM_TRACE_SINCE_LOAD,     /* since libgdrx was loaded */
    NVRM_TRACE_SINCE_OPEN,     /* since the first nvrm gdrx_open */
};
enum nvrm_trace_since nvrm_trace_since(void);

/* The record covering device address va: 0, or -ENOENT. */
int nvrm_trace_lookup(uint64_t va, struct nvrm_trace_hit *out);

/* Serial of a live source object, registering it if new (for handles
 * learnt another way, e.g. from an IPC handle); 0 on allocation failure. */
uint64_t nvrm_trace_adopt(nvrm_handle_t h_client, nvrm_handle_t h_memory);

/* 1 while the source object with that serial has not been freed. */
int nvrm_trace_source_live(nvrm_handle_t h_client, nvrm_handle_t h_memory, uint64_t serial);

/* The wrapper's work on one completed ioctl (exposed for unit tests). */
void nvrm_trace_observe(int fd, unsigned long req, void *arg);

#endif /* GDRX_NVRM_TRACE_H */
