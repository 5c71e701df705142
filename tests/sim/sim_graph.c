/*
 * sim_graph.c - CUDA graphs with memory nodes, as the H100 runs them:
 * an allocation node's address is fixed when the node is made, and each
 * launch maps pages of the device's graph pool there; a free node (or a
 * launch of a graph instantiated with AUTO_FREE_ON_LAUNCH) frees the
 * allocation inside cuGraphLaunch, through no other entry point, and the
 * pages go back to the pool, last freed first out: a relaunch gets the
 * same pages at the same address, another graph's node the same pages at
 * its own address (issue 43: a pin made before reached the new owner).
 * cuMemFree and cuMemFreeAsync of a graph allocation free it too.
 * Refusals as cuda.h states them: a free node of an address no allocation
 * node returned, or freed twice in one graph; a second instantiation of a
 * graph with memory nodes; a launch whose allocation is still live.
 * Kernels, copies and dependencies are not modelled (nodes run in the
 * order they were added, which the tests keep to their dependencies).
 *
 * simcu_graph_free_node is older and unlike CUDA: a graph that frees a
 * cuMemAlloc allocation (CUDA refuses such a free node), kept for the
 * suites that use it as "a free no hook sees".
 *
 * SPDX-License-Identifier: MIT
 */
#include "sim_internal.h"
#include "sim_entry.h"

#include <pthread.h>
#include <stdlib.h>

struct CUgraphNode_st {
    struct CUgraphNode_st *next;      /* in its graph, in the order added */
    struct CUgraphNode_st *all_next;  /* every allocation node (registry) */
    int                    is_free;
    uint64_t               va;        /* the allocation's (fixed) or the freed address */
    size_t                 size;
    int                    device;
};

struct CUgraph_st {
    struct CUgraphNode_st *nodes, **tail;
    int                    memory_nodes, instantiated;
};

struct CUgraphExec_st {
    CUdeviceptr        free_ptr; /* simcu_graph_free_node: 0 once launched */
    struct CUgraph_st *graph;
    int                auto_free;
};

/* The graph pool's free pages, per device, and every allocation node
 * made (a free node must name one).  graph_lock: never held with sim's. */
struct pages {
    struct pages             *next;
    struct sim_backing_object bk;
};
static pthread_mutex_t graph_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pages *pool_free[SIMCU_MAX_DEVICES];
static struct CUgraphNode_st *alloc_nodes;
static uint64_t next_pages_id = 1ull << 40; /* apart from sim's object ids */

void sim_graph_pages_freed(int device, const struct sim_backing_object *bk)
{
    struct pages *p = malloc(sizeof(*p));
    if (!p) {
        sim.backing->destroy((struct sim_backing_object *)bk); /* lost to the pool */
        return;
    }
    p->bk = *bk;
    pthread_mutex_lock(&graph_lock);
    p->next = pool_free[device];
    pool_free[device] = p;
    pthread_mutex_unlock(&graph_lock);
}

/* Pages for span bytes: the last freed that fit, else new ones. */
static int pages_take(int device, size_t span, struct sim_backing_object *out)
{
    pthread_mutex_lock(&graph_lock);
    for (struct pages **pp = &pool_free[device]; *pp; pp = &(*pp)->next) {
        if ((*pp)->bk.size < span)
            continue;
        struct pages *p = *pp;
        *pp = p->next;
        pthread_mutex_unlock(&graph_lock);
        *out = p->bk;
        free(p);
        return 0;
    }
    uint64_t id = next_pages_id++;
    pthread_mutex_unlock(&graph_lock);
    return sim.backing->create(id, device, span, out);
}

CUresult CUDAAPI cuGraphCreate(CUgraph *out, unsigned int flags)
{
    CUresult rc = sim_begin_out("cuGraphCreate", 0, out);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraph_st *g = calloc(1, sizeof(*g));
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    g->tail = &g->nodes;
    *out = g;
    return CUDA_SUCCESS;
}

static void add_node(struct CUgraph_st *g, struct CUgraphNode_st *n)
{
    *g->tail = n;
    g->tail = &n->next;
    g->memory_nodes++;
}

CUresult CUDAAPI cuGraphAddMemAllocNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                        size_t ndeps, CUDA_MEM_ALLOC_NODE_PARAMS *params)
{
    CUresult rc = sim_begin_out("cuGraphAddMemAllocNode", SIM_NEED_CTX, out);
    if (rc != CUDA_SUCCESS)
        return rc;
    (void)deps;
    if (!g || !params || (ndeps && !deps) || g->instantiated || params->bytesize == 0 ||
        params->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        params->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        params->poolProps.location.id < 0 || params->poolProps.location.id >= sim.device_count)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphNode_st *n = calloc(1, sizeof(*n));
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    n->device = params->poolProps.location.id;
    n->size = params->bytesize;
    n->va = sim_va_take(n->device, sim_round_up(n->size, SIM_OBJECT_ALIGN));
    if (!n->va) {
        free(n);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&graph_lock);
    n->all_next = alloc_nodes;
    alloc_nodes = n;
    pthread_mutex_unlock(&graph_lock);
    add_node(g, n);
    params->dptr = n->va;
    *out = n;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphAddMemFreeNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                       size_t ndeps, CUdeviceptr dptr)
{
    CUresult rc = sim_begin_out("cuGraphAddMemFreeNode", SIM_NEED_CTX, out);
    if (rc != CUDA_SUCCESS)
        return rc;
    (void)deps;
    if (!g || (ndeps && !deps) || g->instantiated)
        return CUDA_ERROR_INVALID_VALUE;
    const struct CUgraphNode_st *a;
    pthread_mutex_lock(&graph_lock);
    for (a = alloc_nodes; a && a->va != dptr; a = a->all_next)
        ;
    pthread_mutex_unlock(&graph_lock);
    if (!a)
        return CUDA_ERROR_INVALID_VALUE; /* not returned by an allocation node */
    for (const struct CUgraphNode_st *n = g->nodes; n; n = n->next)
        if (n->is_free && n->va == dptr)
            return CUDA_ERROR_INVALID_VALUE; /* twice in one graph */
    struct CUgraphNode_st *n = calloc(1, sizeof(*n));
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    n->is_free = 1;
    n->va = dptr;
    n->device = a->device;
    add_node(g, n);
    *out = n;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g,
                                             unsigned long long flags)
{
    CUresult rc = sim_begin_out("cuGraphInstantiateWithFlags", SIM_NEED_CTX, out);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!g || (flags & ~(unsigned long long)CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH))
        return CUDA_ERROR_INVALID_VALUE;
    if (g->memory_nodes && g->instantiated)
        return CUDA_ERROR_INVALID_VALUE; /* one instantiation at a time */
    struct CUgraphExec_st *e = calloc(1, sizeof(*e));
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->graph = g;
    e->auto_free = (flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) != 0;
    g->instantiated++;
    *out = e;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph g)
{
    CUresult rc = sim_begin("cuGraphDestroy", 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!g)
        return CUDA_ERROR_INVALID_VALUE;
    /* Nodes stay: allocation nodes are the registry free nodes check, and
     * their allocations outlive the graph (freed by cuMemFree or another
     * graph).  Free nodes and the graph go. */
    for (struct CUgraphNode_st *n = g->nodes, *next; n; n = next) {
        next = n->next;
        if (n->is_free)
            free(n);
    }
    free(g);
    return CUDA_SUCCESS;
}

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

/* The nodes, in order; a failing node stops the launch. */
static CUresult run(struct CUgraphExec_st *e)
{
    const struct CUgraph_st *g = e->graph;

    for (const struct CUgraphNode_st *n = g->nodes; e->auto_free && n; n = n->next)
        if (!n->is_free && sim_mem_is_graph_alloc(n->va))
            sim_mem_free(n->va);
    for (const struct CUgraphNode_st *n = g->nodes; n; n = n->next) {
        if (n->is_free) {
            if (sim_mem_free(n->va) != CUDA_SUCCESS)
                return CUDA_ERROR_INVALID_VALUE;
            continue;
        }
        if (sim_mem_is_graph_alloc(n->va))
            return CUDA_ERROR_INVALID_VALUE; /* the last launch's is not freed */
        struct sim_backing_object bk;
        size_t span = sim_round_up(n->size, SIM_OBJECT_ALIGN);
        if (pages_take(n->device, span, &bk) != 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
        CUresult rc = sim_mem_map_graph(n->va, n->size, n->device, sim_current_ctx(), &bk);
        if (rc != CUDA_SUCCESS) {
            sim_graph_pages_freed(n->device, &bk);
            return rc;
        }
    }
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
    if (g->graph)
        return run(g);
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
    if (g->graph)
        g->graph->instantiated--;
    free(g);
    return CUDA_SUCCESS;
}
