/*
 * uct_gdrx_md.c - the gdrx memory domain and its component: configuration,
 * capabilities, the MD's operations (registrations: uct_gdrx_md_reg.c),
 * remote keys and memory-type detection.
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_md.h"
#include "uct_gdrx_alloc.h"
#include "uct_gdrx_cuda.h"
#include "uct_gdrx_events.h"
#include "uct_gdrx_gpu.h"
#include "uct_gdrx_md_reg.h"
#include "uct_gdrx_md_setup.h"
#include "uct_gdrx_mem.h"
#include "uct_gdrx_stats.h"
#include "uct_gdrx_version.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucm/event/event.h>
#include "../libgdr/src/ipoint.h"
#include <ucs/memory/memtype_cache.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/type/class.h>


/* Defaults of UCX_GDRX_RCACHE_MAX_REGIONS / _MAX_SIZE: the least-recently
 * used unused regions are unpinned past either. */
#define UCT_GDRX_RCACHE_MAX_REGIONS "4096"
#define UCT_GDRX_RCACHE_MAX_SIZE    "4g"


static const char *uct_gdrx_backend_names[] = {
    [GDRX_BACKEND_AUTO]   = "auto",
    [GDRX_BACKEND_GDRDRV] = "gdrdrv",
    [GDRX_BACKEND_NVRM]   = "nvrm",
    [GDRX_BACKEND_DMABUF] = "dmabuf",
    NULL
};

static ucs_config_field_t uct_gdrx_md_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gdrx_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"BACKEND", "auto",
     "How libgdrx pins and maps GPU memory: auto, gdrdrv, nvrm or dmabuf\n"
     "(GDRX_BACKEND in the environment overrides auto).",
     ucs_offsetof(uct_gdrx_md_config_t, backend),
     UCS_CONFIG_TYPE_ENUM(uct_gdrx_backend_names)},

    {"RCACHE", "try", "Keep registrations in a registration cache.",
     ucs_offsetof(uct_gdrx_md_config_t, enable_rcache),
     UCS_CONFIG_TYPE_TERNARY},

    /* bounded by default: each pin holds BAR space and a mapping of the
     * process (the kernel's map count is limited) */
    {"", "RCACHE_MAX_REGIONS=" UCT_GDRX_RCACHE_MAX_REGIONS ";"
     "RCACHE_MAX_SIZE=" UCT_GDRX_RCACHE_MAX_SIZE, NULL,
     ucs_offsetof(uct_gdrx_md_config_t, rcache),
     UCS_CONFIG_TYPE_TABLE(UCT_GDRX_RCACHE_CONFIG_TABLE)},

    {"REG_WINDOW", "16m",
     "Device memory is registered by whole CUDA allocation, so that messages\n"
     "at any offset of a buffer share one pin; allocations larger than this\n"
     "(a power of two, at least 64k) by windows of this size, aligned;\n"
     "inf: whole allocations always.",
     ucs_offsetof(uct_gdrx_md_config_t, reg_window),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"MEM_EVENTS", "y",
     "Use CUDA allocation and free events: UCX's own CUDA hooks where it has\n"
     "them, else gdrx's (through libgdrx), which feed UCX's memory-type cache\n"
     "and invalidate every registration cache. With n nothing is installed:\n"
     "UCX then needs UCX_MEMTYPE_CACHE=n and UCX_RCACHE_ENABLE=n (UCP's own\n"
     "registration cache), and every gdrx cache hit is checked against the\n"
     "allocation's buffer id.",
     ucs_offsetof(uct_gdrx_md_config_t, mem_events), UCS_CONFIG_TYPE_BOOL},

    {"DETECT_MEM_TYPES", "y",
     "Report CUDA memory to UCX's memory type detection.",
     ucs_offsetof(uct_gdrx_md_config_t, detect), UCS_CONFIG_TYPE_BOOL},

    {"STATS_DUMP", "n",
     "Print gdrx's operation and registration counters when an interface or\n"
     "memory domain closes: n, y (to stderr), or a file name to append to.",
     ucs_offsetof(uct_gdrx_md_config_t, stats_dump), UCS_CONFIG_TYPE_STRING},

    {"MEM_REG_OVERHEAD", "10us",
     "Cost of one registration without the cache (pin and map).",
     ucs_offsetof(uct_gdrx_md_config_t, uc_reg_cost.c), UCS_CONFIG_TYPE_TIME},

    {"MEM_REG_GROWTH", "0.06ns",
     "Registration cost per byte without the cache.",
     ucs_offsetof(uct_gdrx_md_config_t, uc_reg_cost.m), UCS_CONFIG_TYPE_TIME},

    {NULL}
};


/* Registrations go through a cache (or will, once it is made): UCP may
 * count them as free. */
static int uct_gdrx_md_cached(uct_gdrx_md_t *md)
{
    if (md->setup.enable_rcache == UCS_NO) {
        return 0;
    }
    return (__atomic_load_n(&md->state, __ATOMIC_ACQUIRE) !=
            UCT_GDRX_MD_STATE_READY) || (md->rcache != NULL);
}

static ucs_status_t uct_gdrx_md_query(uct_md_h tl_md, uct_gdrx_md_attr_t *attr)
{
    uct_gdrx_md_t *md = ucs_derived_of(tl_md, uct_gdrx_md_t);

    uct_gdrx_md_attr_base(attr);
    /* zcopy needs the local memh: its buffer may be GPU memory.  No
     * NEED_RKEY: keys are same-process only, and without one UCP skips a
     * registration and key round trip per memtype copy (the endpoint finds
     * the mapping by address); UCX 1.13's rendezvous pipelines even pass
     * no key at all. */
    UCT_GDRX_MD_CAP(attr, flags)            = UCT_MD_FLAG_REG |
                                              UCT_MD_FLAG_NEED_MEMH;
    /* Host registration is a no-op the memtype endpoint requires. */
    UCT_GDRX_MD_CAP(attr, reg_mem_types)    = UCS_BIT(UCS_MEMORY_TYPE_HOST) |
                                              UCS_BIT(UCS_MEMORY_TYPE_CUDA);
    /* A UCX without CUDA has no other way to allocate CUDA memory.  UCT
     * asks again at each allocation and takes the first MD that offers it:
     * standing aside, leave it to another (cuda_copy) or to none. */
    if (uct_gdrx_md_is_aside(md)) {
        UCT_GDRX_MD_CAP(attr, alloc_mem_types) = 0;
    } else {
        UCT_GDRX_MD_CAP(attr, flags)          |= UCT_MD_FLAG_ALLOC;
        UCT_GDRX_MD_CAP(attr, alloc_mem_types) = UCS_BIT(UCS_MEMORY_TYPE_CUDA);
    }
    UCT_GDRX_MD_CAP(attr, access_mem_types) = UCS_BIT(UCS_MEMORY_TYPE_CUDA);
    UCT_GDRX_MD_CAP(attr, detect_mem_types) = md->detect ?
                                              UCS_BIT(UCS_MEMORY_TYPE_CUDA) : 0;
    UCT_GDRX_MD_CAP(attr, max_alloc)        = ULONG_MAX;
    UCT_GDRX_MD_CAP(attr, max_reg)          = ULONG_MAX;
    attr->rkey_packed_size                  = sizeof(uct_gdrx_key_t);
    attr->reg_cost                          = uct_gdrx_md_cached(md) ?
                                              ucs_linear_func_make(0, 0) :
                                              md->reg_cost;
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    return UCS_OK;
}

static ucs_status_t uct_gdrx_md_mem_reg(uct_md_h tl_md, void *address,
                                        size_t length, UCT_GDRX_MEM_REG_ARGS,
                                        uct_mem_h *memh_p)
{
    return uct_gdrx_md_reg(ucs_derived_of(tl_md, uct_gdrx_md_t), address,
                           length, UCT_GDRX_MEM_REG_FLAGS, memh_p);
}

static ucs_status_t uct_gdrx_md_mem_dereg(uct_md_h tl_md,
                                          const uct_md_mem_dereg_params_t *params)
{
    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);

    return uct_gdrx_md_dereg(ucs_derived_of(tl_md, uct_gdrx_md_t),
                             params->memh);
}

static ucs_status_t uct_gdrx_md_mkey_pack(UCT_GDRX_MKEY_PACK_ARGS)
{
    uct_gdrx_mem_pack_key(memh, rkey_buffer);
    return UCS_OK;
}

static ucs_status_t uct_gdrx_rkey_unpack(UCT_GDRX_RKEY_UNPACK_ARGS)
{
    uct_gdrx_key_t *key;

    key = ucs_malloc(sizeof(*key), "uct_gdrx_key_t");
    if (key == NULL) {
        ucs_error("gdrx: failed to allocate a remote key");
        return UCS_ERR_NO_MEMORY;
    }

    memcpy(key, rkey_buffer, sizeof(*key));
    *handle_p = NULL;
    *rkey_p   = (uintptr_t)key;
    return UCS_OK;
}

static ucs_status_t uct_gdrx_rkey_release(uct_component_t *component,
                                          uct_rkey_t rkey, void *handle)
{
    ucs_free((void*)rkey);
    return UCS_OK;
}

/* What a memory query found, into UCX's memory-type cache, only if it is
 * still that allocation (checked just before the write).  Nothing is ever
 * removed here: a removal after the fact (as before) took the entry of an
 * allocation that replaced the freed one at that address with it, and
 * with UCX_MEMTYPE_CACHE=n it ran on a cache that does not exist
 * (ucs_memtype_cache_remove does not check, unlike _update).
 * No lock of UCM's is taken around check and write: the query and the
 * cache's own allocations run libcuda and malloc, whose hooks take UCM's
 * event lock for reading, and with it held for writing UCX aborted the
 * process ("pthread_rwlock_rdlock() failed: Resource deadlock avoided",
 * UCX 1.23).  A free between the check and the write leaves an entry
 * whose extent outlived its allocation: UCP's registration of such an
 * extent is served per access (spans, uct_gdrx_mem.c), never refused. */
static void uct_gdrx_md_memtype_cache_write(const struct gdrx_mem_info *info)
{
    struct gdrx_mem_info now;

    if (!UCT_GDRX_MEMTYPE_CACHE_WRITES) {
        return; /* this UCX keeps what the events wrote */
    }
    /* the allocation was queried; it may be freed and replaced now */
    GDRX_IPOINT("uct_gdrx.md.memtype_write");
    if ((gdrx_mem_query(info->base, &now) == 0) &&
        (now.buffer_id == info->buffer_id)) {
        uct_gdrx_memtype_cache_update((void*)(uintptr_t)info->base,
                                      info->size,
                                      UCT_GDRX_MEMTYPE_CACHE_SYS_DEV(
                                              info->device));
    }
}

static ucs_status_t uct_gdrx_md_mem_query(uct_md_h tl_md, const void *address,
                                          size_t length,
                                          uct_gdrx_mem_attr_t *mem_attr)
{
    uct_gdrx_md_t *md = ucs_derived_of(tl_md, uct_gdrx_md_t);
    struct gdrx_mem_info info;
    ucs_status_t status;
    int ret;

    /* UCX may cache what is found here: the free events must be on.
     * Standing aside, claim nothing: another MD's detection answers, or
     * UCP takes the memory for host memory, as without gdrx. */
    status = uct_gdrx_md_activate(md);
    if (ucs_unlikely(status != UCS_OK)) {
        return UCS_ERR_UNSUPPORTED;
    }

    ret = gdrx_mem_query((uintptr_t)address, &info);
    if (ret != 0) {
        return uct_gdrx_mem_status(ret);
    }

    if (!uct_gdrx_range_holds(info.base, info.size, (uintptr_t)address,
                              length)) {
        return UCS_ERR_INVALID_ADDR;
    }

    /* Memory that UCX detects is memory whose synchronous copies have
     * landed when they return: UCX's own detection (cuda_copy's) makes it
     * so, and programs depend on it (a cuMemcpyHtoD, then a send that
     * cuda_copy reads on its own stream).  Answering first, gdrx must too:
     * without it UCX 1.22 sent stale data on the H200 (issue 28). */
    ret = gdrx_mem_sync_memops(info.base);
    if ((ret != 0) && (ret != -EOPNOTSUPP)) {
        ucs_debug("gdrx: SYNC_MEMOPS on %p: %s; not cached", address,
                  gdrx_strerror(ret));
    } else if (md->events) {
        /* its free removes the entry (uct_gdrx_compat.h says what it holds) */
        uct_gdrx_md_memtype_cache_write(&info);
    }

    if (mem_attr->field_mask & UCT_GDRX_MEM_ATTR_FIELD(MEM_TYPE)) {
        mem_attr->mem_type = UCS_MEMORY_TYPE_CUDA;
    }
    if (mem_attr->field_mask & UCT_GDRX_MEM_ATTR_FIELD(SYS_DEV)) {
        /* as cuda_copy names it: UCP picks lanes near the GPU by it,
         * whichever MD answered the detection first */
        mem_attr->sys_dev = uct_gdrx_cuda_sys_dev(info.device);
    }
    if (mem_attr->field_mask & UCT_GDRX_MEM_ATTR_FIELD(BASE_ADDRESS)) {
        mem_attr->base_address = (void*)(uintptr_t)info.base;
    }
    if (mem_attr->field_mask & UCT_GDRX_MEM_ATTR_FIELD(ALLOC_LENGTH)) {
        mem_attr->alloc_length = info.size;
    }
    UCT_GDRX_MEM_ATTR_SET_FLAGS(mem_attr);
    return UCS_OK;
}

static ucs_status_t uct_gdrx_md_detect_memory_type(uct_md_h tl_md,
                                                   const void *address,
                                                   size_t length,
                                                   ucs_memory_type_t *mem_type_p)
{
    uct_gdrx_mem_attr_t attr = {.field_mask = 0};
    ucs_status_t status;

    status = uct_gdrx_md_mem_query(tl_md, address, length, &attr);
    if (status != UCS_OK) {
        return status;
    }

    *mem_type_p = UCS_MEMORY_TYPE_CUDA;
    return UCS_OK;
}

static void uct_gdrx_md_dump_counters(uct_gdrx_md_t *md)
{
    uct_gdrx_events_counters_t events;

    uct_gdrx_events_counters(&events);
    uct_gdrx_stats_dump(md->stats_dump,
                        "md reg_calls %" PRIu64 " pins %" PRIu64 " unpins %"
                        PRIu64 " host_regs %" PRIu64 " stale_drops %" PRIu64
                        " reg_errors %" PRIu64 " reg_fallbacks %" PRIu64
                        " allocs %" PRIu64 " span_regs %" PRIu64
                        " resolved %" PRIu64 " events_alloc %" PRIu64
                        " events_free %" PRIu64 " events_existing %" PRIu64
                        " events_source %s"
                        " cache_check %s\n",
                        md->counters.reg_calls, md->counters.pins,
                        md->counters.unpins, md->counters.host_regs,
                        md->counters.stale_drops, md->counters.reg_errors,
                        md->counters.reg_fallbacks, md->counters.allocs,
                        md->counters.span_regs, md->counters.resolved,
                        events.alloc_dispatched, events.free_dispatched,
                        events.existing_marked,
                        uct_gdrx_events_state_name(md->events_state),
                        md->events ? "events" : "buffer-id");
}

static void uct_gdrx_md_close(uct_md_h tl_md)
{
    uct_gdrx_md_t *md = ucs_derived_of(tl_md, uct_gdrx_md_t);

    uct_gdrx_md_setup_cleanup(md);
    uct_gdrx_md_dump_counters(md);
    ucs_free(md->stats_dump);
    ucs_free(md);
}

static uct_md_ops_t uct_gdrx_md_ops = {
    .close              = uct_gdrx_md_close,
    .query              = uct_gdrx_md_query,
    .mem_alloc          = uct_gdrx_md_mem_alloc,
    .mem_free           = uct_gdrx_md_mem_free,
    .mem_advise         = (void*)ucs_empty_function_return_unsupported,
    .mem_reg            = uct_gdrx_md_mem_reg,
    .mem_dereg          = uct_gdrx_md_mem_dereg,
    .mem_query          = uct_gdrx_md_mem_query,
    .mkey_pack          = uct_gdrx_md_mkey_pack,
    UCT_GDRX_MD_OPS_VERSIONED
    .detect_memory_type = uct_gdrx_md_detect_memory_type
};

static ucs_status_t uct_gdrx_md_open(uct_component_t *component,
                                     const char *md_name,
                                     const uct_md_config_t *uct_config,
                                     uct_md_h *md_p)
{
    const uct_gdrx_md_config_t *config = ucs_derived_of(uct_config,
                                                        uct_gdrx_md_config_t);
    uct_gdrx_md_t *md;

    if (uct_gdrx_version_check() != UCS_OK) {
        return UCS_ERR_UNSUPPORTED;
    }

    if ((config->reg_window != UCS_MEMUNITS_INF) &&
        (!ucs_is_pow2(config->reg_window) ||
         (config->reg_window < UCT_GDRX_GPU_PAGE))) {
        ucs_error("gdrx: UCX_GDRX_REG_WINDOW %zu is not a power of two of "
                  "at least %d", config->reg_window, UCT_GDRX_GPU_PAGE);
        return UCS_ERR_INVALID_PARAM;
    }

    md = ucs_calloc(1, sizeof(*md), "uct_gdrx_md_t");
    if (md == NULL) {
        ucs_error("gdrx: failed to allocate the memory domain");
        return UCS_ERR_NO_MEMORY;
    }

    md->super.ops       = &uct_gdrx_md_ops;
    md->super.component = &uct_gdrx_component;
    md->detect          = config->detect;
    md->reg_cost        = config->uc_reg_cost;
    md->reg_window      = config->reg_window;
    md->stats_dump      = ucs_strdup(config->stats_dump, "gdrx stats_dump");
    if (md->stats_dump == NULL) {
        ucs_error("gdrx: failed to allocate the memory domain");
        goto err_free_md;
    }

    /* nothing else yet: see uct_gdrx_md_setup.c */
    uct_gdrx_md_setup_init(md, config);

    *md_p = &md->super;
    return UCS_OK;

err_free_md:
    ucs_free(md);
    return UCS_ERR_NO_MEMORY;
}

/* The backend UCX_GDRX_BACKEND (environment, ucx.conf) names. */
static gdrx_backend_t uct_gdrx_md_configured_backend(void)
{
    gdrx_backend_t backend = GDRX_BACKEND_AUTO;
    uct_md_config_t *md_config;

    if (uct_md_config_read(&uct_gdrx_component, NULL, NULL, &md_config) ==
        UCS_OK) {
        backend = (gdrx_backend_t)ucs_derived_of(md_config,
                                                 uct_gdrx_md_config_t)->backend;
        uct_config_release(md_config);
    }
    return backend;
}

/* One MD where the process may reach a GPU through a backend the
 * configuration allows.  UCP lists every component, also those UCX_TLS
 * leaves out: nothing is loaded or initialised here.  What can fail only
 * later (CUDA, the backend's own open, a configuration UCP changed) makes
 * the MD stand aside at its first use (uct_gdrx_md_setup.c). */
static ucs_status_t
uct_gdrx_query_md_resources(uct_component_t *component,
                            uct_md_resource_desc_t **resources_p,
                            unsigned *num_resources_p)
{
    if (uct_gdrx_version_check() != UCS_OK) {
        /* said once on stderr; UCX's logger is of the other release */
        return uct_md_query_empty_md_resource(resources_p, num_resources_p);
    }

    if (!uct_gdrx_gpu_reachable(uct_gdrx_md_configured_backend())) {
        return uct_md_query_empty_md_resource(resources_p, num_resources_p);
    }

    return uct_md_query_single_md_resource(component, resources_p,
                                           num_resources_p);
}

uct_component_t uct_gdrx_component = {
    .query_md_resources = uct_gdrx_query_md_resources,
    .md_open            = uct_gdrx_md_open,
    .cm_open            = (void*)ucs_empty_function_return_unsupported,
    .rkey_unpack        = uct_gdrx_rkey_unpack,
    .rkey_ptr           = (void*)ucs_empty_function_return_unsupported,
    .rkey_release       = uct_gdrx_rkey_release,
    UCT_GDRX_COMPONENT_VERSIONED
    .name               = UCT_GDRX_NAME,
    .md_config          = {
        .name           = "gdrx memory domain",
        .prefix         = "GDRX_",
        .table          = uct_gdrx_md_config_table,
        .size           = sizeof(uct_gdrx_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(&uct_gdrx_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)ucs_empty_function
};
