/*
 * tool_opts.h - the command line every benchmark tool shares: device, CPU,
 * samples, warm-up, backend, output format and files, raw samples, and
 * the parsing of numbers and size lists.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef GDRX_TOOL_OPTS_H
#define GDRX_TOOL_OPTS_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#include "gdrx.h"

/* Exit statuses of every tool. */
#define TOOL_EXIT_OK      0
#define TOOL_EXIT_FAIL    1  /* a measurement or check failed */
#define TOOL_EXIT_USAGE   2
#define TOOL_EXIT_NOT_RUN 3  /* nothing measured (no GPU, no kernel, no variant) */

#define TOOL_CPU_AUTO (-1)  /* a CPU on the GPU's NUMA node */
#define TOOL_CPU_NONE (-2)  /* leave the affinity alone */

#define TOOL_MAX_SIZES 64
#define TOOL_MAX_SIZE  ((size_t)1 << 32) /* 4 GiB: one sweep buffer */

enum tool_format { TOOL_FMT_HUMAN, TOOL_FMT_CSV, TOOL_FMT_JSON };

struct tool_common {
    const char      *tool;     /* program name for messages */
    int              device;
    int              cpu;      /* TOOL_CPU_* or a CPU number */
    unsigned         samples;  /* batches per measurement */
    unsigned         warmup;   /* untimed ops first */
    gdrx_backend_t   backend;
    enum tool_format format;   /* of the machine output */
    int              machine;  /* --csv/--json/-o given */
    const char      *out_path; /* -o: machine output there, table on stdout */
    const char      *raw_path; /* --raw: every sample */
    size_t           sizes[TOOL_MAX_SIZES];
    int              nsizes;
    const char      *variant;  /* -v: NULL (the library's choice), a name, "all" */
    /* How a per-variant run (-v all) drives its children (tool_variants.h). */
    int              child, print_header, no_table;
};

/* The short options every tool takes ("d:c:n:w:b:o:s:h") and the long
 * ones, to append to a tool's own tables. */
#define TOOL_COMMON_SHORT "d:c:n:w:b:o:s:h"
enum { TOOL_OPT_CSV = 0x1000, TOOL_OPT_JSON, TOOL_OPT_RAW, TOOL_OPT_CHILD,
       TOOL_OPT_PRINT_HEADER, TOOL_OPT_NO_TABLE, TOOL_OPT_TOOL_BASE };
#define TOOL_COMMON_LONG                                   \
    { "help", no_argument, NULL, 'h' },                    \
    { "device", required_argument, NULL, 'd' },            \
    { "cpu", required_argument, NULL, 'c' },               \
    { "samples", required_argument, NULL, 'n' },           \
    { "warmup", required_argument, NULL, 'w' },            \
    { "backend", required_argument, NULL, 'b' },           \
    { "output", required_argument, NULL, 'o' },            \
    { "sizes", required_argument, NULL, 's' },             \
    { "csv", no_argument, NULL, TOOL_OPT_CSV },            \
    { "json", no_argument, NULL, TOOL_OPT_JSON },          \
    { "raw", required_argument, NULL, TOOL_OPT_RAW },      \
    { "child", no_argument, NULL, TOOL_OPT_CHILD },        \
    { "print-header", no_argument, NULL, TOOL_OPT_PRINT_HEADER }, \
    { "no-table", no_argument, NULL, TOOL_OPT_NO_TABLE }

/* Defaults: device 0, CPU auto, the given samples/warm-up and sizes. */
void tool_common_init(struct tool_common *c, const char *tool, unsigned samples,
                      unsigned warmup, const size_t *sizes, int nsizes);

/* Handle one common option.  1: handled; 0: not a common option; -1: bad
 * value (*bad names what is wanted).  'h' is left to the tool. */
int tool_common_option(struct tool_common *c, int opt, const char *arg, const char **bad);

/* After getopt: leftover arguments, consistency.  0, or -1 with *bad. */
int tool_common_finish(struct tool_common *c, int argc, char **argv, const char **bad);

/* -v NAME|all|auto for the tools that measure per copy variant; 0 or -1. */
int tool_parse_variant(struct tool_common *c, const char *arg, const char **bad);

/* Where the human table goes: stdout, or NULL when stdout carries the
 * CSV/JSON (or a -v all parent collects it). */
FILE *tool_table_stream(const struct tool_common *c);

/* Whether the preamble is printed (a -v all child prints it once). */
static inline int tool_wants_preamble(const struct tool_common *c)
{
    return !c->child || c->print_header;
}

/* After getopt returned '?' or ':' (opterr = 0): "unknown option '--x'"
 * or "option '-s' wants a value" (a static buffer). */
const char *tool_bad_option(int c, char **argv);

/*
 * The whole command line of a tool that takes only the common options:
 * usage is printed before the common options' help (and tail after it);
 * sizes_default NULL: the tool takes no -s.  0: run; 1: help printed;
 * else the exit status of a usage error (message printed).  c must have
 * been set up by tool_common_init.
 */
int tool_parse_common_only(int argc, char **argv, struct tool_common *c, const char *usage,
                           const char *sizes_default, const char *tail);

/* The common options' lines of --help. */
void tool_common_usage(FILE *f, const char *sizes_default);

/* Print "TOOL: bad\n" and "Try 'TOOL --help'." on stderr; returns
 * TOOL_EXIT_USAGE. */
int tool_usage_error(const char *tool, const char *bad);

/* Unsigned decimal in [min, max]; 0 or -1. */
int tool_parse_uint(const char *s, unsigned long min, unsigned long max, unsigned *out);

/* A byte count: decimal with an optional K, M or G suffix (powers of 1024),
 * 1 .. TOOL_MAX_SIZE.  0 or -1. */
int tool_parse_size(const char *s, size_t *out);

/* Comma-separated byte counts, no empty item, at most max.  0 or -1. */
int tool_parse_size_list(const char *s, size_t *out, int max, int *n);

/* "8", "4K", "1M": the shortest exact form. */
void tool_size_str(size_t n, char *buf, size_t len);

#endif /* GDRX_TOOL_OPTS_H */
