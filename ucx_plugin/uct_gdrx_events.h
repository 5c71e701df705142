/*
 * uct_gdrx_events.h - CUDA allocation/free events for UCX: one process-wide
 * bridge from libgdrx's event subscription to UCM's memory-type events.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_EVENTS_H
#define UCT_GDRX_EVENTS_H

#include <stdint.h>


/* Who tells UCX about CUDA frees (one answer per process). */
typedef enum uct_gdrx_events_state {
    UCT_GDRX_EVENTS_OFF         = 0, /**< not started */
    UCT_GDRX_EVENTS_BRIDGED     = 1, /**< gdrx dispatches UCM events */
    UCT_GDRX_EVENTS_UCX_HOOKS   = 2, /**< UCX's libucm_cuda raises events
                                          too; gdrx raises all it sees */
    UCT_GDRX_EVENTS_UNAVAILABLE = 3  /**< nobody: validate cache hits */
} uct_gdrx_events_state_t;

/* BRIDGED and UCX_HOOKS: gdrx's subscription is on, and every rcache hears
 * of frees. */
static inline int uct_gdrx_events_state_hears_frees(uct_gdrx_events_state_t state)
{
    return (state == UCT_GDRX_EVENTS_BRIDGED) ||
           (state == UCT_GDRX_EVENTS_UCX_HOOKS);
}


typedef struct uct_gdrx_events_counters {
    uint64_t alloc_dispatched;
    uint64_t free_dispatched;
    uint64_t existing_marked; /**< mappings marked unknown at the start */
} uct_gdrx_events_counters_t;


/* Take a reference on the bridge (subscribing on the first, unless a kept
 * subscription runs); returns the state,
 * UCT_GDRX_EVENTS_UCX_HOOKS or _BRIDGED meaning that every rcache hears of
 * frees. */
uct_gdrx_events_state_t uct_gdrx_events_get(void);

/* An MD set up with the bridge: from now on the subscription stays for the
 * life of the process (uct_gdrx_events.c says why). */
void uct_gdrx_events_keep(void);

/* Drop the reference (unsubscribing on the last, unless kept). */
void uct_gdrx_events_put(void);

void uct_gdrx_events_counters(uct_gdrx_events_counters_t *counters);

/* CUDA graph launches so far: a graph's memory free nodes free with no FREE
 * event, so whatever trusts events re-checks a cached registration once the
 * count moved since it last checked it (the free runs after its launch, and
 * only a later launch can hand the address out again). */
extern uint64_t uct_gdrx_events_graph_launches;

static inline uint64_t uct_gdrx_events_graph_epoch(void)
{
    return __atomic_load_n(&uct_gdrx_events_graph_launches, __ATOMIC_ACQUIRE);
}

/* 1 if libgdrx hooked every free entry point of the loaded libcuda, so that
 * it revokes its pins when CUDA frees (whoever raises UCX's events). */
int uct_gdrx_events_gdrx_revokes(void);

const char *uct_gdrx_events_state_name(uct_gdrx_events_state_t state);

#endif
