/*
 * parked_call.h - a CUDA free or allocation in a thread of its own,
 * parked at an interleaving point (ipoint.h) before the case goes on: the
 * start of the suites that force a race into its worst order
 * (test_free_hold.c, test_fork_race.c).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_TEST_PARKED_CALL_H
#define GDRX_TEST_PARKED_CALL_H

#include <pthread.h>
#include <stddef.h>

#include "tcuda.h"

struct parked_call {
    pthread_t   t;
    CUcontext   ctx;
    CUdeviceptr p;   /* what cuMemFree_v2 frees, or what cuMemAlloc_v2 returned */
    size_t      len; /* 0: a free of p, else an allocation of len bytes */
    CUresult    rc;
};

/* Run c's call in a thread of its own in the caller's context, parked at
 * point: arm it, start the thread, wait up to ms until it is there.  0, or
 * -1 if a step failed.  Then ipoint_release(point), join c->t, read c->rc
 * (and c->p). */
int parked_call_start(struct parked_call *c, const char *point, unsigned ms);

/* cuMemFree_v2 looked up at the time of the call (the export, whose free
 * libgdrx's hooks see), and its result; CUDA_ERROR_NOT_FOUND without one.
 * Unlike tc_free, no CUnit assertion: fit for a forked child. */
CUresult parked_call_free(CUdeviceptr p);

#endif /* GDRX_TEST_PARKED_CALL_H */
