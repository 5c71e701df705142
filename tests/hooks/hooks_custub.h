/*
 * hooks_custub.h - see hooks_custub.c.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef HOOKS_CUSTUB_H
#define HOOKS_CUSTUB_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

extern uint64_t hooks_stub_last_ptr;
extern size_t hooks_stub_last_size;
extern int hooks_stub_calls;

CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream);
/* The runtime's free (libcudart's signature, returning cudaError_t). */
int cudaFree(void *dptr);
/* The legacy symbol; cuda.h maps the name cuMemFree to cuMemFree_v2. */
CUresult CUDAAPI hooks_legacy_cuMemFree(unsigned int dptr) __asm__("cuMemFree");

#endif /* HOOKS_CUSTUB_H */
