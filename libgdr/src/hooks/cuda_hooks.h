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
 * succeeded; FREE after the driver released the memory (never when it
 * refused), with [base, base + size) as cuMemGetAddressRange_v2 gave it
 * before the call (cuMemMap/cuMemUnmap: the range mapped or unmapped;
 * (ptr, 1) if the range could not be found) and the device ordinal (-1 if
 * unknown); GRAPH_LAUNCH after a graph launch was enqueued (base 0, size
 * 0, device -1).  Events of calls made while a sink runs on the same
 * thread are not reported.  With release_end set, FREE events are its
 * to raise (a context's allocations are known only to the owner of pins).
 */
typedef void (*gdrx_cuda_hooks_sink_fn)(const struct gdrx_mem_event *ev);

/*
 * What a hooked call may release: the range [base, base + size) (size 1:
 * the allocation holding base) on device (-1 if unknown); the primary
 * context of device (cuDevicePrimaryCtxReset, which cudaDeviceReset
 * calls); or the context ctx (cuCtxDestroy).  A context takes every
 * allocation it owns with it, without a free call.
 */
enum gdrx_cuda_hooks_release_kind {
    GDRX_RELEASE_RANGE,
    GDRX_RELEASE_PRIMARY_CTX,
    GDRX_RELEASE_CTX,
    GDRX_RELEASE_GRAPH_LAUNCH, /* what a graph launch may free: no range */
};

struct gdrx_cuda_hooks_release {
    enum gdrx_cuda_hooks_release_kind kind;
    uint64_t base;
    size_t   size;
    int      device;
    void    *ctx;
};

/*
 * The receivers, all called in the calling thread.  release_begin runs
 * before the driver's call and returns a token (may be NULL) that
 * release_end gets after it, with released 1 if the driver said yes and 0
 * if it refused: the owner of pins holds them over the call and revokes
 * them only on 1 (see docs/free-interception.md).  Both may be NULL.
 */
struct gdrx_cuda_hooks_sinks {
    gdrx_cuda_hooks_sink_fn event;
    void *(*release_begin)(const struct gdrx_cuda_hooks_release *what);
    void (*release_end)(void *token, const struct gdrx_cuda_hooks_release *what, int released);
};

/*
 * Patch libcuda, if the process has it loaded (never loads it).  The sinks
 * (copied; event must not be NULL) are set by the call that installs.
 * Idempotent and thread-safe; hooks stay
 * for the life of the process (so the library holding them must never be
 * unloaded: -z nodelete).  Returns 0 when at least one free function is
 * hooked (the others are logged and listed by gdrx_cuda_hooks_entry), -ENOENT
 * when libcuda is not loaded, -ENOTSUP/-EADDRINUSE/-ENOMEM/-errno when no
 * free function could be patched.
 */
int gdrx_cuda_hooks_install(const struct gdrx_cuda_hooks_sinks *sinks);

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
