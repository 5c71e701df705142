/*
 * gdrx-info - what gdrx sees on this machine: library version, CPU
 * features and the copy variants chosen, which backends open (and the
 * error of those that do not), and the visible GPUs.
 *
 * SPDX-License-Identifier: MIT
 *
 * CPU features and per-variant support come from the copy engine's own
 * detection code (linked in from libgdr/src/copy, the same code libgdrx
 * runs); everything else goes through the public API and dlopen'ed CUDA.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "copy.h"
#include "cpu_features.h"
#include "gdrx.h"
#include "tool_cuda.h"
#include "tool_sys.h"

static void print_cpu(void)
{
    char name[256], feat[256];
    const char *note = gdrx_copy_default_note();

    tool_cpu_name(name, sizeof(name));
    printf("CPU:       %s\n", name);
    printf("features:  %s\n", gdrx_cpu_features_str(gdrx_cpu_features(), feat, sizeof(feat)));
    printf("variants: ");
    for (int v = GDRX_COPY_LIBC; v <= GDRX_COPY_MOVDIR64B; v++)
        printf(" %s%s", gdrx_copy_variant_name((gdrx_copy_variant_t)v),
               gdrx_copy_variant_supported((gdrx_copy_variant_t)v) ? "" : "(no)");
    printf("\n");
    if (*note)
        printf("           environment ignored: %s\n", note);
}

/* Try each backend alone; report the copy variants of the first that opens. */
static void print_backends(void)
{
    static const gdrx_backend_t backends[] = {
        GDRX_BACKEND_GDRDRV, GDRX_BACKEND_NVRM, GDRX_BACKEND_DMABUF,
    };
    int shown_copy = 0;

    printf("backends:\n");
    for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
        struct gdrx_open_params p;
        gdrx_t ctx;
        uint64_t ver = 0, to = 0, from = 0;

        gdrx_open_params_init(&p);
        p.backend = backends[i];
        int rc = gdrx_open(&p, &ctx);
        printf("  %-8s ", gdrx_backend_name(backends[i]));
        if (rc != 0) {
            printf("not available: %s\n", gdrx_strerror(rc));
            continue;
        }
        if (gdrx_get_attr(ctx, GDRX_ATTR_DRIVER_VERSION, &ver) == 0)
            printf("available (driver %u.%u)\n", (unsigned)(ver >> 16), (unsigned)(ver & 0xffff));
        else
            printf("available\n");
        if (!shown_copy && gdrx_get_attr(ctx, GDRX_ATTR_COPY_TO_VARIANT, &to) == 0 &&
            gdrx_get_attr(ctx, GDRX_ATTR_COPY_FROM_VARIANT, &from) == 0) {
            printf("copy:      to mapping %s, from mapping %s (library's choice)\n",
                   gdrx_copy_variant_name((gdrx_copy_variant_t)to),
                   gdrx_copy_variant_name((gdrx_copy_variant_t)from));
            shown_copy = 1;
        }
        gdrx_close(ctx);
    }
    printf("  (GDRX_LOG_LEVEL=3 makes the library say why a backend is missing)\n");
    if (!shown_copy)
        printf("copy:      no backend opened; the library would use to %s, from %s\n",
               gdrx_copy_variant_name(gdrx_copy_default()->variant),
               gdrx_copy_variant_name(gdrx_copy_default()->from_variant));
}

static void print_gpus(void)
{
    struct tool_cuda cu;
    char err[256], kmod[64];
    int count = 0, ver = 0;

    tool_nvidia_kmod_version(kmod, sizeof(kmod));
    printf("NVIDIA kernel module: %s\n", kmod);
    if (tool_cuda_load(&cu, err, sizeof(err)) != 0) {
        printf("GPUs:      none (%s)\n", err);
        return;
    }
    if (cu.simulated)
        printf("SIMULATED GPU: libcuda.so.1 is the tests/sim test double\n");
    CUresult rc = cu.Init(0);
    if (rc == CUDA_SUCCESS)
        rc = cu.DeviceGetCount(&count);
    if (rc != CUDA_SUCCESS) {
        printf("GPUs:      none (%s)\n", tool_cuda_error(&cu, rc));
        return;
    }
    cu.DriverGetVersion(&ver);
    printf("CUDA driver %d.%d, %d GPU(s):\n", ver / 1000, ver % 1000 / 10, count);
    for (int i = 0; i < count; i++) {
        CUdevice dev;
        char name[256], bus[64];
        if (cu.DeviceGet(&dev, i) != CUDA_SUCCESS)
            continue;
        tool_cuda_describe(&cu, dev, name, sizeof(name), bus, sizeof(bus));
        printf("  GPU %d: %s%s, PCI %s\n", i, name, cu.simulated ? " (simulated)" : "", bus);
    }
}

int main(int argc, char **argv)
{
    int maj, min, pat;

    if (argc > 1) {
        fprintf(argc == 2 && argv[1][0] == '-' && argv[1][1] == 'h' ? stdout : stderr,
                "usage: gdrx-info\nPrints the library version, CPU features and copy "
                "variants, backends and GPUs.\n");
        return argc == 2 && argv[1][0] == '-' && argv[1][1] == 'h' ? 0 : 2;
    }
    gdrx_get_version(&maj, &min, &pat);
    printf("libgdrx:   %d.%d.%d\n", maj, min, pat);
    print_cpu();
    print_backends();
    print_gpus();
    return 0;
}
