/*
 * uct_gdrx_libgdrx.h - libgdrx's CUDA memory query and event subscription,
 * as the plugin calls them.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_LIBGDRX_H
#define UCT_GDRX_LIBGDRX_H

#include <errno.h>
#include <gdrx.h>

/*
 * TEMPORARY, until libgdrx implements gdrx_mem_query() and the event
 * subscription (interception issue): configure found no definition, so the
 * plugin references them weakly and reports -ENOSYS while nothing provides
 * them.  Nothing here pretends to work: without them gdrx detects no CUDA
 * memory and hears of no frees.  Tests preload a simulated implementation.
 */
#if !GDRX_HAVE_MEM_EVENTS
#  pragma weak gdrx_mem_query
#  pragma weak gdrx_mem_events_subscribe
#  pragma weak gdrx_mem_events_unsubscribe
#  define UCT_GDRX_LIB_HAS(_func) ((_func) != NULL)
#else
#  define UCT_GDRX_LIB_HAS(_func) 1
#endif


static inline int uct_gdrx_lib_mem_query(uint64_t addr,
                                         struct gdrx_mem_info *info)
{
    return UCT_GDRX_LIB_HAS(gdrx_mem_query) ? gdrx_mem_query(addr, info) :
                                              -ENOSYS;
}

static inline int uct_gdrx_lib_events_subscribe(uint32_t events,
                                                gdrx_mem_event_cb_t cb,
                                                void *arg,
                                                gdrx_mem_sub_t *sub_out)
{
    return UCT_GDRX_LIB_HAS(gdrx_mem_events_subscribe) ?
           gdrx_mem_events_subscribe(events, cb, arg, sub_out) : -ENOSYS;
}

static inline int uct_gdrx_lib_events_unsubscribe(gdrx_mem_sub_t sub)
{
    return UCT_GDRX_LIB_HAS(gdrx_mem_events_unsubscribe) ?
           gdrx_mem_events_unsubscribe(sub) : -ENOSYS;
}

#endif
