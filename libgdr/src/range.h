/*
 * range.h - whether one address range lies inside another.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_RANGE_H
#define GDRX_RANGE_H

#include <stdint.h>

/* 1 if [lo, lo + len) lies inside [base, base + size), with no sum that
 * can wrap (either range may end at 2^64, or claim to reach past it).
 * Every containment check of the library (allocations, windows, what a
 * backend pinned or mapped) is this one, and the UCX plugin's
 * (uct_gdrx_range_holds: keys and registrations) too.  Needs only
 * <stdint.h>, so that the plugin can include it. */
static inline int gdrx_range_within(uint64_t base, uint64_t size, uint64_t lo, uint64_t len)
{
    return lo >= base && len <= size && lo - base <= size - len;
}

#endif /* GDRX_RANGE_H */
