/*
 * mem_events.c - gdrx_mem_events_subscribe/unsubscribe and the dispatch
 * of each event to the subscribers.
 *
 * SPDX-License-Identifier: MIT
 *
 * A fixed table of subscriptions.  Dispatch takes no lock: it announces
 * itself in the slot's `active` count, then checks the slot still holds
 * the subscription it saw; unsubscribe withdraws the id first, then waits
 * for `active` to drain, so once it returns no call of that callback is
 * running or can start.  Subscribe and unsubscribe serialise on a mutex
 * that dispatch never takes.
 */
#include "mem_events.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "core.h"
#include "export.h"
#include "fork_defer.h"
#include "free_hook.h"
#include "hooks/cuda_hooks.h"
#include "ipoint.h"
#include "release_order.h"

#define MAX_SUBS 32
#define SLOT_BITS 8 /* an id is (generation << SLOT_BITS) | slot */

struct sub_slot {
    _Atomic uint64_t    live_id;  /* 0: no subscription */
    atomic_int          active;   /* dispatchers inside this slot */
    uint32_t            mask;     /* the fields below are written before */
    gdrx_mem_event_cb_t cb;       /* live_id is published and read after */
    void               *arg;      /* it is seen */
};

static struct sub_slot subs[MAX_SUBS];
static pthread_mutex_t sub_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t next_generation = 1; /* under sub_lock */
static atomic_int nlive;             /* lets dispatch skip the table */

/* Set while this thread runs a subscriber's callback. */
static _Thread_local bool in_callback;

#define ALL_EVENTS (GDRX_MEM_EVENT_ALLOC | GDRX_MEM_EVENT_FREE | GDRX_MEM_EVENT_GRAPH_LAUNCH)

static void call_slot(struct sub_slot *s, const struct gdrx_mem_event *ev)
{
    uint64_t id = atomic_load(&s->live_id);

    if (!id)
        return;
    atomic_fetch_add(&s->active, 1);
    if (atomic_load(&s->live_id) == id && (s->mask & (uint32_t)ev->type)) {
        in_callback = true;
        s->cb(ev, s->arg);
        in_callback = false;
    }
    atomic_fetch_sub(&s->active, 1);
}

int gdrx_mem_events_subscribed(void)
{
    return atomic_load_explicit(&nlive, memory_order_acquire) > 0;
}

/* The hooks' events: to the subscribers only (the core revokes in
 * gdrx_mem_events_release_end, before a FREE event is raised). */
void gdrx_mem_events_dispatch(const struct gdrx_mem_event *ev)
{
    if (atomic_load_explicit(&nlive, memory_order_acquire) == 0)
        return;
    if (ev->type == GDRX_MEM_EVENT_ALLOC) {
        /* The driver has allocated; a free of the range may still be
         * raising its FREE (the wait below orders this ALLOC after it). */
        GDRX_IPOINT("mem_events.alloc");
        gdrx_release_order_wait(ev->base, ev->base + (ev->size ? ev->size : 1));
    }
    for (int i = 0; i < MAX_SUBS; i++)
        call_slot(&subs[i], ev);
}

static void context_freed(uint64_t base, size_t size, int device)
{
    struct gdrx_mem_event ev = { .type = GDRX_MEM_EVENT_FREE, .base = base, .size = size,
                                 .device = device };

    gdrx_mem_events_dispatch(&ev);
}

/* A hooked call in progress that may release memory. */
struct release_token {
    struct gdrx_core_release *core;  /* the pins held */
    int                       order; /* release_order.h's handle, or -1 */
};

/* Static: nothing to allocate in a free's path; a token per thread and
 * hook (hooks do not nest on a thread). */
static _Thread_local struct release_token token_of_thread;

void *gdrx_mem_events_release_begin(const struct gdrx_cuda_hooks_release *what)
{
    struct release_token *t = &token_of_thread;
    uint64_t lo = what->base, hi = what->base + (what->size ? what->size : 1);

    switch (what->kind) {
    case GDRX_RELEASE_RANGE:
        t->core = gdrx_core_release_begin(what->base, what->size, -1, NULL);
        break;
    case GDRX_RELEASE_PRIMARY_CTX:
        t->core = what->device >= 0 ? gdrx_core_release_begin(0, 0, what->device, NULL) : NULL;
        break;
    case GDRX_RELEASE_GRAPH_LAUNCH:
        t->core = gdrx_core_release_begin_launch();
        break;
    default:
        t->core = what->ctx ? gdrx_core_release_begin(0, 0, -1, what->ctx) : NULL;
        break;
    }
    /* A context's FREE events are those of its pinned allocations.  A
     * launch raises none: it may free none of them (its pins go because it
     * might), and a FREE of live memory would drop a subscriber's entry of
     * it; GRAPH_LAUNCH tells them to re-check instead. */
    bool launch = what->kind == GDRX_RELEASE_GRAPH_LAUNCH;
    bool events = !launch && (what->kind == GDRX_RELEASE_RANGE ||
                              gdrx_core_release_hull(t->core, &lo, &hi));
    if (hi < lo)
        hi = UINT64_MAX;
    t->order = events && gdrx_mem_events_subscribed() ? gdrx_release_order_begin(lo, hi) : -1;
    /* The pins are held, the driver's call comes next: a copy started now
     * must wait, whatever the driver answers (test_free_hold). */
    GDRX_IPOINT("mem_events.held");
    return t;
}

/* After the driver's call: the core revokes what it held if released,
 * then the subscribers hear FREE (a range: one event; a context: one per
 * pinned allocation), then allocations of the range are reported again. */
void gdrx_mem_events_release_end(void *token, const struct gdrx_cuda_hooks_release *what,
                                 int released)
{
    struct release_token *t = token;
    bool range = what->kind == GDRX_RELEASE_RANGE;

    /* The driver freed; the pins are still held (copies wait) until the
     * core revokes them below, which takes the fork-held locks (issue 43,
     * defect 8). */
    GDRX_IPOINT("mem_events.after_driver_free");
    bool launch = what->kind == GDRX_RELEASE_GRAPH_LAUNCH;

    /* The driver has released: another thread may allocate there now. */
    GDRX_IPOINT("mem_events.freed");
    gdrx_core_release_end(t->core, released, range || launch ? NULL : context_freed);
    if (released && range) {
        struct gdrx_mem_event ev = { .type = GDRX_MEM_EVENT_FREE, .base = what->base,
                                     .size = what->size, .device = what->device };
        gdrx_mem_events_dispatch(&ev);
    }
    gdrx_release_order_end(t->order);
}

GDRX_EXPORT int gdrx_mem_events_subscribe(uint32_t events, gdrx_mem_event_cb_t cb, void *arg,
                                          gdrx_mem_sub_t *sub_out)
{
    if (gdrx_fork_refuse(__func__))
        return -EDEADLK;
    if (!cb || !sub_out || events == 0 || (events & ~(uint32_t)ALL_EVENTS))
        return -EINVAL;
    /* libcuda not loaded yet (-ENOENT): there is nothing to see yet; the
     * hooks come with gdrx_open or the next subscription.  Any other
     * failure means no interception here. */
    int rc = gdrx_fork_guard_enable(); /* before the hooks' lock exists for fork */
    if (rc)
        return rc;
    rc = gdrx_free_hook_enable();
    if (rc && rc != -ENOENT)
        return -ENOSYS;

    gdrx_mutex_lock(&sub_lock, GDRX_LOCK_SUBSCRIBERS);
    for (int i = 0; i < MAX_SUBS; i++) {
        struct sub_slot *s = &subs[i];
        if (atomic_load(&s->live_id) || atomic_load(&s->active))
            continue;
        s->mask = events;
        s->cb = cb;
        s->arg = arg;
        uint64_t id = (next_generation++ << SLOT_BITS) | (uint64_t)i;
        atomic_store(&s->live_id, id);
        atomic_fetch_add_explicit(&nlive, 1, memory_order_release);
        gdrx_mutex_unlock(&sub_lock, GDRX_LOCK_SUBSCRIBERS);
        sub_out->id = id;
        return 0;
    }
    gdrx_mutex_unlock(&sub_lock, GDRX_LOCK_SUBSCRIBERS);
    return -ENOSPC;
}

GDRX_EXPORT int gdrx_mem_events_unsubscribe(gdrx_mem_sub_t sub)
{
    if (gdrx_fork_refuse(__func__))
        return -EDEADLK;
    uint64_t slot = sub.id & ((1u << SLOT_BITS) - 1);

    if (sub.id == 0 || slot >= MAX_SUBS)
        return -EINVAL;
    if (in_callback)
        return -EDEADLK;
    struct sub_slot *s = &subs[slot];
    gdrx_mutex_lock(&sub_lock, GDRX_LOCK_SUBSCRIBERS);
    uint64_t expected = sub.id;
    bool ended = atomic_compare_exchange_strong(&s->live_id, &expected, 0);
    if (ended)
        atomic_fetch_sub(&nlive, 1);
    gdrx_mutex_unlock(&sub_lock, GDRX_LOCK_SUBSCRIBERS);
    if (!ended)
        return -EINVAL;
    /* Callbacks already past their check finish; none starts any more. */
    while (atomic_load(&s->active))
        sched_yield();
    return 0;
}

void gdrx_mem_events_fork_lock(void)
{
    gdrx_mutex_lock(&sub_lock, GDRX_LOCK_SUBSCRIBERS);
    gdrx_release_order_fork_lock();
}

void gdrx_mem_events_fork_unlock(void)
{
    gdrx_release_order_fork_unlock();
    gdrx_mutex_unlock(&sub_lock, GDRX_LOCK_SUBSCRIBERS);
}
