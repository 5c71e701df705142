/*
 * mem_events.h - the subscribers of CUDA memory events (gdrx.h's
 * gdrx_mem_events_*), fed by the hooks through one dispatch function.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_MEM_EVENTS_H
#define GDRX_MEM_EVENTS_H

#include "gdrx.h"

/* One event, in the thread that caused it: the core's revocation first
 * (FREE), then every subscriber whose mask has the type. */
void gdrx_mem_events_dispatch(const struct gdrx_mem_event *ev);

/* 1 while some subscription is live (they want events from now on). */
int gdrx_mem_events_subscribed(void);

/* A whole context goes (a primary context reset of device, or, with
 * device < 0, ctx destroyed): a FREE event for each pinned allocation it
 * owns.  Allocations nobody pinned are not known, so not reported. */
void gdrx_mem_events_context_released(int device, void *ctx);

/* The fork handlers (fork.c) hold the subscription table's lock across
 * fork. */
void gdrx_mem_events_fork_lock(void);
void gdrx_mem_events_fork_unlock(void);

#endif /* GDRX_MEM_EVENTS_H */
