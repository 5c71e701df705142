/*
 * sim_callback.c - host callbacks in streams: cuStreamAddCallback and
 * cuLaunchHostFunc.
 *
 * SPDX-License-Identifier: MIT
 *
 * As the driver documents them: a callback runs once, on a thread of the
 * driver's (never the caller's), after the work queued before it on its
 * stream; it blocks the work queued after it, so the sim's stream calls
 * (copies, memsets, event records, stream-ordered allocations and frees,
 * whose work completes before they return) and cuStreamSynchronize wait
 * for the stream's callbacks first, and cuCtxSynchronize for all of them;
 * a CUDA call from a callback is refused with CUDA_ERROR_NOT_PERMITTED
 * (sim_device.c's sim_begin).  cuStreamAddCallback's flags must be 0 and
 * its callback is passed CUDA_SUCCESS (the sim's work does not fail).
 * Callbacks run one at a time, in the order queued (the driver may
 * serialise them so).  A destroyed stream's queued callbacks still run.
 */
#include "sim_internal.h"

#include <stdlib.h>

struct callback {
    struct callback   *next;
    CUstream           stream;
    int                all_streams; /* queued on a default stream */
    CUstreamCallback   cb;          /* or */
    CUhostFn           fn;
    void              *data;
};

static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  cb_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t  cb_done = PTHREAD_COND_INITIALIZER;
static struct callback *head, **tail = &head; /* queued, the running one first */
static int started;
static _Thread_local int in_callback;

int sim_in_callback(void)
{
    return in_callback;
}

static int is_default_stream(CUstream s)
{
    return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

static void *worker(void *arg)
{
    (void)arg;
    in_callback = 1;
    pthread_mutex_lock(&cb_lock);
    for (;;) {
        while (!head)
            pthread_cond_wait(&cb_work, &cb_lock);
        struct callback *c = head; /* stays queued while it runs */
        pthread_mutex_unlock(&cb_lock);
        if (c->cb)
            c->cb(c->stream, CUDA_SUCCESS, c->data);
        else
            c->fn(c->data);
        pthread_mutex_lock(&cb_lock);
        head = c->next;
        if (!head)
            tail = &head;
        free(c);
        pthread_cond_broadcast(&cb_done);
    }
    return NULL;
}

/* Whether c is one that work on s (all: any stream) waits for. */
static int blocks(const struct callback *c, CUstream s, int all)
{
    return all || c->all_streams || c->stream == s;
}

void sim_callbacks_wait(CUstream s)
{
    int all = is_default_stream(s);
    if (in_callback)
        return;
    pthread_mutex_lock(&cb_lock);
    for (;;) {
        int pending = 0;
        for (const struct callback *c = head; c && !pending; c = c->next)
            pending = blocks(c, s, all);
        if (!pending)
            break;
        pthread_cond_wait(&cb_done, &cb_lock);
    }
    pthread_mutex_unlock(&cb_lock);
}

static CUresult enqueue(const char *name, CUstream s, CUstreamCallback cb, CUhostFn fn, void *data)
{
    int legacy;
    CUresult rc = sim_begin(name, SIM_NEED_CTX);
    if (rc == CUDA_SUCCESS && !cb && !fn)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        rc = sim_stream_check(s, &legacy);
    if (rc != CUDA_SUCCESS)
        return rc;
    struct callback *c = calloc(1, sizeof(*c));
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->stream = s;
    c->all_streams = is_default_stream(s);
    c->cb = cb;
    c->fn = fn;
    c->data = data;
    pthread_mutex_lock(&cb_lock);
    if (!started) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        started = pthread_create(&t, &attr, worker, NULL) == 0;
        pthread_attr_destroy(&attr);
    }
    if (started) {
        *tail = c;
        tail = &c->next;
        pthread_cond_signal(&cb_work);
    }
    pthread_mutex_unlock(&cb_lock);
    if (!started) {
        free(c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
                                     unsigned int flags)
{
    if (flags) {
        CUresult rc = sim_begin("cuStreamAddCallback", SIM_NEED_CTX);
        return rc == CUDA_SUCCESS ? CUDA_ERROR_INVALID_VALUE : rc;
    }
    return enqueue("cuStreamAddCallback", hStream, callback, NULL, userData);
}

CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    return enqueue("cuLaunchHostFunc", hStream, NULL, fn, userData);
}
