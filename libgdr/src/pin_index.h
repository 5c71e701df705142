/*
 * pin_index.h - the guard ranges of the live pins (their allocation, or
 * for a span everything it reaches), sorted, so that a CUDA free finds the
 * pins it overlaps without looking at any other.
 *
 * SPDX-License-Identifier: MIT
 *
 * A pin is in the index from just before its backend pin until it is
 * revoked or unpinned (PINNED and MAPPED, plus creation).  Lock order:
 * pin->lock -> the index's own rwlock; a lookup takes the rwlock alone and
 * returns copies, which the caller then locks and checks one by one.
 */
#ifndef GDRX_PIN_INDEX_H
#define GDRX_PIN_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct gdrx_pin;

struct gdrx_pin_ref {
    struct gdrx_pin *pin; /* the slot: never freed */
    uint64_t         id;  /* the pin's id; the slot may hold another pin by now */
};

/* Add [lo, hi) for the pin; 0 or -ENOMEM.  pin->lock held.  launch: the
 * pin's memory is a CUDA graph allocation, which a graph launch may free
 * with no call the hooks see (graph_mem.h). */
int gdrx_pin_index_add(struct gdrx_pin *pin, uint64_t id, uint64_t lo, uint64_t hi, int launch);
/* Remove what gdrx_pin_index_add(pin, id, lo, ...) added (if it is there). */
void gdrx_pin_index_remove(struct gdrx_pin *pin, uint64_t id, uint64_t lo);

/* The pins whose range overlaps [lo, hi): up to max of them into out;
 * returns how many there are (call again with room for more if that
 * exceeds max).  O(log n + pins near the range). */
size_t gdrx_pin_index_find(uint64_t lo, uint64_t hi, struct gdrx_pin_ref *out, size_t max);

/* The same for the pins added with launch set, wherever they are.  Every
 * graph launch asks, so whether there are any is one atomic load
 * (gdrx_pin_index_launch_bound), without the lock. */
size_t gdrx_pin_index_find_launch_bound(struct gdrx_pin_ref *out, size_t max);
int gdrx_pin_index_launch_bound(void);

/* fork: the prepare handler takes the lock, the parent's releases it, the
 * child's empties the index (the parent's pins are not the child's) and
 * releases it. */
void gdrx_pin_index_fork_prepare(void);
void gdrx_pin_index_fork_parent(void);
void gdrx_pin_index_fork_child(void);

#endif /* GDRX_PIN_INDEX_H */
