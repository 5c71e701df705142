/*
 * uct_gdrx_iface.c - the gdrx interface and transport: capabilities, the
 * performance UCX plans with (BAR reads are slow, writes fast), per-operation
 * counters, the operation tables (naming the endpoint's functions) and the
 * registration of the component and transport with UCX at load.
 *
 * SPDX-License-Identifier: MIT
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "uct_gdrx_iface.h"
#include "uct_gdrx_dma.h"
#include "uct_gdrx_ep.h"
#include "uct_gdrx_gpu.h"
#include "uct_gdrx_keycache.h"
#include "uct_gdrx_md.h"
#include "uct_gdrx_md_setup.h"
#include "uct_gdrx_stats.h"
#include "uct_gdrx_version.h"

#include <limits.h>
#include <string.h>
#include <ucs/debug/log.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/string.h>
#include <ucs/type/class.h>
#include <uct/base/uct_worker.h>


/* Defaults from the H200 measurements in docs/performance.md: a store to the
 * BAR posts in ~0.15 us and streams at ~16 GB/s; a read costs one PCIe round
 * trip (~1 us) and streams below 1 GB/s. */
static ucs_config_field_t uct_gdrx_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gdrx_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"SEG_SIZE", "8k",
     "Largest put/get_bcopy, at most 64k (bounced through the stack up to 8k,\n"
     "through the heap above).",
     ucs_offsetof(uct_gdrx_iface_config_t, seg_size),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"PUT_LAT", "150ns", "Latency of a host to GPU copy (put).",
     ucs_offsetof(uct_gdrx_iface_config_t, put_lat), UCS_CONFIG_TYPE_TIME},

    {"GET_LAT", "1us", "Latency of a GPU to host copy (get).",
     ucs_offsetof(uct_gdrx_iface_config_t, get_lat), UCS_CONFIG_TYPE_TIME},

    {"PUT_BW", "16000MBs", "Bandwidth of host to GPU copies (put).",
     ucs_offsetof(uct_gdrx_iface_config_t, put_bw), UCS_CONFIG_TYPE_BW},

    {"GET_BW", "950MBs", "Bandwidth of GPU to host copies (get).",
     ucs_offsetof(uct_gdrx_iface_config_t, get_bw), UCS_CONFIG_TYPE_BW},

    {"RANK_BW", "7300MBs",
     "Bandwidth the interface reports as a whole, shared by the processes of\n"
     "a node (plus 256 MB/s of its own): the one figure UCP ranks transports\n"
     "by (its memory-type endpoint: small copies at 4 KiB, large ones at\n"
     "256 KiB).  Between gdr_copy's 6911 MB/s (gdrx then takes the small\n"
     "copies, and UCP never needs three transports there) and about\n"
     "7450 MB/s (above it gdrx would also take the large copies from\n"
     "cuda_copy's copy engine, up to 5 times slower).  Per-operation figures,\n"
     "which UCP's protocols plan with, are PUT_BW and GET_BW.",
     ucs_offsetof(uct_gdrx_iface_config_t, rank_bw), UCS_CONFIG_TYPE_BW},

    {"OVERHEAD", "20ns", "CPU overhead of starting one copy.",
     ucs_offsetof(uct_gdrx_iface_config_t, overhead), UCS_CONFIG_TYPE_TIME},

    {"DMA_THRESH", "16k",
     "GPU-to-host zcopy parts of this size and larger are moved by the GPU's\n"
     "copy engine (on a non-blocking stream of the buffer's CUDA context)\n"
     "instead of CPU reads through the BAR (near 1 GB/s); inf: never.\n"
     "Host-to-GPU parts always go by CPU stores (faster at every size measured).",
     ucs_offsetof(uct_gdrx_iface_config_t, dma_thresh),
     UCS_CONFIG_TYPE_MEMUNITS},

    {NULL}
};

static const char *uct_gdrx_op_names[UCT_GDRX_OP_LAST] = {
    [UCT_GDRX_OP_SHORT] = "short",
    [UCT_GDRX_OP_BCOPY] = "bcopy",
    [UCT_GDRX_OP_ZCOPY] = "zcopy",
    [UCT_GDRX_OP_DMA]   = "dma"
};

static const char *uct_gdrx_dir_names[UCT_GDRX_DIR_LAST] = {
    [UCT_GDRX_DIR_PUT] = "put",
    [UCT_GDRX_DIR_GET] = "get"
};


static void UCS_CLASS_DELETE_FUNC_NAME(uct_gdrx_iface_t)(uct_iface_t*);

static ucs_status_t uct_gdrx_iface_get_address(uct_iface_h tl_iface,
                                               uct_iface_addr_t *iface_addr)
{
    uct_gdrx_iface_t *iface = ucs_derived_of(tl_iface, uct_gdrx_iface_t);

    /* UCP packs addresses unaligned */
    memcpy(iface_addr, &iface->id, sizeof(iface->id));
    return UCS_OK;
}

/* The op of this UCX release (public up to 1.14, internal v2 after). */
static int uct_gdrx_iface_is_reachable(UCT_GDRX_IFACE_IS_REACHABLE_ARGS)
{
    return UCT_GDRX_IFACE_IS_REACHABLE(uct_gdrx_iface_is_reachable_addr);
}

/* put and get have the same limits (cap.put/cap.get are distinct types) */
#define UCT_GDRX_IFACE_SET_RMA_CAPS(_cap, _seg_size) \
    do { \
        (_cap).max_short       = UINT_MAX; \
        (_cap).max_bcopy       = (_seg_size); \
        (_cap).min_zcopy       = 0; \
        (_cap).max_zcopy       = SIZE_MAX; \
        (_cap).opt_zcopy_align = 1; \
        (_cap).align_mtu       = 1; \
        (_cap).max_iov         = UCT_GDRX_MAX_IOV; \
    } while (0)

static void uct_gdrx_iface_set_caps(uct_iface_attr_t *attr, size_t seg_size)
{
    UCT_GDRX_IFACE_SET_RMA_CAPS(attr->cap.put, seg_size);
    UCT_GDRX_IFACE_SET_RMA_CAPS(attr->cap.get, seg_size);
    attr->cap.am.opt_zcopy_align = 1;
    attr->cap.am.align_mtu       = 1;
    attr->cap.am.max_iov         = 1;
}

/* Standing aside (the MD's set-up failed), the interface offers only
 * what UCP cannot do without.  UCP fixed at ucp_init that the MD reaches
 * CUDA memory, and for that memory type builds a memory-type endpoint whose
 * lanes must include a local PUT_SHORT one (1.13 to 1.22: without it
 * ucp_worker_create fails): short put and get stay, with figures that any
 * other transport (cuda_copy) beats, so that they are used only where
 * nothing else is, for memory that nothing claims as CUDA memory then. */
static void uct_gdrx_iface_set_aside_caps(uct_iface_attr_t *attr)
{
    attr->cap.flags         = UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                              UCT_IFACE_FLAG_PUT_SHORT |
                              UCT_IFACE_FLAG_GET_SHORT;
    attr->cap.put.max_short = UINT_MAX;
    attr->cap.get.max_short = UINT_MAX;
}

static ucs_status_t uct_gdrx_iface_query(uct_iface_h tl_iface,
                                         uct_iface_attr_t *attr)
{
    uct_gdrx_iface_t *iface = ucs_derived_of(tl_iface, uct_gdrx_iface_t);

    uct_base_iface_query(&iface->super, attr);
    attr->iface_addr_len  = sizeof(uct_gdrx_iface_addr_t);
    attr->device_addr_len = 0;
    attr->ep_addr_len     = 0;
    if (uct_gdrx_md_is_aside(ucs_derived_of(iface->super.md,
                                            uct_gdrx_md_t))) {
        uct_gdrx_iface_set_aside_caps(attr);
    } else {
        attr->cap.flags = UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                          UCT_IFACE_FLAG_PUT_SHORT |
                          UCT_IFACE_FLAG_PUT_BCOPY |
                          UCT_IFACE_FLAG_PUT_ZCOPY |
                          UCT_IFACE_FLAG_GET_SHORT |
                          UCT_IFACE_FLAG_GET_BCOPY |
                          UCT_IFACE_FLAG_GET_ZCOPY |
                          UCT_IFACE_FLAG_PENDING;
        uct_gdrx_iface_set_caps(attr, iface->seg_size);
    }

    /* One figure for the whole iface; estimate_perf, which UCP's protocols
     * plan with, is per operation.  UCP picks the transports of its
     * memory-type endpoint by this figure alone: per memory type the best
     * at 4 KiB (the copies of small messages), and the best at 256 KiB for
     * the large ones (RMA_BW: rendezvous staged through host memory).
     *  - At 4 KiB gdrx must beat gdr_copy: else gdrx takes the host lane
     *    from cuda_copy, gdr_copy keeps the device one and cuda_copy managed
     *    memory, three transports, and UCX 1.21 and later abort every
     *    process (docs/ucx-flavours.md).  The best direction's latency, and
     *    a bandwidth above gdr_copy's 6911 MB/s, do it.
     *  - At 256 KiB gdrx must lose to cuda_copy (10000 MB/s after 8 us):
     *    large copies through gdrx (CPU stores one way, its own copy engine
     *    use the other) were 4.7 times slower at 4 MiB on an H200.  Below
     *    about 7700 MB/s it does.
     * UCP divides shared bandwidth by the processes of a node.  gdr_copy
     * from 1.19 on reports 250 MiB/s dedicated besides its shared 6911:
     * with a larger dedicated part (256 MiB/s) as well as the larger
     * shared one, gdrx beats it at 4 KiB however many processes share the
     * node (no three transports, no abort, anywhere; with 250e6 bytes it
     * lost from about 34 processes and UCP aborted from about 50), and
     * loses to cuda_copy at 256 KiB up to 9 processes (from 10 on, UCP's
     * division makes cuda_copy look slower than it is, and large copies go
     * through gdrx again: slower, never wrong).  tests/ucx/test_md_setup.c
     * checks these rankings with UCP's formulas. */
    attr->latency             = ucs_linear_func_make(
                                    ucs_min(iface->lat[UCT_GDRX_DIR_PUT],
                                            iface->lat[UCT_GDRX_DIR_GET]), 0);
    attr->bandwidth.dedicated = (iface->rank_bw > UCT_GDRX_RANK_BW_DEDICATED) ?
                                UCT_GDRX_RANK_BW_DEDICATED : 0;
    attr->bandwidth.shared    = iface->rank_bw;
    attr->overhead            = iface->overhead;
    attr->priority            = 0;
    return UCS_OK;
}

static uct_gdrx_dir_t uct_gdrx_iface_op_dir(const uct_perf_attr_t *perf_attr)
{
    if (!(perf_attr->field_mask & UCT_PERF_ATTR_FIELD_OPERATION)) {
        return UCT_GDRX_DIR_GET;
    }

    switch (perf_attr->operation) {
    case UCT_EP_OP_PUT_SHORT:
    case UCT_EP_OP_PUT_BCOPY:
    case UCT_EP_OP_PUT_ZCOPY:
        return UCT_GDRX_DIR_PUT;
    default:
        return UCT_GDRX_DIR_GET;
    }
}

static ucs_status_t uct_gdrx_iface_estimate_perf(uct_iface_h tl_iface,
                                                 uct_perf_attr_t *perf_attr)
{
    uct_gdrx_iface_t *iface = ucs_derived_of(tl_iface, uct_gdrx_iface_t);
    uct_gdrx_dir_t dir      = uct_gdrx_iface_op_dir(perf_attr);

    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_BANDWIDTH) {
        perf_attr->bandwidth.dedicated = iface->bw[dir];
        perf_attr->bandwidth.shared    = 0;
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD) {
        perf_attr->send_pre_overhead = iface->overhead;
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD) {
        perf_attr->send_post_overhead = 0;
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_RECV_OVERHEAD) {
        perf_attr->recv_overhead = 0;
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_LATENCY) {
        perf_attr->latency = ucs_linear_func_make(iface->lat[dir], 0);
    }
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS) {
        perf_attr->max_inflight_eps = SIZE_MAX;
    }
    UCT_GDRX_ESTIMATE_PERF_VERSIONED(perf_attr, iface->bw[dir]);
    return UCS_OK;
}

static void uct_gdrx_iface_dump_counters(uct_gdrx_iface_t *iface)
{
    uct_gdrx_md_t *md = ucs_derived_of(iface->super.md, uct_gdrx_md_t);
    int op, dir;

    for (op = 0; op < UCT_GDRX_OP_LAST; ++op) {
        for (dir = 0; dir < UCT_GDRX_DIR_LAST; ++dir) {
            uct_gdrx_stats_dump(md->stats_dump,
                                "iface %s_%s count %" PRIu64 " bytes %"
                                PRIu64 "\n", uct_gdrx_dir_names[dir],
                                uct_gdrx_op_names[op],
                                iface->counters[op][dir].count,
                                iface->counters[op][dir].bytes);
        }
    }
}

static uct_iface_ops_t uct_gdrx_iface_ops = {
    .ep_put_short             = uct_gdrx_ep_put_short,
    .ep_put_bcopy             = uct_gdrx_ep_put_bcopy,
    .ep_put_zcopy             = uct_gdrx_ep_put_zcopy,
    .ep_get_short             = uct_gdrx_ep_get_short,
    .ep_get_bcopy             = uct_gdrx_ep_get_bcopy,
    .ep_get_zcopy             = uct_gdrx_ep_get_zcopy,
    /* nothing ever waits for a resource: a request may always run now */
    .ep_pending_add           = (uct_ep_pending_add_func_t)
                                ucs_empty_function_return_busy,
    .ep_pending_purge         = (uct_ep_pending_purge_func_t)
                                ucs_empty_function,
    .ep_flush                 = uct_base_ep_flush,
    .ep_fence                 = uct_base_ep_fence,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_gdrx_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_gdrx_ep_t),
    .iface_flush              = uct_base_iface_flush,
    .iface_fence              = uct_base_iface_fence,
    .iface_progress_enable    = (uct_iface_progress_enable_func_t)
                                ucs_empty_function,
    .iface_progress_disable   = (uct_iface_progress_disable_func_t)
                                ucs_empty_function,
    .iface_progress           = (uct_iface_progress_func_t)
                                ucs_empty_function_return_zero,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(uct_gdrx_iface_t),
    .iface_query              = uct_gdrx_iface_query,
    .iface_get_device_address = (uct_iface_get_device_address_func_t)
                                ucs_empty_function_return_success,
    .iface_get_address        = uct_gdrx_iface_get_address,
    .iface_is_reachable       = UCT_GDRX_IFACE_OPS_IS_REACHABLE(
                                    uct_gdrx_iface_is_reachable)
};

static uct_iface_internal_ops_t uct_gdrx_iface_internal_ops = {
    .iface_estimate_perf = uct_gdrx_iface_estimate_perf,
    .iface_vfs_refresh   = (uct_iface_vfs_refresh_func_t)ucs_empty_function,
    .ep_query            = (uct_ep_query_func_t)
                           ucs_empty_function_return_unsupported,
    .ep_invalidate       = (uct_ep_invalidate_func_t)
                           ucs_empty_function_return_unsupported,
    UCT_GDRX_IFACE_INTERNAL_OPS_VERSIONED(uct_gdrx_iface_is_reachable)
};

static UCS_CLASS_INIT_FUNC(uct_gdrx_iface_t, uct_md_h md, uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    const uct_gdrx_iface_config_t *config =
            ucs_derived_of(tl_config, uct_gdrx_iface_config_t);
    uct_gdrx_md_t *gdrx_md = ucs_derived_of(md, uct_gdrx_md_t);

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, &uct_gdrx_iface_ops,
                              &uct_gdrx_iface_internal_ops, md, worker, params,
                              tl_config UCS_STATS_ARG(params->stats_root)
                              UCS_STATS_ARG(UCT_GDRX_NAME));

    if (!(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE) ||
        strcmp(params->mode.device.dev_name, UCT_GDRX_DEV_NAME)) {
        ucs_error("gdrx: no device named %s",
                  (params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE) ?
                  params->mode.device.dev_name : "(none)");
        return UCS_ERR_NO_DEVICE;
    }

    if ((config->seg_size > UCT_GDRX_MAX_SEG_SIZE) ||
        (config->put_bw <= 0) || (config->get_bw <= 0) || (config->rank_bw <= 0)) {
        ucs_error("gdrx: SEG_SIZE %zu above %d, or a bandwidth not positive",
                  config->seg_size, UCT_GDRX_MAX_SEG_SIZE);
        return UCS_ERR_INVALID_PARAM;
    }

    self->id                    = ucs_generate_uuid((uintptr_t)self);
    self->seg_size              = config->seg_size;
    self->lat[UCT_GDRX_DIR_PUT] = config->put_lat;
    self->lat[UCT_GDRX_DIR_GET] = config->get_lat;
    self->bw[UCT_GDRX_DIR_PUT]  = config->put_bw;
    self->bw[UCT_GDRX_DIR_GET]  = config->get_bw;
    self->rank_bw               = config->rank_bw;
    self->overhead              = config->overhead;
    self->dma_thresh            = config->dma_thresh;
    self->bounce_busy           = 0;
    self->bounce                = NULL;
    if (self->seg_size > UCT_GDRX_STACK_BOUNCE) {
        /* made once: bcopy above 8 KiB allocated nothing per call */
        self->bounce = ucs_malloc(self->seg_size, "uct_gdrx_bounce");
        if (self->bounce == NULL) {
            ucs_error("gdrx: failed to allocate a %zu-byte bounce buffer",
                      self->seg_size);
            return UCS_ERR_NO_MEMORY;
        }
    }

    /* only now, with a valid configuration: libgdrx's hooks go in here.  A
     * set-up that fails (said once by the MD) leaves the interface open,
     * standing aside, so that the worker and the job go on without gdrx */
    if (uct_gdrx_md_activate(gdrx_md) != UCS_OK) {
        ucs_debug("gdrx: interface %p stands aside", self);
        self->lat[UCT_GDRX_DIR_PUT] = UCT_GDRX_ASIDE_LATENCY;
        self->lat[UCT_GDRX_DIR_GET] = UCT_GDRX_ASIDE_LATENCY;
        self->bw[UCT_GDRX_DIR_PUT]  = UCT_GDRX_ASIDE_BANDWIDTH;
        self->bw[UCT_GDRX_DIR_GET]  = UCT_GDRX_ASIDE_BANDWIDTH;
        self->rank_bw               = UCT_GDRX_ASIDE_BANDWIDTH;
        self->overhead              = UCT_GDRX_ASIDE_LATENCY;
    }
    memset(self->counters, 0, sizeof(self->counters));
    self->counting = uct_gdrx_stats_wanted(gdrx_md->stats_dump);
    /* Only where libgdrx itself revokes pins at CUDA frees (md->events:
     * every free entry point hooked, whoever else raises UCX's events) and
     * one thread at a time drives this interface */
    uct_gdrx_keycache_init(&self->keycache,
                           (gdrx_md->rcache != NULL) && gdrx_md->events &&
                           (ucs_derived_of(worker, uct_priv_worker_t)->thread_mode !=
                            UCS_THREAD_MODE_MULTI));
    uct_gdrx_dma_init(&self->dma);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gdrx_iface_t)
{
    uct_gdrx_dma_cleanup(&self->dma);
    uct_gdrx_keycache_cleanup(&self->keycache,
                              ucs_derived_of(self->super.md, uct_gdrx_md_t));
    uct_gdrx_iface_dump_counters(self);
    ucs_free(self->bounce);
}

UCS_CLASS_DEFINE(uct_gdrx_iface_t, uct_base_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_gdrx_iface_t, uct_iface_t, uct_md_h, uct_worker_h,
                          const uct_iface_params_t*, const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_gdrx_iface_t, uct_iface_t);

static ucs_status_t uct_gdrx_query_devices(uct_md_h md,
                                           uct_tl_device_resource_t **devices_p,
                                           unsigned *num_devices_p)
{
    return uct_single_device_resource(md, UCT_GDRX_DEV_NAME,
                                      UCT_DEVICE_TYPE_ACC,
                                      uct_gdrx_gpu_sys_dev(), devices_p,
                                      num_devices_p);
}

UCT_TL_DEFINE_ENTRY(&uct_gdrx_component, gdrx, uct_gdrx_query_devices,
                    uct_gdrx_iface_t, "GDRX_", uct_gdrx_iface_config_table,
                    uct_gdrx_iface_config_t);

static void uct_gdrx_register(void)
{
    int ret;

    /* Before any MD of this process opens: an MD with a registration cache
     * (IB's, UCX's gdr_copy's, UCP's own from 1.15) registers UCX's fork
     * handler, whose purge of every cache must run before libgdrx's
     * prepare handler takes libgdrx's locks, since another thread may
     * hold a cache's lock inside gdrx (gdrx_fork_handlers_register(3)).
     * UCX loads every transport module before it opens the first MD. */
    ret = gdrx_fork_handlers_register();
    if (ret != 0) {
        ucs_debug("gdrx: fork handlers not registered early: %s",
                  gdrx_strerror(ret));
    }
    uct_component_register(&uct_gdrx_component);
    uct_tl_register(&uct_gdrx_component, &UCT_TL_NAME(gdrx));
}

static void uct_gdrx_unregister(void)
{
    uct_tl_unregister(&UCT_TL_NAME(gdrx));
    uct_component_unregister(&uct_gdrx_component);
}

/* Registered by hand, not by UCX's constructors: only into the UCX release
 * gdrx was built for (uct_gdrx_version.c). */
static UCS_F_CTOR void uct_gdrx_init(void)
{
    uct_gdrx_version_load(uct_gdrx_register, uct_gdrx_unregister);
}

static UCS_F_DTOR void uct_gdrx_cleanup(void)
{
    uct_gdrx_version_unload();
}
