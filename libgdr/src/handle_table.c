/*
 * handle_table.c - slot allocation for value handles (see handle_table.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include "handle_table.h"

#include <stdlib.h>
#include <string.h>

/* Element storage is cache-line aligned so that the fast-path fields of one
 * pin do not share a line with another pin's lock. */
#define GDRX_HT_ALIGN 64

static struct gdrx_hslot *slot_at(struct gdrx_htable *t, char *chunk, uint32_t i)
{
    return (struct gdrx_hslot *)(chunk + (size_t)i * t->elem_size);
}

/* Called with t->lock held: make sure the chunk holding index exists. */
static int ensure_chunk(struct gdrx_htable *t, uint32_t index)
{
    uint32_t c = index >> GDRX_HT_CHUNK_SHIFT;

    if (atomic_load_explicit(&t->chunks[c], memory_order_relaxed))
        return 0;
    size_t bytes = (size_t)GDRX_HT_CHUNK_SLOTS * t->elem_size;
    bytes = (bytes + GDRX_HT_ALIGN - 1) & ~(size_t)(GDRX_HT_ALIGN - 1);
    char *chunk = aligned_alloc(GDRX_HT_ALIGN, bytes);
    if (!chunk)
        return -1;
    memset(chunk, 0, bytes);
    for (uint32_t i = 0; i < GDRX_HT_CHUNK_SLOTS; i++) {
        struct gdrx_hslot *s = slot_at(t, chunk, i);
        s->index = (c << GDRX_HT_CHUNK_SHIFT) | i;
        s->gen = 1;
        if (t->init)
            t->init(s);
    }
    /* Release: a lock-free reader that sees the chunk sees it initialised.
     * The chunk is never freed (see handle_table.h). */
    atomic_store_explicit(&t->chunks[c], chunk, memory_order_release);
    return 0;
}

struct gdrx_hslot *gdrx_ht_alloc(struct gdrx_htable *t, uint64_t *id)
{
    struct gdrx_hslot *s = NULL;

    gdrx_mutex_lock(&t->lock, t->rank);
    if (t->free_head) {
        s = gdrx_ht_slot(t, ((uint64_t)t->tag << GDRX_HT_TAG_SHIFT) | (t->free_head - 1));
        t->free_head = s->next_free;
    } else {
        uint32_t index = atomic_load_explicit(&t->used, memory_order_relaxed);
        if (index <= GDRX_HT_INDEX_MASK && ensure_chunk(t, index) == 0) {
            s = gdrx_ht_slot(t, ((uint64_t)t->tag << GDRX_HT_TAG_SHIFT) | index);
            atomic_store_explicit(&t->used, index + 1, memory_order_release);
        }
    }
    if (s) {
        s->next_free = 0;
        *id = ((uint64_t)t->tag << GDRX_HT_TAG_SHIFT) |
              ((uint64_t)s->gen << GDRX_HT_GEN_SHIFT) | s->index;
    }
    gdrx_mutex_unlock(&t->lock, t->rank);
    return s;
}

void gdrx_ht_publish(struct gdrx_hslot *s, uint64_t id)
{
    atomic_store_explicit(&s->live_id, id, memory_order_release);
}

void gdrx_ht_retire(struct gdrx_hslot *s)
{
    atomic_store_explicit(&s->live_id, 0, memory_order_release);
}

void gdrx_ht_free(struct gdrx_htable *t, struct gdrx_hslot *s)
{
    gdrx_mutex_lock(&t->lock, t->rank);
    /* A new generation makes every id handed out for this slot so far
     * stale; 0 is skipped so that no id has generation 0. */
    if (++s->gen == 0)
        s->gen = 1;
    s->next_free = t->free_head;
    t->free_head = s->index + 1;
    gdrx_mutex_unlock(&t->lock, t->rank);
}

void gdrx_ht_foreach(struct gdrx_htable *t, void (*fn)(struct gdrx_hslot *s, void *arg),
                     void *arg)
{
    uint32_t n = atomic_load_explicit(&t->used, memory_order_acquire);

    for (uint32_t i = 0; i < n; i++)
        fn(gdrx_ht_slot(t, ((uint64_t)t->tag << GDRX_HT_TAG_SHIFT) | i), arg);
}

void gdrx_ht_child_reset_locks(struct gdrx_htable *t)
{
    uint32_t n = atomic_load_explicit(&t->used, memory_order_relaxed);

    for (uint32_t i = 0; t->init && i < n; i++)
        t->init(gdrx_ht_slot(t, ((uint64_t)t->tag << GDRX_HT_TAG_SHIFT) | i));
}

void gdrx_ht_fork_lock(struct gdrx_htable *t)
{
    gdrx_mutex_lock(&t->lock, t->rank);
}

void gdrx_ht_fork_unlock(struct gdrx_htable *t)
{
    gdrx_mutex_unlock(&t->lock, t->rank);
}
