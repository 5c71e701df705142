/*
 * tool_measure.h - the method every benchmark tool shares: back-to-back
 * batches of one operation timed with the calibrated clock, per-op time =
 * batch time / batch length, and P0/P50/P99 over the batches.  Several
 * operations are measured interleaved (one batch of each in turn), so they
 * see the same machine state: gdrx's copy and its floor side by side.
 * Nothing is subtracted from a batch's time (no estimate of the clock's
 * own cost): its clock reads are in it, so a per-op time errs only high,
 * by their cost over the batch's length, which calibration keeps small.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_TOOL_MEASURE_H
#define GDRX_TOOL_MEASURE_H

#include <stddef.h>

#include "tool_clock.h"

struct tool_stats {
    double   p0, p50, p99; /* ns per op (per-batch means) */
    unsigned batch;        /* ops per timed batch */
    unsigned samples;      /* batches */
};

/* One measured operation: run(ctx, count) performs `count` ops back to
 * back and returns 0 or a negative error. */
struct tool_op {
    const char *name;
    int       (*run)(void *ctx, unsigned count);
    void       *ctx;
    unsigned    batch;     /* 0: calibrate (struct tool_method) */
    int         share;     /* 1: the ops that share run one batch length,
                              the largest any of them calibrated */
    double     *raw;       /* out: samples ns/op in run order (malloc'ed) */
    struct tool_stats st;  /* out */
};

/* Calibration doubles the ops per batch from 1 until the fastest of 3
 * batches lasts target_ns and the batch has min_batch ops, or fewer that
 * already last long_ns; max_batch at most. */
struct tool_method {
    unsigned samples;      /* batches per op */
    unsigned warmup;       /* untimed ops per op first */
    double   target_ns;
    unsigned max_batch;
    unsigned min_batch;    /* 0: no minimum */
    double   long_ns;
};

/* Measure ops[0..n) interleaved.  0, or the first op's error (the index in
 * *failed when not NULL).  Free the raw arrays with tool_ops_free. */
int tool_measure(const struct tool_clock *clk, const struct tool_method *m,
                 struct tool_op *ops, int n, int *failed);
void tool_ops_free(struct tool_op *ops, int n);

/* P0/P50/P99 of v[0..n) (sorted in place); samples = n. */
void tool_stats_of(double *v, unsigned n, struct tool_stats *out);

#endif /* GDRX_TOOL_MEASURE_H */
