/*
 * sim_host.c - registered host memory: cuMemHostRegister(_v2) and
 * cuMemHostUnregister, and what pointer queries say of such memory
 * (sim_pointer.c asks sim_host_find).
 *
 * SPDX-License-Identifier: MIT
 *
 * What the driver does that callers (UCX's cuda_copy registers host
 * buffers with it, the simulated runtime's cudaHostRegister is this) see:
 *  - a registration needs a current context; it belongs to that context
 *    and goes with it (its last release, a reset, a destroy);
 *  - a NULL pointer, a size of 0, a range that wraps, unknown flags, or a
 *    range touching a GPU's device VA: CUDA_ERROR_INVALID_VALUE;
 *  - a range overlapping a registered one:
 *    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, changing nothing;
 *  - cuMemHostUnregister of an address no registration starts at:
 *    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
 *  - pointer attributes of registered memory: MEMORY_TYPE HOST, the
 *    registering context and its device, HOST_POINTER and (the device can
 *    use the host pointer: CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM is 1)
 *    DEVICE_POINTER the address itself.
 * Not modelled: page-locking (the pages are not pinned), the DEVICEMAP /
 * IOMEMORY / READ_ONLY semantics (accepted, recorded, not enforced), and
 * cuMemHostUnregister needs no current context here.
 */
#include "sim_internal.h"

#include <stdlib.h>

#undef cuMemHostRegister

struct host_reg {
    struct host_reg *next;
    uint64_t         start, end;
    struct CUctx_st *ctx;
    unsigned int     flags;
};

#define HOST_FLAGS                                                                    \
    (CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |                      \
     CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY)

/* Own lock, never taken with sim.lock held nor while holding it. */
static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static struct host_reg *regs;

/* Whether [start, end) touches a GPU's device VA. */
static int touches_device_va(uint64_t start, uint64_t end)
{
    int hit = 0;
    sim_lock();
    for (int i = 0; i < sim.device_count && !hit; i++)
        hit = start < sim.dev[i].va_end && sim.dev[i].va_base < end;
    sim_unlock();
    return hit;
}

CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    CUresult rc = sim_begin("cuMemHostRegister", SIM_NEED_CTX);
    if (rc != CUDA_SUCCESS)
        return rc;
    uint64_t start = (uintptr_t)p, end = start + bytesize;
    if (!p || bytesize == 0 || end < start || (Flags & ~(unsigned int)HOST_FLAGS) ||
        touches_device_va(start, end))
        return CUDA_ERROR_INVALID_VALUE;
    struct host_reg *r = calloc(1, sizeof(*r));
    if (!r)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r->start = start;
    r->end = end;
    r->ctx = sim_current_ctx();
    r->flags = Flags;
    pthread_mutex_lock(&host_lock);
    for (const struct host_reg *o = regs; o && rc == CUDA_SUCCESS; o = o->next)
        if (start < o->end && o->start < end)
            rc = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    if (rc == CUDA_SUCCESS) {
        r->next = regs;
        regs = r;
    }
    pthread_mutex_unlock(&host_lock);
    if (rc != CUDA_SUCCESS)
        free(r);
    return rc;
}

/* The CUDA 3.x name, same signature. */
CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags);
CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
    __attribute__((alias("cuMemHostRegister_v2")));

CUresult CUDAAPI cuMemHostUnregister(void *p)
{
    CUresult rc = sim_begin("cuMemHostUnregister", 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    struct host_reg *found = NULL;
    pthread_mutex_lock(&host_lock);
    for (struct host_reg **pp = &regs; *pp; pp = &(*pp)->next) {
        if ((*pp)->start == (uintptr_t)p) {
            found = *pp;
            *pp = found->next;
            break;
        }
    }
    pthread_mutex_unlock(&host_lock);
    free(found);
    return found ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

int sim_host_find(uint64_t p, struct sim_host_info *out)
{
    int hit = 0;
    pthread_mutex_lock(&host_lock);
    for (const struct host_reg *r = regs; r && !hit; r = r->next) {
        if (p >= r->start && p < r->end) {
            out->start = r->start;
            out->size = r->end - r->start;
            out->ctx = r->ctx;
            out->device = r->ctx->device;
            hit = 1;
        }
    }
    pthread_mutex_unlock(&host_lock);
    return hit;
}

void sim_host_ctx_gone(const struct CUctx_st *ctx)
{
    pthread_mutex_lock(&host_lock);
    for (struct host_reg **pp = &regs; *pp;) {
        struct host_reg *r = *pp;
        if (r->ctx == ctx) {
            *pp = r->next;
            free(r);
        } else {
            pp = &r->next;
        }
    }
    pthread_mutex_unlock(&host_lock);
}
