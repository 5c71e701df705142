/*
 * cuda_hooks.h - see every CUDA device allocation and free, from every
 * caller, by patching the entry of libcuda's own functions.
 *
 * SPDX-License-Identifier: MIT
 *
 * Patched (those libcuda has): cuMemFree(_v2), cuMemFreeAsync(_ptsz),
 * cuMemUnmap, cuIpcCloseMemHandle, cuMemAlloc(_v2), cuMemAllocPitch(_v2),
 * cuMemAllocAsync(_ptsz), cuMemAllocFromPoolAsync(_ptsz), cuMemMap,
 * cuDevicePrimaryCtxReset(_v2), cuCtxDestroy(_v2), cuGraphLaunch(_ptsz), and
 * cuGetProcAddress(_v2), whose results for those names are patched too
 * when they are other addresses than the exports.  One patch reaches every caller: direct
 * calls, dlsym, cuGetProcAddress, the CUDA runtime (shared or static), and
 * pointers fetched before installation.  See docs/free-interception.md.
 */
#ifndef GDRX_CUDA_HOOKS_H
#define GDRX_CUDA_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#include "gdrx.h"

/*
 * Told of each event in the calling thread: ALLOC after the allocation
 * succeeded, FREE before the memory is released, with [base, base + size)
 * from cuMemGetAddressRange_v2 (cuMemMap/cuMemUnmap: the range mapped or
 * unmapped; (ptr, 1) if the range cannot be found) and the device ordinal
 * (-1 if unknown); GRAPH_LAUNCH after a graph launch was enqueued (base 0,
 * size 0, device -1).  Events of calls made while a sink runs on the same
 * thread are not reported.
 */
typedef void (*gdrx_cuda_hooks_sink_fn)(const struct gdrx_mem_event *ev);

/*
 * Told, in the calling thread and before it happens, that a whole context
 * and every allocation it owns goes away: the primary context of device
 * (cuDevicePrimaryCtxReset, which cudaDeviceReset calls), or, with
 * device < 0, the context ctx (cuCtxDestroy).
 */
typedef void (*gdrx_cuda_hooks_ctx_sink_fn)(int device, void *ctx);

/*
 * Patch libcuda, if the process has it loaded (never loads it).  The sinks
 * are set by the call that installs (ctx_sink may be NULL).  Idempotent and thread-safe; hooks stay
 * for the life of the process (so the library holding them must never be
 * unloaded: -z nodelete).  Returns 0 when at least one free function is
 * hooked (the others are logged and listed by gdrx_cuda_hooks_entry), -ENOENT
 * when libcuda is not loaded, -ENOTSUP/-EADDRINUSE/-ENOMEM/-errno when no
 * free function could be patched.
 */
int gdrx_cuda_hooks_install(gdrx_cuda_hooks_sink_fn sink, gdrx_cuda_hooks_ctx_sink_fn ctx_sink);

/* Hold / release the hooks' lock across fork: libgdrx's fork handlers call
 * these in its lock order (built with GDRX_HAVE_FREE_HOOKS); without that
 * define, install registers fork handlers of its own that do. */
void gdrx_cuda_hooks_fork_lock(void);
void gdrx_cuda_hooks_fork_unlock(void);

/* Number of function entries patched now (for tests and diagnostics). */
int gdrx_cuda_hooks_count(void);

/* The i-th libcuda export gdrx hooks: its name, and in *rc how its last
 * installation went (0 hooked, -ENOENT not in this libcuda, -ENODATA not
 * installed, else why not).  -ENOENT past the last one. */
int gdrx_cuda_hooks_entry(size_t i, const char **name, int *rc);

/* Undo the installation (each entry's bytes put back; pages kept, and
 * the next install arms the same patches).  For the stress test only:
 * libgdrx never calls it. */
void gdrx_cuda_hooks_remove(void);

#endif /* GDRX_CUDA_HOOKS_H */
