/*
 * copy_tool.c - the copy benchmarks' shared skeleton (copy_tool.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <string.h>

#include "copy_tool.h"
#include "tool_variants.h"

static void usage(const struct copy_tool_spec *spec)
{
    printf("%s"
           "  -v VARIANT         copy variant: libc|sse2|sse41|avx2|avx512|movdir64b,\n"
           "                     all (each the CPU has, one process each), or auto\n"
           "                     (the library's choice; default)\n"
           "  -t, --dir DIR      to (host->GPU) | from (GPU->host) | both (default)\n",
           spec->synopsis);
    tool_common_usage(stdout, spec->sizes_default);
}

/* 0: run; 1: help printed; else the usage error's exit status. */
static int parse(int argc, char **argv, const struct copy_tool_spec *spec, struct copy_opts *o)
{
    static const struct option longopts[] = {
        TOOL_COMMON_LONG,
        { "variant", required_argument, NULL, 'v' },
        { "dir", required_argument, NULL, 't' },
        { NULL, 0, NULL, 0 },
    };
    const char *bad = NULL;
    int c;

    tool_common_init(&o->c, spec->tool, spec->samples, spec->warmup, spec->sizes,
                     spec->nsizes);
    o->dirs = TOOL_DIR_TO | TOOL_DIR_FROM;
    optind = 1;
    opterr = 0;
    while (!bad && (c = getopt_long(argc, argv, ":" TOOL_COMMON_SHORT "v:t:", longopts, NULL)) != -1) {
        if (tool_common_option(&o->c, c, optarg, &bad) != 0)
            continue;
        switch (c) {
        case 'h':
            usage(spec);
            return 1;
        case 'v':
            tool_parse_variant(&o->c, optarg, &bad);
            break;
        case 't':
            if (strcmp(optarg, "to") == 0)
                o->dirs = TOOL_DIR_TO;
            else if (strcmp(optarg, "from") == 0)
                o->dirs = TOOL_DIR_FROM;
            else if (strcmp(optarg, "both") == 0)
                o->dirs = TOOL_DIR_TO | TOOL_DIR_FROM;
            else
                bad = "-t wants to, from or both";
            break;
        default:
            bad = tool_bad_option(c, argv);
            break;
        }
    }
    if (!bad)
        tool_common_finish(&o->c, argc, argv, &bad);
    return bad ? tool_usage_error(spec->tool, bad) : 0;
}

void copy_tool_emit(struct copy_run *r, const char *test, const char *dir,
                    const char *variant, size_t size, const struct tool_op *op,
                    const char *ref, double ref_p50)
{
    struct tool_rec rec = {
        .test = test, .op = op->name, .dir = dir, .variant = variant, .size = size,
        .st = op->st, .raw = op->raw, .ref = ref, .ref_p50 = ref_p50,
    };
    tool_out_rec(&r->out, &rec);
}

int copy_tool_measure(struct copy_run *r, struct tool_op *ops, int n, const char *dir,
                      size_t size)
{
    char hs[32], why[160];
    int bad = -1, rc;

    tool_copy_set_size(&r->b, size);
    if ((rc = tool_measure(&r->env.clk, &r->method, ops, n, &bad)) == 0)
        return 0;
    tool_size_str(size, hs, sizeof(hs));
    fprintf(stderr, "%s: %s %s B: %s failed: %s\n", r->spec->tool, dir, hs,
            bad >= 0 && bad < n ? ops[bad].name : "measuring",
            tool_gdrx_why(rc, why, sizeof(why)));
    tool_ops_free(ops, n);
    return -1;
}

static int measure_dir(struct copy_run *r, int dir)
{
    struct tool_table t;
    char title[200];
    int failed = 0, to = dir == TOOL_DIR_TO;

    snprintf(title, sizeof(title), "%s, copy variant %s%s:",
             to ? r->spec->title_to : r->spec->title_from, to ? r->to_name : r->from_name,
             r->env.meta.simulated ? " (SIMULATED GPU)" : "");
    tool_table_init(&t, title, 1, r->spec->heads);
    for (int i = 0; i < r->o->c.nsizes && !failed; i++) {
        failed = r->spec->measure(r, &t, dir, r->o->c.sizes[i]);
        if (!failed)
            failed = tool_copy_verify(&r->b, r->spec->tool, dir, r->o->c.sizes[i]) != 0;
    }
    tool_table_finish(&t, tool_table_stream(&r->o->c));
    return failed;
}

/* The preamble's lines on what one op is, where it goes and how batches
 * are sized, then the tool's own. */
static void preamble(struct copy_run *r)
{
    const struct tool_floor *f = &r->b.floor;
    const struct tool_method *m = &r->method;
    char text[2048], *p = text;
    size_t left = sizeof(text);
    int n;

#define ADD(...) do { n = snprintf(p, left, __VA_ARGS__); \
                      if (n > 0 && (size_t)n < left) p += n, left -= (size_t)n; } while (0)
    ADD("  op:       host->GPU: one copy's stores, then one sfence; GPU->host: one\n"
        "            lfence, then the loads of the lines the copy reads\n");
    if (r->spec->floor)
        ADD("  floor:    host->GPU: %s (%u B) stores, the rest in 32/16/8/4/2/1 B;\n"
            "            GPU->host: %s (%u B) loads, %u issued before their stores\n",
            f->store_insn, f->store_width, f->load_insn, f->load_width, TOOL_FLOOR_GROUP);
    ADD("  address:  each op%s takes the next 64-B-aligned slot\n"
        "            of a %u KiB ring of the mapping: no op finds its lines just read\n",
        r->spec->floor ? " (gdrx's or the floor's)" : "", TOOL_COPY_RING / 1024);
    ADD("  batch:    %s>= %.0f us", r->spec->floor ? "gdrx and floor of a row alike: " : "",
        m->target_ns / 1000);
    if (m->min_batch > 1)
        ADD(" and >= %u ops (fewer only\n            if they last >= %.0f us)",
            m->min_batch, m->long_ns / 1000);
    ADD("; nothing subtracted from the times\n%s",
        r->spec->preamble ? r->spec->preamble : "");
#undef ADD
    tool_env_preamble(&r->env, text);
}

/* Setup failed: release what was taken; the status says whether -v all
 * should go on with the other variants. */
static int give_up(struct copy_run *r, int status)
{
    tool_env_close_gdrx(&r->env);
    tool_copy_teardown(&r->b);
    tool_env_close(&r->env);
    return status;
}

static int run_one(const struct copy_tool_spec *spec, struct copy_opts *o)
{
    struct copy_run r;
    uint64_t to = 0, from = 0;
    size_t max = 0;
    int rc;

    memset(&r, 0, sizeof(r));
    r.spec = spec;
    r.o = o;
    r.method = spec->method;
    r.method.samples = o->c.samples;
    r.method.warmup = o->c.warmup;
    if (tool_variant_select(&o->c) != 0)
        return TOOL_EXIT_FAIL;
    if ((rc = tool_env_open(&r.env, &o->c, 1)) != 0)
        return give_up(&r, rc == TOOL_EXIT_NOT_RUN && !o->c.child ? rc
                                                                  : tool_setup_failed(&o->c));
    gdrx_get_attr(r.env.ctx, GDRX_ATTR_COPY_TO_VARIANT, &to);
    gdrx_get_attr(r.env.ctx, GDRX_ATTR_COPY_FROM_VARIANT, &from);
    r.to_name = gdrx_copy_variant_name((gdrx_copy_variant_t)to);
    r.from_name = gdrx_copy_variant_name((gdrx_copy_variant_t)from);
    if ((rc = tool_variant_check(&o->c, r.to_name)) != 0)
        return give_up(&r, rc);
    for (int i = 0; i < o->c.nsizes; i++)
        max = o->c.sizes[i] > max ? o->c.sizes[i] : max;
    if (tool_copy_setup(&r.b, &r.env, max) != 0 ||
        tool_out_open(&r.out, &o->c, &r.env.meta) != 0)
        return give_up(&r, tool_setup_failed(&o->c));
    if (tool_wants_preamble(&o->c))
        preamble(&r);
    int failed = 0;
    for (int dir = TOOL_DIR_TO; !failed && dir <= TOOL_DIR_FROM; dir <<= 1)
        if (o->dirs & dir)
            failed = measure_dir(&r, dir);
    failed = !tool_out_close(&r.out, !failed);
    give_up(&r, 0);
    return failed ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
}

int copy_tool_main(const struct copy_tool_spec *spec, int argc, char **argv)
{
    struct copy_opts o;
    int rc = parse(argc, argv, spec, &o);

    if (rc != 0)
        return rc == 1 ? TOOL_EXIT_OK : rc;
    if (o.c.variant && strcmp(o.c.variant, "all") == 0)
        return tool_run_variants(&o.c, argc, argv);
    return run_one(spec, &o);
}
