/*
 * tool_out.h - the machine-readable results every tool writes, one schema
 * for all four (so the suite's CSV is one file): a record per measured
 * operation, with what was measured, its statistics, a reference it is
 * compared with, and the machine it ran on.  CSV or JSON, to stdout or to
 * a file that appears only when the run succeeded (written to a temporary
 * name, renamed at the end); --raw writes every sample the same way.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_TOOL_OUT_H
#define GDRX_TOOL_OUT_H

#include <stdio.h>

#include "tool_measure.h"
#include "tool_opts.h"

/* Where and on what it ran; free text is made CSV-safe (no commas/quotes). */
struct tool_meta {
    char tool[32];
    char gpu[96], gpu_bus[32];
    char driver[48];      /* NVIDIA kernel module version, or "not loaded" */
    char cuda[16];        /* cuDriverGetVersion, "13.0" */
    char cpu[96];
    int  cpu_core, numa_node;
    char backend[16], mapping[16];
    char clock[48];
    int  simulated;
};

struct tool_rec {
    const char *test;     /* e.g. "copy", "bw", "api", "pingpong" */
    const char *op;       /* e.g. "gdrx", "floor", "cuMemcpy", "pin" */
    const char *dir;      /* "H->D", "D->H", "-" */
    const char *variant;  /* copy variant or "-" */
    size_t      size;     /* bytes per op (0: not applicable) */
    struct tool_stats st;
    const double *raw;    /* st.samples values in run order, or NULL */
    const char *ref;      /* reference op name, or NULL */
    double      ref_p50;  /* its P50; ratio = p50 / ref_p50 */
};

struct tool_out {
    const struct tool_common *opts;
    struct tool_meta meta;
    FILE *f, *raw;          /* machine output, raw samples (or NULL) */
    char  tmp[4096], rawtmp[4096];
    int   nrec;
    int   first_rec;        /* JSON: no comma before the first */
};

/* Open the outputs (after the meta is known).  0, or -1 (message printed). */
int tool_out_open(struct tool_out *o, const struct tool_common *opts,
                  const struct tool_meta *meta);

/* Append one record (and its raw samples). */
void tool_out_rec(struct tool_out *o, const struct tool_rec *r);

/* Finish: on success the files take their names; on failure they are
 * removed (stdout JSON still closes, with "ok": false).  Returns ok, or 0
 * when a file could not be written (message printed). */
int tool_out_close(struct tool_out *o, int ok);

/* Replace ',' '"' and control characters so the text is one CSV cell. */
void tool_out_sanitize(char *s);

#endif /* GDRX_TOOL_OUT_H */
