/*
 * gdrx-pplat - CPU <-> GPU ping-pong latency through a gdrx mapping.
 * "write": the CPU writes a flag in device memory through the mapping
 * (gdrx_copy_to_mapping, or the floor: a bare 8-byte store + sfence, in the
 * same loop) and a GPU kernel spinning on it answers in host memory.
 * "poll": the CPU writes a flag in host memory and polls the kernel's
 * answer in device memory through the mapping (gdrx_copy_from_mapping, or
 * the floor: a bare 8-byte load).  The kernel is embedded (nvcc-built) and
 * loaded through the dlopen'ed driver API: no CUDA library is linked.
 *
 * SPDX-License-Identifier: MIT
 *
 * On the simulated GPU a thread answers in the kernel's place (the output
 * says so).  Without a GPU, or built without nvcc, nothing is measured:
 * exit status 3 (not run).  0 measured; 1 a failure; 2 usage.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "pplat.h"
#include "tool_floor.h"
#include "tool_table.h"

#define TOOL "gdrx-pplat"

static const char usage_text[] =
    "usage: gdrx-pplat [options]\n"
    "CPU <-> GPU ping-pong round trip through a gdrx mapping:\n"
    "  write: the CPU writes a flag through the mapping (gdrx_copy_to_mapping),\n"
    "         a GPU kernel spinning on it answers in host memory;\n"
    "  poll:  the CPU writes a flag in host memory, the kernel answers in\n"
    "         device memory, the CPU polls it through the mapping\n"
    "         (gdrx_copy_from_mapping);\n"
    "each with its floor (a bare 8-byte store + sfence / a bare 8-byte load)\n"
    "timed in the same loop.  Without a GPU or without the nvcc-built kernel:\n"
    "not run (exit status 3).\n"
    "Options:\n";

/* Wait until *word (read by read_fn) equals want; -ETIMEDOUT after
 * timeout_ns. */
static inline int await(struct pp *p, uint64_t want, int through_gdrx)
{
    const volatile uint64_t *word = p->mode == PP_WRITE ? &p->host[0]
                                                        : (volatile uint64_t *)(p->map + 8);
    uint64_t v, t0 = 0;
    unsigned spins = 0;

    for (;;) {
        if (through_gdrx) {
            int rc = gdrx_copy_from_mapping(p->pin, &v, p->map + 8, sizeof(v));
            if (rc)
                return rc;
        } else {
            v = *word;
        }
        if (v == want)
            return 0;
        if (++spins % 4096 == 0) {
            uint64_t now = tool_clock_end(&p->e->clk);
            if (!t0)
                t0 = now;
            else if (tool_clock_ns(&p->e->clk, now - t0) > p->timeout_ns)
                return -ETIMEDOUT;
        }
        if (p->spin_yield && spins % p->spin_yield == 0)
            sched_yield();
    }
}

static int rt_write_gdrx(void *ctx, unsigned count)
{
    struct pp *p = ctx;
    int rc = 0;
    for (unsigned i = 0; i < count && rc == 0; i++) {
        uint64_t seq = ++p->seq;
        if ((rc = gdrx_copy_to_mapping(p->pin, p->map, &seq, sizeof(seq))) == 0)
            rc = await(p, seq, 0);
    }
    return rc;
}

static int rt_write_floor(void *ctx, unsigned count)
{
    struct pp *p = ctx;
    int rc = 0;
    for (unsigned i = 0; i < count && rc == 0; i++) {
        uint64_t seq = ++p->seq;
        tool_floor_store(p->map, &seq, sizeof(seq));
        rc = await(p, seq, 0);
    }
    return rc;
}

static int rt_poll(struct pp *p, unsigned count, int through_gdrx)
{
    int rc = 0;
    for (unsigned i = 0; i < count && rc == 0; i++) {
        p->host[1] = ++p->seq;
        rc = await(p, p->seq, through_gdrx);
    }
    return rc;
}

static int rt_poll_gdrx(void *ctx, unsigned count) { return rt_poll(ctx, count, 1); }
static int rt_poll_floor(void *ctx, unsigned count) { return rt_poll(ctx, count, 0); }

static void emit(struct tool_out *out, const char *dir, const struct tool_op *op,
                 const char *ref, double ref_p50)
{
    struct tool_rec rec = { .test = "pingpong", .op = op->name, .dir = dir, .variant = "-",
                            .size = 8, .st = op->st, .raw = op->raw, .ref = ref,
                            .ref_p50 = ref_p50 };
    tool_out_rec(out, &rec);
}

/* Start the echo for a mode, measure gdrx and floor interleaved, stop. */
static int one_mode(struct pp *p, struct tool_out *out, struct tool_table *t, int mode)
{
    static const char *const dirs[] = { "write", "poll" };
    struct tool_op ops[2] = {
        { .name = "gdrx", .run = mode == PP_WRITE ? rt_write_gdrx : rt_poll_gdrx, .ctx = p,
          .share = 1 }, /* gdrx and floor: one ops/batch (the table shows one) */
        { .name = "floor", .run = mode == PP_WRITE ? rt_write_floor : rt_poll_floor, .ctx = p,
          .share = 1 },
    };
    struct tool_method m = { .samples = p->e->opts->samples, .warmup = p->e->opts->warmup,
                             .target_ns = 20000, .max_batch = 64 };
    char why[160];
    int rc, bad = -1;

    p->mode = mode;
    /* Both words hold the last value before the echo starts. */
    tool_floor_store(p->map + 8 * mode, &p->seq, sizeof(p->seq));
    p->host[0] = p->host[1] = p->seq;
    if (p->e->meta.simulated ? pp_sim_start(p) : pp_gpu_start(p))
        return -1;
    rc = tool_measure(&p->e->clk, &m, ops, 2, &bad);
    int stop = p->gpu ? pp_gpu_stop(p) : pp_sim_stop(p);
    if (rc) {
        fprintf(stderr, TOOL ": %s round trip (%s): %s\n", dirs[mode],
                bad >= 0 ? ops[bad].name : "?", rc == -ETIMEDOUT ?
                "no answer from the GPU within 2 s" : tool_gdrx_why(rc, why, sizeof(why)));
        tool_ops_free(ops, 2);
        return -1;
    }
    emit(out, dirs[mode], &ops[0], "floor", ops[1].st.p50);
    emit(out, dirs[mode], &ops[1], NULL, 0);
    tool_table_row(t, "%s|%u|%.3f|%.3f|%.3f|%.3f|%.3f|%.3f|%.3f", dirs[mode], ops[0].st.batch,
                   ops[0].st.p0 / 1e3, ops[0].st.p50 / 1e3, ops[0].st.p99 / 1e3,
                   ops[1].st.p0 / 1e3, ops[1].st.p50 / 1e3, ops[1].st.p99 / 1e3,
                   ops[1].st.p50 > 0 ? ops[0].st.p50 / ops[1].st.p50 : 0);
    tool_ops_free(ops, 2);
    return stop;
}

static int parse(int argc, char **argv, struct tool_common *c)
{
    tool_common_init(c, TOOL, 1000, 1000, NULL, 0);
    return tool_parse_common_only(argc, argv, c, usage_text, NULL, NULL);
}

/* Whether this process can measure: a GPU (or the simulated one) and, on
 * a GPU, the embedded kernel and the driver functions to run it. */
static int can_run(struct tool_env *e)
{
    size_t len;

    if (e->meta.simulated)
        return 1;
    if (!pplat_image(&len) || !len) {
        printf(TOOL ": NOT RUN: built without nvcc, so it has no GPU kernel "
               "(install the CUDA toolkit and rebuild)\n");
        return 0;
    }
    if (!e->cu.can_launch) {
        printf(TOOL ": NOT RUN: this libcuda.so.1 lacks the functions to run a kernel\n");
        return 0;
    }
    return 1;
}

static int setup(struct pp *p, struct tool_env *e)
{
    char why[160];
    void *map;
    int rc;

    p->e = e;
    p->timeout_ns = 2e9;
    p->spin_yield = e->meta.simulated ? 64 : 0;
    if (e->cu.MemAlloc(&p->dev, 65536) != CUDA_SUCCESS) {
        fprintf(stderr, TOOL ": cuMemAlloc(64 KiB) failed\n");
        return -1;
    }
    if ((rc = gdrx_pin(e->ctx, p->dev, 65536, GDRX_PIN_FLAG_DEFAULT, &p->pin)) != 0 ||
        (rc = gdrx_map(e->ctx, p->pin, &map)) != 0) {
        fprintf(stderr, TOOL ": gdrx_pin/gdrx_map: %s\n", tool_gdrx_why(rc, why, sizeof(why)));
        return -1;
    }
    p->map = map;
    tool_env_describe_pin(e, p->pin);
    if (e->meta.simulated) {
        p->host = aligned_alloc(64, 4096);
        return p->host ? 0 : -1;
    }
    return pp_gpu_host_alloc(p) || pp_gpu_load(p) ? -1 : 0;
}

static void teardown(struct pp *p)
{
    if (!p->e)
        return;
    pp_gpu_unload(p);
    if (p->e->meta.simulated)
        free((void *)p->host);
    else
        pp_gpu_host_free(p);
    tool_env_close_gdrx(p->e); /* unpins before the memory goes */
    if (p->dev)
        p->e->cu.MemFree(p->dev);
}

int main(int argc, char **argv)
{
    struct tool_common c;
    struct tool_env e;
    struct tool_out out;
    struct tool_table t;
    struct pp p;
    int rc = parse(argc, argv, &c);

    if (rc != 0)
        return rc == 1 ? TOOL_EXIT_OK : rc;
    memset(&p, 0, sizeof(p));
    if ((rc = tool_env_open(&e, &c, 1)) != 0) {
        /* tool_env_open tells not run (no GPU, no backend) from failed */
        if (rc == TOOL_EXIT_NOT_RUN)
            printf(TOOL ": NOT RUN: no GPU (see the message above)\n");
        tool_env_close(&e);
        return rc;
    }
    if (!can_run(&e)) {
        tool_env_close(&e);
        return TOOL_EXIT_NOT_RUN;
    }
    if (setup(&p, &e) != 0 || tool_out_open(&out, &c, &e.meta) != 0) {
        teardown(&p);
        tool_env_close(&e);
        return TOOL_EXIT_FAIL;
    }
    if (tool_wants_preamble(&c))
        tool_env_preamble(&e, e.meta.simulated ?
            "  echo:     a CPU thread in place of the GPU kernel (the simulated GPU runs none)\n" :
            "  echo:     one GPU thread (pp_echo kernel, cuModuleLoadData of the embedded fatbin)\n");
    tool_table_init(&t, e.meta.simulated ? "round trips, 8-byte flag (SIMULATED GPU: a thread "
                    "answers):" : "round trips, 8-byte flag:", 1,
                    "mode|ops/batch|gdrx P0 (us)|gdrx P50 (us)|gdrx P99 (us)|floor P0 (us)|"
                    "floor P50 (us)|floor P99 (us)|gdrx/floor");
    rc = one_mode(&p, &out, &t, PP_WRITE) || one_mode(&p, &out, &t, PP_POLL);
    tool_table_finish(&t, tool_table_stream(&c));
    rc = tool_out_close(&out, !rc) && !rc ? TOOL_EXIT_OK : TOOL_EXIT_FAIL;
    teardown(&p);
    tool_env_close(&e);
    return rc;
}
