/*
 * sim_stream.c - streams, and the record of each thread's last copy.
 *
 * SPDX-License-Identifier: MIT
 *
 * Work still completes before the call that queues it returns; streams
 * bring the rules a caller must keep.  A created stream belongs to the
 * context current at its creation and dies with that context (its last
 * release, a reset); work on it needs that context current (stricter than
 * the driver, which may accept another); a handle destroyed or never
 * created is CUDA_ERROR_INVALID_HANDLE.  Handles are looked up in a list,
 * never dereferenced unchecked.  simcu_last_copy() tells a test which
 * stream a copy ran on and whether it waited for the legacy default stream.
 */
#include "sim_internal.h"
#include "sim_legacy.h"

#include <errno.h>
#include <stdlib.h>

static _Thread_local struct simcu_copy_info last_copy;

static int is_default_stream(CUstream s)
{
    return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

/* The live created stream s, or NULL.  Caller holds sim.lock. */
static struct CUstream_st *find_stream_locked(CUstream s)
{
    for (struct CUstream_st *st = sim.streams; st; st = st->next)
        if (st == s)
            return st;
    return NULL;
}

CUresult sim_stream_check(CUstream s, int *legacy)
{
    /* The per-thread default stream, too, waits for the legacy one. */
    *legacy = 1;
    if (is_default_stream(s)) {
        sim_callbacks_wait(s);
        return CUDA_SUCCESS;
    }
    CUresult rc = CUDA_SUCCESS;
    sim_lock();
    const struct CUstream_st *st = find_stream_locked(s);
    if (!st)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (st->ctx != sim_current_ctx())
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else
        *legacy = !(st->flags & CU_STREAM_NON_BLOCKING);
    sim_unlock();
    /* The work being queued runs now: after the stream's callbacks. */
    if (rc == CUDA_SUCCESS)
        sim_callbacks_wait(s);
    return rc;
}

void sim_streams_ctx_gone(struct CUctx_st *ctx)
{
    sim_lock();
    for (struct CUstream_st **p = &sim.streams; *p;) {
        struct CUstream_st *st = *p;
        if (st->ctx == ctx) {
            *p = st->next;
            free(st);
            sim.live_streams--;
        } else {
            p = &st->next;
        }
    }
    sim_unlock();
}

void sim_copy_record(uint64_t dst, uint64_t src, size_t n, CUstream s, int legacy)
{
    last_copy.dst = dst;
    last_copy.src = src;
    last_copy.bytes = n;
    last_copy.stream = s;
    last_copy.legacy = legacy;
    last_copy.ctx = sim_current_ctx();
    last_copy.count++;
}

CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    CUresult rc = sim_begin_out("cuStreamCreate", SIM_NEED_CTX, phStream);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (Flags & ~(unsigned int)CU_STREAM_NON_BLOCKING)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *st = calloc(1, sizeof(*st));
    if (!st)
        return CUDA_ERROR_OUT_OF_MEMORY;
    st->ctx = sim_current_ctx();
    st->flags = Flags;
    sim_lock();
    st->next = sim.streams;
    sim.streams = st;
    sim.live_streams++;
    sim_unlock();
    *phStream = st;
    return CUDA_SUCCESS;
}

/* Like the driver, any context may destroy a stream: no context needed. */
CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
    CUresult rc = sim_begin("cuStreamDestroy", 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    struct CUstream_st *found = NULL;
    sim_lock();
    for (struct CUstream_st **p = &sim.streams; *p; p = &(*p)->next) {
        if (*p == hStream) {
            found = *p;
            *p = found->next;
            sim.live_streams--;
            break;
        }
    }
    sim_unlock();
    free(found);
    return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* Async work completes before the call that queued it returns. */
CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
    int legacy;
    CUresult rc = sim_begin("cuStreamSynchronize", SIM_NEED_CTX);
    if (rc != CUDA_SUCCESS)
        return rc;
    return sim_stream_check(hStream, &legacy);
}

CUresult CUDAAPI cuStreamDestroy(CUstream hStream) __attribute__((alias("cuStreamDestroy_v2")));

/* ---- control API ---- */

int simcu_last_copy(struct simcu_copy_info *out)
{
    if (!out)
        return -EINVAL;
    if (last_copy.count == 0)
        return -ENOENT;
    *out = last_copy;
    return 0;
}

long simcu_live_streams(void)
{
    sim_lock();
    long n = sim.live_streams;
    sim_unlock();
    return n;
}
