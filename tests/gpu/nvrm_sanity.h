/*
 * nvrm_sanity.h - the H200 sanity program of the nvrm backend (see
 * run.sh): shared declarations.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_NVRM_SANITY_H
#define GDRX_NVRM_SANITY_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "gdrx.h"
#include "gpu_pattern.h"

/* gpu_kernels.cu */
long long gk_verify_write(uint64_t dptr, size_t n, uint32_t expect, uint32_t write);

extern gdrx_t g_ctx;
extern int g_failures;

/* Record a failed check (printed) and keep going. */
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* CUDA call that must succeed; 0 or -1 (and a failure recorded). */
int cu_ok(CUresult r, const char *what);

/* Fill a host buffer with pattern seed. */
void fill_pattern(uint8_t *buf, size_t n, uint32_t seed);

/* The ordering rule of a kind of memory (gdrx.h, Ordering). */
enum mem_order {
    /* cuMemAlloc: gdrx_pin sets SYNC_MEMOPS, so a synchronous copy into
     * it is complete when it returns; checked with no synchronisation. */
    ORDER_SYNC_MEMOPS,
    /* cuMemAllocAsync pools (SYNC_MEMOPS not honoured) and cuMemCreate
     * (attribute refused, CUDA error 801): ordered after the caller
     * synchronises the stream or context that did the copy. */
    ORDER_STREAM,
};

/*
 * The full check of [p, p+n) inside its allocation: pin, map, then
 *   CPU writes A through the mapping  -> cuMemcpyDtoH and a GPU kernel see A;
 *   the kernel writes B                -> the CPU reads B through the mapping;
 *   cuMemcpyHtoD writes C              -> the CPU reads C, right away for
 *                                         ORDER_SYNC_MEMOPS, after
 *                                         cuCtxSynchronize for ORDER_STREAM;
 *   the CPU writes D                   -> the kernel sees D.
 * Large ranges are read back by the CPU in samples (reads over BAR1 are
 * slow); everything else is compared whole.  Returns 0 if all held.
 */
int check_range_as(const char *label, CUdeviceptr p, size_t n, uint32_t seed,
                   enum mem_order order);
/* check_range_as(..., ORDER_SYNC_MEMOPS): cuMemAlloc memory. */
int check_range(const char *label, CUdeviceptr p, size_t n, uint32_t seed);

/* Free pinned memory, reallocate, and make sure the old mapping never
 * shows the new data (sanity_life.c). */
int check_free_realloc(size_t n);
/* fork() with a live mapping, as docs/nvrm.md states it: in the child,
 * gdrx_unmap and gdrx_map of the parent's pin give -ECHILD and gdrx_open
 * gives -ENODEV (CUDA refuses a forked child); the parent is unaffected. */
int check_fork(void);
/* Median latencies of 8 B and 4 KiB copies both ways, gdrx vs cuMemcpy. */
void measure_latency(void);

#endif /* GDRX_NVRM_SANITY_H */
