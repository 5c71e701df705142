/*
 * handle_table.h - value handles: 64-bit ids that name slots of a table
 * whose memory is never freed.
 *
 * SPDX-License-Identifier: MIT
 *
 * An id is tag:8 | generation:32 | index:24.  A slot is live while its
 * live_id equals the id; retiring it stores 0 and freeing bumps the
 * generation, so an old id never matches again (until 2^32 reuses of the
 * same slot).  Because chunks of slots are only ever added, a lookup may
 * read any slot of any id without locks and never touches freed memory:
 * this is what lets the copy fast path validate a pin with a few loads.
 */
#ifndef GDRX_HANDLE_TABLE_H
#define GDRX_HANDLE_TABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "lock_order.h"

#define GDRX_HT_INDEX_BITS  24
#define GDRX_HT_INDEX_MASK  ((1u << GDRX_HT_INDEX_BITS) - 1)
#define GDRX_HT_GEN_SHIFT   GDRX_HT_INDEX_BITS
#define GDRX_HT_TAG_SHIFT   56
#define GDRX_HT_CHUNK_SHIFT 10
#define GDRX_HT_CHUNK_SLOTS (1u << GDRX_HT_CHUNK_SHIFT)
#define GDRX_HT_MAX_CHUNKS  (1u << (GDRX_HT_INDEX_BITS - GDRX_HT_CHUNK_SHIFT))

/* The first member of every table element. */
struct gdrx_hslot {
    _Atomic uint64_t live_id;  /* the slot's id while live, else 0 */
    uint32_t         index;    /* constant once the chunk exists */
    uint32_t         gen;      /* generation of the next id (table lock) */
    uint32_t         next_free;/* free-list link, index + 1 (table lock) */
};

struct gdrx_htable {
    uint8_t  tag;          /* top byte of every id: a pin id is never a ctx id */
    size_t   elem_size;    /* sizeof the element type that embeds gdrx_hslot */
    /* Initialises an element's own locks (which, like the slot, live
     * forever) when its chunk is created, and again in a fork child
     * (gdrx_ht_child_reset_locks): nothing else. */
    void   (*init)(struct gdrx_hslot *slot);
    pthread_mutex_t  lock; /* free list and growth */
    enum gdrx_lock_rank rank;       /* the lock's (lock_order.h) */
    uint32_t         free_head;     /* index + 1 of the first free slot; 0: none */
    _Atomic uint32_t used;          /* slots ever handed out (high-water mark) */
    _Atomic(char *)  chunks[GDRX_HT_MAX_CHUNKS];
};

#define GDRX_HTABLE_INIT(tag_, type_, init_, rank_) \
    { .tag = (tag_), .elem_size = sizeof(type_), .init = (init_), \
      .lock = PTHREAD_MUTEX_INITIALIZER, .rank = (rank_) }

/* The slot an id's index names, or NULL if the tag is wrong or the slot
 * was never created.  Says nothing about liveness. */
static inline struct gdrx_hslot *gdrx_ht_slot(struct gdrx_htable *t, uint64_t id)
{
    if ((uint8_t)(id >> GDRX_HT_TAG_SHIFT) != t->tag)
        return NULL;
    uint32_t index = (uint32_t)id & GDRX_HT_INDEX_MASK;
    char *chunk = atomic_load_explicit(&t->chunks[index >> GDRX_HT_CHUNK_SHIFT],
                                       memory_order_acquire);
    if (!chunk)
        return NULL;
    return (struct gdrx_hslot *)(chunk + (size_t)(index & (GDRX_HT_CHUNK_SLOTS - 1)) *
                                 t->elem_size);
}

/* The slot if id names a live one, else NULL.  Liveness can end right after
 * this returns; callers recheck under the element's own lock. */
static inline struct gdrx_hslot *gdrx_ht_lookup(struct gdrx_htable *t, uint64_t id)
{
    struct gdrx_hslot *s = gdrx_ht_slot(t, id);

    if (!s || atomic_load_explicit(&s->live_id, memory_order_acquire) != id)
        return NULL;
    return s;
}

static inline int gdrx_ht_is_live(struct gdrx_hslot *s, uint64_t id)
{
    return atomic_load_explicit(&s->live_id, memory_order_acquire) == id;
}

/* Reserve a slot; *id is the id it will have once published.  The slot is
 * not live yet.  NULL if the table is full or memory ran out. */
struct gdrx_hslot *gdrx_ht_alloc(struct gdrx_htable *t, uint64_t *id);

/* Make (or stop making) a reserved slot findable under id. */
void gdrx_ht_publish(struct gdrx_hslot *s, uint64_t id);
void gdrx_ht_retire(struct gdrx_hslot *s);

/* Return a retired (or never published) slot to the free list. */
void gdrx_ht_free(struct gdrx_htable *t, struct gdrx_hslot *s);

/* The fork handlers (fork.c) hold the table's lock across fork, so that a
 * child finds the free list consistent. */
void gdrx_ht_fork_lock(struct gdrx_htable *t);
void gdrx_ht_fork_unlock(struct gdrx_htable *t);

/* In a fork child (one thread): every slot ever handed out gets new locks
 * (init).  A parent thread the child does not have may have held one:
 * locked a context or pin it looked up (a live one, or one closed under it
 * and now free, which the child's next gdrx_open takes), and nothing in
 * the child would ever release it (issue 43, defect 10). */
void gdrx_ht_child_reset_locks(struct gdrx_htable *t);

/* Call fn on every slot ever handed out, live or not. */
void gdrx_ht_foreach(struct gdrx_htable *t, void (*fn)(struct gdrx_hslot *s, void *arg),
                     void *arg);

#endif /* GDRX_HANDLE_TABLE_H */
