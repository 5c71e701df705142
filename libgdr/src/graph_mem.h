/*
 * graph_mem.h - CUDA memory that a graph launch may free with no call the
 * hooks see, and whether such memory may be pinned in this process.
 *
 * SPDX-License-Identifier: MIT
 *
 * A graph's memory free node (cuGraphAddMemFreeNode), and every launch of
 * a graph instantiated with CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH,
 * frees a graph allocation inside cuGraphLaunch; the next launch of an
 * allocation node (the same graph at the same address, or another graph at
 * another address) gets the same physical pages.  A pin made before must
 * not reach them: such a pin is "launch-bound" and is held over every
 * graph launch and revoked once CUDA took the launch (stale.c), since
 * nothing tells which launch frees which allocation.  Where launches are
 * not seen (no hooks), such memory is refused.  docs/free-interception.md,
 * "Graph memory", says what this costs and why it is enough.
 */
#ifndef GDRX_GRAPH_MEM_H
#define GDRX_GRAPH_MEM_H

#include <cuda.h>

#include "cuda_loader.h"

/* 1 if the allocation holding dptr may be a graph allocation (launch-bound),
 * 0 if it cannot be, negative errno if CUDA could not tell.  The current
 * context is the allocation's device's. */
int gdrx_graph_mem_launch_bound(const struct gdrx_cuda *cu, CUdeviceptr dptr);

/* 0 if every graph launch of this process is seen (cuGraphLaunch and its
 * per-thread variant hooked), else -EOPNOTSUPP, said once at error level:
 * a launch-bound pin is then refused. */
int gdrx_graph_mem_launches_seen(void);

#endif /* GDRX_GRAPH_MEM_H */
