/*
 * cuda_free_hooks.h - learn of every CUDA free before the memory can be
 * reused, so CPU mappings of it can be revoked first.
 *
 * SPDX-License-Identifier: MIT
 *
 * Intercepted: cuMemFree (legacy 32-bit), cuMemFree_v2, cuMemFreeAsync,
 * cuMemFreeAsync_ptsz (reported when enqueued: conservative), cuMemUnmap
 * (VMM), reached (a) through an object's GOT (linked with -lcuda, also
 * objects dlopen()ed later), (b) through dlsym(), (c) through
 * cuGetProcAddress / cuGetProcAddress_v2 (how the CUDA runtime gets its
 * driver entry points).  The runtime's cudaFree, cudaFreeAsync and
 * cudaFreeAsync_ptsz are also hooked in GOTs (shared libcudart), which
 * covers a runtime that fetched its driver table before installation.  libcuda's own internal calls are not seen (they
 * need no interception: they free nothing the application owns), nor are
 * libgdrx's: it resolves libcuda privately and must invalidate its own
 * frees itself.  See docs/free-interception.md for the limits.
 */
#ifndef GDRX_CUDA_FREE_HOOKS_H
#define GDRX_CUDA_FREE_HOOKS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Install the hooks.  Idempotent and thread-safe.  Best called once
 * libcuda is loaded and before the CUDA runtime initialises (a runtime
 * that fetched its driver table earlier keeps the unhooked pointers);
 * calling it earlier also works: the dlopen/dlsym/cuGetProcAddress paths
 * resolve libcuda when it appears.  Returns 0 or -errno (the hooks that
 * could be installed stay installed).
 */
int gdrx_free_hooks_install(void);

/*
 * Remove the GOT patches (for library unload and tests).  Wrappers already
 * handed out through dlsym or cuGetProcAddress keep working (they call the
 * real functions and still report frees), so libgdrx must stay mapped:
 * link it -z nodelete.  Returns 0 or -errno.
 */
int gdrx_free_hooks_uninstall(void);

/*
 * Set the function told of each free (NULL to stop).  It runs in the
 * freeing thread before the free proceeds, with the allocation's
 * [base, base + size) from cuMemGetAddressRange_v2 (for cuMemUnmap: the
 * range being unmapped).  If the range cannot be found, it gets
 * (pointer, 1), so any mapping containing the pointer is revoked.
 * Frees made on the same thread while a callback (or the real free) runs
 * are not reported again: the callback must not free pinned memory it
 * expects to hear about.  When this returns, no callback with the old
 * function/arg is still running, so it must not be called from inside
 * the callback.
 */
void gdrx_free_hooks_set_callback(void (*cb)(uint64_t base, size_t size, void *arg), void *arg);

#endif /* GDRX_CUDA_FREE_HOOKS_H */
