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

/*
 * The full check of [p, p+n) inside its allocation: pin, map, then
 *   CPU writes A through the mapping  -> cuMemcpyDtoH and a GPU kernel see A;
 *   the kernel writes B                -> the CPU reads B through the mapping;
 *   cuMemcpyHtoD writes C              -> the CPU reads C;
 *   the CPU writes D                   -> the kernel sees D.
 * Large ranges are read back by the CPU in samples (reads over BAR1 are
 * slow); everything else is compared whole.  Returns 0 if all held.
 */
int check_range(const char *label, CUdeviceptr p, size_t n, uint32_t seed);

/* Free pinned memory, reallocate, and make sure the old mapping never
 * shows the new data (sanity_life.c). */
int check_free_realloc(size_t n);
/* fork() with a live mapping: the child cannot use the parent's pins, a
 * context it opens is its own, and the parent is unaffected. */
int check_fork(void);
/* Median latencies of 8 B and 4 KiB copies both ways, gdrx vs cuMemcpy. */
void measure_latency(void);

#endif /* GDRX_NVRM_SANITY_H */
