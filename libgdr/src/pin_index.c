/*
 * pin_index.c - a sorted array of live pins' guard ranges (see
 * pin_index.h).
 *
 * SPDX-License-Identifier: MIT
 *
 * Sorted by the start of the range.  Ranges overlap: a span covers its
 * neighbours' pins, and a pin's range may outlive its allocation (a free
 * the hooks missed) and so overlap a newer one; a lookup therefore starts
 * span_max before the freed range, where span_max is the longest range in
 * the index.
 * Adding and removing move the tail of the array (pinning makes system
 * calls anyway); a lookup is a binary search.
 */
#include "pin_index.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "lock_order.h"

struct entry {
    uint64_t         lo, hi;
    struct gdrx_pin *pin;
    uint64_t         id;
    int              launch;
};

static pthread_rwlock_t index_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct entry    *entries;
static size_t           count, capacity;
static uint64_t         span_max; /* longest hi - lo; reset when empty */
static size_t           nlaunch;  /* entries with launch set (atomic reads) */

/* First position whose lo is >= lo. */
static size_t lower_bound(uint64_t lo)
{
    size_t a = 0, b = count;

    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (entries[m].lo < lo)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

int gdrx_pin_index_add(struct gdrx_pin *pin, uint64_t id, uint64_t lo, uint64_t hi, int launch)
{
    int rc = 0;

    gdrx_rwlock_lock(&index_lock, GDRX_LOCK_INDEX, GDRX_WRITE);
    if (count == capacity) {
        size_t cap = capacity ? capacity * 2 : 64;
        struct entry *e = realloc(entries, cap * sizeof(*e));
        if (!e) {
            rc = -ENOMEM;
            goto out;
        }
        entries = e;
        capacity = cap;
    }
    size_t at = lower_bound(lo);
    for (size_t i = count; i > at; i--)
        entries[i] = entries[i - 1];
    entries[at] = (struct entry){ .lo = lo, .hi = hi, .pin = pin, .id = id, .launch = launch };
    count++;
    if (launch)
        __atomic_store_n(&nlaunch, nlaunch + 1, __ATOMIC_RELEASE);
    if (hi - lo > span_max)
        span_max = hi - lo;
out:
    gdrx_rwlock_unlock(&index_lock, GDRX_LOCK_INDEX);
    return rc;
}

void gdrx_pin_index_remove(struct gdrx_pin *pin, uint64_t id, uint64_t lo)
{
    gdrx_rwlock_lock(&index_lock, GDRX_LOCK_INDEX, GDRX_WRITE);
    for (size_t i = lower_bound(lo); i < count && entries[i].lo == lo; i++) {
        if (entries[i].pin != pin || entries[i].id != id)
            continue;
        if (entries[i].launch)
            __atomic_store_n(&nlaunch, nlaunch - 1, __ATOMIC_RELEASE);
        for (; i + 1 < count; i++)
            entries[i] = entries[i + 1];
        if (--count == 0)
            span_max = 0;
        break;
    }
    gdrx_rwlock_unlock(&index_lock, GDRX_LOCK_INDEX);
}

/* The pins of the entries overlapping [lo, hi), only the launch-bound
 * ones if launch: up to max into out; returns how many there are. */
static size_t scan(uint64_t lo, uint64_t hi, int launch, struct gdrx_pin_ref *out, size_t max)
{
    size_t found = 0;

    gdrx_rwlock_lock(&index_lock, GDRX_LOCK_INDEX, GDRX_READ);
    /* Only an entry starting at most span_max before lo can reach lo; once
     * nlaunch launch-bound ones are found, there is no other. */
    size_t i = lower_bound(lo > span_max ? lo - span_max : 0);
    for (; i < count && entries[i].lo < hi && (!launch || found < nlaunch); i++) {
        if (entries[i].hi <= lo || (launch && !entries[i].launch))
            continue;
        if (found < max)
            out[found] = (struct gdrx_pin_ref){ .pin = entries[i].pin, .id = entries[i].id };
        found++;
    }
    gdrx_rwlock_unlock(&index_lock, GDRX_LOCK_INDEX);
    return found;
}

size_t gdrx_pin_index_find(uint64_t lo, uint64_t hi, struct gdrx_pin_ref *out, size_t max)
{
    return scan(lo, hi, 0, out, max);
}

/* Every range is inside [0, UINT64_MAX): the whole index. */
size_t gdrx_pin_index_find_launch_bound(struct gdrx_pin_ref *out, size_t max)
{
    return scan(0, UINT64_MAX, 1, out, max);
}

int gdrx_pin_index_launch_bound(void)
{
    return __atomic_load_n(&nlaunch, __ATOMIC_ACQUIRE) != 0;
}

void gdrx_pin_index_fork_prepare(void)
{
    gdrx_rwlock_lock(&index_lock, GDRX_LOCK_INDEX, GDRX_WRITE);
}

void gdrx_pin_index_fork_parent(void)
{
    gdrx_rwlock_unlock(&index_lock, GDRX_LOCK_INDEX);
}

void gdrx_pin_index_fork_child(void)
{
    count = 0;
    span_max = 0;
    nlaunch = 0;
    gdrx_rwlock_child_reset(&index_lock, GDRX_LOCK_INDEX);
}
