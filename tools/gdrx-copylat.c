/*
 * gdrx-copylat - latency of gdrx copies to/from a GPU mapping, per size,
 * direction and copy variant, against the floor (the same bytes by the
 * CPU's widest bare stores + sfence, or lfence + widest bare streaming
 * loads, through the same mapping, timed interleaved with gdrx's copies
 * with the same ops per batch and the same rotation of addresses, as is
 * gdrx's copy of 0 bytes: its checks alone) and against cuMemcpy.  Uses
 * only the public gdrx API and the CUDA driver API (dlopen'ed).
 *
 * SPDX-License-Identifier: MIT
 *
 * Exit status: 0 all measured and verified; 1 a copy failed or read back
 * wrong; 2 usage; 3 the requested variant is not supported by this CPU.
 */
#include "copy_tool.h"

static int measure(struct copy_run *r, struct tool_table *t, int dir, size_t size)
{
    int to = dir == TOOL_DIR_TO;
    const char *variant = to ? r->to_name : r->from_name, *d = to ? "H->D" : "D->H";
    struct tool_op ops[4] = {
        tool_copy_op(&r->b, COPY_GDRX, dir),
        tool_copy_op(&r->b, COPY_FLOOR, dir),
        tool_copy_op(&r->b, COPY_GDRX0, dir),
        tool_copy_op(&r->b, COPY_CU, dir),
    };
    /* gdrx and its floor: one ops/batch, so the row compares like with like. */
    ops[0].share = ops[1].share = 1;
    struct tool_stats *g = &ops[0].st, *f = &ops[1].st, *z = &ops[2].st, *c = &ops[3].st;
    char hs[32];

    /* gdrx, its floor and its 0-byte copy in one loop; cuMemcpy on its own
     * (its DMA would disturb them). */
    if (copy_tool_measure(r, ops, 3, d, size) != 0 ||
        copy_tool_measure(r, ops + 3, 1, d, size) != 0) {
        tool_ops_free(ops, 4);
        return 1;
    }
    copy_tool_emit(r, "copy", d, variant, size, &ops[0], "floor", f->p50);
    copy_tool_emit(r, "copy", d, variant, size, &ops[1], NULL, 0);
    copy_tool_emit(r, "copy", d, variant, size, &ops[2], NULL, 0);
    copy_tool_emit(r, "copy", d, "-", size, &ops[3], "gdrx", g->p50);
    tool_size_str(size, hs, sizeof(hs));
    tool_table_row(t, "%s|%u|%.1f|%.1f|%.1f|%.1f|%.1f|%.2f|%.1f|%.1f|%.2f", hs, g->batch,
                   g->p0, g->p50, g->p99, f->p50, f->p99, f->p50 > 0 ? g->p50 / f->p50 : 0,
                   z->p50, c->p50, g->p50 > 0 ? c->p50 / g->p50 : 0);
    tool_ops_free(ops, 4);
    return 0;
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096,
                                     8192, 16384, 32768, 65536, 262144, 1048576 };
    static const struct copy_tool_spec spec = {
        .tool = "gdrx-copylat",
        .synopsis =
            "usage: gdrx-copylat [options]\n"
            "Latency of gdrx_copy_to_mapping / gdrx_copy_from_mapping per size, with\n"
            "the floor (the same bytes by the widest bare stores + sfence, or lfence +\n"
            "the widest bare streaming loads, through the same mapping, interleaved\n"
            "with gdrx's copies in one loop, with as many ops per batch), gdrx's copy\n"
            "of 0 bytes (its checks alone, in the same loop) and cuMemcpy from/to the\n"
            "same host buffer.\n"
            "Options:\n",
        .sizes_default = "1,2,4,...,64K,256K,1M",
        .sizes = sizes, .nsizes = sizeof(sizes) / sizeof(sizes[0]),
        .samples = 1000, .warmup = 100,
        /* Batches of >= 2 us and >= 16 ops keep the clock's ~20-40 ns and
         * the start and end of the pipeline out of 10 ns copies; ops of over
         * 1.25 us need fewer (20 us). */
        .method = { .target_ns = 2000, .max_batch = 256, .min_batch = 16, .long_ns = 20000 },
        .floor = 1,
        .preamble = "  cuMemcpy: synchronous, from/to the same pageable host buffer\n",
        .title_to = "host -> GPU (gdrx_copy_to_mapping; floor: bare stores + sfence)",
        .title_from = "GPU -> host (gdrx_copy_from_mapping; floor: lfence + bare streaming "
                      "loads)",
        .heads = "size (B)|ops/batch|gdrx P0 (ns)|gdrx P50 (ns)|gdrx P99 (ns)|"
                 "floor P50 (ns)|floor P99 (ns)|gdrx/floor|gdrx 0 B P50 (ns)|cuMemcpy P50 (ns)|"
                 "cuMemcpy/gdrx",
        .measure = measure,
    };
    return copy_tool_main(&spec, argc, argv);
}
