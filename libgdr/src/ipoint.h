/*
 * ipoint.h - interleaving points: named places where a test can park the
 * thread that reaches them and let another thread run first.
 *
 * SPDX-License-Identifier: MIT
 *
 * A race between two threads (a free and an allocation at the same
 * address, a fork and a pin) happens once in thousands of runs when left
 * to the scheduler.  GDRX_IPOINT("name") marks the window; a test arms the
 * name (tests/harness/ipoint.h), the next thread to get there waits until
 * the test releases it, and the race runs in the order the test chose,
 * every time.
 *
 * Test builds only (configure --enable-test-points, implied by
 * --enable-all): elsewhere the macro is empty and libgdrx exports neither
 * function below.  libgdrx and the UCX transport share this header, so
 * there is one hook for both: the plugin calls libgdrx's function.
 *
 * Names are "<component>.<place>", e.g. "mem_events.after_driver_free";
 * each is listed next to its use and in docs/free-interception.md.
 */
#ifndef GDRX_IPOINT_H
#define GDRX_IPOINT_H

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#ifdef GDRX_TEST_POINTS

/* Calls the hook, if one is set, with name; returns when the hook does. */
void gdrx_test_ipoint(const char *name);

/* Sets the hook every point calls (NULL: none; then a point costs one
 * atomic load).  The hook runs in the thread that reached the point, with
 * whatever locks that thread holds at that place. */
void gdrx_test_ipoint_hook_set(void (*fn)(const char *name));

#  define GDRX_IPOINT(name) gdrx_test_ipoint(name)
#else
#  define GDRX_IPOINT(name) ((void)0)
#endif

#endif /* GDRX_IPOINT_H */
