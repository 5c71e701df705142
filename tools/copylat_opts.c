/*
 * copylat_opts.c - gdrx-copylat's command line.
 *
 * SPDX-License-Identifier: MIT
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "copylat.h"
#include "tool_sys.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: gdrx-copylat [options]\n"
        "Latency of gdrx copies to/from a GPU mapping vs cuMemcpy, per size.\n"
        "  -d DEV     CUDA device ordinal (default 0)\n"
        "  -s SIZES   comma-separated sizes, K/M suffixes allowed\n"
        "             (default: powers of two 1 .. 1M)\n"
        "  -n N       timed samples per size (default 1000)\n"
        "  -w N       warm-up copies per size (default 100)\n"
        "  -v VARIANT copy variant: libc|sse2|sse41|avx2|avx512|movdir64b,\n"
        "             or all (every variant the CPU has; default: the\n"
        "             library's choice)\n"
        "  -b BACKEND auto|gdrdrv|nvrm|dmabuf (default auto)\n"
        "  -t DIR     to|from|both (default both)\n"
        "  -o FILE    also write the results as CSV\n"
        "  -h         this help\n");
}

static int parse_sizes(const char *arg, struct copylat_opts *o)
{
    char *copy = strdup(arg), *save = NULL;
    int rc = 0;

    o->nsizes = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0;
         tok = strtok_r(NULL, ",", &save)) {
        size_t v;
        if (o->nsizes == COPYLAT_MAX_SIZES || tool_parse_size(tok, &v) != 0 || v == 0)
            rc = -1;
        else
            o->sizes[o->nsizes++] = v;
    }
    free(copy);
    return rc == 0 && o->nsizes > 0 ? 0 : -1;
}

static int parse_backend(const char *arg, gdrx_backend_t *out)
{
    static const struct { const char *name; gdrx_backend_t b; } names[] = {
        { "auto", GDRX_BACKEND_AUTO },
        { "gdrdrv", GDRX_BACKEND_GDRDRV },
        { "nvrm", GDRX_BACKEND_NVRM },
        { "dmabuf", GDRX_BACKEND_DMABUF },
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(arg, names[i].name) == 0) {
            *out = names[i].b;
            return 0;
        }
    }
    return -1;
}

static int parse_variant(const char *arg)
{
    if (strcmp(arg, "all") == 0 || strcmp(arg, "auto") == 0)
        return 0;
    for (int v = GDRX_COPY_LIBC; v <= GDRX_COPY_MOVDIR64B; v++)
        if (strcmp(arg, gdrx_copy_variant_name((gdrx_copy_variant_t)v)) == 0)
            return 0;
    return -1;
}

static int parse_uint(const char *arg, unsigned *out, unsigned min)
{
    char *end;
    unsigned long v = strtoul(arg, &end, 10);
    if (*arg == '-' || end == arg || *end || v < min || v > 100000000ul)
        return -1;
    *out = (unsigned)v;
    return 0;
}

int copylat_parse(int argc, char **argv, struct copylat_opts *o)
{
    static const struct option longopts[] = {
        /* internal: how `-v all` runs one variant per process */
        { "child", no_argument, NULL, 'C' },
        { "print-header", no_argument, NULL, 'H' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    const char *bad = NULL;

    memset(o, 0, sizeof(*o));
    for (o->nsizes = 0; o->nsizes <= 20; o->nsizes++)
        o->sizes[o->nsizes] = (size_t)1 << o->nsizes;
    o->iters = 1000;
    o->warmup = 100;
    o->dirs = COPYLAT_DIR_TO | COPYLAT_DIR_FROM;
    optind = 1;
    while (!bad && (c = getopt_long(argc, argv, "d:s:n:w:v:b:t:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': {
            unsigned d = 0;
            if (parse_uint(optarg, &d, 0) != 0)
                bad = "-d wants a device ordinal";
            o->device = (int)d;
            break;
        }
        case 's':
            if (parse_sizes(optarg, o) != 0)
                bad = "-s wants up to 64 comma-separated sizes > 0 (e.g. 1,64,4K,1M)";
            break;
        case 'n':
            if (parse_uint(optarg, &o->iters, 1) != 0)
                bad = "-n wants a number >= 1";
            break;
        case 'w':
            if (parse_uint(optarg, &o->warmup, 0) != 0)
                bad = "-w wants a number >= 0";
            break;
        case 'v':
            if (parse_variant(optarg) != 0)
                bad = "-v wants libc|sse2|sse41|avx2|avx512|movdir64b|all";
            o->variant = strcmp(optarg, "auto") == 0 ? NULL : optarg;
            break;
        case 'b':
            if (parse_backend(optarg, &o->backend) != 0)
                bad = "-b wants auto|gdrdrv|nvrm|dmabuf";
            break;
        case 't':
            if (strcmp(optarg, "to") == 0)
                o->dirs = COPYLAT_DIR_TO;
            else if (strcmp(optarg, "from") == 0)
                o->dirs = COPYLAT_DIR_FROM;
            else if (strcmp(optarg, "both") == 0)
                o->dirs = COPYLAT_DIR_TO | COPYLAT_DIR_FROM;
            else
                bad = "-t wants to|from|both";
            break;
        case 'o':
            o->csv = optarg;
            break;
        case 'C':
            o->child = 1;
            break;
        case 'H':
            o->print_header = 1;
            break;
        case 'h':
            usage(stdout);
            return 1;
        default:
            bad = "unknown option";
            break;
        }
    }
    if (!bad && optind < argc)
        bad = "unexpected argument";
    if (bad) {
        fprintf(stderr, "gdrx-copylat: %s\n", bad);
        usage(stderr);
        return -1;
    }
    if (!o->child)
        o->print_header = 1;
    return 0;
}
