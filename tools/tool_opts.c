/*
 * tool_opts.c - the shared command line (tool_opts.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tool_opts.h"

void tool_common_init(struct tool_common *c, const char *tool, unsigned samples,
                      unsigned warmup, const size_t *sizes, int nsizes)
{
    memset(c, 0, sizeof(*c));
    c->tool = tool;
    c->cpu = TOOL_CPU_AUTO;
    c->samples = samples;
    c->warmup = warmup;
    c->backend = GDRX_BACKEND_AUTO;
    c->format = TOOL_FMT_HUMAN;
    for (int i = 0; i < nsizes && i < TOOL_MAX_SIZES; i++)
        c->sizes[c->nsizes++] = sizes[i];
}

int tool_parse_uint(const char *s, unsigned long min, unsigned long max, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);

    if (*s < '0' || *s > '9' || errno || *end || v < min || v > max || v > ~0u)
        return -1;
    *out = (unsigned)v;
    return 0;
}

int tool_parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = 0;

    if (*s < '0' || *s > '9' || errno || end == s)
        return -1;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    }
    /* Bounded before the shift, so nothing downstream (buffer size = the
     * largest size plus slack) can overflow. */
    if (*end || v == 0 || v > (TOOL_MAX_SIZE >> shift))
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

int tool_parse_size_list(const char *s, size_t *out, int max, int *n)
{
    int count = 0;

    for (const char *p = s;; p++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[32];

        if (len == 0 || len >= sizeof(item) || count == max)
            return -1;
        memcpy(item, p, len);
        item[len] = '\0';
        if (tool_parse_size(item, &out[count++]) != 0)
            return -1;
        if (!comma)
            break;
        p = comma;
    }
    *n = count;
    return 0;
}

void tool_size_str(size_t n, char *buf, size_t len)
{
    if (n >= (1u << 20) && n % (1u << 20) == 0)
        snprintf(buf, len, "%zuM", n >> 20);
    else if (n >= 1024 && n % 1024 == 0)
        snprintf(buf, len, "%zuK", n >> 10);
    else
        snprintf(buf, len, "%zu", n);
}

static int parse_backend(const char *arg, gdrx_backend_t *out)
{
    static const gdrx_backend_t ids[] = {
        GDRX_BACKEND_AUTO, GDRX_BACKEND_GDRDRV, GDRX_BACKEND_NVRM, GDRX_BACKEND_DMABUF,
    };
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        if (strcmp(arg, gdrx_backend_name(ids[i])) == 0) {
            *out = ids[i];
            return 0;
        }
    }
    return -1;
}

int tool_common_option(struct tool_common *c, int opt, const char *arg, const char **bad)
{
    unsigned v;

    switch (opt) {
    case 'd':
        if (tool_parse_uint(arg, 0, 1023, &v) != 0)
            return *bad = "-d wants a CUDA device ordinal (0, 1, ...)", -1;
        c->device = (int)v;
        return 1;
    case 'c':
        if (strcmp(arg, "auto") == 0)
            c->cpu = TOOL_CPU_AUTO;
        else if (strcmp(arg, "none") == 0)
            c->cpu = TOOL_CPU_NONE;
        else if (tool_parse_uint(arg, 0, 65535, &v) == 0)
            c->cpu = (int)v;
        else
            return *bad = "-c wants a CPU number, auto or none", -1;
        return 1;
    case 'n':
        if (tool_parse_uint(arg, 1, 10000000, &c->samples) != 0)
            return *bad = "-n wants a number of samples from 1 to 10000000", -1;
        return 1;
    case 'w':
        if (tool_parse_uint(arg, 0, 10000000, &c->warmup) != 0)
            return *bad = "-w wants a number of warm-up operations from 0 to 10000000", -1;
        return 1;
    case 'b':
        if (parse_backend(arg, &c->backend) != 0)
            return *bad = "-b wants auto, gdrdrv, nvrm or dmabuf", -1;
        return 1;
    case 's':
        if (tool_parse_size_list(arg, c->sizes, TOOL_MAX_SIZES, &c->nsizes) != 0)
            return *bad = "-s wants up to 64 comma-separated sizes from 1 to 4G, "
                          "K/M/G suffixes allowed (e.g. 8,4K,1M)", -1;
        return 1;
    case 'o':
        if (!*arg)
            return *bad = "-o wants a file name", -1;
        c->out_path = arg;
        c->machine = 1;
        return 1;
    case TOOL_OPT_CSV:
    case TOOL_OPT_JSON:
        if (c->machine && c->format != TOOL_FMT_HUMAN &&
            c->format != (opt == TOOL_OPT_CSV ? TOOL_FMT_CSV : TOOL_FMT_JSON))
            return *bad = "--csv and --json exclude each other", -1;
        c->format = opt == TOOL_OPT_CSV ? TOOL_FMT_CSV : TOOL_FMT_JSON;
        c->machine = 1;
        return 1;
    case TOOL_OPT_CHILD:
        c->child = 1;
        return 1;
    case TOOL_OPT_PRINT_HEADER:
        c->print_header = 1;
        return 1;
    case TOOL_OPT_NO_TABLE:
        c->no_table = 1;
        return 1;
    case TOOL_OPT_RAW:
        if (!*arg)
            return *bad = "--raw wants a file name", -1;
        c->raw_path = arg;
        return 1;
    }
    return 0;
}

int tool_common_finish(struct tool_common *c, int argc, char **argv, const char **bad)
{
    if (optind < argc) {
        *bad = "unexpected argument";
        return -1;
    }
    if (c->out_path && c->format == TOOL_FMT_HUMAN)
        c->format = TOOL_FMT_CSV; /* -o alone: CSV, as before */
    (void)argv;
    return 0;
}

int tool_parse_variant(struct tool_common *c, const char *arg, const char **bad)
{
    if (strcmp(arg, "auto") == 0) {
        c->variant = NULL;
        return 0;
    }
    if (strcmp(arg, "all") == 0) {
        c->variant = arg;
        return 0;
    }
    for (int v = GDRX_COPY_LIBC; v <= GDRX_COPY_LAST_OF_ARCH; v++) {
        if (strcmp(arg, gdrx_copy_variant_name((gdrx_copy_variant_t)v)) == 0) {
            c->variant = arg;
            return 0;
        }
    }
    *bad = "-v wants libc, sse2, sse41, avx2, avx512, movdir64b, all or auto";
    return -1;
}

FILE *tool_table_stream(const struct tool_common *c)
{
    return c->no_table || (c->machine && !c->out_path) ? NULL : stdout;
}

void tool_common_usage(FILE *f, const char *sizes_default)
{
    fprintf(f,
        "Common options:\n"
        "  -d, --device N     CUDA device ordinal (default 0)\n"
        "  -c, --cpu CPU      pin to this CPU; auto: one on the GPU's NUMA node\n"
        "                     (default); none: leave the affinity alone\n"
        "  -n, --samples N    timed batches per measurement\n"
        "  -w, --warmup N     untimed operations before each measurement\n"
        "  -b, --backend B    auto|gdrdrv|nvrm|dmabuf (default auto)\n");
    if (sizes_default)
        fprintf(f,
        "  -s, --sizes LIST   comma-separated sizes, K/M/G suffixes (1 .. 4G)\n"
        "                     (default %s)\n", sizes_default);
    fprintf(f,
        "      --csv          print the results as CSV instead of the table\n"
        "      --json         print the results as JSON instead of the table\n"
        "  -o, --output FILE  write the CSV (or --json) to FILE, the table to\n"
        "                     stdout; FILE appears only if the run succeeds\n"
        "      --raw FILE     also write every sample (ns per op) as CSV\n"
        "  -h, --help         this help\n"
        "Method: back-to-back batches timed with the calibrated TSC; per-op\n"
        "time = batch time / batch length; P0/P50/P99 are over the batches.\n"
        "Exit status: 0 measured and verified, 1 a failure, 2 usage, 3 not run.\n");
}

const char *tool_bad_option(int c, char **argv)
{
    static char msg[160];
    const char *arg = optind > 0 ? argv[optind - 1] : "?";

    if (c == ':')
        snprintf(msg, sizeof(msg), "option '%s' wants a value", arg);
    else if (optopt && optopt != '?')
        snprintf(msg, sizeof(msg), "unknown option '-%c'", optopt);
    else
        snprintf(msg, sizeof(msg), "unknown option '%s'", arg);
    return msg;
}

int tool_usage_error(const char *tool, const char *bad)
{
    fprintf(stderr, "%s: %s\nTry '%s --help'.\n", tool, bad, tool);
    return TOOL_EXIT_USAGE;
}

int tool_parse_common_only(int argc, char **argv, struct tool_common *c, const char *usage,
                           const char *sizes_default, const char *tail)
{
    static const struct option longopts[] = { TOOL_COMMON_LONG, { NULL, 0, NULL, 0 } };
    const char *bad = NULL;
    int opt;

    optind = 1;
    opterr = 0;
    while (!bad && (opt = getopt_long(argc, argv, ":" TOOL_COMMON_SHORT, longopts, NULL)) != -1) {
        if (opt == 's' && !sizes_default) {
            bad = "-s: this tool takes no sizes";
            break;
        }
        if (tool_common_option(c, opt, optarg, &bad) != 0)
            continue;
        if (opt == 'h') {
            fputs(usage, stdout);
            tool_common_usage(stdout, sizes_default);
            fputs(tail ? tail : "", stdout);
            return 1;
        }
        bad = tool_bad_option(opt, argv);
    }
    if (!bad)
        tool_common_finish(c, argc, argv, &bad);
    return bad ? tool_usage_error(c->tool, bad) : 0;
}
