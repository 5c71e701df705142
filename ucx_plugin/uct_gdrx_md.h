/*
 * uct_gdrx_md.h - the gdrx memory domain: pins and maps CUDA device memory
 * through libgdrx, behind a registration cache.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_MD_H
#define UCT_GDRX_MD_H

#include "uct_gdrx_compat.h"
#include "uct_gdrx_events.h"

#include <gdrx.h>
#include <ucs/memory/rcache.h>
#include <ucs/type/spinlock.h>
#include <pthread.h>


#define UCT_GDRX_NAME      "gdrx"
#define UCT_GDRX_DEV_NAME  "gdrx0"
#define UCT_GDRX_GPU_PAGE  65536

/* Recent registration windows the MD remembers (uct_gdrx_rcache.c). */
#define UCT_GDRX_WINDOW_HINTS 16


extern uct_component_t uct_gdrx_component;


/* Where a registration stands: host memory needs no pin; device memory
 * libgdrx could not pin is copied by CUDA instead of failing the job. */
typedef enum uct_gdrx_mem_kind {
    UCT_GDRX_MEM_KIND_HOST     = 1, /**< host memory: reg is a no-op */
    UCT_GDRX_MEM_KIND_EMPTY    = 2, /**< maps nothing: zero length, or the
                                         MD stands aside */
    UCT_GDRX_MEM_KIND_MAPPED   = 3, /**< device memory pinned and mapped */
    UCT_GDRX_MEM_KIND_UNPINNED = 4  /**< device memory the pin failed on:
                                         the copy engine copies it */
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
    uint32_t            kind;
} UCS_S_PACKED uct_gdrx_key_t;


/* 1 if [addr, addr + length) lies inside [base, base + size), without
 * overflow (every range check of keys and registrations). */
static UCS_F_ALWAYS_INLINE int
uct_gdrx_range_holds(uint64_t base, uint64_t size, uint64_t addr, size_t length)
{
    return (addr >= base) && (length <= size) && (addr - base <= size - length);
}


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


/* uct_gdrx_md_setup.c: the first use's set-up, and its undoing at close */
void uct_gdrx_md_setup_init(uct_gdrx_md_t *md,
                            const uct_gdrx_md_config_t *config);
ucs_status_t uct_gdrx_md_activate_slow(uct_gdrx_md_t *md);
void uct_gdrx_md_setup_cleanup(uct_gdrx_md_t *md);

/* Make the MD usable (context, events, cache): UCS_OK once set up, else
 * the set-up's error, and the MD stands aside from then on. */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gdrx_md_activate(uct_gdrx_md_t *md)
{
    if (ucs_likely(__atomic_load_n(&md->state, __ATOMIC_ACQUIRE) ==
                   UCT_GDRX_MD_STATE_READY)) {
        return UCS_OK;
    }
    return uct_gdrx_md_activate_slow(md);
}

/* 1 once the MD's set-up failed: it stands aside for good. */
static UCS_F_ALWAYS_INLINE int uct_gdrx_md_is_aside(uct_gdrx_md_t *md)
{
    return __atomic_load_n(&md->state, __ATOMIC_ACQUIRE) ==
           UCT_GDRX_MD_STATE_ASIDE;
}

/* uct_gdrx_mem.c: whether mem still names the allocation it was made for
 * (confirming it by the buffer id where events cannot vouch for it). */
int uct_gdrx_mem_confirm(uct_gdrx_md_t *md, uct_gdrx_mem_t *mem);

/* Trusted on events alone while no graph launched since it was confirmed
 * (a graph's free nodes raise no FREE event); else asks CUDA once. */
static UCS_F_ALWAYS_INLINE int
uct_gdrx_mem_is_current(uct_gdrx_md_t *md, uct_gdrx_mem_t *mem)
{
    if (ucs_likely(md->events &&
                   (__atomic_load_n(&mem->checked, __ATOMIC_RELAXED) ==
                    uct_gdrx_events_graph_epoch()))) {
        return 1;
    }
    return uct_gdrx_mem_confirm(md, mem);
}

/* uct_gdrx_md.c */
/* The status of a libgdrx error code, on every path. */
ucs_status_t uct_gdrx_md_status(int err);
/* mem_reg / mem_dereg of the MD (through the cache when there is one) */
ucs_status_t uct_gdrx_md_reg(uct_gdrx_md_t *md, void *address, size_t length,
                             unsigned reg_flags, uct_mem_h *memh_p);
ucs_status_t uct_gdrx_md_dereg(uct_gdrx_md_t *md, uct_gdrx_mem_t *mem);
void uct_gdrx_mem_pack_key(const uct_gdrx_mem_t *mem, uct_gdrx_key_t *key);

/* uct_gdrx_mem.c: pin/map one range, and undo it.  uct_gdrx_mem_window
 * gives the range a registration pins (its whole allocation, or a window
 * of it); [dptr, dptr + length) of uct_gdrx_mem_map holds what req asks for
 * and may reach past its allocation (the cache's alignment and merges): the
 * part in req's allocation is pinned. */
ucs_status_t uct_gdrx_mem_window(uct_gdrx_md_t *md, uint64_t addr,
                                 size_t length, int hide_errors,
                                 uct_gdrx_window_t *window, int *is_host_p);
ucs_status_t uct_gdrx_mem_map(uct_gdrx_md_t *md, uint64_t dptr, size_t length,
                              const uct_gdrx_mem_req_t *req, int hide_errors,
                              uct_gdrx_mem_t *mem);
void uct_gdrx_mem_unmap(uct_gdrx_md_t *md, uct_gdrx_mem_t *mem);
ucs_status_t uct_gdrx_mem_reg_nocache(uct_gdrx_md_t *md, void *address,
                                      size_t length, unsigned flags,
                                      uct_mem_h *memh_p);
ucs_status_t uct_gdrx_mem_dereg_nocache(uct_gdrx_md_t *md, uct_gdrx_mem_t *mem);
int uct_gdrx_mem_is_host(void *address, size_t length);
extern uct_gdrx_mem_t uct_gdrx_host_memh;
extern uct_gdrx_mem_t uct_gdrx_empty_memh;

/* uct_gdrx_rcache.c */
void uct_gdrx_rcache_params_init(ucs_rcache_params_t *params,
                                  const uct_gdrx_md_config_t *config);
ucs_status_t uct_gdrx_rcache_create(uct_gdrx_md_t *md);
ucs_status_t uct_gdrx_rcache_reg(uct_gdrx_md_t *md, void *address,
                                 size_t length, unsigned flags,
                                 uct_mem_h *memh_p);
void uct_gdrx_rcache_dereg(uct_gdrx_md_t *md, uct_gdrx_mem_t *mem);

/* uct_gdrx_alloc.c: device memory allocated by the MD (UCT_MD_FLAG_ALLOC) */
ucs_status_t uct_gdrx_md_mem_alloc(uct_md_h tl_md, size_t *length_p,
                                   void **address_p, UCT_GDRX_MEM_ALLOC_ARGS,
                                   const char *alloc_name, uct_mem_h *memh_p);
ucs_status_t uct_gdrx_md_mem_free(uct_md_h tl_md, uct_mem_h memh);

/* uct_gdrx_version.c: UCS_OK if the running UCX is the release gdrx was
 * built for (or cannot tell: no libucp); UCS_ERR_UNSUPPORTED once refused */
ucs_status_t uct_gdrx_version_check(void);

/* uct_gdrx_stats.c */
/* 1 unless UCX_GDRX_STATS_DUMP says no */
int uct_gdrx_stats_wanted(const char *where);
void uct_gdrx_stats_dump(const char *where, const char *fmt, ...)
    UCS_F_PRINTF(2, 3);

#endif
