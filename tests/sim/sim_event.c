/*
 * sim_event.c - events.  Work completes before the call that queues it
 * returns, so an event is complete once recorded (and, as with the driver,
 * one never recorded queries complete).  Recording needs a context and a
 * stream valid in it; a handle destroyed or never created is
 * CUDA_ERROR_INVALID_HANDLE.  Handles are looked up in a list, never
 * dereferenced unchecked.
 *
 * SPDX-License-Identifier: MIT
 */
#include "sim_internal.h"

#include <stdlib.h>

struct CUevent_st {
    struct CUevent_st *next;
};

static struct CUevent_st *events; /* under sim.lock */

static int live_locked(CUevent ev)
{
    for (struct CUevent_st *e = events; e; e = e->next)
        if (e == ev)
            return 1;
    return 0;
}

static CUresult check(const char *name, CUevent ev, unsigned need)
{
    CUresult rc = sim_begin(name, need);
    if (rc != CUDA_SUCCESS)
        return rc;
    sim_lock();
    int live = live_locked(ev);
    sim_unlock();
    return live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    CUresult rc = sim_begin_out("cuEventCreate", SIM_NEED_CTX, phEvent);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (Flags & ~(unsigned int)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                                CU_EVENT_INTERPROCESS))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *e = calloc(1, sizeof(*e));
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sim_lock();
    e->next = events;
    events = e;
    sim_unlock();
    *phEvent = e;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
    int legacy;
    CUresult rc = check("cuEventRecord", hEvent, SIM_NEED_CTX);
    return rc != CUDA_SUCCESS ? rc : sim_stream_check(hStream, &legacy);
}

CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
    return check("cuEventQuery", hEvent, 0);
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
    return check("cuEventSynchronize", hEvent, 0);
}

CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent)
{
    CUresult rc = sim_begin("cuEventDestroy", 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    struct CUevent_st *found = NULL;
    sim_lock();
    for (struct CUevent_st **p = &events; *p; p = &(*p)->next) {
        if (*p == hEvent) {
            found = *p;
            *p = found->next;
            break;
        }
    }
    sim_unlock();
    free(found);
    return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

#undef cuEventDestroy
CUresult CUDAAPI cuEventDestroy(CUevent hEvent) __attribute__((alias("cuEventDestroy_v2")));
