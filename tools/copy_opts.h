/*
 * copy_opts.h - the command line of the copy benchmarks (gdrx-copylat,
 * gdrx-copybw): the common options plus -v VARIANT and -t DIR.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_COPY_OPTS_H
#define GDRX_COPY_OPTS_H

#include "tool_opts.h"

struct copy_opts {
    struct tool_common c;
    int                dirs; /* TOOL_DIR_* bits */
};

/* What differs between the two tools' command lines. */
struct copy_opts_spec {
    const char *tool;
    const char *synopsis;      /* the lines of --help before the options */
    const char *sizes_default; /* as --help says it */
    const size_t *sizes;       /* the default sweep */
    int         nsizes;
    unsigned    samples, warmup;
};

/* 0: run; 1: help printed (exit 0); otherwise the exit status of a usage
 * error (message printed). */
int copy_opts_parse(int argc, char **argv, const struct copy_opts_spec *spec,
                    struct copy_opts *o);

#endif /* GDRX_COPY_OPTS_H */
