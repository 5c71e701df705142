/*
 * fork_defer.h - libgdrx called by a fork handler that runs after its own
 * (fork_defer.c says why and what happens).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_FORK_DEFER_H
#define GDRX_FORK_DEFER_H

#include "gdrx.h"

/* fork.c's prepare handler calls begin once it holds every lock; the
 * parent and child handlers call end once they have released them.
 * refuse: 0, or -EDEADLK (said) on that thread between the two.  defer: 0
 * elsewhere; on that thread 1, with *rc 0 if fn(ctx, pin) is queued for
 * the parent handler, else the error (ends_pin: fn unpins). */
typedef int (*gdrx_deferred_fn)(gdrx_t ctx, gdrx_pin_t pin);
struct gdrx_deferred {
    gdrx_deferred_fn fn;
    int              ends_pin;
    gdrx_t           ctx;
    gdrx_pin_t       pin;
};
void gdrx_fork_defer_begin(void);
void gdrx_fork_defer_end(int in_child);
int gdrx_fork_refuse(const char *what);
int gdrx_fork_defer(gdrx_deferred_fn fn, int ends_pin, gdrx_t ctx, gdrx_pin_t pin, int *rc);
/* A copy on a pin held by a CUDA call of another thread (fenced) has
 * waited this long: 0 where it may go on waiting; on that thread, between
 * begin and end, the copy's error (said): -EDEADLK, or -ECHILD in a child. */
int gdrx_fork_copy_refuse(void);

#endif
