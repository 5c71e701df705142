/*
 * release_order.h - subscribers hear of an address's release before they
 * hear of its reuse.
 *
 * SPDX-License-Identifier: MIT
 *
 * FREE events are raised only after CUDA released the memory (a free it
 * refuses raises none), so another thread may get the same address from
 * CUDA before the FREE callbacks ran.  Its ALLOC event waits until they
 * did: a subscriber that keeps a map of device memory (UCX's memory-type
 * cache) never drops a new allocation for an old one's late FREE.  Only
 * an ALLOC that overlaps a release in progress waits, and the release it
 * waits for is past the driver's call (the address was handed out
 * again), so the wait is the FREE callbacks' time.
 */
#ifndef GDRX_RELEASE_ORDER_H
#define GDRX_RELEASE_ORDER_H

#include <stdint.h>

/* Before the driver's call: [lo, hi) may be released.  Returns the
 * handle for _end (waits for a free slot when 64 are in progress). */
int gdrx_release_order_begin(uint64_t lo, uint64_t hi);
/* After the FREE callbacks (or the refusal): allocations overlapping it
 * are reported from now on.  A negative handle is ignored. */
void gdrx_release_order_end(int handle);
/* Before an ALLOC event of [lo, hi): wait for the releases overlapping it
 * that other threads have in progress. */
void gdrx_release_order_wait(uint64_t lo, uint64_t hi);

/* fork: held across fork by the memory events' fork handlers; in the
 * child, the releases of the parent's threads are forgotten. */
void gdrx_release_order_fork_lock(void);
void gdrx_release_order_fork_unlock(void);

#endif /* GDRX_RELEASE_ORDER_H */
