/*
 * mem_events.h - the subscribers of CUDA memory events (gdrx.h's
 * gdrx_mem_events_*), fed by the hooks through one dispatch function.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_MEM_EVENTS_H
#define GDRX_MEM_EVENTS_H

#include "gdrx.h"

struct gdrx_cuda_hooks_release;

/* One event, in the thread that caused it: every subscriber whose mask
 * has the type.  A FREE comes after the driver freed the memory and the
 * core revoked its pins (below). */
void gdrx_mem_events_dispatch(const struct gdrx_mem_event *ev);

/* 1 while some subscription is live (they want events from now on). */
int gdrx_mem_events_subscribed(void);

/* Around a hooked CUDA call that may release memory (the hooks'
 * release_begin/release_end): the core holds the pins of what it releases
 * over the call and revokes them only if released.  A whole context (a
 * primary context reset, a context destroyed) then gets a FREE event for
 * each pinned allocation it owned; allocations nobody pinned are not
 * known, so not reported. */
void *gdrx_mem_events_release_begin(const struct gdrx_cuda_hooks_release *what);
void gdrx_mem_events_release_end(void *token, const struct gdrx_cuda_hooks_release *what,
                                 int released);

/* The fork handlers (fork.c) hold the subscription table's lock across
 * fork. */
void gdrx_mem_events_fork_lock(void);
void gdrx_mem_events_fork_unlock(void);

#endif /* GDRX_MEM_EVENTS_H */
