/*
 * copy_opts.c - the copy benchmarks' command line (copy_opts.h).
 *
 * SPDX-License-Identifier: MIT
 */
#include <string.h>

#include "copy_opts.h"
#include "tool_copy.h"

static void usage(const struct copy_opts_spec *spec)
{
    printf("%s"
           "  -v VARIANT         copy variant: libc|sse2|sse41|avx2|avx512|movdir64b,\n"
           "                     all (each the CPU has, one process each), or auto\n"
           "                     (the library's choice; default)\n"
           "  -t, --dir DIR      to (host->GPU) | from (GPU->host) | both (default)\n",
           spec->synopsis);
    tool_common_usage(stdout, spec->sizes_default);
}

int copy_opts_parse(int argc, char **argv, const struct copy_opts_spec *spec,
                    struct copy_opts *o)
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
        int r = tool_common_option(&o->c, c, optarg, &bad);
        if (r != 0)
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
