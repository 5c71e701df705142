/*
 * test_events.h - the event recorder and CUDA helpers shared by the
 * event, unsubscribe and coexistence cases.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef TEST_EVENTS_H
#define TEST_EVENTS_H

#include <cuda.h>
#include <pthread.h>

#include "gdrx.h"

#define EV_LOG_MAX 64

struct event_log {
    pthread_mutex_t       lock;
    int                   n;
    struct gdrx_mem_event ev[EV_LOG_MAX];
    int                   valid[EV_LOG_MAX]; /* the memory was valid in the callback */
};

extern struct event_log ev_log;

/* A gdrx_mem_event_cb_t appending to the event_log at arg. */
void ev_record(const struct gdrx_mem_event *ev, void *arg);
/* cuInit and device 0's primary context, current. */
void ev_cuda_setup(void);
/* Subscribe ev_record(&ev_log) to both types. */
gdrx_mem_sub_t ev_subscribe(void);
CUdeviceptr ev_alloc(size_t size);
/* Free p through free_fn; exactly one FREE event of its allocation. */
void ev_expect_free(CUresult (*free_fn)(CUdeviceptr), CUdeviceptr p);

#endif /* TEST_EVENTS_H */
