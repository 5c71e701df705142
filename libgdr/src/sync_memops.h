/*
 * sync_memops.h - SYNC_MEMOPS on a CUDA allocation (sync_memops.c).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_SYNC_MEMOPS_H
#define GDRX_SYNC_MEMOPS_H

#include <stdint.h>

#include "cuda_loader.h"

/* Set it on the allocation holding dptr, in the current context: 0,
 * -EOPNOTSUPP where the memory does not take it (VMM), else CUDA's error
 * as errno. */
int gdrx_sync_memops_set(const struct gdrx_cuda *cu, uint64_t dptr);

#endif /* GDRX_SYNC_MEMOPS_H */
