/*
 * uct_gdrx_types.h - the types the plugin's layers share: the memory domain,
 * its registrations and their remote keys.  No functions.
 *
 * SPDX-License-Identifier: MIT
 *
 * The plugin's layers, lowest first.  A file includes the headers of, and
 * calls, only files of its own layer or of those below, and no two files
 * call each other (tests/ucx/check_layers.sh checks all three on the built
 * objects against this list; a name without .h or .c means both):
 *
 * layers:
 *   compat:    uct_gdrx_compat.h
 *   types:     uct_gdrx_types.h
 *   services:  uct_gdrx_cuda uct_gdrx_events uct_gdrx_stats uct_gdrx_version
 *              uct_gdrx_gpu uct_gdrx_dma uct_gdrx_share
 *   pinning:   uct_gdrx_mem
 *   cache:     uct_gdrx_rcache
 *   md:        uct_gdrx_md_setup uct_gdrx_md_reg uct_gdrx_alloc uct_gdrx_md
 *   iface:     uct_gdrx_keycache uct_gdrx_iface.h
 *   ep:        uct_gdrx_ep_copy uct_gdrx_ep
 *   transport: uct_gdrx_iface.c
 * end of layers
 *
 * As in UCX's own transports, the interface's type (uct_gdrx_iface.h) lies
 * below its endpoints and its operation tables (uct_gdrx_iface.c), which
 * name the endpoint's functions, above them.
 */
#ifndef UCT_GDRX_TYPES_H
#define UCT_GDRX_TYPES_H

#include "uct_gdrx_compat.h"

#include <gdrx.h>
#include <ucs/memory/rcache.h>
#include <ucs/type/spinlock.h>
#include <pthread.h>


#define UCT_GDRX_NAME      "gdrx"
#define UCT_GDRX_DEV_NAME  "gdrx0"
#define UCT_GDRX_GPU_PAGE  65536

/* Recent registration windows the MD remembers (uct_gdrx_rcache.c). */
#define UCT_GDRX_WINDOW_HINTS 16


/* Where a registration stands: host memory needs no pin; device memory
 * libgdrx could not pin is copied by CUDA instead of failing the job; a
 * range no one allocation holds pins nothing and each copy through it
 * resolves its own address. */
typedef enum uct_gdrx_mem_kind {
    UCT_GDRX_MEM_KIND_HOST     = 1, /**< host memory: reg is a no-op */
    UCT_GDRX_MEM_KIND_EMPTY    = 2, /**< maps nothing: zero length, or the
                                         MD stands aside */
    UCT_GDRX_MEM_KIND_MAPPED   = 3, /**< device memory pinned and mapped */
    UCT_GDRX_MEM_KIND_UNPINNED = 4, /**< device memory the pin failed on:
                                         the copy engine copies it */
    UCT_GDRX_MEM_KIND_SPAN     = 5  /**< a range reaching past one device
                                         allocation (UCX's memory-type
                                         cache merged neighbours or kept a
                                         freed extent; another transport's
                                         alignment): every copy registers
                                         the part it touches */
} uct_gdrx_mem_kind_t;


/* A registration (the memh, also embedded in an rcache region). */
typedef struct uct_gdrx_mem {
    uct_gdrx_mem_kind_t kind;
    gdrx_pin_t          pin;
    uint64_t            dptr;      /**< first pinned device address */
    size_t              length;    /**< pinned bytes from dptr */
    void                *cpu_ptr;  /**< CPU address of dptr */
    uint64_t            buffer_id; /**< CUDA allocation it belongs to */
    uint64_t            checked;   /**< graph launches counted when buffer_id
                                        was last confirmed */
} uct_gdrx_mem_t;


/* What a registration asks for (also the cache's mem_reg argument). */
typedef struct uct_gdrx_mem_req {
    uint64_t            address;
    size_t              length;
    unsigned            flags;     /**< UCT_MD_MEM_FLAG_* */
} uct_gdrx_mem_req_t;


/* Packed and unpacked remote key: same process only (iface address check). */
typedef struct uct_gdrx_key {
    uint64_t            pin_id;
    uint64_t            dptr;
    uint64_t            length;
    uint64_t            cpu_ptr;
    uint64_t            checked;   /**< the memh's, when packed: a pin
                                        revoked after a graph launch since
                                        is resolved again (uct_gdrx_ep) */
    uint32_t            kind;
} UCS_S_PACKED uct_gdrx_key_t;


/* Counters of the MD, dumped at close when UCX_GDRX_STATS_DUMP asks. */
typedef struct uct_gdrx_md_counters {
    uint64_t            reg_calls;   /**< device mem_reg calls */
    uint64_t            pins;        /**< actual gdrx pins (cache misses) */
    uint64_t            unpins;
    uint64_t            host_regs;   /**< no-op host registrations */
    uint64_t            stale_drops; /**< hits dropped: stale, or not
                                          covering the request */
    uint64_t            reg_errors;
    uint64_t            reg_fallbacks; /**< pins refused: CUDA copies */
    uint64_t            allocs;        /**< device memory allocated */
    uint64_t            span_regs;     /**< registrations of ranges no one
                                            allocation holds */
    uint64_t            resolved;      /**< copies through a span or a
                                            revoked pin, served by the
                                            memory now at their address */
} uct_gdrx_md_counters_t;


/* Device range [start, end) a registration covers (uct_gdrx_mem_window). */
typedef struct uct_gdrx_window {
    uint64_t            start;
    uint64_t            end;
} uct_gdrx_window_t;


typedef struct uct_gdrx_md_config {
    uct_md_config_t          super;
    int                      backend;      /**< gdrx_backend_t */
    int                      enable_rcache;
    uct_gdrx_rcache_config_t rcache;
    int                      mem_events;   /**< subscribe to CUDA events */
    int                      detect;       /**< advertise memory detection */
    char                     *stats_dump;
    ucs_linear_func_t        uc_reg_cost;
    size_t                   reg_window;   /**< largest whole-allocation pin */
} uct_gdrx_md_config_t;


/* Where the MD stands.  UCP opens the MD of every component it finds, also
 * when UCX_TLS leaves gdrx out, so opening changes nothing in the process:
 * libgdrx's context (and its CUDA free hooks), the event bridge and the
 * registration cache come with the first use (uct_gdrx_md_activate).  A
 * set-up that fails makes the MD stand aside rather than fail the job: UCP
 * fixed its view of the MD at ucp_init, so every operation still answers,
 * in a way that routes nothing to gdrx (see uct_gdrx_md_setup.c). */
typedef enum uct_gdrx_md_state {
    UCT_GDRX_MD_STATE_IDLE   = 0, /**< opened by UCX, nothing set up yet */
    UCT_GDRX_MD_STATE_READY  = 1, /**< context, events and cache set up */
    UCT_GDRX_MD_STATE_ASIDE  = 2  /**< set-up failed: gdrx stands aside */
} uct_gdrx_md_state_t;


/* What the set-up needs from the configuration (freed after md_open). */
typedef struct uct_gdrx_md_setup {
    gdrx_backend_t           backend;
    int                      mem_events;
    int                      enable_rcache; /**< ucs_ternary_auto_value_t */
    ucs_rcache_params_t      rcache;        /**< from UCX_GDRX_RCACHE_* */
    ucs_status_t             status;        /**< of the set-up, once done */
} uct_gdrx_md_setup_t;


typedef struct uct_gdrx_md {
    uct_md_t                 super;
    int                      state;        /**< uct_gdrx_md_state_t, atomic */
    pthread_mutex_t          setup_lock;   /**< one set-up at a time */
    uct_gdrx_md_setup_t      setup;
    gdrx_t                   ctx;
    ucs_rcache_t             *rcache;      /**< NULL when disabled */
    int                      events;       /**< frees reach the caches: hits
                                                need no buffer id check */
    int                      events_state; /**< uct_gdrx_events_state_t */
    int                      detect;
    ucs_linear_func_t        reg_cost;     /**< of a registration, uncached */
    size_t                   reg_window;   /**< UCX_GDRX_REG_WINDOW */
    uct_gdrx_window_t        windows[UCT_GDRX_WINDOW_HINTS]; /**< recent
                                                windows, read unlocked */
    unsigned                 window_next;
    char                     *stats_dump;
    uct_gdrx_md_counters_t   counters;
} uct_gdrx_md_t;

#endif
