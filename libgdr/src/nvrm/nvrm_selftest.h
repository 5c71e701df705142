/*
 * nvrm_selftest.h - the proof a driver branch checked only against its
 * headers (nvrm_layout.h, NVRM_BRANCH_CHECKED) must give, once per
 * process, before the nvrm backend serves it.
 *
 * SPDX-License-Identifier: MIT
 *
 * The steps use the backend's own ops on memory of its own, exactly as a
 * caller's pin would: allocate 2 MiB with cuMemAlloc; find it through
 * the trace (the UVM layout) and, where CUDA exports dma-bufs, through
 * the export capture (the dma-buf layout), both naming the same RM
 * object and offset; pin (dup, verify) and map its first 64 KiB; write a
 * pattern through the mapping and read it back with cuMemcpyDtoH; write
 * another with cuMemcpyHtoD and read it through the mapping; unmap and
 * unpin; confirm the RM no longer knows our duplicate; free.  Any difference refuses
 * the branch, with a message naming the step.
 */
#ifndef GDRX_NVRM_SELFTEST_H
#define GDRX_NVRM_SELFTEST_H

#include <stdint.h>

#include "backend.h"
#include "cuda_loader.h"
#include "nvrm_abi.h"
#include "nvrm_cuda.h"

struct nvrm_selftest {
    int         rc;          /* 0: passed; else the errno of the failed step */
    const char *step;        /* the failed step, or "passed" */
    char        detail[160]; /* what differed */
    uint64_t    nsec;        /* the whole test's wall time */
    int         export_checked; /* 1 if the dma-buf export layout was checked too */
};

/* What the self-test needs from the backend beyond its ops. */
struct nvrm_selftest_env {
    const struct gdrx_backend_ops *ops;
    void                          *bctx;   /* an open context of the backend */
    const struct gdrx_cuda        *cu;
    const struct nvrm_cuda        *cx;
    /* our duplicate's handle behind a pin, and whether the RM still
     * knows a handle of our client (1) or not (0) */
    nvrm_handle_t (*pin_handle)(const struct gdrx_backend_pin *bp);
    int           (*handle_live)(void *bctx, nvrm_handle_t h);
};

/* Run the steps on CUDA device 0 (its primary context); fills *out.
 * Call with no backend lock held. */
void nvrm_selftest_run(const struct nvrm_selftest_env *env, struct nvrm_selftest *out);

#endif /* GDRX_NVRM_SELFTEST_H */
