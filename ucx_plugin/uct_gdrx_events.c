/*
 * uct_gdrx_events.c - feeds UCX's memory-type cache and every registration
 * cache (gdrx's and UCP's) from libgdrx's CUDA allocation and free events.
 * On a UCX without CUDA hooks of its own (libucm_cuda) gdrx raises both.
 * Where UCX has them, it raises the allocations itself, but gdrx still
 * raises every free it sees: UCX's hooks miss frees that gdrx's catch
 * (cuCtxDestroy, cuDevicePrimaryCtxReset and cuIpcCloseMemHandle in every
 * release; cuMemFreeAsync and cuMemUnmap before 1.15), and a free nobody
 * raises leaves a memory-type cache entry and rcache regions naming memory
 * that is gone.  A free UCX also raises is then raised twice.
 *
 * gdrx's FREE comes after the driver freed the memory, so an allocation at
 * the same address may come first: UCX's hooks raise its ALLOC, gdrx's
 * late FREE then removes that entry too, and UCP takes the new device
 * buffer for host memory (a crash in ucp_dt_pack).  A removed rcache
 * region only costs a registration; a removed memory-type entry is a wrong
 * answer.  So gdrx raises every allocation in both cases, UCX's included:
 * libgdrx raises an ALLOC only after every FREE of its range that began
 * before it (release_order.h) and before the allocating call returns, so
 * the last word on an address is always the newest allocation's, whoever
 * raised what before (test_memtype_race).  An ALLOC UCX also raised is
 * raised twice: it writes the same entry again.  Graph launches, which
 * neither sees otherwise, are counted in both cases
 * (uct_gdrx_events_graph_epoch).
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_events.h"
#include "uct_gdrx_compat.h"
#include "../libgdr/src/ipoint.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <gdrx.h>
#include <ucm/api/ucm.h>
#include <ucm/event/event.h>
#include <ucs/debug/log.h>
#include <ucs/memory/memtype_cache.h>
#include <ucs/sys/compiler_def.h>


static pthread_mutex_t uct_gdrx_events_lock = PTHREAD_MUTEX_INITIALIZER;
static uct_gdrx_events_state_t uct_gdrx_events_state = UCT_GDRX_EVENTS_OFF;
static unsigned uct_gdrx_events_refcount;
static int uct_gdrx_events_kept; /* the subscription stays: see _keep */
static gdrx_mem_sub_t uct_gdrx_events_sub;
static uct_gdrx_events_counters_t uct_gdrx_events_count;

uint64_t uct_gdrx_events_graph_launches;


/* A memory-type event to UCM's handlers, as UCX's own CUDA hooks raise it:
 * inside ucm_event_enter, so that no handler is added or removed meanwhile */
static void uct_gdrx_events_dispatch(ucm_event_type_t type, uintptr_t address,
                                     size_t size, ucs_memory_type_t mem_type)
{
    ucm_event_t ucm_event;

    ucm_event.mem_type.address  = (void*)address;
    ucm_event.mem_type.size     = size;
    ucm_event.mem_type.mem_type = mem_type;
    UCT_GDRX_UCM_MEM_EVENT_ATTRS(&ucm_event);
    ucm_event_enter();
    ucm_event_dispatch(type, &ucm_event);
    ucm_event_leave();
}

static void uct_gdrx_events_cb(const struct gdrx_mem_event *event, void *arg)
{
    ucm_event_type_t type;

    if (event->type == GDRX_MEM_EVENT_GRAPH_LAUNCH) {
        /* its free nodes free unseen: caches re-check at their next hit */
        __atomic_fetch_add(&uct_gdrx_events_graph_launches, 1,
                           __ATOMIC_RELEASE);
        return;
    }

    if (event->type == GDRX_MEM_EVENT_ALLOC) {
        /* the window of the top of the file: the driver has allocated,
         * earlier FREEs of the range are out */
        GDRX_IPOINT("uct_gdrx.events.alloc");
        type = UCM_EVENT_MEM_TYPE_ALLOC;
        __atomic_fetch_add(&uct_gdrx_events_count.alloc_dispatched, 1,
                           __ATOMIC_RELAXED);
    } else {
        /* the driver has freed; another thread may allocate there now */
        GDRX_IPOINT("uct_gdrx.events.free");
        type = UCM_EVENT_MEM_TYPE_FREE;
        __atomic_fetch_add(&uct_gdrx_events_count.free_dispatched, 1,
                           __ATOMIC_RELAXED);
    }

    uct_gdrx_events_dispatch(type, event->base, event->size,
                             UCS_MEMORY_TYPE_CUDA);
}

static void uct_gdrx_events_noop(ucm_event_type_t type, ucm_event_t *event,
                                 void *arg)
{
}

/* UCM loads its memory-type modules (libucm_cuda) when a handler for those
 * events is first installed.  UCX raises CUDA events itself only if the
 * module is there (UCX built with CUDA) and could install its hooks (it
 * fails, for one, on a libcuda it cannot patch), and only if libcuda was
 * loaded to be patched: the MD sets up events before its gdrx_open, which
 * may be what loads libcuda. */
static int uct_gdrx_events_ucx_has_cuda_hooks(void)
{
    ucs_status_t status;
    void *handle;

    handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (handle == NULL) {
        return 0;
    }
    dlclose(handle);

    status = ucm_set_event_handler(UCM_EVENT_MEM_TYPE_FREE, 0,
                                   uct_gdrx_events_noop, NULL);
    if (status == UCS_OK) {
        ucm_unset_event_handler(UCM_EVENT_MEM_TYPE_FREE, uct_gdrx_events_noop,
                                NULL);
    }

    handle = dlopen("libucm_cuda.so.0", RTLD_LAZY | RTLD_NOLOAD);
    if (handle == NULL) {
        return 0;
    }

    dlclose(handle);
    if (status != UCS_OK) {
        ucs_debug("gdrx: UCX's CUDA hooks failed to install (%s)",
                  ucs_status_string(status));
    }
    return status == UCS_OK;
}

/* UCX creates its memory-type cache at the first lookup, and only from then
 * on hears of allocations: create it now, or buffers allocated before the
 * first send would pass for host memory. */
static void uct_gdrx_events_create_memtype_cache(void)
{
    ucs_memory_info_t info;
    int probe;

    (void)ucs_memtype_cache_lookup(&probe, sizeof(probe), &info);
}

/* Allocations made before the bridge: UCX's memory-type cache has no entry
 * for them, and UCP takes a miss for host memory (then copies device memory
 * with the CPU).  As UCX's own CUDA module does when a cache starts, mark
 * every mapping that may hold device memory (no access rights, or a
 * /dev/nvidia* file) of unknown type: UCP then asks the MDs, and gdrx's
 * memory query answers for those buffers.  Host memory there (a malloc
 * arena's reserve made accessible later, pinned host memory) is only
 * looked up the slow way: the MDs find it is host memory.  At each start
 * of the bridge (under uct_gdrx_events_lock): once an MD has served with
 * it, the bridge stays and every later allocation raises its event. */
static void uct_gdrx_events_mark_existing(void)
{
    char line[4096 + 256], perms[8], path[4096];
    unsigned long start, end;
    unsigned long marked = 0;
    int whole = 1, at_start;
    FILE *maps;

    maps = fopen("/proc/self/maps", "r");
    if (maps == NULL) {
        ucs_debug("gdrx: cannot read /proc/self/maps (%m): buffers allocated "
                  "before gdrx's first use pass for host memory unless "
                  "UCX_MEMTYPE_CACHE=n");
        return;
    }
    while (fgets(line, sizeof(line), maps) != NULL) {
        at_start = whole; /* a line longer than the buffer goes on here */
        whole    = (strchr(line, '\n') != NULL);
        path[0]  = '\0';
        if (!at_start ||
            (sscanf(line, "%lx-%lx %7s %*s %*s %*s %4095s", &start, &end,
                    perms, path) < 3) ||
            ((strncmp(perms, "---", 3) != 0) &&
             (strncmp(path, "/dev/nvidia", 11) != 0))) {
            continue;
        }
        uct_gdrx_events_dispatch(UCM_EVENT_MEM_TYPE_ALLOC, start, end - start,
                                 UCS_MEMORY_TYPE_UNKNOWN);
        ++marked;
    }
    fclose(maps);
    __atomic_store_n(&uct_gdrx_events_count.existing_marked, marked,
                     __ATOMIC_RELAXED);
    ucs_debug("gdrx: %lu mappings that may hold device memory marked unknown "
              "in UCX's memory-type cache", marked);
}

static uct_gdrx_events_state_t uct_gdrx_events_start(void)
{
    int ucx_hooks = uct_gdrx_events_ucx_has_cuda_hooks();
    uint32_t mask;
    int ret;

    /* Everything in every case (see the top of the file: allocations also
     * where UCX raises them, after gdrx's late FREEs; neither UCX's hooks
     * nor gdrx's see a graph's free nodes, only the launch that runs
     * them). */
    mask = GDRX_MEM_EVENT_GRAPH_LAUNCH | GDRX_MEM_EVENT_FREE |
           GDRX_MEM_EVENT_ALLOC;
    ret = gdrx_mem_events_subscribe(mask, uct_gdrx_events_cb, NULL,
                                    &uct_gdrx_events_sub);
    if (ret != 0) {
        ucs_debug("gdrx: no CUDA memory events (%s): cache hits are checked "
                  "against the allocation's buffer id", gdrx_strerror(ret));
        return UCT_GDRX_EVENTS_UNAVAILABLE;
    }

    if (ucx_hooks) {
        return UCT_GDRX_EVENTS_UCX_HOOKS;
    }

    uct_gdrx_events_create_memtype_cache();
    uct_gdrx_events_mark_existing();
    return UCT_GDRX_EVENTS_BRIDGED;
}

uct_gdrx_events_state_t uct_gdrx_events_get(void)
{
    uct_gdrx_events_state_t state;

    pthread_mutex_lock(&uct_gdrx_events_lock);
    if ((uct_gdrx_events_refcount++ == 0) &&
        !uct_gdrx_events_state_hears_frees(uct_gdrx_events_state)) {
        uct_gdrx_events_state = uct_gdrx_events_start();
        ucs_debug("gdrx: CUDA memory events: %s",
                  uct_gdrx_events_state_name(uct_gdrx_events_state));
    }
    state = uct_gdrx_events_state;
    pthread_mutex_unlock(&uct_gdrx_events_lock);
    return state;
}

/* Once an MD has served with the bridge (uct_gdrx_events_keep), the
 * subscription stays when the last MD lets go: UCX's memory-type cache and
 * UCP's registration caches belong to the process and outlive a UCP
 * context, and what CUDA allocated or freed while no gdrx MD was open would
 * otherwise reach them by no event (an allocation there passed for host
 * memory in the next context: test_ucp_lifetime's
 * test_alloc_between_inits).  An MD that stepped aside keeps nothing
 * running. */
void uct_gdrx_events_keep(void)
{
    pthread_mutex_lock(&uct_gdrx_events_lock);
    if (uct_gdrx_events_state_hears_frees(uct_gdrx_events_state)) {
        uct_gdrx_events_kept = 1;
    }
    pthread_mutex_unlock(&uct_gdrx_events_lock);
}

void uct_gdrx_events_put(void)
{
    int ret;

    pthread_mutex_lock(&uct_gdrx_events_lock);
    if ((--uct_gdrx_events_refcount == 0) && !uct_gdrx_events_kept) {
        if (uct_gdrx_events_state_hears_frees(uct_gdrx_events_state)) {
            ret = gdrx_mem_events_unsubscribe(uct_gdrx_events_sub);
            if (ret != 0) {
                ucs_warn("gdrx: ending the CUDA event subscription failed: "
                         "%s", gdrx_strerror(ret));
            }
        }
        uct_gdrx_events_state = UCT_GDRX_EVENTS_OFF;
    }
    pthread_mutex_unlock(&uct_gdrx_events_lock);
}

void uct_gdrx_events_counters(uct_gdrx_events_counters_t *counters)
{
    counters->alloc_dispatched = __atomic_load_n(
            &uct_gdrx_events_count.alloc_dispatched, __ATOMIC_RELAXED);
    counters->free_dispatched  = __atomic_load_n(
            &uct_gdrx_events_count.free_dispatched, __ATOMIC_RELAXED);
    counters->existing_marked  = __atomic_load_n(
            &uct_gdrx_events_count.existing_marked, __ATOMIC_RELAXED);
}

int uct_gdrx_events_gdrx_revokes(void)
{
    const char *name;
    unsigned i;
    int result;

    /* every free entry point this libcuda has must be hooked */
    for (i = 0; gdrx_mem_events_hook(i, &name, &result) == 0; ++i) {
        if ((result != 0) && (result != -ENOENT)) {
            return 0;
        }
    }
    return i > 0;
}

const char *uct_gdrx_events_state_name(uct_gdrx_events_state_t state)
{
    switch (state) {
    case UCT_GDRX_EVENTS_OFF:
        return "off";
    case UCT_GDRX_EVENTS_BRIDGED:
        return "bridged";
    case UCT_GDRX_EVENTS_UCX_HOOKS:
        return "ucx-hooks";
    case UCT_GDRX_EVENTS_UNAVAILABLE:
        return "unavailable";
    }
    return "?";
}
