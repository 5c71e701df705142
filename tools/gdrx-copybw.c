/*
 * gdrx-copybw - bandwidth of gdrx copies to/from a GPU mapping, per size,
 * direction and copy variant, against cuMemcpy from/to the same host
 * buffer.  Uses only the public gdrx API and the CUDA driver API
 * (dlopen'ed).
 *
 * SPDX-License-Identifier: MIT
 *
 * Exit status: 0 all measured and verified; 1 a copy failed or read back
 * wrong; 2 usage; 3 the requested variant is not supported by this CPU.
 */
#include "copy_tool.h"

/* GB/s (1e9 bytes per second) of size bytes in ns. */
static double gbps(size_t size, double ns)
{
    return ns > 0 ? (double)size / ns : 0;
}

static int measure(struct copy_run *r, struct tool_table *t, int dir, size_t size)
{
    int to = dir == TOOL_DIR_TO;
    const char *variant = to ? r->to_name : r->from_name, *d = to ? "H->D" : "D->H";
    struct tool_op ops[2] = {
        tool_copy_op(&r->b, COPY_GDRX, dir),
        tool_copy_op(&r->b, COPY_CU, dir),
    };
    struct tool_stats *g = &ops[0].st, *c = &ops[1].st;
    char hs[32];

    if (copy_tool_measure(r, ops, 1, d, size) != 0 ||
        copy_tool_measure(r, ops + 1, 1, d, size) != 0) {
        tool_ops_free(ops, 2);
        return 1;
    }
    copy_tool_emit(r, "bw", d, variant, size, &ops[0], "cuMemcpy", c->p50);
    copy_tool_emit(r, "bw", d, "-", size, &ops[1], NULL, 0);
    tool_size_str(size, hs, sizeof(hs));
    /* Time ratio cu/gdrx = bandwidth ratio gdrx/cu. */
    tool_table_row(t, "%s|%u|%.3f|%.3f|%.3f|%.1f|%.3f|%.2f", hs, g->batch,
                   gbps(size, g->p0), gbps(size, g->p50), gbps(size, g->p99), g->p50,
                   gbps(size, c->p50), g->p50 > 0 ? c->p50 / g->p50 : 0);
    tool_ops_free(ops, 2);
    return 0;
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = { 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216,
                                     67108864 };
    static const struct copy_tool_spec spec = {
        .tool = "gdrx-copybw",
        .synopsis =
            "usage: gdrx-copybw [options]\n"
            "Bandwidth of gdrx_copy_to_mapping / gdrx_copy_from_mapping per size and\n"
            "copy variant, and of cuMemcpy from/to the same host buffer for the ratio.\n"
            "GB/s are 1e9 bytes per second; the best batch is P0 of the time.\n"
            "Options:\n",
        .sizes_default = "4K,16K,64K,256K,1M,4M,16M,64M",
        .sizes = sizes, .nsizes = sizeof(sizes) / sizeof(sizes[0]),
        .samples = 100, .warmup = 4,
        .method = { .target_ns = 20000, .max_batch = 64 },
        .preamble = "  cuMemcpy: synchronous, from/to the same pageable host buffer\n",
        .title_to = "host -> GPU (gdrx_copy_to_mapping vs cuMemcpyHtoD)",
        .title_from = "GPU -> host (gdrx_copy_from_mapping vs cuMemcpyDtoH)",
        .heads = "size (B)|ops/batch|gdrx best (GB/s)|gdrx P50 (GB/s)|gdrx worst-1% (GB/s)|"
                 "gdrx P50 (ns)|cuMemcpy P50 (GB/s)|gdrx/cuMemcpy",
        .measure = measure,
    };
    return copy_tool_main(&spec, argc, argv);
}
