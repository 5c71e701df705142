/*
 * tool_measure.c - batches, interleaving and percentiles (tool_measure.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tool_measure.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentiles: P99 is a sample that was measured. */
void tool_stats_of(double *v, unsigned n, struct tool_stats *out)
{
    if (n == 0) {
        out->p0 = out->p50 = out->p99 = 0;
        out->samples = 0;
        return;
    }
    qsort(v, n, sizeof(*v), cmp_double);
    out->p0 = v[0];
    out->p50 = v[((size_t)n * 50 + 99) / 100 - 1];
    out->p99 = v[((size_t)n * 99 + 99) / 100 - 1];
    out->samples = n;
}

static int time_batch(const struct tool_clock *clk, struct tool_op *op, unsigned count,
                      double *ns)
{
    uint64_t t0 = tool_clock_begin(clk);
    int rc = op->run(op->ctx, count);
    uint64_t t1 = tool_clock_end(clk);
    *ns = tool_clock_ns(clk, t1 - t0);
    return rc;
}

/* The fastest of 3 batches of count: one interrupted batch does not stop
 * the doubling early. */
static int time_best(const struct tool_clock *clk, struct tool_op *op, unsigned count,
                     double *ns)
{
    int rc = 0;
    *ns = 0;
    for (int i = 0; i < 3 && rc == 0; i++) {
        double t;
        if ((rc = time_batch(clk, op, count, &t)) == 0 && (i == 0 || t < *ns))
            *ns = t;
    }
    return rc;
}

static int calibrate(const struct tool_clock *clk, const struct tool_method *m,
                     struct tool_op *op)
{
    double ns = 0;
    int rc;

    if (m->warmup && (rc = op->run(op->ctx, m->warmup)) != 0)
        return rc;
    if (op->batch)
        return 0;
    for (op->batch = 1;; op->batch *= 2) {
        if ((rc = time_best(clk, op, op->batch, &ns)) != 0)
            return rc;
        if ((ns >= m->target_ns && (op->batch >= m->min_batch || ns >= m->long_ns)) ||
            op->batch >= m->max_batch)
            return 0;
    }
}

/* The sharing ops take the largest batch of them. */
static void share_batch(struct tool_op *ops, int n)
{
    unsigned most = 0;
    for (int i = 0; i < n; i++)
        if (ops[i].share && ops[i].batch > most)
            most = ops[i].batch;
    for (int i = 0; i < n; i++)
        if (ops[i].share)
            ops[i].batch = most;
}

int tool_measure(const struct tool_clock *clk, const struct tool_method *m,
                 struct tool_op *ops, int n, int *failed)
{
    int rc = 0, i = 0;

    for (i = 0; i < n && rc == 0; i++) {
        ops[i].raw = calloc(m->samples ? m->samples : 1, sizeof(double));
        rc = ops[i].raw ? calibrate(clk, m, &ops[i]) : -ENOMEM;
    }
    if (rc == 0)
        share_batch(ops, n);
    for (unsigned s = 0; s < m->samples && rc == 0; s++) {
        for (i = 0; i < n && rc == 0; i++) {
            double ns;
            rc = time_batch(clk, &ops[i], ops[i].batch, &ns);
            ops[i].raw[s] = ns / ops[i].batch;
        }
    }
    if (rc != 0) {
        if (failed)
            *failed = i - 1;
        return rc;
    }
    for (i = 0; i < n; i++) {
        double *sorted = malloc(m->samples * sizeof(double));
        if (!sorted)
            return -ENOMEM;
        memcpy(sorted, ops[i].raw, m->samples * sizeof(double));
        tool_stats_of(sorted, m->samples, &ops[i].st);
        ops[i].st.batch = ops[i].batch;
        free(sorted);
    }
    return 0;
}

void tool_ops_free(struct tool_op *ops, int n)
{
    for (int i = 0; i < n; i++) {
        free(ops[i].raw);
        ops[i].raw = NULL;
    }
}
