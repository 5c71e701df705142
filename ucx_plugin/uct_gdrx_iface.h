/*
 * uct_gdrx_iface.h - the gdrx interface: one device that reaches the CUDA
 * memory of every GPU of this process through CPU copies.  Its type and
 * what its endpoints need of it; its operations and the transport are in
 * uct_gdrx_iface.c, above the endpoints.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef UCT_GDRX_IFACE_H
#define UCT_GDRX_IFACE_H

#include "uct_gdrx_dma.h"
#include "uct_gdrx_keycache.h"
#include "uct_gdrx_types.h"

#include <string.h>
#include <uct/base/uct_iface.h>


#define UCT_GDRX_MAX_IOV      16
#define UCT_GDRX_MAX_SEG_SIZE (64 * 1024)

/* bcopy's bounce buffer is on the stack up to this SEG_SIZE (the default),
 * else the interface's own (uct_gdrx_iface_t.bounce). */
#define UCT_GDRX_STACK_BOUNCE 8192

/* What an interface standing aside reports: slower than any transport. */
#define UCT_GDRX_ASIDE_LATENCY   1e-3 /* seconds, also its overhead */
#define UCT_GDRX_ASIDE_BANDWIDTH 1e6  /* bytes per second */
/* The dedicated part of the bandwidth iface_query reports (uct_gdrx_iface.c
 * says why): above gdr_copy's own from UCX 1.19 on, 250 MiB/s (UCX's "MBs"
 * are MiB; a decimal 250e6 here lost to it from about 34 processes a node) */
#define UCT_GDRX_RANK_BW_DEDICATED (256.0 * 1048576.0)


typedef uint64_t uct_gdrx_iface_addr_t;


/* Counted operations: kind of call x direction of the data. */
typedef enum uct_gdrx_op {
    UCT_GDRX_OP_SHORT,
    UCT_GDRX_OP_BCOPY,
    UCT_GDRX_OP_ZCOPY,
    UCT_GDRX_OP_DMA,   /**< a zcopy's bytes moved by the copy engine */
    UCT_GDRX_OP_LAST
} uct_gdrx_op_t;

typedef enum uct_gdrx_dir {
    UCT_GDRX_DIR_PUT, /**< host -> GPU (write-combined stores) */
    UCT_GDRX_DIR_GET, /**< GPU -> host (uncached BAR reads) */
    UCT_GDRX_DIR_LAST
} uct_gdrx_dir_t;


typedef struct uct_gdrx_op_counter {
    uint64_t count;
    uint64_t bytes;
} uct_gdrx_op_counter_t;


typedef struct uct_gdrx_iface_config {
    uct_iface_config_t super;
    size_t             seg_size;
    double             put_lat;
    double             get_lat;
    double             put_bw;
    double             get_bw;
    double             rank_bw;
    double             overhead;
    size_t             dma_thresh;
} uct_gdrx_iface_config_t;


typedef struct uct_gdrx_iface {
    uct_base_iface_t      super;
    uct_gdrx_iface_addr_t id;
    size_t                seg_size;
    double                lat[UCT_GDRX_DIR_LAST];
    double                bw[UCT_GDRX_DIR_LAST];
    double                rank_bw; /**< iface_query's figure (RANK_BW) */
    double                overhead;
    size_t                dma_thresh; /**< GPU-to-host copies from this size
                                           go to the GPU's copy engine */
    int                   counting; /**< UCX_GDRX_STATS_DUMP asks for them */
    uct_gdrx_op_counter_t counters[UCT_GDRX_OP_LAST][UCT_GDRX_DIR_LAST];
    uct_gdrx_keycache_t   keycache; /**< key-less copies' recent mappings */
    uct_gdrx_dma_t        dma;      /**< the copy engine's streams */
    void                  *bounce;  /**< bcopy's SEG_SIZE bytes above
                                         UCT_GDRX_STACK_BOUNCE, else NULL */
    int                   bounce_busy; /**< atomic: a bcopy holds it */
} uct_gdrx_iface_t;


static UCS_F_ALWAYS_INLINE void
uct_gdrx_iface_count(uct_gdrx_iface_t *iface, uct_gdrx_op_t op,
                     uct_gdrx_dir_t dir, size_t length)
{
    /* two locked adds per copy: only when someone will read them */
    if (ucs_unlikely(iface->counting)) {
        __atomic_fetch_add(&iface->counters[op][dir].count, 1,
                           __ATOMIC_RELAXED);
        __atomic_fetch_add(&iface->counters[op][dir].bytes, length,
                           __ATOMIC_RELAXED);
    }
}

/* 1 if iface_addr is this interface's: keys carry this process's pointers,
 * so nothing else is reachable. */
static UCS_F_ALWAYS_INLINE int
uct_gdrx_iface_is_reachable_addr(uct_iface_h tl_iface,
                                 const uct_iface_addr_t *iface_addr)
{
    uct_gdrx_iface_t *iface = ucs_derived_of(tl_iface, uct_gdrx_iface_t);
    uct_gdrx_iface_addr_t id;

    if (iface_addr == NULL) {
        return 0;
    }

    /* UCP packs addresses unaligned */
    memcpy(&id, iface_addr, sizeof(id));
    return id == iface->id;
}

#endif
