/*
 * ipoint.h - the test side of the interleaving points (libgdr/src/ipoint.h):
 * park the thread that reaches a named point, wait until one is there, let
 * it go.
 *
 * SPDX-License-Identifier: MIT
 *
 *   ipoint_arm("mem_events.after_driver_free");
 *   start a thread that frees;
 *   ipoint_wait("mem_events.after_driver_free", 5000) == 0: it is parked;
 *   allocate at the same address in this thread;
 *   ipoint_release("mem_events.after_driver_free"); join.
 *
 * Several names may be armed at once; each parks one thread (the first to
 * arrive), others pass.  Every wait has a timeout, and a parked thread
 * leaves by itself after IPOINT_PARK_MAX_MS, so a broken test fails
 * instead of hanging.  Thread-safe; built only with --enable-test-points
 * (a suite using it links GDRX_IPOINT_LIBS).
 */
#ifndef GDRX_TEST_IPOINT_H
#define GDRX_TEST_IPOINT_H

/* How long a parked thread waits for its release before it goes on by
 * itself (and ipoint_release then answers -ETIMEDOUT). */
#define IPOINT_PARK_MAX_MS 20000u

/* The next thread that reaches name parks there.  0, -EBUSY if name is
 * armed already, -ENOSPC if too many are, -EINVAL for a bad name. */
int ipoint_arm(const char *name);

/* 0 once a thread is parked at name (also if it was before the call),
 * -ETIMEDOUT if none is within timeout_ms. */
int ipoint_wait(const char *name, unsigned timeout_ms);

/* Lets the thread parked at name go on: 0; -ETIMEDOUT if it had left by
 * itself after IPOINT_PARK_MAX_MS; -ENOENT if none was parked (an armed
 * name is disarmed all the same). */
int ipoint_release(const char *name);

/* Disarms every name and releases every parked thread. */
void ipoint_reset(void);

#endif /* GDRX_TEST_IPOINT_H */
