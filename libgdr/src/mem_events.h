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

#endif /* GDRX_MEM_EVENTS_H */
