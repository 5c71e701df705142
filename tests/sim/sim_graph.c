/*
 * sim_graph.c - the one kind of CUDA graph the tests need: an executable
 * graph whose launch frees memory as a graph's memory free node does,
 * through no other entry point.
 *
 * SPDX-License-Identifier: MIT
 */
#include "sim_internal.h"
#include "sim_entry.h"

#include <stdlib.h>

struct CUgraphExec_st {
    CUdeviceptr free_ptr; /* 0 once launched: the node has run */
};

CUresult simcu_graph_free_node(CUdeviceptr p, CUgraphExec *out)
{
    if (!out || !p)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphExec_st *g = calloc(1, sizeof(*g));
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    g->free_ptr = p;
    *out = g;
    return CUDA_SUCCESS;
}

SIM_IMPL CUresult impl_graph_launch(CUgraphExec g, CUstream s)
{
    CUresult rc = sim_begin("cuGraphLaunch", SIM_NEED_CTX);

    (void)s;
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!g)
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr p = g->free_ptr;
    g->free_ptr = 0;
    return p ? sim_mem_free(p) : CUDA_SUCCESS;
}
SIM_ENTRY(cuGraphLaunch, impl_graph_launch);
SIM_ENTRY(cuGraphLaunch_ptsz, impl_graph_launch);

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec g)
{
    CUresult rc = sim_begin("cuGraphExecDestroy", 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!g)
        return CUDA_ERROR_INVALID_VALUE;
    free(g);
    return CUDA_SUCCESS;
}
