/*
 * copy_tool.h - the skeleton both copy benchmarks (gdrx-copylat,
 * gdrx-copybw) share: their command line (the common options plus
 * -v VARIANT and -t DIR), the setup (device, gdrx context, one pinned and
 * mapped buffer, the outputs), a table per direction filled size by size
 * by the tool's measure function, and -v all.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_COPY_TOOL_H
#define GDRX_COPY_TOOL_H

#include "tool_copy.h"
#include "tool_env.h"
#include "tool_measure.h"
#include "tool_opts.h"
#include "tool_out.h"
#include "tool_table.h"

struct copy_opts {
    struct tool_common c;
    int                dirs; /* TOOL_DIR_* bits */
};

struct copy_run;

/* What differs between the two tools. */
struct copy_tool_spec {
    const char *tool;
    const char *synopsis;      /* the lines of --help before the options */
    const char *sizes_default; /* as --help says it */
    const size_t *sizes;       /* the default sweep */
    int         nsizes;
    unsigned    samples, warmup;
    struct tool_method method; /* samples/warmup come from the options */
    int         floor;         /* 1: the tool times the floor (its lines
                                  in the preamble, its batch shared) */
    const char *preamble;      /* the tool's own lines of the preamble */
    const char *title_to, *title_from; /* table titles (variant appended) */
    const char *heads;         /* tool_table_init's column headers */
    /* Measure one size in one direction: records to r->out, a row to t;
     * 0, or 1 after a failure (message printed). */
    int (*measure)(struct copy_run *r, struct tool_table *t, int dir, size_t size);
};

struct copy_run {
    const struct copy_tool_spec *spec;
    struct copy_opts *o;
    struct tool_env   env;
    struct tool_copy  b;
    struct tool_out   out;
    struct tool_method method;
    const char       *to_name, *from_name; /* copy variants in use */
};

/* The whole program: parse, then run (or -v all).  Returns the exit
 * status. */
int copy_tool_main(const struct copy_tool_spec *spec, int argc, char **argv);

/* Record op (the raw samples with it) as test/dir/variant/size, compared
 * with ref (NULL: none). */
void copy_tool_emit(struct copy_run *r, const char *test, const char *dir,
                    const char *variant, size_t size, const struct tool_op *op,
                    const char *ref, double ref_p50);

/* Measure ops[0..n) interleaved; on failure print which and return -1. */
int copy_tool_measure(struct copy_run *r, struct tool_op *ops, int n, const char *dir,
                      size_t size);

#endif /* GDRX_COPY_TOOL_H */
