/*
 * gdrx-apiperf - what the gdrx API calls cost: gdrx_open/close, and per
 * size gdrx_pin, gdrx_map, gdrx_pin_query, gdrx_unmap, gdrx_unpin, cold
 * (the first pin of a fresh cuMemAlloc allocation; the first pin of the
 * process on its own) and warm (the same allocation pinned again), and the
 * UCX transport's registration cache (hit, miss) when built with UCX.
 *
 * SPDX-License-Identifier: MIT
 *
 * Each call is timed alone with the calibrated clock (they take
 * microseconds: the clock's ~20 ns are noise); gdrx_pin_query, which takes
 * nanoseconds, in batches.  Exit status: 0 measured; 1 a call failed;
 * 2 usage.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "apiperf.h"

#define TOOL "gdrx-apiperf"

enum { S_PIN, S_MAP, S_UNMAP, S_UNPIN, S_PINMAP, S_UNMAPUNPIN, NSTEPS };
static const char *const step_names[NSTEPS] = {
    "pin", "map", "unmap", "unpin", "pin+map", "unmap+unpin",
};

static const char usage_text[] =
    "usage: gdrx-apiperf [options]\n"
    "Cost of gdrx_open/close, and per size of gdrx_pin, gdrx_map, gdrx_pin_query,\n"
    "gdrx_unmap and gdrx_unpin: cold (a fresh cuMemAlloc allocation each\n"
    "sample) and warm (one allocation pinned again and again); and the UCX\n"
    "transport's registration cache (hit, miss) when built with UCX.\n"
    "Options:\n";

void apiperf_emit(struct tool_out *out, struct tool_table *t, const char *test,
                  const char *op, size_t size, double *v, unsigned n, unsigned batch)
{
    struct tool_rec rec = { .test = test, .op = op, .dir = "-", .variant = "-", .size = size };
    double *raw = malloc(n * sizeof(*v));
    char hs[32] = "-";

    if (raw)
        memcpy(raw, v, n * sizeof(*v));
    rec.raw = raw;
    tool_stats_of(v, n, &rec.st);
    rec.st.batch = batch;
    tool_out_rec(out, &rec);
    if (size)
        tool_size_str(size, hs, sizeof(hs));
    tool_table_row(t, "%s|%s|%s|%u|%.3f|%.3f|%.3f", test, op, hs, n, rec.st.p0 / 1e3,
                   rec.st.p50 / 1e3, rec.st.p99 / 1e3);
    free(raw);
}

/* One cycle pin, map, unmap, unpin of [d, d+size); ns of each step. */
static int cycle(struct tool_env *e, CUdeviceptr d, size_t size, double ns[NSTEPS])
{
    const struct tool_clock *clk = &e->clk;
    gdrx_pin_t pin;
    void *map;
    uint64_t t[5];
    int rc;

    t[0] = tool_clock_begin(clk);
    rc = gdrx_pin(e->ctx, d, size, GDRX_PIN_FLAG_DEFAULT, &pin);
    t[1] = tool_clock_end(clk);
    if (rc)
        return rc;
    rc = gdrx_map(e->ctx, pin, &map);
    t[2] = tool_clock_end(clk);
    if (rc == 0)
        rc = gdrx_unmap(e->ctx, pin);
    t[3] = tool_clock_end(clk);
    int rc2 = gdrx_unpin(e->ctx, pin);
    t[4] = tool_clock_end(clk);
    for (int i = 0; i < 4; i++)
        ns[i] = tool_clock_ns(clk, t[i + 1] - t[i]);
    ns[S_PINMAP] = ns[S_PIN] + ns[S_MAP];
    ns[S_UNMAPUNPIN] = ns[S_UNMAP] + ns[S_UNPIN];
    return rc ? rc : rc2;
}

struct query_ctx { gdrx_t ctx; gdrx_pin_t pin; };

static int query_run(void *p, unsigned count)
{
    struct query_ctx *q = p;
    struct gdrx_pin_info info;
    int rc = 0;
    for (unsigned i = 0; i < count && rc == 0; i++)
        rc = gdrx_pin_query(q->ctx, q->pin, &info);
    return rc;
}

static double *steps_alloc(unsigned n)
{
    return calloc((size_t)n * NSTEPS, sizeof(double));
}

/* Cold (fresh allocations) then warm (one allocation) cycles of a size. */
static int one_size(struct tool_env *e, struct tool_out *out, struct tool_table *t,
                    size_t size, unsigned cold_n)
{
    unsigned warm_n = e->opts->samples;
    double *cold = steps_alloc(cold_n), *warm = steps_alloc(warm_n), ns[NSTEPS];
    CUdeviceptr d = 0;
    int rc = cold && warm ? 0 : -ENOMEM;

    for (unsigned i = 0; i < cold_n && rc == 0; i++) {
        if (e->cu.MemAlloc(&d, size) != CUDA_SUCCESS) {
            rc = -ENOMEM;
            break;
        }
        rc = cycle(e, d, size, ns);
        e->cu.MemFree(d);
        d = 0;
        for (int s = 0; s < NSTEPS; s++)
            cold[(size_t)s * cold_n + i] = ns[s];
    }
    if (rc == 0 && e->cu.MemAlloc(&d, size) != CUDA_SUCCESS)
        rc = -ENOMEM;
    for (unsigned i = 0; i < e->opts->warmup && rc == 0; i++)
        rc = cycle(e, d, size, ns);
    for (unsigned i = 0; i < warm_n && rc == 0; i++) {
        rc = cycle(e, d, size, ns);
        for (int s = 0; s < NSTEPS; s++)
            warm[(size_t)s * warm_n + i] = ns[s];
    }
    for (int s = 0; s < NSTEPS && rc == 0; s++) {
        apiperf_emit(out, t, "api-cold", step_names[s], size, cold + (size_t)s * cold_n, cold_n, 1);
        apiperf_emit(out, t, "api-warm", step_names[s], size, warm + (size_t)s * warm_n, warm_n, 1);
    }
    if (rc == 0) {
        struct query_ctx q = { .ctx = e->ctx };
        struct tool_op op = { .name = "query", .run = query_run, .ctx = &q };
        struct tool_method m = { .samples = warm_n, .warmup = e->opts->warmup,
                                 .target_ns = 2000, .max_batch = 256 };
        if ((rc = gdrx_pin(e->ctx, d, size, GDRX_PIN_FLAG_DEFAULT, &q.pin)) == 0) {
            if ((rc = tool_measure(&e->clk, &m, &op, 1, NULL)) == 0)
                apiperf_emit(out, t, "api-warm", "query", size, op.raw, warm_n, op.st.batch);
            tool_ops_free(&op, 1);
            gdrx_unpin(e->ctx, q.pin);
        }
    }
    if (d)
        e->cu.MemFree(d);
    free(cold);
    free(warm);
    if (rc) {
        char why[160], hs[32];
        tool_size_str(size, hs, sizeof(hs));
        fprintf(stderr, TOOL ": %s B: %s\n", hs, tool_gdrx_why(rc, why, sizeof(why)));
    }
    return rc ? TOOL_EXIT_FAIL : 0;
}

/* The first pin of the process, once (it sets up what later calls reuse);
 * then open/close pairs. */
static int first_calls(struct tool_env *e, struct tool_out *out, struct tool_table *t)
{
    const struct tool_clock *clk = &e->clk;
    unsigned n = e->opts->samples;
    double *open_ns = calloc(n, sizeof(double)), *close_ns = calloc(n, sizeof(double));
    double steps[NSTEPS];
    uint64_t t0;
    CUdeviceptr d;
    int rc = open_ns && close_ns ? 0 : -ENOMEM;

    if (rc == 0 && e->cu.MemAlloc(&d, 65536) != CUDA_SUCCESS) {
        fprintf(stderr, "%s: cuMemAlloc of 64 KiB failed\n", e->opts->tool);
        rc = -ENOMEM;
    } else if (rc == 0) {
        rc = cycle(e, d, 65536, steps);
        e->cu.MemFree(d);
        if (rc == 0)
            apiperf_emit(out, t, "api-first", "pin+map", 65536, &steps[S_PINMAP], 1, 1);
    }
    for (unsigned i = 0; i < n && rc == 0; i++) {
        struct gdrx_open_params params;
        gdrx_t ctx;
        gdrx_open_params_init(&params);
        params.backend = e->opts->backend;
        t0 = tool_clock_begin(clk);
        rc = gdrx_open(&params, &ctx);
        uint64_t t1 = tool_clock_end(clk);
        if (rc == 0)
            gdrx_close(ctx);
        open_ns[i] = tool_clock_ns(clk, t1 - t0);
        close_ns[i] = tool_clock_ns(clk, tool_clock_end(clk) - t1);
    }
    if (rc == 0) {
        apiperf_emit(out, t, "api-warm", "open", 0, open_ns, n, 1);
        apiperf_emit(out, t, "api-warm", "close", 0, close_ns, n, 1);
    }
    free(open_ns);
    free(close_ns);
    return rc ? TOOL_EXIT_FAIL : 0;
}

static int parse(int argc, char **argv, struct tool_common *c)
{
    static const size_t sizes[] = { 4096, 65536, 1048576, 16777216 };

    tool_common_init(c, TOOL, 200, 5, sizes, 4);
    return tool_parse_common_only(argc, argv, c, usage_text, "4K,64K,1M,16M",
                                  "Cold samples: at most 32 per size (each a fresh "
                                  "allocation).\n");
}

int main(int argc, char **argv)
{
    struct tool_common c;
    struct tool_env e;
    struct tool_out out;
    struct tool_table t;
    int rc = parse(argc, argv, &c);

    if (rc != 0)
        return rc == 1 ? TOOL_EXIT_OK : rc;
    /* The first gdrx_open of the process is timed here, once. */
    double first_open = 0;
    if ((rc = tool_env_open(&e, &c, 0)) == 0) {
        uint64_t t0 = tool_clock_begin(&e.clk);
        rc = tool_env_open_gdrx(&e);
        first_open = tool_clock_ns(&e.clk, tool_clock_end(&e.clk) - t0);
    }
    if (rc != 0 || tool_out_open(&out, &c, &e.meta) != 0) {
        tool_env_close(&e);
        return rc == TOOL_EXIT_NOT_RUN ? rc : TOOL_EXIT_FAIL;
    }
    tool_table_init(&t, "gdrx API calls (first: once per process; cold: fresh "
                    "allocation each sample; warm: the same one again):",
                    3, "test|call|size (B)|samples|P0 (us)|P50 (us)|P99 (us)");
    apiperf_emit(&out, &t, "api-first", "open", 0, &first_open, 1, 1);
    rc = first_calls(&e, &out, &t);
    if (tool_wants_preamble(&c))
        tool_env_preamble(&e, "  calls:    timed one by one (query: in batches)\n");
    for (int i = 0; i < c.nsizes && rc == 0; i++)
        rc = one_size(&e, &out, &t, c.sizes[i], c.samples < 32 ? c.samples : 32);
    int rrc = rc == 0 ? apiperf_rcache(&e, &out, &t) : rc;
    if (rrc == TOOL_EXIT_FAIL)
        rc = rrc;
    tool_table_finish(&t, tool_table_stream(&c));
    rc = tool_out_close(&out, rc == 0) ? rc : TOOL_EXIT_FAIL;
    tool_env_close(&e);
    return rc;
}
