/*
 * gapi.h - what the libgdrapi suites share.  They are written against the
 * gdrcopy API only (gdrapi.h, never gdrx.h), as a gdrcopy user's program
 * would be, and link the CUDA driver directly (the simulated GPU under
 * `make check` and in the qemu guest).  Every data check goes through
 * cuMemcpy, never through the library under test.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_GAPI_H
#define GDRX_GAPI_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "gdrapi.h"
#include "gdrx_test.h"

#define KiB ((size_t)1024)
#define MiB ((size_t)1024 * 1024)

/* cuInit and device 0's primary context current; CU_FAIL and -1 if not. */
int ga_cuda_setup(void);

/* cuMemAlloc (0 and CU_FAIL on failure) and cuMemFree. */
CUdeviceptr ga_alloc(size_t bytes);
void ga_free(CUdeviceptr p);

/* Byte i of pattern seed, into buf; written to / checked on the device
 * through cuMemcpy (ga_check: 1 if [p, p+len) holds the pattern). */
void ga_pattern(void *buf, size_t len, uint32_t seed);
void ga_fill(CUdeviceptr p, size_t len, uint32_t seed);
int  ga_check(CUdeviceptr p, size_t len, uint32_t seed);

/* Write pattern seed through the mapping at ptr (the CPU address of p)
 * and check it through CUDA; fill seed + 1 through CUDA and read it back
 * through the mapping.  1 if both hold. */
int ga_roundtrip(gdr_mh_t mh, void *ptr, CUdeviceptr p, size_t len, uint32_t seed);

/* The backend the suites expect libgdrx to use: GDRX_BACKEND, which
 * ga_default_backend() sets to "dmabuf" unless the environment chose. */
void ga_default_backend(void);
int  ga_backend_is(const char *name);

#ifndef GDRX_GDRAPI_INFO_V1 /* (test_info_v1.c sees the older gdr_info_t) */
/* A buffer pinned and mapped the gdrcopy way: ptr is the CPU address of
 * device address d (map + (d - info.va)). */
struct ga_buf {
    gdr_t       g;
    CUdeviceptr d;
    size_t      size;
    gdr_mh_t    mh;
    void       *map;
    size_t      map_size;
    gdr_info_t  info;
    char       *ptr;
};

/* Pin [d, d+size), read its info, map mapped_size bytes; 0, or -1 after
 * CU_FAIL (nothing left pinned). */
int ga_pin_map(gdr_t g, CUdeviceptr d, size_t size, struct ga_buf *b);
/* Unmap and unpin, asserting both succeed. */
void ga_release(struct ga_buf *b);
#endif

/* gdr_open, CU_FAIL on NULL. */
gdr_t ga_open(void);

/* The start of most cases, in gdrcopy's order: CUDA set up, `bytes` of
 * device memory allocated into *d (none if 0), then gdr_open into *g.  0,
 * or -1 after CU_FAIL. */
int ga_start(size_t bytes, CUdeviceptr *d, gdr_t *g);

/* cudaFree of a pinned, mapped allocation: copies through the mapping
 * refused with ESTALE, the callback flag set, the mapping gone from the
 * info, unmap and unpin fine, a new map refused (ESTALE). */
void ga_check_free_revokes(gdr_t g);

/* gdrcopy's invalidation_fork_child_gdr_pin_parent_with_tokens (issue
 * 30): gdr_open, gdr_get_attribute and gdr_close (its dma-buf waiver,
 * which initialises CUDA here), then fork(); the parent initialises CUDA,
 * allocates a GPU page and sends its address, which the child (its CUDA
 * refused by the driver) hands to child().  The child's exit status, or -1
 * after CU_FAIL. */
int ga_fork_after_open(int (*child)(CUdeviceptr parent_ptr));

#endif /* GDRX_GAPI_H */
