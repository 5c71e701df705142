/*
 * fence_flow.h - check the fences of a compiled copy routine from its
 * machine code.  No test on host memory can see a missing SFENCE or LFENCE
 * (host memory is not write-combined), so the routine's instructions are
 * disassembled (binutils objdump, which every gcc install has) and every
 * path through them is followed.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_FENCE_FLOW_H
#define GDRX_FENCE_FLOW_H

#include <stddef.h>

/* What fence_flow_check() saw, for the caller's sanity checks. */
struct fence_flow {
    char     name[128];     /* the routine's symbol */
    unsigned insns;         /* instructions analysed (main and .cold part) */
    unsigned exits;         /* ret, and jumps out of the routine */
    unsigned stores;        /* stores that need a later SFENCE */
    unsigned vector_loads;  /* vector loads through a pointer (not stack) */
    char     problem[512];  /* the first violation, or "" */
};

/*
 * Check the routine at fn, in the object the running process loaded it
 * from.  Holds when, on every path through its instructions:
 *  - every exit (ret, or a jump leaving the routine) comes after an SFENCE
 *    (or MFENCE) that follows the last store to non-stack memory;
 *  - with need_lfence, no vector load through a pointer runs before an
 *    LFENCE (or MFENCE) has run.
 * Returns 0 if both hold, 1 if not (out->problem says where), -1 if the
 * code could not be read (out->problem says why).
 */
int fence_flow_check(const void *fn, int need_lfence, struct fence_flow *out);

#endif /* GDRX_FENCE_FLOW_H */
