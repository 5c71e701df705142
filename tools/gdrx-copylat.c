/*
 * gdrx-copylat - latency of gdrx copies to/from a GPU mapping, per size,
 * direction and copy variant, against the floor (the same bytes by a bare
 * store + sfence, or a bare streaming load, through the same mapping,
 * timed interleaved with gdrx's copies) and against cuMemcpy.  Uses only
 * the public gdrx API and the CUDA driver API (dlopen'ed).
 *
 * SPDX-License-Identifier: MIT
 *
 * Exit status: 0 all measured and verified; 1 a copy failed or read back
 * wrong; 2 usage; 3 the requested variant is not supported by this CPU.
 */
#include <stdio.h>
#include <string.h>

#include "copy_opts.h"
#include "tool_copy.h"
#include "tool_env.h"
#include "tool_measure.h"
#include "tool_table.h"
#include "tool_variants.h"

#define TOOL "gdrx-copylat"

static const char synopsis[] =
    "usage: gdrx-copylat [options]\n"
    "Latency of gdrx_copy_to_mapping / gdrx_copy_from_mapping per size, with\n"
    "the floor (the same bytes by a bare store + sfence, or a bare streaming\n"
    "load, through the same mapping, interleaved with gdrx's copies in one\n"
    "loop) and cuMemcpy from/to the same host buffer.\n"
    "Options:\n";

struct run {
    struct copy_opts *o;
    struct tool_env   env;
    struct tool_copy  b;
    struct tool_out   out;
    const char       *to_name, *from_name;
};

static const struct tool_method *method_of(const struct tool_common *c)
{
    static struct tool_method m;
    m.samples = c->samples;
    m.warmup = c->warmup;
    m.target_ns = 2000; /* keeps the clock's ~20 ns out of 20 ns copies */
    m.max_batch = 256;
    return &m;
}

static void emit(struct run *r, const char *dir, const char *variant, size_t size,
                 struct tool_op *op, const char *ref, double ref_p50)
{
    struct tool_rec rec = {
        .test = "copy", .op = op->name, .dir = dir, .variant = variant, .size = size,
        .st = op->st, .raw = op->raw, .ref = ref, .ref_p50 = ref_p50,
    };
    tool_out_rec(&r->out, &rec);
}

/* Measure and verify one size in one direction; 0, or 1 on any failure. */
static int one_size(struct run *r, struct tool_table *t, int dir, size_t size)
{
    int to = dir == TOOL_DIR_TO;
    const char *variant = to ? r->to_name : r->from_name, *d = to ? "H->D" : "D->H";
    struct tool_op ops[3] = {
        { .name = "gdrx", .run = tool_copy_fn(to ? OP_GDRX_TO : OP_GDRX_FROM), .ctx = &r->b },
        { .name = "floor", .run = tool_copy_fn(to ? OP_FLOOR_TO : OP_FLOOR_FROM), .ctx = &r->b },
        { .name = "cuMemcpy", .run = tool_copy_fn(to ? OP_CU_TO : OP_CU_FROM), .ctx = &r->b },
    };
    char hs[32], why[128];
    int rc, bad = -1;

    r->b.size = size;
    tool_size_str(size, hs, sizeof(hs));
    /* gdrx and its floor in one loop; cuMemcpy on its own (its DMA would
     * disturb them). */
    if ((rc = tool_measure(&r->env.clk, method_of(&r->o->c), ops, 2, &bad)) != 0 ||
        (rc = tool_measure(&r->env.clk, method_of(&r->o->c), ops + 2, 1, &bad)) != 0) {
        fprintf(stderr, TOOL ": %s %s B: %s failed: %s\n", d, hs,
                bad >= 0 && bad < 3 ? ops[bad].name : "measuring",
                tool_gdrx_why(rc, why, sizeof(why)));
        tool_ops_free(ops, 3);
        return 1;
    }
    emit(r, d, variant, size, &ops[0], "floor", ops[1].st.p50);
    emit(r, d, variant, size, &ops[1], NULL, 0);
    emit(r, d, "-", size, &ops[2], "gdrx", ops[0].st.p50);
    tool_table_row(t, "%s|%u|%.1f|%.1f|%.1f|%.1f|%.1f|%.2f|%.1f|%.1f", hs, ops[0].st.batch,
                   ops[0].st.p0, ops[0].st.p50, ops[0].st.p99, ops[1].st.p50, ops[1].st.p99,
                   ops[1].st.p50 > 0 ? ops[0].st.p50 / ops[1].st.p50 : 0, ops[2].st.p50,
                   ops[0].st.p50 > 0 ? ops[2].st.p50 / ops[0].st.p50 : 0);
    tool_ops_free(ops, 3);
    return tool_copy_verify(&r->b, TOOL, dir, size) != 0;
}

static int measure_dir(struct run *r, int dir)
{
    struct tool_table t;
    char title[160];
    int failed = 0;

    snprintf(title, sizeof(title), "%s, copy variant %s%s:",
             dir == TOOL_DIR_TO ? "host -> GPU (gdrx_copy_to_mapping; floor: store + sfence)"
                                : "GPU -> host (gdrx_copy_from_mapping; floor: streaming load)",
             dir == TOOL_DIR_TO ? r->to_name : r->from_name,
             r->env.meta.simulated ? " (SIMULATED GPU)" : "");
    tool_table_init(&t, title, 1, "size (B)|ops/batch|gdrx P0 (ns)|gdrx P50 (ns)|"
                    "gdrx P99 (ns)|floor P50 (ns)|floor P99 (ns)|gdrx/floor|"
                    "cuMemcpy P50 (ns)|cuMemcpy/gdrx");
    for (int i = 0; i < r->o->c.nsizes && !failed; i++)
        failed = one_size(r, &t, dir, r->o->c.sizes[i]);
    FILE *f = tool_table_stream(&r->o->c);
    if (f)
        tool_table_print(&t, f);
    else
        tool_table_free(&t);
    return failed;
}

static int run_one(struct copy_opts *o)
{
    struct run r;
    uint64_t to = 0, from = 0;
    size_t max = 0;
    int rc;

    memset(&r, 0, sizeof(r));
    r.o = o;
    if (tool_variant_select(&o->c) != 0)
        return TOOL_EXIT_FAIL;
    if ((rc = tool_env_open(&r.env, &o->c, 1)) != 0) {
        tool_env_close(&r.env);
        return tool_setup_failed(&o->c);
    }
    gdrx_get_attr(r.env.ctx, GDRX_ATTR_COPY_TO_VARIANT, &to);
    gdrx_get_attr(r.env.ctx, GDRX_ATTR_COPY_FROM_VARIANT, &from);
    r.to_name = gdrx_copy_variant_name((gdrx_copy_variant_t)to);
    r.from_name = gdrx_copy_variant_name((gdrx_copy_variant_t)from);
    if ((rc = tool_variant_check(&o->c, r.to_name)) != 0) {
        tool_env_close(&r.env);
        return rc;
    }
    for (int i = 0; i < o->c.nsizes; i++)
        max = o->c.sizes[i] > max ? o->c.sizes[i] : max;
    if (tool_copy_setup(&r.b, &r.env, max) != 0 ||
        tool_out_open(&r.out, &o->c, &r.env.meta) != 0) {
        tool_copy_teardown(&r.b);
        tool_env_close(&r.env);
        return tool_setup_failed(&o->c);
    }
    if (tool_wants_preamble(&o->c))
        tool_env_preamble(&r.env, "  floor:    host->GPU: plain stores + sfence; GPU->host: "
                          "MOVNTDQA where 16-byte aligned (else plain loads)\n"
                          "  cuMemcpy: synchronous, from/to the same pageable host buffer\n");
    int failed = 0;
    for (int dir = TOOL_DIR_TO; !failed && dir <= TOOL_DIR_FROM; dir <<= 1)
        if (o->dirs & dir)
            failed = measure_dir(&r, dir);
    failed = !tool_out_close(&r.out, !failed);
    tool_copy_teardown(&r.b);
    tool_env_close(&r.env);
    return failed ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096,
                                     8192, 16384, 32768, 65536, 262144, 1048576 };
    static const struct copy_opts_spec spec = {
        .tool = TOOL, .synopsis = synopsis, .sizes_default = "1,2,4,...,64K,256K,1M",
        .sizes = sizes, .nsizes = sizeof(sizes) / sizeof(sizes[0]),
        .samples = 1000, .warmup = 100,
    };
    struct copy_opts o;
    int rc = copy_opts_parse(argc, argv, &spec, &o);

    if (rc != 0)
        return rc == 1 ? TOOL_EXIT_OK : rc;
    if (o.c.variant && strcmp(o.c.variant, "all") == 0)
        return tool_run_variants(&o.c, argc, argv);
    return run_one(&o);
}
