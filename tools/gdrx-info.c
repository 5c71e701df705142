/*
 * gdrx-info - what a user runs first: the NVIDIA driver, the GPUs and their
 * BAR1, which gdrx backends work and why the others do not (with the fix),
 * the copy routines chosen, which libgdrapi.so.2 (gdrcopy's API) programs
 * would load, and the UCX found with whether the gdrx transport loads into
 * it.  Exit status 0 when a backend works, 1 when none does, 2 for a bad
 * command line (gdrx-info(1)).
 *
 * SPDX-License-Identifier: MIT
 *
 * CPU features and per-variant support come from the copy engine's own
 * detection code (linked in from libgdr/src/copy, the same code libgdrx
 * runs); the backends are probed through the public API.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "copy.h"
#include "cpu_features.h"
#include "gdrx.h"
#include "info.h"
#include "tool_sys.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gdrx-info [-j|--json] [-v|--verbose] [--no-ucx] [-h|--help]\n"
            "Says what gdrx can use on this machine: the NVIDIA driver, the GPUs and their\n"
            "BAR1, which backends work and, for each that does not, why and the fix; the\n"
            "copy routines, which libgdrapi.so.2 programs built for gdrcopy load, and\n"
            "whether UCX loads the gdrx transport.\n"
            "  -j, --json     one JSON object instead of text\n"
            "  -v, --verbose  also the library's messages for the backends that work\n"
            "      --no-ucx   do not run ucx_info\n"
            "  -h, --help     this text\n"
            "Exit status: 0 at least one backend works, 1 none works, 2 usage error.\n"
            "Report bugs to: %s\n", PACKAGE_BUGREPORT);
}

static void cpu_and_copy(struct info_report *r)
{
    char name[256], feat[256], list[256] = "";
    const char *note = gdrx_copy_default_note();
    const struct gdrx_copy_impl *def = gdrx_copy_default();
    size_t used = 0;

    tool_cpu_name(name, sizeof(name));
    info_add(r, "copy", -1, "cpu", "CPU", "%s", name);
    info_add(r, "copy", -1, "features", "features", "%s",
             gdrx_cpu_features_str(gdrx_cpu_features(), feat, sizeof(feat)));
    for (int v = GDRX_COPY_LIBC; v <= GDRX_COPY_LAST_OF_ARCH; v++)
        used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s%s", used ? " " : "",
                                 gdrx_copy_variant_name((gdrx_copy_variant_t)v),
                                 gdrx_copy_variant_supported((gdrx_copy_variant_t)v) ? "" : "(no)");
    info_add(r, "copy", -1, "variants", "variants", "%s", list);
    info_add(r, "copy", -1, "to_mapping", "to mapping", "%s",
             gdrx_copy_variant_name(def->variant));
    info_add(r, "copy", -1, "from_mapping", "from mapping", "%s",
             gdrx_copy_variant_name(def->from_variant));
    if (*note)
        info_problem(r, "copy", "unset the variable or name a variant this CPU supports (the "
                     "list above)", "%s", note);
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        { "help", no_argument, NULL, 'h' },  { "json", no_argument, NULL, 'j' },
        { "verbose", no_argument, NULL, 'v' }, { "no-ucx", no_argument, NULL, 'U' },
        { NULL, 0, NULL, 0 },
    };
    int json = 0, verbose = 0, ucx = 1, c, maj, min, pat;

    opterr = 0; /* our own message names the bad option the way it was typed */
    while ((c = getopt_long(argc, argv, "hjv", longs, NULL)) != -1) {
        switch (c) {
        case 'h': usage(stdout); return INFO_EXIT_OK;
        case 'j': json = 1; break;
        case 'v': verbose = 1; break;
        case 'U': ucx = 0; break;
        default:
            /* optopt names a bad short option (also inside "-jx");
             * otherwise the long one is the word getopt just passed */
            if (optopt)
                fprintf(stderr, "gdrx-info: unknown option '-%c'\n", optopt);
            else
                fprintf(stderr, "gdrx-info: unknown option '%s'\n", argv[optind - 1]);
            usage(stderr);
            return INFO_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gdrx-info: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return INFO_EXIT_USAGE;
    }

    struct info_report *r = info_report_new();
    struct info_host host = { .secure_boot = -1 };
    if (!r) {
        fprintf(stderr, "gdrx-info: out of memory\n");
        return INFO_EXIT_NO_BACKEND;
    }
    gdrx_get_version(&maj, &min, &pat);
    info_add(r, "library", -1, "version", "version", "%d.%d.%d", maj, min, pat);
    info_gpus(r, &host);
    info_driver(r, &host);
    int works = info_backends(r, &host);
    info_hooks(r);
    cpu_and_copy(r);
    info_gdrapi(r);
    if (ucx)
        info_ucx(r);
    int status = works ? INFO_EXIT_OK : INFO_EXIT_NO_BACKEND;
    if (json) {
        info_print_json(r, stdout, status);
    } else {
        if (host.simulated)
            printf("SIMULATED GPU: libcuda.so.1 is tests/sim's test double; nothing below "
                   "describes real hardware\n");
        info_print_text(r, stdout, verbose);
        printf(works ? "result: %d of 3 backends work\n"
                     : "result: no backend works (%d of 3); see the fixes above\n", works);
    }
    info_report_free(r);
    return status;
}
