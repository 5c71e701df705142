/*
 * park.h - stop a thread between two instructions of a function's entry,
 * as the scheduler does at random, on purpose: for the tests that install
 * hooks while other threads run (tests/hooks/test_stress.c,
 * tests/gpu/hooks_stress.c).
 *
 * SPDX-License-Identifier: MIT
 *
 * park_one() signals the given threads (SIGURG) until one is interrupted
 * after the first byte and before the eighth of one of the entries (what a
 * 7-byte patch would cover); that thread then waits in the handler until
 * unpark(), and resumes at the same address, over whatever the entry
 * became.
 */
#ifndef GDRX_TEST_PARK_H
#define GDRX_TEST_PARK_H

#include <pthread.h>
#include <stddef.h>

/* The entries to park in (kept, not copied) and the handler; 0 or -errno. */
int park_init(void *const *entries, size_t n);

/* 1 if a thread is parked now, 0 if none could be within budget_ms of
 * signalling (how often one can depends on the load of the machine). */
int park_one(const pthread_t *threads, size_t n, unsigned budget_ms);

/* Whether a park_one() is trying or a thread is parked (other threads may
 * stand aside meanwhile). */
int park_busy(void);

/* Let the parked thread (if was_parked) run on, once it is back. */
void park_release(int was_parked);

/* How many park_one() calls parked a thread. */
unsigned park_count(void);

#endif /* GDRX_TEST_PARK_H */
