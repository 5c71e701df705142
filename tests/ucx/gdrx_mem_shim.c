/*
 * gdrx_mem_shim.c - TEMPORARY test-only stand-in for libgdrx's
 * gdrx_mem_query() and memory event subscription, built only while libgdrx
 * lacks them (configure: GDRX_HAVE_MEM_EVENTS=0).  It answers from the
 * simulated GPU's control API (simcu_lookup, simcu_set_observer), so the
 * plugin's weak references find it.  Remove once the interception issue
 * lands.  One subscription at a time.
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "gdrx.h"
#include "simcu.h"

static pthread_mutex_t shim_lock = PTHREAD_MUTEX_INITIALIZER;
static gdrx_mem_event_cb_t shim_cb;
static void *shim_arg;
static uint32_t shim_events;
static uint64_t shim_next_id = 1;
static uint64_t shim_sub_id;

int gdrx_mem_query(uint64_t addr, struct gdrx_mem_info *info)
{
    struct simcu_alloc_info a;

    if ((info == NULL) || (simcu_lookup(addr, &a) != 0)) {
        return -ENOENT;
    }
    close(a.memfd);
    info->base      = a.alloc_base;
    info->size      = a.alloc_size;
    info->device    = a.device;
    info->buffer_id = a.buffer_id;
    return 0;
}

static void shim_notify(gdrx_mem_event_type_t type,
                        const struct simcu_alloc_info *a)
{
    struct gdrx_mem_event ev = {type, a->alloc_base, a->alloc_size, a->device};

    /* the callback runs outside the lock: it may take UCX's locks */
    if ((shim_cb != NULL) && (shim_events & type)) {
        shim_cb(&ev, shim_arg);
    }
}

static void shim_alloc(const struct simcu_alloc_info *a, void *arg)
{
    (void)arg;
    shim_notify(GDRX_MEM_EVENT_ALLOC, a);
}

static void shim_free(const struct simcu_alloc_info *a, void *arg)
{
    (void)arg;
    shim_notify(GDRX_MEM_EVENT_FREE, a);
}

int gdrx_mem_events_subscribe(uint32_t events, gdrx_mem_event_cb_t cb,
                              void *arg, gdrx_mem_sub_t *sub_out)
{
    simcu_observer_t obs = {NULL, NULL, shim_alloc, shim_free, NULL};
    int ret;

    if ((cb == NULL) || (events == 0) || (sub_out == NULL) ||
        (events & ~(uint32_t)(GDRX_MEM_EVENT_ALLOC | GDRX_MEM_EVENT_FREE))) {
        return -EINVAL;
    }

    pthread_mutex_lock(&shim_lock);
    if (shim_cb != NULL) {
        pthread_mutex_unlock(&shim_lock);
        return -EBUSY;
    }
    shim_cb     = cb;
    shim_arg    = arg;
    shim_events = events;
    shim_sub_id = shim_next_id++;
    ret         = simcu_set_observer(&obs);
    if (ret != 0) {
        shim_cb = NULL;
    } else {
        sub_out->id = shim_sub_id;
    }
    pthread_mutex_unlock(&shim_lock);
    return ret;
}

int gdrx_mem_events_unsubscribe(gdrx_mem_sub_t sub)
{
    pthread_mutex_lock(&shim_lock);
    if ((shim_cb == NULL) || (sub.id != shim_sub_id)) {
        pthread_mutex_unlock(&shim_lock);
        return -EINVAL;
    }
    simcu_set_observer(NULL);
    shim_cb = NULL;
    pthread_mutex_unlock(&shim_lock);
    return 0;
}
