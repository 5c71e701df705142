/*
 * uct_gdrx_compat.h - every difference between the UCX releases gdrx builds
 * against, keyed on UCT_API (uct/api/version.h of the UCX built against).
 * UCX has no stable internal ABI, so the plugin is built per UCX minor
 * version and refuses to register in another one (uct_gdrx_version.c).
 * The lowest layer (see uct_gdrx_types.h): it names nothing of the plugin,
 * whose functions come in as macro arguments.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_COMPAT_H
#define UCT_GDRX_COMPAT_H

#include <uct/api/version.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_iface.h>
#include <ucs/memory/rcache.h>

#define UCT_GDRX_UCX_AT_LEAST(_maj, _min) \
    (UCT_API >= UCT_VERSION(_maj, _min))

/* ucs_align_up/down_pow2: in ucs/sys/math.h up to 1.16, in
 * ucs/sys/ptr_arith.h from 1.18, which 1.18's other headers do not include
 * (1.22's sys.h does). */
#if UCT_GDRX_UCX_AT_LEAST(1, 18)
#  include <ucs/sys/ptr_arith.h>
#endif


/* Registration cache configuration: libuct's own table up to 1.13, libucs's
 * from 1.14 on. */
#if UCT_GDRX_UCX_AT_LEAST(1, 14)
typedef ucs_rcache_config_t uct_gdrx_rcache_config_t;
#  define UCT_GDRX_RCACHE_CONFIG_TABLE ucs_config_rcache_table
#  define uct_gdrx_rcache_set_params   ucs_rcache_set_params
#else
typedef uct_md_rcache_config_t uct_gdrx_rcache_config_t;
#  define UCT_GDRX_RCACHE_CONFIG_TABLE uct_md_config_rcache_table
#  define uct_gdrx_rcache_set_params   uct_md_set_rcache_params
#endif

/* ucs_rcache_get() gained an alignment argument in 1.17, replacing the
 * cache-wide alignment parameters. */
#if UCT_GDRX_UCX_AT_LEAST(1, 17)
#  define UCT_GDRX_RCACHE_SET_MAX_ALIGNMENT(_params, _align)
#else
#  define UCT_GDRX_RCACHE_SET_MAX_ALIGNMENT(_params, _align) \
    (_params)->max_alignment = (_align)
#endif
#if UCT_GDRX_UCX_AT_LEAST(1, 17)
#  define uct_gdrx_rcache_get(_rc, _addr, _len, _prot, _arg, _region_p) \
    ucs_rcache_get(_rc, _addr, _len, UCS_RCACHE_MIN_ALIGNMENT, _prot, _arg, \
                   _region_p)
#else
#  define uct_gdrx_rcache_get ucs_rcache_get
#endif


/* md_ops.query: nested uct_md_attr_t up to 1.13, flat uct_md_attr_v2_t after. */
#if UCT_GDRX_UCX_AT_LEAST(1, 14)
typedef uct_md_attr_v2_t uct_gdrx_md_attr_t;
#  define UCT_GDRX_MD_CAP(_attr, _field) ((_attr)->_field)
#else
typedef uct_md_attr_t uct_gdrx_md_attr_t;
#  define UCT_GDRX_MD_CAP(_attr, _field) ((_attr)->cap._field)
#endif

/* md_ops.mem_reg: flags argument up to 1.13, a params struct after. */
#if UCT_GDRX_UCX_AT_LEAST(1, 14)
#  define UCT_GDRX_MEM_REG_ARGS const uct_md_mem_reg_params_t *params
#  define UCT_GDRX_MEM_REG_FLAGS \
    UCT_MD_MEM_REG_FIELD_VALUE(params, flags, FIELD_FLAGS, 0)
#else
#  define UCT_GDRX_MEM_REG_ARGS unsigned flags
#  define UCT_GDRX_MEM_REG_FLAGS flags
#endif

/* md_ops.mem_alloc: the target system device was added in 1.19. */
#if UCT_GDRX_UCX_AT_LEAST(1, 19)
#  define UCT_GDRX_MEM_ALLOC_ARGS \
    ucs_memory_type_t mem_type, ucs_sys_device_t sys_dev, unsigned flags
#else
#  define UCT_GDRX_MEM_ALLOC_ARGS ucs_memory_type_t mem_type, unsigned flags
#endif

/* md_ops.mkey_pack: the region's address and length were added in 1.14. */
#if UCT_GDRX_UCX_AT_LEAST(1, 14)
#  define UCT_GDRX_MKEY_PACK_ARGS \
    uct_md_h md, uct_mem_h memh, void *address, size_t length, \
    const uct_md_mkey_pack_params_t *params, void *rkey_buffer
#else
#  define UCT_GDRX_MKEY_PACK_ARGS \
    uct_md_h md, uct_mem_h memh, const uct_md_mkey_pack_params_t *params, \
    void *rkey_buffer
#endif

/* md_ops.mem_query: its attribute struct became v2 in 1.19. */
#if UCT_GDRX_UCX_AT_LEAST(1, 19)
typedef uct_md_mem_attr_v2_t uct_gdrx_mem_attr_t;
#  define UCT_GDRX_MEM_ATTR_FIELD(_name) UCT_MD_MEM_ATTR_V2_FIELD_##_name
#else
typedef uct_md_mem_attr_t uct_gdrx_mem_attr_t;
#  define UCT_GDRX_MEM_ATTR_FIELD(_name) UCT_MD_MEM_ATTR_FIELD_##_name
#endif

/* mem_query: per-buffer memory flags (UCP asks for them) since 1.22. */
#if UCT_GDRX_UCX_AT_LEAST(1, 22)
#  define UCT_GDRX_MEM_ATTR_SET_FLAGS(_attr) \
    if ((_attr)->field_mask & UCT_MD_MEM_ATTR_V2_FIELD_MEM_FLAGS) { \
        (_attr)->mem_flags = UCS_MEM_FLAG_REGISTRABLE; \
    }
#else
#  define UCT_GDRX_MEM_ATTR_SET_FLAGS(_attr)
#endif

/* The system device of a CUDA device, as cuda_copy names it: since 1.22
 * keyed by the bus id and the CUdevice (a lookup by bus id alone makes a
 * second device for the GPU, which cuda_copy cannot map back to it). */
#if UCT_GDRX_UCX_AT_LEAST(1, 22)
#  define uct_gdrx_topo_find_cuda_device(_bus_id, _cu_device, _sys_dev_p) \
    ucs_topo_find_device_by_bus_id_and_user_value(_bus_id, \
                                                  (uintptr_t)(_cu_device), \
                                                  _sys_dev_p)
#else
#  define uct_gdrx_topo_find_cuda_device(_bus_id, _cu_device, _sys_dev_p) \
    ucs_topo_find_device_by_bus_id(_bus_id, _sys_dev_p)
#endif

/* What a memory query found, into UCX's memory-type cache, so that later
 * sends stop there: 1.22 queries the detecting MD on every send until the
 * allocation's entry has memory flags or a system device (0.3-0.5 us per
 * 8-byte message on the H200).  The entry is the one UCX's own CUDA
 * allocation hooks write: memory flags, no system device.  (A device looked
 * up by bus id alone, which 1.22 keys apart from cuda_copy's, lost OSU -c
 * rendezvous data on the H200; cuda_copy's own device passed, as did none.)
 * Releases before 1.22 look no further than the memory type that UCX's
 * allocation events already put there. */
#if UCT_GDRX_UCX_AT_LEAST(1, 22) && !defined(UCT_GDRX_MEMTYPE_CACHE_NO_UPDATE)
#  define uct_gdrx_memtype_cache_update(_base, _size, _sys_dev) \
    ucs_memtype_cache_update(_base, _size, UCS_MEMORY_TYPE_CUDA, _sys_dev, \
                             UCS_MEM_FLAG_REGISTRABLE)
#  define UCT_GDRX_MEMTYPE_CACHE_WRITES 1
#else
#  define uct_gdrx_memtype_cache_update(_base, _size, _sys_dev) \
    do { (void)(_base); (void)(_size); } while (0)
#  define UCT_GDRX_MEMTYPE_CACHE_WRITES 0
#endif

/* A CUDA memory event for UCM (uct_gdrx_events.c).  Since 1.22 the event
 * also carries the memory's system device and flags, which UCX's
 * memory-type cache stores and its log prints by name: left unset, they
 * made a cache entry of a garbage device (a hang under
 * UCX_LOG_LEVEL=debug).  Set as UCX's own CUDA hooks set them: device
 * unknown, registrable. */
#if UCT_GDRX_UCX_AT_LEAST(1, 22)
#  define UCT_GDRX_UCM_MEM_EVENT_ATTRS(_event) \
    do { \
        (_event)->mem_type.sys_dev   = UCS_SYS_DEVICE_ID_UNKNOWN; \
        (_event)->mem_type.mem_flags = UCS_MEM_FLAG_REGISTRABLE; \
    } while (0)
#else
#  define UCT_GDRX_UCM_MEM_EVENT_ATTRS(_event) do { } while (0)
#endif

/* The system device that entry names: none, as above.  tests/gpu/ucx_runs.sh's
 * "cachedev" mode builds a plugin naming cuda_copy's device instead
 * (-DUCT_GDRX_MEMTYPE_CACHE_SYS_DEV), for OSU's data check. */
#ifndef UCT_GDRX_MEMTYPE_CACHE_SYS_DEV
#  define UCT_GDRX_MEMTYPE_CACHE_SYS_DEV(_cu_device) UCS_SYS_DEVICE_ID_UNKNOWN
#endif

/* component.rkey_unpack: a params struct was added in 1.19. */
#if UCT_GDRX_UCX_AT_LEAST(1, 19)
#  define UCT_GDRX_RKEY_UNPACK_ARGS \
    uct_component_t *component, const void *rkey_buffer, \
    const uct_rkey_unpack_params_t *params, uct_rkey_t *rkey_p, \
    void **handle_p
#else
#  define UCT_GDRX_RKEY_UNPACK_ARGS \
    uct_component_t *component, const void *rkey_buffer, uct_rkey_t *rkey_p, \
    void **handle_p
#endif

/* Members of uct_md_ops_t and uct_component_t that come and go.  1.23
 * changed mem_elem_pack's arguments (a release handle out) and added
 * mem_elem_release, which UCX calls unchecked: device memory elements are
 * not gdrx's, so there is never a handle to release. */
#if UCT_GDRX_UCX_AT_LEAST(1, 23)
#  define UCT_GDRX_MD_OPS_VERSIONED \
    .mem_attach       = (void*)ucs_empty_function_return_unsupported, \
    .mem_elem_pack    = (void*)ucs_empty_function_return_unsupported, \
    .mem_elem_release = (void*)ucs_empty_function,
#elif UCT_GDRX_UCX_AT_LEAST(1, 21)
#  define UCT_GDRX_MD_OPS_VERSIONED \
    .mem_attach    = (void*)ucs_empty_function_return_unsupported, \
    .mem_elem_pack = (void*)ucs_empty_function_return_unsupported,
#elif UCT_GDRX_UCX_AT_LEAST(1, 14)
#  define UCT_GDRX_MD_OPS_VERSIONED \
    .mem_attach = (void*)ucs_empty_function_return_unsupported,
#else
#  define UCT_GDRX_MD_OPS_VERSIONED \
    .is_sockaddr_accessible = ucs_empty_function_return_zero_int,
#endif

#if UCT_GDRX_UCX_AT_LEAST(1, 16)
#  define UCT_GDRX_COMPONENT_VERSIONED .rkey_compare = uct_base_rkey_compare,
#else
#  define UCT_GDRX_COMPONENT_VERSIONED
#endif

/* Reachability: a public iface op up to 1.14, an internal v2 op after.  The
 * transport's op is declared with UCT_GDRX_IFACE_IS_REACHABLE_ARGS and
 * answers UCT_GDRX_IFACE_IS_REACHABLE(_addr_reachable), _addr_reachable being
 * its own test of the peer's interface address; the ops tables take it
 * through UCT_GDRX_IFACE_OPS_IS_REACHABLE and
 * UCT_GDRX_IFACE_INTERNAL_OPS_VERSIONED. */
#if UCT_GDRX_UCX_AT_LEAST(1, 15)
#  define UCT_GDRX_IFACE_IS_REACHABLE_ARGS \
    const uct_iface_h tl_iface, const uct_iface_is_reachable_params_t *params
#  define UCT_GDRX_IFACE_IS_REACHABLE(_addr_reachable) \
    (uct_iface_is_reachable_params_addrs_valid(params) && \
     _addr_reachable(tl_iface, params->iface_addr) && \
     uct_iface_scope_is_reachable(tl_iface, params))
#  define UCT_GDRX_IFACE_OPS_IS_REACHABLE(_is_reachable) \
    uct_base_iface_is_reachable
#else
#  define UCT_GDRX_IFACE_IS_REACHABLE_ARGS \
    const uct_iface_h tl_iface, const uct_device_addr_t *dev_addr, \
    const uct_iface_addr_t *iface_addr
#  define UCT_GDRX_IFACE_IS_REACHABLE(_addr_reachable) \
    _addr_reachable(tl_iface, iface_addr)
#  define UCT_GDRX_IFACE_OPS_IS_REACHABLE(_is_reachable) _is_reachable
#endif

/* Tested: 1.13, 1.16, 1.18, 1.22, 1.23; 1.18's internal ops are 1.16's,
 * those of 1.17 and 1.19-1.21 differ or are untested, so those are refused;
 * releases after 1.23 take its branch.  UCX calls these ops without NULL
 * checks and 1.23 asserts ep_outstanding_purge at every interface open:
 * each member a release has must be set (tests/ucx/test_uct.c's
 * test_ops_tables checks that in every build).  gdrx's operations complete
 * before they return, so an endpoint never has an outstanding one to purge
 * (or call back for): that op succeeds at once. */
#if UCT_GDRX_UCX_AT_LEAST(1, 22)
#  define UCT_GDRX_IFACE_INTERNAL_OPS_1_22(_is_reachable) \
    .iface_query_v2        = uct_iface_base_query_v2, \
    .ep_connect_to_ep_v2   = (void*)ucs_empty_function_return_unsupported, \
    .iface_is_reachable_v2 = _is_reachable, \
    .ep_is_connected       = uct_base_ep_is_connected, \
    .ep_get_device_ep      = (void*)ucs_empty_function_return_unsupported, \
    .ep_put_sgl_zcopy      = (void*)ucs_empty_function_return_unsupported,
#endif
#if UCT_GDRX_UCX_AT_LEAST(1, 23)
#  define UCT_GDRX_IFACE_INTERNAL_OPS_VERSIONED(_is_reachable) \
    UCT_GDRX_IFACE_INTERNAL_OPS_1_22(_is_reachable) \
    .ep_get_sgl_zcopy      = (void*)ucs_empty_function_return_unsupported, \
    .ep_outstanding_purge  = (uct_ep_outstanding_purge_func_t) \
                             ucs_empty_function_return_success,
#elif UCT_GDRX_UCX_AT_LEAST(1, 22)
#  define UCT_GDRX_IFACE_INTERNAL_OPS_VERSIONED(_is_reachable) \
    UCT_GDRX_IFACE_INTERNAL_OPS_1_22(_is_reachable)
#elif (UCT_API == UCT_VERSION(1, 16)) || (UCT_API == UCT_VERSION(1, 18))
#  define UCT_GDRX_IFACE_INTERNAL_OPS_VERSIONED(_is_reachable) \
    .ep_connect_to_ep_v2   = (void*)ucs_empty_function_return_unsupported, \
    .iface_is_reachable_v2 = _is_reachable, \
    .ep_is_connected       = uct_base_ep_is_connected,
#elif UCT_GDRX_UCX_AT_LEAST(1, 14)
#  error "gdrx supports UCX 1.13, 1.16, 1.18 and 1.22 or newer (see README.md)"
#else
#  define UCT_GDRX_IFACE_INTERNAL_OPS_VERSIONED(_is_reachable)
#endif

/* Fields of uct_perf_attr_t newer than 1.13: flags since 1.17 (UCP asks
 * for them on AM lanes), path_bandwidth (filled from 1.22). */
#if UCT_GDRX_UCX_AT_LEAST(1, 17)
#  define UCT_GDRX_ESTIMATE_PERF_FLAGS(_perf_attr) \
    if ((_perf_attr)->field_mask & UCT_PERF_ATTR_FIELD_FLAGS) { \
        (_perf_attr)->flags = 0; \
    }
#else
#  define UCT_GDRX_ESTIMATE_PERF_FLAGS(_perf_attr)
#endif
#if UCT_GDRX_UCX_AT_LEAST(1, 22)
#  define UCT_GDRX_ESTIMATE_PERF_VERSIONED(_perf_attr, _bw) \
    if ((_perf_attr)->field_mask & UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH) { \
        (_perf_attr)->path_bandwidth.dedicated = (_bw); \
        (_perf_attr)->path_bandwidth.shared    = 0; \
    } \
    UCT_GDRX_ESTIMATE_PERF_FLAGS(_perf_attr)
#else
#  define UCT_GDRX_ESTIMATE_PERF_VERSIONED(_perf_attr, _bw) \
    UCT_GDRX_ESTIMATE_PERF_FLAGS(_perf_attr)
#endif

/* md_ops.query: fields of the flat attributes beyond the common ones.  UCP
 * (1.16, 1.22) asserts that an MD it registers buffers of a memory type on
 * for a protocol also caches that type, so both types are "cached" (in
 * UCP's registration cache, in front of gdrx's own). */
#if UCT_GDRX_UCX_AT_LEAST(1, 14)
static inline void uct_gdrx_md_attr_base(uct_md_attr_v2_t *attr)
{
#  if UCT_GDRX_UCX_AT_LEAST(1, 17)
    uct_md_base_md_query(attr);
#  else
    attr->reg_nonblock_mem_types = 0;
    attr->dmabuf_mem_types       = 0;
#  endif
    attr->cache_mem_types        = UCS_BIT(UCS_MEMORY_TYPE_HOST) |
                                   UCS_BIT(UCS_MEMORY_TYPE_CUDA);
    /* libgdrx pins any range inside one allocation; widening to GPU pages
     * would make UCP register neighbouring sub-allocations with it */
    attr->reg_alignment          = 1;
}
#else
#  define uct_gdrx_md_attr_base(_attr) \
    ucs_strncpy_zero((_attr)->component_name, "gdrx", \
                     sizeof((_attr)->component_name))
#endif

/* Registration cache flags gdrx adds to its configuration's
 * (RCACHE_PURGE_ON_FORK).  From 1.21 the LRU list (RCACHE_MAX_REGIONS/SIZE)
 * takes its own lock only when asked, and gdrx bounds its cache by default,
 * so the LRU is always on: gdrx's lookups run under the cache's read lock
 * and its puts under none, as gdr_copy's (UCX #11149).  No NO_PFN_CHECK
 * although device memory has no host PFN: UCX (1.13 to 1.22 at least)
 * enforces the LRU limits only on the path that records PFNs
 * (ucs_rcache_create_region), and compares them only with
 * UCX_RCACHE_CHECK_PFN set. */
#if UCT_GDRX_UCX_AT_LEAST(1, 21)
#  define UCT_GDRX_RCACHE_FLAGS UCS_RCACHE_FLAG_NEED_LRU_LOCK
#else
#  define UCT_GDRX_RCACHE_FLAGS 0
#endif

#endif
