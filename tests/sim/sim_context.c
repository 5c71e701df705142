/*
 * sim_context.c - contexts made by cuCtxCreate (every exported version)
 * and ended by cuCtxDestroy, as CUDA 12/13 document them.
 *
 * SPDX-License-Identifier: MIT
 *
 * A created context is pushed on the creating thread's stack, owns the
 * memory allocated while it is current (CU_POINTER_ATTRIBUTE_CONTEXT names
 * it), and takes that memory and its streams with it when destroyed; it
 * is popped if it is the caller's current one.  Its handle is never freed,
 * so a destroyed or foreign handle is told apart: CUDA_ERROR_INVALID_CONTEXT.
 * cuCtxDestroy of a primary context is refused the same way (primary
 * contexts go by cuDevicePrimaryCtxRelease/Reset).
 */
#include "sim_internal.h"
#include "sim_legacy.h" /* the older cuCtxCreate exports */
#include "sim_entry.h"

#include <stdlib.h>

CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx);

/* Only grows, at the head (atomically): read without a lock, as callers
 * may hold sim.lock. */
static struct CUctx_st *created;

int sim_ctx_is_created(const struct CUctx_st *ctx)
{
    for (const struct CUctx_st *c = __atomic_load_n(&created, __ATOMIC_ACQUIRE); c;
         c = c->next_created)
        if (c == ctx)
            return 1;
    return 0;
}

/* The flags cuCtxCreate knows: scheduling (one of), MAP_HOST, LMEM_RESIZE
 * _TO_MAX, COREDUMP_ENABLE, USER_COREDUMP_ENABLE, SYNC_MEMOPS. */
#define KNOWN_FLAGS (CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX | \
                     CU_CTX_COREDUMP_ENABLE | CU_CTX_USER_COREDUMP_ENABLE | CU_CTX_SYNC_MEMOPS)

static CUresult create(const char *name, CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CUresult rc = sim_begin_out(name, 0, pctx);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dev < 0 || dev >= sim.device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    if (flags & ~(unsigned int)KNOWN_FLAGS)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUctx_st *c = calloc(1, sizeof(*c));
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->device = dev;
    c->created = 1;
    sim_ctx_new_id(c);
    rc = sim_ctx_push(c);
    if (rc != CUDA_SUCCESS) {
        free(c);
        return rc;
    }
    c->next_created = __atomic_load_n(&created, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(&created, &c->next_created, c, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED))
        ;
    *pctx = c;
    return CUDA_SUCCESS;
}

/* A refusal of parameters comes after the entry checks (init, injected). */
static CUresult refuse(CUresult err)
{
    CUresult rc = sim_begin("cuCtxCreate", 0);
    return rc != CUDA_SUCCESS ? rc : err;
}

CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return create("cuCtxCreate", pctx, flags, dev);
}

CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return create("cuCtxCreate", pctx, flags, dev);
}

/* Execution affinity (SM count): accepted, not modelled. */
CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                unsigned int flags, CUdevice dev)
{
    if (numParams < 0 || (numParams > 0 && !paramsArray))
        return refuse(CUDA_ERROR_INVALID_VALUE);
    return create("cuCtxCreate", pctx, flags, dev);
}

#if SIMCU_HAS_CTX_CREATE_V4
/* CUDA 12.5's form; NULL params is a plain context.  Affinity and CIG
 * parameters are accepted, not modelled (CIG: no shared-data support). */
CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
                                CUdevice dev)
{
    if (params && params->cigParams)
        return refuse(CUDA_ERROR_NOT_SUPPORTED);
    return create("cuCtxCreate", pctx, flags, dev);
}
#endif

/* Hooked like the memory entry points (see sim_entry.h), under both names. */
SIM_IMPL CUresult impl_ctx_destroy(CUcontext ctx)
{
    CUresult rc = sim_begin("cuCtxDestroy", 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!ctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_ctx_is_created(ctx) || !sim_ctx_is_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (__atomic_exchange_n(&ctx->destroyed, 1, __ATOMIC_ACQ_REL))
        return CUDA_ERROR_INVALID_CONTEXT; /* another thread destroyed it first */
    sim_ctx_pop_if_current(ctx);
    sim_streams_ctx_gone(ctx);
    sim_host_ctx_gone(ctx);
    sim_mem_free_ctx(ctx);
    return CUDA_SUCCESS;
}
SIM_ENTRY(cuCtxDestroy_v2, impl_ctx_destroy);
SIM_ENTRY(cuCtxDestroy, impl_ctx_destroy);
